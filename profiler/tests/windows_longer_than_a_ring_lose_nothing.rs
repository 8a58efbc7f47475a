//! A window of many steps records more than a thread's ring holds: the session moves
//! the rings' records into the window at every step, so nothing is dropped as long as
//! each step fits in a ring.

use profiler::{Activity, Profiler};
use runtime_hooks::{OperatorPayload, OperatorScope};

#[test]
fn windows_longer_than_a_ring_lose_nothing() {
    runtime_hooks::set_ring_capacity(256);
    let mut prof = Profiler::builder().activities(&[Activity::Cpu]).start();
    // 10 steps of 100 operators (200 records) on a thread whose ring holds 256.
    std::thread::scope(|s| {
        s.spawn(|| {
            for _ in 0..10 {
                for _ in 0..100 {
                    let _op = OperatorScope::new(OperatorPayload {
                        name_id: runtime_hooks::name!("aten::tiny"),
                        ..Default::default()
                    });
                }
                prof.step().unwrap();
            }
        });
    });
    let result = prof.stop().unwrap().unwrap();
    runtime_hooks::set_ring_capacity(runtime_hooks::DEFAULT_RING_CAPACITY);
    assert_eq!(result.dropped_records(), 0);
    assert_eq!(result.key_averages().get("aten::tiny").unwrap().count, 1000);
    // Step 10 began on the worker thread and ended at stop() on this one: unpaired.
    assert_eq!(result.steps(), (0..10).collect::<Vec<u64>>());
}
