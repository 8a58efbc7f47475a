//! Several producer threads record into small rings while a drainer drains concurrently:
//! for every thread, recorded + dropped == attempted exactly, every recorded record is
//! drained exactly once, in the order the thread recorded it, and no producer blocks.
//! The drainer collects into [`RecordBlocks`], as the profiler's windows do.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use runtime_hooks::{CounterPayload, RecordBlocks};

#[test]
fn producers_and_drainer_lose_nothing() {
    let producers = if cfg!(miri) { 2 } else { 4 };
    let attempts: u64 = if cfg!(miri) { 50 } else { 100_000 };
    // Small rings so that some records are dropped while the drainer runs.
    runtime_hooks::set_ring_capacity(if cfg!(miri) { 16 } else { 1024 });
    runtime_hooks::set_enabled(true);

    let done = Arc::new(AtomicBool::new(false));
    let drainer = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut drained = RecordBlocks::new();
            while !done.load(Ordering::Acquire) {
                drained.drain_rings();
                std::thread::yield_now();
            }
            drained
        })
    };
    let threads: Vec<_> = (0..producers)
        .map(|_| {
            std::thread::spawn(move || {
                for n in 0..attempts {
                    // Let the drainer in now and then, so rings fill, drain and refill.
                    if n % 256 == 0 {
                        std::thread::yield_now();
                    }
                    runtime_hooks::counter_at(
                        n,
                        CounterPayload {
                            value: n as f64,
                            ..Default::default()
                        },
                    );
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    done.store(true, Ordering::Release);
    let mut blocks = drainer.join().unwrap();
    blocks.drain_rings();
    let drained = blocks.into_vec();

    let mut by_thread: HashMap<u32, Vec<u64>> = HashMap::new();
    for record in &drained {
        by_thread
            .entry(record.thread_id)
            .or_default()
            .push(record.start_ns);
    }
    let stats = runtime_hooks::thread_stats();
    assert_eq!(stats.len(), producers, "{stats:?}");
    let mut dropped_sum = 0;
    for s in &stats {
        assert!(s.exited);
        assert_eq!(s.attempted(), attempts, "{s:?}");
        assert_eq!(s.recorded + s.dropped, attempts);
        assert_eq!(s.drained, s.recorded, "{s:?}");
        let seen = by_thread.get(&s.thread_id).map_or(&[][..], Vec::as_slice);
        assert_eq!(seen.len() as u64, s.recorded, "thread {}", s.thread_id);
        assert!(
            seen.windows(2).all(|w| w[0] < w[1]),
            "thread {} out of order",
            s.thread_id
        );
        dropped_sum += s.dropped;
    }
    assert_eq!(runtime_hooks::dropped_total(), dropped_sum);
    eprintln!("drained {} records, dropped {dropped_sum}", drained.len());
    assert_eq!(
        drained.len() as u64 + dropped_sum,
        attempts * producers as u64
    );
}
