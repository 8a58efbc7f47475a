//! Each recording call writes one record of its kind with its payload; disabled calls
//! write nothing and register no ring; scope guards keep begin/end balanced.

use runtime_hooks::*;

fn drain_all() -> Vec<Record> {
    let mut records = Vec::new();
    drain(&mut records);
    records
}

#[test]
fn every_hook_records_its_kind() {
    // Disabled: nothing is recorded and the thread does not even register a ring.
    assert!(!is_enabled());
    operator_begin(OperatorPayload::default());
    counter(CounterPayload::default());
    drop(range_scope!("disabled"));
    assert!(thread_stats().is_empty());
    assert!(drain_all().is_empty());

    set_enabled(true);
    let name_id = name!("hook");
    let corr_id = next_corr_id();
    assert!(next_corr_id() > corr_id);
    let op = OperatorPayload {
        name_id,
        corr_id,
        seq_nr: 3,
        flops: 4,
        bytes: 5,
        ..Default::default()
    };
    operator_begin(op);
    operator_end(op);
    range_begin(RangePayload {
        name_id,
        value: 9,
        ..Default::default()
    });
    range_end(RangePayload {
        name_id,
        value: 9,
        ..Default::default()
    });
    let call = RuntimeCallPayload {
        name_id,
        device: 1,
        queue: 2,
        corr_id,
        ..Default::default()
    };
    runtime_call(RuntimeCallKind::KernelLaunch, 10, 20, call);
    let k = KernelPayload {
        name_id,
        device: 1,
        queue: 2,
        corr_id,
        ..Default::default()
    };
    kernel(30, 40, k);
    let i = InstructionPayload {
        name_id,
        core: 1,
        engine: 3,
        corr_id,
        ..Default::default()
    };
    instruction(31, 32, i);
    let d = DmaPayload {
        name_id,
        bytes: 64,
        src_addr: 1,
        dst_addr: 2,
        ..Default::default()
    };
    dma(DmaDirection::HostToDevice, 25, 29, d);
    let m = MemoryPayload {
        addr: 8,
        bytes: 16,
        total_allocated_bytes: 16,
        ..Default::default()
    };
    memory(MemoryAction::Allocate, m);
    let c = CollectivePayload {
        group_name_id: name_id,
        bytes: 1024,
        group_size: 8,
        rank: 3,
        algorithm: CollectiveAlgorithm::Ring.raw(),
        ..Default::default()
    };
    collective(CollectiveOp::AllReduce, 50, 60, c);
    collective_begin(CollectiveOp::Barrier, c);
    collective_end(CollectiveOp::Barrier, c);
    counter(CounterPayload {
        name_id,
        value: 2.5,
        ..Default::default()
    });
    counter_at(
        70,
        CounterPayload {
            name_id,
            value: 3.5,
            ..Default::default()
        },
    );
    flow_start(FlowKind::ForwardToBackward, 3);
    flow_end(FlowKind::ForwardToBackward, 3);

    let records = drain_all();
    let events: Vec<(Option<Phase>, Option<Event>)> =
        records.iter().map(|r| (r.phase(), r.event())).collect();
    use Phase::*;
    let flow = |flow_id| FlowPayload {
        flow_id,
        ..Default::default()
    };
    let expected = vec![
        (Some(Begin), Some(Event::Operator(op))),
        (Some(End), Some(Event::Operator(op))),
        (
            Some(Begin),
            Some(Event::UserRange(RangePayload {
                name_id,
                value: 9,
                ..Default::default()
            })),
        ),
        (
            Some(End),
            Some(Event::UserRange(RangePayload {
                name_id,
                value: 9,
                ..Default::default()
            })),
        ),
        (
            Some(Complete),
            Some(Event::RuntimeCall(RuntimeCallKind::KernelLaunch, call)),
        ),
        (Some(Complete), Some(Event::Kernel(k))),
        (Some(Complete), Some(Event::Instruction(i))),
        (
            Some(Complete),
            Some(Event::Dma(DmaDirection::HostToDevice, d)),
        ),
        (
            Some(Instant),
            Some(Event::Memory(MemoryAction::Allocate, m)),
        ),
        (
            Some(Complete),
            Some(Event::Collective(CollectiveOp::AllReduce, c)),
        ),
        (
            Some(Begin),
            Some(Event::Collective(CollectiveOp::Barrier, c)),
        ),
        (Some(End), Some(Event::Collective(CollectiveOp::Barrier, c))),
        (
            Some(Instant),
            Some(Event::Counter(CounterPayload {
                name_id,
                value: 2.5,
                ..Default::default()
            })),
        ),
        (
            Some(Instant),
            Some(Event::Counter(CounterPayload {
                name_id,
                value: 3.5,
                ..Default::default()
            })),
        ),
        (
            Some(Begin),
            Some(Event::Flow(FlowKind::ForwardToBackward, flow(3))),
        ),
        (
            Some(End),
            Some(Event::Flow(FlowKind::ForwardToBackward, flow(3))),
        ),
    ];
    assert_eq!(events, expected);
    assert_eq!(
        (records[5].start_ns, records[5].end_ns, records[5].dur_ns()),
        (30, 40, 10)
    );
    assert_eq!(records[13].start_ns, 70);
    let thread_id = records[0].thread_id;
    assert!(records.iter().all(|r| r.thread_id == thread_id));
    // Host-stamped records are on this thread's clock, in order.
    assert!(
        records[0].start_ns <= records[1].start_ns && records[1].start_ns <= records[8].start_ns
    );

    // A guard that began while enabled still ends after recording is turned off.
    let scope = range_scope!("balanced", 1);
    set_enabled(false);
    drop(scope);
    let _ignored = range_scope!("off");
    let records = drain_all();
    assert_eq!(
        records.iter().map(|r| r.phase()).collect::<Vec<_>>(),
        [Some(Begin), Some(End)]
    );
    assert_eq!(
        resolve(records[0].payload.range().name_id).as_deref(),
        Some("balanced")
    );
    let stats = thread_stats();
    assert_eq!(stats.len(), 1);
    assert_eq!(
        (stats[0].recorded, stats[0].dropped, stats[0].exited),
        (18, 0, false)
    );
    assert_eq!(stats[0].capacity, DEFAULT_RING_CAPACITY);
}
