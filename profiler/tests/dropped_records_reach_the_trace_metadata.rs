//! Records dropped on a full ring are counted in the trace's `dropped_records`, and
//! what was kept still converts into well-formed events. A ring keeps its last eighth
//! for user ranges and flow ends, so a step whose ring overflows keeps its
//! `ProfilerStep#N` range and its flows' ends.

use profiler::{Activity, Profiler};
use runtime_hooks::{OperatorPayload, OperatorScope};

/// The tests of this file one at a time: each sets the process-wide ring size for the
/// thread it starts.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

#[test]
fn dropped_records_reach_the_trace_metadata() {
    let _serial = serial();
    runtime_hooks::set_ring_capacity(64);
    // Without the drainer thread: only the window's end drains, so the count is exact.
    let prof = Profiler::builder()
        .activities(&[Activity::Cpu])
        .drain_every(None)
        .start();
    std::thread::spawn(|| {
        for _ in 0..500 {
            let _op = OperatorScope::new(OperatorPayload {
                name_id: runtime_hooks::name!("aten::tiny"),
                ..Default::default()
            });
        }
    })
    .join()
    .unwrap();
    let result = prof.stop().unwrap().unwrap();
    runtime_hooks::set_ring_capacity(runtime_hooks::DEFAULT_RING_CAPACITY);
    // 1000 records into a ring of 64 whose last 8 slots are reserved: the first 56 (28
    // whole operators) are kept.
    assert_eq!(result.dropped_records(), 1000 - 56);
    assert_eq!(result.key_averages().get("aten::tiny").unwrap().count, 28);
    let json = String::from_utf8(result.write_trace(Vec::new(), None).unwrap()).unwrap();
    assert!(json.contains("\"dropped_records\": 944"), "an integer key");
    let meta = trace_format::TraceReader::from_slice("t.json", json.as_bytes())
        .read(&mut trace_format::CountingSink::default())
        .unwrap()
        .meta;
    assert_eq!(
        meta.get(profiler::DROPPED_RECORDS_KEY)
            .unwrap()
            .deserialize::<u64>()
            .unwrap(),
        944
    );
    assert_eq!(result.summary().dropped_records, 944);
}

#[test]
fn a_step_that_overflows_its_ring_keeps_its_range_and_flow_ends() {
    let _serial = serial();
    runtime_hooks::set_ring_capacity(64);
    let prof = Profiler::builder()
        .activities(&[Activity::Cpu])
        .drain_every(None)
        .start();
    std::thread::spawn(|| {
        let _step = runtime_hooks::RangeScope::new(runtime_hooks::name!("ProfilerStep"), 7);
        runtime_hooks::flow_start(runtime_hooks::FlowKind::ForwardToBackward, 42);
        for _ in 0..500 {
            let _op = OperatorScope::new(OperatorPayload {
                name_id: runtime_hooks::name!("aten::tiny"),
                ..Default::default()
            });
        }
        runtime_hooks::flow_end(runtime_hooks::FlowKind::ForwardToBackward, 42);
    })
    .join()
    .unwrap();
    let result = prof.stop().unwrap().unwrap();
    runtime_hooks::set_ring_capacity(runtime_hooks::DEFAULT_RING_CAPACITY);
    // The range's begin, the flow's start and 27 operators fill the 56 ordinary slots;
    // the flow's end and the range's end take reserved ones.
    assert_eq!(result.dropped_records(), 1004 - 58);
    assert_eq!(result.key_averages().get("aten::tiny").unwrap().count, 27);
    // Step 0 is the session's own range on this thread.
    assert_eq!(result.steps(), vec![0, 7], "the step's range survived");
    let json = String::from_utf8(result.write_trace(Vec::new(), None).unwrap()).unwrap();
    assert!(
        json.contains("\"ph\": \"f\""),
        "the flow's end survived:\n{json}"
    );
}
