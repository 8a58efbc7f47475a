//! A step that records more than a thread's ring holds loses nothing: while a window is
//! open a drainer thread empties the rings every few ms (`profiler::DEFAULT_DRAIN_EVERY`),
//! not only at steps. (The demo's GPT at instruction detail records about a ring's worth
//! per rank and step; before the drainer its traces lost the `ProfilerStep` ranges.)

use std::time::{Duration, Instant};

use profiler::{Activity, Profiler};
use runtime_hooks::{OperatorPayload, OperatorScope};

const RING: usize = 256;

/// Records of the calling thread that no collector has taken yet.
fn unread() -> u64 {
    let me = runtime_hooks::current_thread_id().expect("a registered thread");
    let stats = runtime_hooks::thread_stats()
        .into_iter()
        .find(|t| t.thread_id == me)
        .expect("this thread's ring");
    stats.recorded - stats.drained
}

#[test]
fn steps_longer_than_a_ring_lose_nothing() {
    runtime_hooks::set_ring_capacity(RING);
    let mut prof = Profiler::builder().activities(&[Activity::Cpu]).start();
    let mut waited_for_the_drainer = 0;
    std::thread::scope(|s| {
        s.spawn(|| {
            // One step of 8 batches of half a ring each (4 rings' worth). Between
            // batches the thread waits until its ring was emptied — by the drainer, as
            // the step does not end — and fails if that does not happen.
            for _ in 0..8 {
                for _ in 0..RING / 4 {
                    let _op = OperatorScope::new(OperatorPayload {
                        name_id: runtime_hooks::name!("aten::tiny"),
                        ..Default::default()
                    });
                }
                let deadline = Instant::now() + Duration::from_secs(30);
                while unread() > 0 {
                    assert!(
                        Instant::now() < deadline,
                        "no drain within 30 s while the step ran"
                    );
                    std::thread::sleep(Duration::from_millis(1));
                }
                waited_for_the_drainer += 1;
            }
            prof.step().unwrap();
        });
    });
    let result = prof.stop().unwrap().unwrap();
    runtime_hooks::set_ring_capacity(runtime_hooks::DEFAULT_RING_CAPACITY);
    assert_eq!(waited_for_the_drainer, 8);
    assert_eq!(result.dropped_records(), 0);
    assert_eq!(
        result.key_averages().get("aten::tiny").unwrap().count,
        (8 * RING / 4) as u64
    );
}
