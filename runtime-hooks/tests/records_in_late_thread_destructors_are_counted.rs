//! A thread that records from a thread-local destructor running after its ring was
//! retired cannot store the record; it must be counted as lost, never silently vanish.
#![cfg(target_os = "linux")]

use runtime_hooks::CounterPayload;

struct RecordsOnDrop;

impl Drop for RecordsOnDrop {
    fn drop(&mut self) {
        runtime_hooks::counter(CounterPayload {
            value: 1.0,
            ..Default::default()
        });
    }
}

thread_local! {
    static LATE: RecordsOnDrop = const { RecordsOnDrop };
}

#[test]
fn records_in_late_thread_destructors_are_counted() {
    runtime_hooks::set_enabled(true);
    std::thread::spawn(|| {
        // Registered before the ring's exit guard, so (destructors run last-in,
        // first-out) it runs after the guard has retired the ring.
        LATE.with(|_| {});
        runtime_hooks::counter(CounterPayload::default());
    })
    .join()
    .unwrap();
    let mut records = Vec::new();
    runtime_hooks::drain(&mut records);
    assert_eq!(records.len(), 1);
    assert_eq!(runtime_hooks::records_lost_at_exit(), 1);
    assert_eq!(runtime_hooks::dropped_total(), 1);
    let stats = runtime_hooks::thread_stats();
    assert_eq!(
        (stats[0].recorded, stats[0].dropped, stats[0].exited),
        (1, 0, true)
    );
}
