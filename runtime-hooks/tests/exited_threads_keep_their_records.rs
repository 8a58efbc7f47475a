//! Threads that record and exit before any drain lose nothing: their rings stay
//! registered until drained, then are retired with their final counts kept.

use runtime_hooks::{Phase, Record};

#[test]
fn exited_threads_keep_their_records() {
    let threads = if cfg!(miri) { 2 } else { 8 };
    let per_thread: u64 = if cfg!(miri) { 10 } else { 1000 };
    runtime_hooks::set_enabled(true);
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            std::thread::Builder::new()
                .name(format!("worker-{t}"))
                .spawn(move || {
                    let step = runtime_hooks::name!("ProfilerStep");
                    for n in 0..per_thread {
                        let _range = runtime_hooks::RangeScope::new(step, n);
                    }
                })
                .unwrap()
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }

    let before = runtime_hooks::thread_stats();
    assert_eq!(before.len(), threads);
    assert!(before
        .iter()
        .all(|s| s.exited && s.drained == 0 && s.recorded == 2 * per_thread));

    // Drain in small chunks: a partly drained ring of an exited thread is not retired.
    let mut records: Vec<Record> = Vec::new();
    let first = runtime_hooks::drain_with(7, |r| records.push(*r));
    assert_eq!(first, 7);
    assert_eq!(
        runtime_hooks::thread_stats()
            .iter()
            .filter(|s| s.drained > 0)
            .count(),
        1
    );
    while runtime_hooks::drain_with(7, |r| records.push(*r)) > 0 {}
    assert_eq!(records.len() as u64, threads as u64 * 2 * per_thread);
    for s in &before {
        let mine: Vec<&Record> = records
            .iter()
            .filter(|r| r.thread_id == s.thread_id)
            .collect();
        assert_eq!(mine.len() as u64, 2 * per_thread);
        assert_eq!(mine[0].phase(), Some(Phase::Begin));
        assert_eq!(mine.last().unwrap().phase(), Some(Phase::End));
        assert_eq!(mine.last().unwrap().payload.range().value, per_thread - 1);
        let values: Vec<u64> = mine.iter().map(|r| r.payload.range().value).collect();
        assert!(values.windows(2).all(|w| w[0] <= w[1]), "out of order");
        assert!(s.thread_name.as_deref().unwrap().starts_with("worker-"));
    }

    // Retired: drained, still listed with final counts, nothing more to drain.
    let after = runtime_hooks::thread_stats();
    assert_eq!(after.len(), threads);
    assert!(after
        .iter()
        .all(|s| s.exited && s.drained == s.recorded && s.dropped == 0));
    assert_eq!(runtime_hooks::drain(&mut records), 0);
    assert_eq!(runtime_hooks::records_lost_at_exit(), 0);
}
