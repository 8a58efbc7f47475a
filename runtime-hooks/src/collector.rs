//! The collector side: the registry of every thread's ring, draining and statistics.
//!
//! Any thread may drain at any time while producers keep recording; each ring has its
//! own consumer lock, and the registry lock is held only to copy the list of rings, so
//! a drain never stalls a producer. Rings of exited threads stay registered until a
//! drain has emptied them, then they are retired and only their final
//! [`ThreadStats`] are kept.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::local::{ThreadRing, LOST_AT_EXIT};
use crate::Record;

/// Default ring size in records per thread (64 bytes each: 2 MiB per thread).
pub const DEFAULT_RING_CAPACITY: usize = 32 * 1024;

/// Largest ring size in records (1 GiB of records per thread).
pub const MAX_RING_CAPACITY: usize = 1 << 24;

static RING_CAPACITY: AtomicUsize = AtomicUsize::new(DEFAULT_RING_CAPACITY);

struct Registry {
    live: Vec<Arc<ThreadRing>>,
    retired: Vec<ThreadStats>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    live: Vec::new(),
    retired: Vec::new(),
});

fn registry() -> MutexGuard<'static, Registry> {
    // Every update is a single push or retain, so the data is consistent even after a
    // panic in a holder; keep going rather than losing the collector.
    REGISTRY
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub(crate) fn register(ring: Arc<ThreadRing>) {
    registry().live.push(ring);
}

/// Sets the ring size, in records, for threads that record for the first time from now
/// on, rounded up to a power of two and clamped to `2..=`[`MAX_RING_CAPACITY`].
/// Existing rings keep their size.
pub fn set_ring_capacity(records: usize) {
    let records = records.clamp(2, MAX_RING_CAPACITY).next_power_of_two();
    RING_CAPACITY.store(records, Ordering::Relaxed);
}

/// The ring size, in records, that newly registering threads get.
pub fn ring_capacity() -> usize {
    RING_CAPACITY.load(Ordering::Relaxed)
}

/// Registers the calling thread's ring now, instead of at its first record.
///
/// Registration allocates the ring and touches every page of it (about 0.7 ms for the
/// default 2 MiB ring on the development VM), then takes the registry lock. A runtime
/// calls this when it starts a thread that will record, so that the thread's first
/// record is as cheap as the others. Idempotent; returns false only if the thread is
/// already tearing down its thread locals. Works whether or not recording is enabled.
pub fn register_thread() -> bool {
    crate::local::LOCAL.with(|local| local.ensure_registered())
}

/// The calling thread's registry index (the [`Record::thread_id`] of its records and the
/// [`ThreadStats::thread_id`] of its statistics), registering its ring first if needed;
/// `None` only while the thread tears down its thread locals.
///
/// A runtime that gives threads an identity of its own (a rank, a worker pool slot)
/// uses it to map its threads to their records.
pub fn current_thread_id() -> Option<u32> {
    crate::local::LOCAL.with(|local| local.thread_id())
}

/// Counters and identity of one recording thread.
///
/// For every thread, `recorded + dropped` is exactly the number of records it attempted
/// while registered, and `drained <= recorded`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadStats {
    /// Registry index, as stored in [`Record::thread_id`].
    pub thread_id: u32,
    /// The kernel's thread id (Linux `gettid`), 0 where unknown.
    pub os_tid: u64,
    /// The Rust thread name, if any.
    pub thread_name: Option<String>,
    /// Records stored in the ring.
    pub recorded: u64,
    /// Records dropped because the ring was full.
    pub dropped: u64,
    /// Records handed to a collector.
    pub drained: u64,
    /// Ring size in records.
    pub capacity: usize,
    /// Whether the thread has exited.
    pub exited: bool,
}

impl ThreadStats {
    /// Records the thread tried to record: `recorded + dropped`.
    pub fn attempted(&self) -> u64 {
        self.recorded + self.dropped
    }

    fn of(ring: &ThreadRing) -> Self {
        // Read `exited` first so that, when it is set, the counters are final.
        let exited = ring.exited.load(Ordering::Acquire);
        ThreadStats {
            thread_id: ring.thread_id,
            os_tid: ring.os_tid,
            thread_name: ring.thread_name.clone(),
            recorded: ring.ring.recorded(),
            dropped: ring.ring.dropped(),
            drained: ring.ring.drained(),
            capacity: ring.ring.capacity(),
            exited,
        }
    }
}

/// Appends every unread record of every thread to `out` and returns how many.
///
/// Records of one thread come out in the order that thread recorded them; threads are
/// visited in registration order. Safe to call from any thread while others record.
pub fn drain(out: &mut Vec<Record>) -> usize {
    drain_with(usize::MAX, |record| out.push(*record))
}

/// Hands at most `max` unread records to `sink` (each thread's oldest first) and returns
/// how many. Rings of exited threads that end up empty are retired.
pub fn drain_with(max: usize, mut sink: impl FnMut(&Record)) -> usize {
    let rings: Vec<Arc<ThreadRing>> = registry().live.clone();
    let mut drained = 0;
    for ring in &rings {
        if drained == max {
            break;
        }
        drained += ring.ring.drain_with(max - drained, &mut sink);
    }
    retire_exited(&rings);
    drained
}

/// Moves rings of exited threads that are fully drained out of the registry.
fn retire_exited(candidates: &[Arc<ThreadRing>]) {
    let done = |ring: &ThreadRing| ring.exited.load(Ordering::Acquire) && ring.ring.is_empty();
    if !candidates.iter().any(|ring| done(ring)) {
        return;
    }
    let mut registry = registry();
    let mut index = 0;
    while index < registry.live.len() {
        if done(&registry.live[index]) {
            let ring = registry.live.swap_remove(index);
            registry.retired.push(ThreadStats::of(&ring));
        } else {
            index += 1;
        }
    }
    // Keep registration order for the remaining rings.
    registry.live.sort_by_key(|ring| ring.thread_id);
}

/// Statistics of every thread that ever recorded: live ones, exited ones not yet
/// drained, and retired ones, ordered by `thread_id`.
pub fn thread_stats() -> Vec<ThreadStats> {
    let registry = registry();
    let mut stats: Vec<ThreadStats> = registry.retired.clone();
    stats.extend(registry.live.iter().map(|ring| ThreadStats::of(ring)));
    drop(registry);
    stats.sort_by_key(|s| s.thread_id);
    stats
}

/// Records lost in total: dropped on full rings plus [`records_lost_at_exit`]. This is
/// the number a trace should state as dropped.
pub fn dropped_total() -> u64 {
    let from_rings: u64 = {
        let registry = registry();
        let retired: u64 = registry.retired.iter().map(|s| s.dropped).sum();
        retired
            + registry
                .live
                .iter()
                .map(|ring| ring.ring.dropped())
                .sum::<u64>()
    };
    from_rings + records_lost_at_exit()
}

/// Records attempted by threads while they were tearing down their thread locals (after
/// their ring was retired); they cannot be stored and are only counted.
pub fn records_lost_at_exit() -> u64 {
    LOST_AT_EXIT.load(Ordering::Relaxed)
}
