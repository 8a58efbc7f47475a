//! The clock contract: host records are stamped with real time minus emulation time,
//! a host wait moves the thread's clock to the modeled completion, and each thread's
//! clock is its own.

use std::time::Duration;

use runtime_hooks::clock;
use runtime_hooks::{
    Event, OperatorPayload, OperatorScope, Record, RuntimeCallKind, RuntimeCallPayload,
    RuntimeCallScope,
};

#[test]
fn host_time_excludes_emulation() {
    let sleep = Duration::from_millis(if cfg!(miri) { 1 } else { 30 });
    runtime_hooks::set_enabled(true);
    let matmul = runtime_hooks::intern("aten::matmul");
    let sync = runtime_hooks::name!("nrt_synchronize");
    let modeled_end_ns;
    {
        let _op = OperatorScope::new(OperatorPayload {
            name_id: matmul,
            ..Default::default()
        });
        // The emulator computes the kernel's numerics on the CPU: not host time.
        {
            let _numerics = clock::emulation_scope();
            std::thread::sleep(sleep);
        }
        // The host waits for the kernel, which the model says completes 5 ms from now.
        let _wait = RuntimeCallScope::new(
            RuntimeCallKind::Synchronize,
            RuntimeCallPayload {
                name_id: sync,
                ..Default::default()
            },
        );
        modeled_end_ns = clock::now_ns() + 5_000_000;
        clock::advance_to(modeled_end_ns);
    }

    // Another thread's clock is unaffected by this thread's emulation and waits.
    let other = std::thread::spawn(|| (clock::now_ns(), clock::monotonic_ns()))
        .join()
        .unwrap();
    assert!(other.0.abs_diff(other.1) < 1_000_000);

    let mut records: Vec<Record> = Vec::new();
    runtime_hooks::drain(&mut records);
    assert_eq!(records.len(), 3, "{records:#?}");
    let (begin, call, end) = (records[0], records[1], records[2]);
    assert!(matches!(
        call.event(),
        Some(Event::RuntimeCall(RuntimeCallKind::Synchronize, _))
    ));
    // The synchronize ends at the modeled instant ...
    assert!(call.end_ns >= modeled_end_ns && call.end_ns < modeled_end_ns + 2_000_000);
    // ... and the operator lasts the wait, not the emulated sleep.
    let op_dur_ns = end.start_ns - begin.start_ns;
    assert!(op_dur_ns >= 5_000_000, "{op_dur_ns}");
    if !cfg!(miri) {
        assert!(
            op_dur_ns < 5_000_000 + 20_000_000,
            "emulation leaked: {op_dur_ns} ns"
        );
    }
    // Host clock stays monotonic across all of it.
    assert!(begin.start_ns <= call.start_ns && call.end_ns <= end.start_ns);
}
