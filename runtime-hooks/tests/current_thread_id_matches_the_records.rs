//! `current_thread_id` is the `thread_id` the calling thread's records carry.

#[test]
fn current_thread_id_is_the_thread_id_of_its_records() {
    runtime_hooks::set_enabled(true);
    let (own, other) = std::thread::spawn(|| {
        let own = runtime_hooks::current_thread_id().unwrap();
        runtime_hooks::counter(runtime_hooks::CounterPayload::default());
        (own, runtime_hooks::current_thread_id().unwrap())
    })
    .join()
    .unwrap();
    assert_eq!(own, other);
    let main = runtime_hooks::current_thread_id().unwrap();
    assert_ne!(main, own);
    let mut records = Vec::new();
    runtime_hooks::drain(&mut records);
    assert!(records.iter().any(|r| r.thread_id == own));
    let stats = runtime_hooks::thread_stats();
    assert!(stats.iter().any(|s| s.thread_id == own));
}
