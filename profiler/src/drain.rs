//! What an open window has collected from the rings, and the background thread that
//! keeps collecting between steps.
//!
//! A thread's ring holds [`runtime_hooks::DEFAULT_RING_CAPACITY`] records. Draining only
//! at steps loses whatever a thread records beyond that within one step — and a step of
//! the demo's GPT at instruction detail records about as many per rank as a ring holds
//! (the `ProfilerStep` range itself was among the records lost, so the trace had no
//! steps). So while a window is open a drainer thread moves the rings' records into the
//! window every [`DEFAULT_DRAIN_EVERY`] as well (the PyTorch plugin drains on the same
//! period): a thread loses records only if it fills its ring faster than that. Drains
//! are serialized by the window's lock (the rings also serialize their consumers), and
//! each thread's records stay in the order it recorded them, as a step's drain keeps
//! them. The drainer records nothing itself.
//!
//! The window keeps its records in [`runtime_hooks::RecordBlocks`] (2 MiB blocks that
//! never move, each mapped in one call), so a drain costs what it moves, never what the
//! window already holds. With one growing `Vec`, every doubling copied the whole window
//! under the drainer (105 ms at a million records on the development VM) and its fresh
//! pages cost a fault each: the demo's GPT on 4 ranks, timing only with AdamW and
//! instructions, records about a million records a second per rank in a release build,
//! fills a 32 Ki-record ring in tens of milliseconds, and lost about 10,000 records a
//! run; now none (`profiler/examples/drain_load.rs`, `docs/PERFORMANCE.md`, "Collecting
//! records").

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use runtime_hooks::{RecordBlocks, ThreadStats};

/// How often an open window's drainer empties the rings, by default.
pub const DEFAULT_DRAIN_EVERY: Duration = Duration::from_millis(2);

/// Records and threads an open window has collected so far.
#[derive(Debug, Default)]
pub(crate) struct Collected {
    /// Each thread's records in the order it recorded them.
    pub(crate) records: RecordBlocks,
    /// Threads seen at the drains (a thread that exits mid-window keeps its name).
    pub(crate) threads: HashMap<u32, ThreadStats>,
}

impl Collected {
    /// Moves what the rings hold in here.
    fn collect(&mut self) {
        self.records.drain_rings();
        for thread in runtime_hooks::thread_stats() {
            self.threads.insert(thread.thread_id, thread);
        }
    }
}

/// An open window's collection, shared with its drainer thread (if any).
#[derive(Debug)]
pub(crate) struct Collector {
    collected: Arc<Mutex<Collected>>,
    drainer: Option<Drainer>,
}

#[derive(Debug)]
struct Drainer {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

fn lock(collected: &Mutex<Collected>) -> MutexGuard<'_, Collected> {
    // A drain is one append; a panic inside it cannot leave the records torn.
    collected.lock().unwrap_or_else(|p| p.into_inner())
}

impl Collector {
    /// Starts collecting; with `every`, a drainer thread also collects on that period
    /// until [`Collector::finish`]. A drainer that cannot be spawned leaves collection
    /// to the steps (as with `every` of `None`).
    pub(crate) fn start(every: Option<Duration>) -> Self {
        let collected = Arc::new(Mutex::new(Collected::default()));
        let drainer = every.and_then(|period| {
            let stop = Arc::new(AtomicBool::new(false));
            let (shared, stopped) = (Arc::clone(&collected), Arc::clone(&stop));
            std::thread::Builder::new()
                .name("neuronprof-drain".to_owned())
                .spawn(move || {
                    while !stopped.load(Ordering::Acquire) {
                        std::thread::park_timeout(period);
                        lock(&shared).collect();
                    }
                })
                .ok()
                .map(|thread| Drainer { stop, thread })
        });
        Collector { collected, drainer }
    }

    /// Collects now (at a step).
    pub(crate) fn collect(&self) {
        lock(&self.collected).collect();
    }

    /// Stops the drainer, collects what is left and hands everything over.
    pub(crate) fn finish(mut self) -> Collected {
        self.stop_drainer();
        let mut collected = std::mem::take(&mut *lock(&self.collected));
        collected.collect();
        collected
    }
}

impl Collector {
    fn stop_drainer(&mut self) {
        if let Some(drainer) = self.drainer.take() {
            drainer.stop.store(true, Ordering::Release);
            drainer.thread.thread().unpark();
            // The drainer only drains; a panic there (none is expected) loses no
            // records that a later collection does not pick up.
            let _ = drainer.thread.join();
        }
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.stop_drainer();
    }
}
