//! Records dropped on a full ring are counted in the trace's `dropped_records`, and
//! what was kept still converts into well-formed events.

use profiler::{Activity, Profiler};
use runtime_hooks::{OperatorPayload, OperatorScope};

#[test]
fn dropped_records_reach_the_trace_metadata() {
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
    // 1000 records into a ring of 64: the first 64 (32 whole operators) are kept.
    assert_eq!(result.dropped_records(), 1000 - 64);
    assert_eq!(result.key_averages().get("aten::tiny").unwrap().count, 32);
    let json = String::from_utf8(result.write_trace(Vec::new(), None).unwrap()).unwrap();
    assert!(json.contains("\"dropped_records\": 936"), "an integer key");
    let meta = trace_format::TraceReader::from_slice("t.json", json.as_bytes())
        .read(&mut trace_format::CountingSink::default())
        .unwrap()
        .meta;
    assert_eq!(
        meta.get(profiler::DROPPED_RECORDS_KEY)
            .unwrap()
            .deserialize::<u64>()
            .unwrap(),
        936
    );
    assert_eq!(result.summary().dropped_records, 936);
}
