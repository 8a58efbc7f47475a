//! Keeps the rings from overflowing while a window records: PyTorch calls the plugin
//! only at a window's start and stop, and a thread's ring holds 32,768 records (about
//! 5,000 ops), so a background thread drains every thread's ring into the window every
//! few milliseconds, as the `profiler` crate's sessions do at each step. The window
//! keeps them in [`RecordBlocks`], which never move: a growing `Vec` copied the whole
//! window at each doubling, stalling the drain while the rings filled.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use runtime_hooks::{Record, RecordBlocks};

#[derive(Debug)]
struct Running {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<()>,
    records: Arc<Mutex<RecordBlocks>>,
    dropped_before: u64,
}

static RUNNING: Mutex<Option<Running>> = Mutex::new(None);

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// Drops what was recorded so far and starts draining into a new window every
/// `interval`. A window already open is closed and its records dropped.
pub(crate) fn begin(interval: Duration) {
    drop(end());
    runtime_hooks::drain_with(usize::MAX, |_| {});
    let stop = Arc::new(AtomicBool::new(false));
    let records = Arc::new(Mutex::new(RecordBlocks::new()));
    let handle = {
        let (stop, records) = (Arc::clone(&stop), Arc::clone(&records));
        std::thread::Builder::new()
            .name("neuronprof-drain".into())
            .spawn(move || {
                while !stop.load(Ordering::Acquire) {
                    std::thread::sleep(interval);
                    lock(&records).drain_rings();
                }
            })
            .expect("spawn the drain thread")
    };
    *lock(&RUNNING) = Some(Running {
        stop,
        handle,
        records,
        dropped_before: runtime_hooks::dropped_total(),
    });
}

/// Stops the window begun by [`begin`] (if any) and returns its records, the rest of
/// the rings included, and the records lost since it began. Without an open window:
/// whatever the rings hold, and 0.
pub(crate) fn end() -> (Vec<Record>, u64) {
    let running = lock(&RUNNING).take();
    let Some(running) = running else {
        let mut records = Vec::new();
        runtime_hooks::drain(&mut records);
        return (records, 0);
    };
    running.stop.store(true, Ordering::Release);
    let _ = running.handle.join();
    let mut blocks = std::mem::take(&mut *lock(&running.records));
    blocks.drain_rings();
    let records = blocks.into_vec();
    let dropped = runtime_hooks::dropped_total().saturating_sub(running.dropped_before);
    (records, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_longer_than_a_ring_keeps_every_record() {
        let _recording = crate::tests::recording();
        runtime_hooks::set_enabled(true);
        begin(Duration::from_millis(1));
        // More records than a default ring holds, from a thread of its own, paced so the
        // drain thread keeps up.
        let recorded = std::thread::spawn(|| {
            let name = runtime_hooks::intern("collector_test_range");
            let mut n = 0u64;
            for chunk in 0..20 {
                for i in 0..2_500u64 {
                    runtime_hooks::range_begin(runtime_hooks::RangePayload {
                        name_id: name,
                        value: chunk * 10_000 + i,
                        ..Default::default()
                    });
                    n += 1;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            n
        })
        .join()
        .unwrap();
        let (records, dropped) = end();
        runtime_hooks::set_enabled(false);
        assert!(recorded > runtime_hooks::DEFAULT_RING_CAPACITY as u64);
        assert_eq!(dropped, 0);
        let ours = records
            .iter()
            .filter(|r| matches!(r.event(), Some(runtime_hooks::Event::UserRange(p)) if p.value < 200_000))
            .count() as u64;
        assert!(ours >= recorded, "{ours} of {recorded}");
    }
}
