//! Collectives get NCCL-style args on the device kernel and the host
//! `record_param_comms`; forward→backward flows pair; counters pass through. Records
//! are made with `runtime-hooks` directly, as a runtime with collectives would.

mod common;

use runtime_hooks::{
    clock, CollectiveAlgorithm, CollectiveOp, CollectivePayload, CounterPayload, FlowKind,
    OperatorPayload, OperatorScope,
};
use trace_format::{Event, FlowEnd, Phase};

fn arg_str(e: &Event<'_>, key: &str) -> String {
    let v = e.arg(key).unwrap_or_else(|| panic!("{key} missing"));
    v.as_str()
        .map(str::to_owned)
        .or_else(|| v.as_i64().map(|n| n.to_string()))
        .unwrap()
}

#[test]
fn collectives_and_flows_carry_kineto_args() {
    let _serial = common::serial();
    let prof = profiler::Profiler::builder()
        .distributed(profiler::DistributedConfig::new("nccom", 0, 2))
        .start();
    let forward_tid;
    {
        let _fwd = OperatorScope::new(OperatorPayload {
            name_id: runtime_hooks::name!("aten::linear"),
            seq_nr: 41,
            ..Default::default()
        });
        runtime_hooks::flow_start(FlowKind::ForwardToBackward, 41);
        forward_tid = runtime_hooks::thread_stats()
            .into_iter()
            .find(|t| t.os_tid != 0 && t.thread_name.as_deref() == std::thread::current().name())
            .map(|t| t.os_tid);
    }
    let corr_id = runtime_hooks::next_corr_id();
    let payload = CollectivePayload {
        group_name_id: runtime_hooks::intern("0"),
        group_ranks_id: runtime_hooks::intern("[0, 1]"),
        device: 0,
        queue: 1,
        corr_id,
        bytes: 8192,
        group_size: 2,
        rank: 0,
        algorithm: CollectiveAlgorithm::Ring.raw(),
        dtype: 15,
    };
    runtime_hooks::collective_begin(CollectiveOp::AllReduce, payload);
    let start_ns = clock::now_ns() + 2_000;
    runtime_hooks::collective(CollectiveOp::AllReduce, start_ns, start_ns + 9_000, payload);
    runtime_hooks::counter_at(
        start_ns,
        CounterPayload {
            name_id: runtime_hooks::name!("cc bytes in flight"),
            device: 0,
            value: 8192.0,
            ..Default::default()
        },
    );
    runtime_hooks::collective_end(CollectiveOp::AllReduce, payload);
    clock::advance_to(start_ns + 9_000);
    {
        let _bwd = OperatorScope::new(OperatorPayload {
            name_id: runtime_hooks::name!("LinearBackward0"),
            seq_nr: 41,
            ..Default::default()
        });
        runtime_hooks::flow_end(FlowKind::ForwardToBackward, 41);
    }
    let result = prof.stop().unwrap().unwrap();
    let json = result.write_trace(Vec::new(), None).unwrap();
    let mut trace = trace_format::CollectSink::default();
    trace_format::TraceReader::from_slice("t.json", &json)
        .read(&mut trace)
        .unwrap();
    let events = &trace.events;

    let kernel = events
        .iter()
        .find(|e| e.name() == "ncclKernel_AllReduce_RING_BFloat16")
        .expect("the collective kernel");
    assert_eq!(kernel.category.as_ref().unwrap().as_str(), "kernel");
    assert_eq!(kernel.dur_ns, Some(9_000));
    let host = events
        .iter()
        .find(|e| e.name() == "record_param_comms")
        .expect("the host side");
    for e in [kernel, host] {
        assert_eq!(arg_str(e, "Collective name"), "allreduce");
        assert_eq!(arg_str(e, "In msg nelems"), "4096");
        assert_eq!(arg_str(e, "Out msg nelems"), "4096");
        assert_eq!(arg_str(e, "Group size"), "2");
        assert_eq!(arg_str(e, "dtype"), "BFloat16");
        assert_eq!(arg_str(e, "Process Group Name"), "0");
        assert_eq!(arg_str(e, "Process Group Description"), "default_pg");
        assert_eq!(arg_str(e, "Process Group Ranks"), "[0, 1]");
        assert_eq!(arg_str(e, "Rank"), "0");
        assert_eq!(arg_str(e, "Seq"), "0");
    }
    assert_eq!(arg_str(kernel, "stream"), "1");
    assert_eq!(arg_str(kernel, "correlation"), corr_id.to_string());
    assert_eq!(arg_str(kernel, "External id"), arg_str(host, "External id"));

    let flows: Vec<&Event<'_>> = events
        .iter()
        .filter(|e| e.category.as_ref().is_some_and(|c| c.as_str() == "fwdbwd"))
        .collect();
    assert_eq!(flows.len(), 2);
    assert_eq!(flows[0].flow_end(), Some(FlowEnd::Start));
    assert_eq!(flows[1].flow_end(), Some(FlowEnd::Finish));
    assert_eq!(flows[0].flow_id, flows[1].flow_id);
    let backward = events
        .iter()
        .find(|e| e.name() == "LinearBackward0")
        .unwrap();
    assert!(flows[1].ts_ns >= backward.ts_ns && flows[1].ts_ns <= backward.end_ns());
    let forward_thread = forward_tid.expect("this thread is registered") as i64;
    assert_eq!(
        backward.arg("Fwd thread id").and_then(|v| v.as_i64()),
        Some(forward_thread)
    );
    let forward = events.iter().find(|e| e.name() == "aten::linear").unwrap();
    assert_eq!(
        forward.arg("Fwd thread id").and_then(|v| v.as_i64()),
        Some(0)
    );

    let counter = events
        .iter()
        .find(|e| e.phase == Phase::Counter && e.name() == "cc bytes in flight")
        .expect("counter samples pass through");
    assert_eq!(counter.arg("value").and_then(|v| v.as_f64()), Some(8192.0));
    common::assert_tracks_nest(events);
}
