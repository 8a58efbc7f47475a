//! A bounded single-producer ring of [`Record`]s that a collector drains concurrently.
//!
//! The producer (the thread that owns the ring) only ever touches its own cache line
//! (`head`, a cached copy of `tail`, the drop counter) plus the slot it writes; it reads
//! the consumer's `tail` only when its cached copy says the ring looks full. A full ring
//! drops the record and counts it: the producer never waits.
//!
//! The last eighth of the slots is kept for the records an analysis cannot do without
//! and that are small and few ([`must_keep`]: user ranges, `ProfilerStep#N` among them,
//! and flow ends): other records count as dropped once only that reserve is free, so a
//! ring that overflows because its drainer fell behind still keeps the step markers and
//! the flows' ends, in the order they were recorded among the other records.
//!
//! Positions are 64-bit counters that never wrap in practice (2^64 records), so
//! `head - tail` is the number of unread records and `head` is the number recorded.

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::Record;

/// Pads and aligns a value to 128 bytes: two cache lines, because x86 prefetches lines
/// in adjacent pairs, so 64 bytes is not enough to stop false sharing.
#[repr(align(128))]
#[derive(Debug, Default)]
pub(crate) struct CachePadded<T>(pub(crate) T);

/// State written only by the producer.
#[derive(Debug, Default)]
struct Producer {
    /// Next position to write; also the count of records recorded.
    head: AtomicU64,
    /// Records dropped because the ring was full.
    dropped: AtomicU64,
    /// Producer's last view of `tail`; only the producer reads or writes it.
    cached_tail: UnsafeCell<u64>,
}

/// State written only by the (lock-holding) consumer.
#[derive(Debug, Default)]
struct Consumer {
    /// Next position to read.
    tail: AtomicU64,
    /// Serializes consumers, so any thread may drain.
    lock: Mutex<()>,
}

// `push` writes a record's first four fields as one word: they must fill bytes 0..8.
const _: () = {
    use std::mem::offset_of;
    assert!(offset_of!(Record, kind) == 0 && offset_of!(Record, phase) == 1);
    assert!(offset_of!(Record, op) == 2 && offset_of!(Record, thread_id) == 4);
    assert!(offset_of!(Record, start_ns) == 8);
};

/// Whether `record` may take the ring's reserved slots: a user range's begin or end
/// (the steps) or a flow's end.
#[inline(always)]
pub(crate) fn must_keep(record: &Record) -> bool {
    use crate::{Phase, RecordKind};
    record.kind == RecordKind::UserRange as u8
        || (record.kind == RecordKind::Flow as u8 && record.phase == Phase::End as u8)
}

/// A single-producer, lock-serialized-consumer ring of records.
pub(crate) struct Ring {
    producer: CachePadded<Producer>,
    consumer: CachePadded<Consumer>,
    slots: Box<[UnsafeCell<MaybeUninit<Record>>]>,
    mask: u64,
    /// Unread records beyond which only [`must_keep`] records are stored, minus one:
    /// `mask` less the reserve (an eighth of the slots).
    ordinary_mask: u64,
}

// SAFETY: the ring is shared between its producer thread and consumers. Slots are only
// written by the single producer (a contract of the unsafe `push`) at positions in
// `[tail, tail + capacity)` that the consumer has released (tail load with Acquire pairs
// with the consumer's Release store), and only read by one consumer at a time (under
// `consumer.lock`) at positions below `head` (head load with Acquire pairs with the
// producer's Release store). `cached_tail` is only accessed by the producer. Everything
// else is atomics or a Mutex.
unsafe impl Sync for Ring {}
// SAFETY: all fields are owned data (`Record` is `Copy` plain data); nothing refers to
// the creating thread.
unsafe impl Send for Ring {}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring")
            .field("capacity", &self.capacity())
            .field("recorded", &self.recorded())
            .field("dropped", &self.dropped())
            .field("drained", &self.drained())
            .finish()
    }
}

impl Ring {
    /// A ring holding `capacity` records, rounded up to a power of two (at least 2).
    ///
    /// The slots' memory is touched once here (one write per 4 KiB page), so the
    /// producer never takes a page fault on its first pass through the ring.
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        const SLOTS_PER_PAGE: usize = 4096 / std::mem::size_of::<Record>();
        let capacity = capacity.max(2).next_power_of_two();
        let slots: Box<[UnsafeCell<MaybeUninit<Record>>]> = (0..capacity)
            .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
            .collect();
        for slot in slots.iter().step_by(SLOTS_PER_PAGE) {
            // SAFETY: the ring is not shared yet, so this is the only access to the slot;
            // the write is volatile so that the pre-fault is not optimized away.
            unsafe { slot.get().write_volatile(MaybeUninit::zeroed()) };
        }
        Ring {
            producer: CachePadded::default(),
            consumer: CachePadded::default(),
            slots,
            mask: capacity as u64 - 1,
            ordinary_mask: (capacity - capacity / 8) as u64 - 1,
        }
    }

    /// Number of slots.
    pub(crate) fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Records written so far (not counting drops).
    pub(crate) fn recorded(&self) -> u64 {
        self.producer.0.head.load(Ordering::Acquire)
    }

    /// Records dropped because the ring was full.
    pub(crate) fn dropped(&self) -> u64 {
        self.producer.0.dropped.load(Ordering::Relaxed)
    }

    /// Records handed to a consumer so far.
    pub(crate) fn drained(&self) -> u64 {
        self.consumer.0.tail.load(Ordering::Acquire)
    }

    /// Whether every recorded record has been drained.
    pub(crate) fn is_empty(&self) -> bool {
        // Read tail first: head only grows, so a later head read can only make the
        // difference larger, never report empty while records are unread.
        let tail = self.drained();
        self.recorded() == tail
    }

    /// Appends `record`, or counts it as dropped if the ring is full (for a record that
    /// is not [`must_keep`]: full but for the reserve). Returns whether it was stored.
    /// Never blocks.
    ///
    /// # Safety
    ///
    /// At most one thread may call `push` on a given ring at any time (single producer).
    #[inline]
    pub(crate) unsafe fn push(&self, record: &Record) -> bool {
        let producer = &self.producer.0;
        let head = producer.head.load(Ordering::Relaxed);
        // SAFETY: `cached_tail` is only accessed by the producer, and the caller
        // guarantees there is one producer at a time, so this is an exclusive access.
        let cached_tail = unsafe { &mut *producer.cached_tail.get() };
        let limit = if must_keep(record) {
            self.mask
        } else {
            self.ordinary_mask
        };
        if head - *cached_tail > limit {
            *cached_tail = self.consumer.0.tail.load(Ordering::Acquire);
            if head - *cached_tail > limit {
                // Single writer: a plain load + store is exact and avoids a locked RMW.
                let dropped = producer.dropped.load(Ordering::Relaxed);
                producer.dropped.store(dropped + 1, Ordering::Relaxed);
                return false;
            }
        }
        let index = (head & self.mask) as usize;
        // SAFETY: `index <= mask < slots.len()`. The slot at `head` is free: the consumer
        // finished reading it before publishing a `tail` with `head - tail < capacity`
        // (Acquire above pairs with its Release store), and no other producer exists.
        unsafe {
            let slot = (*self.slots.get_unchecked(index).get()).as_mut_ptr();
            // Field by field into the slot, the header as one word built in registers: a
            // whole-record copy would load 16-byte chunks of a record the caller has just
            // stored field by field (1-, 2-, 4- and 8-byte stores), and a load that spans
            // several stores still in flight cannot be forwarded from them; it waits.
            let mut header = [0u8; 8];
            header[0] = record.kind;
            header[1] = record.phase;
            header[2..4].copy_from_slice(&record.op.to_ne_bytes());
            header[4..8].copy_from_slice(&record.thread_id.to_ne_bytes());
            let header = u64::from_ne_bytes(header);
            slot.cast::<u64>().write(header);
            std::ptr::addr_of_mut!((*slot).start_ns).write(record.start_ns);
            std::ptr::addr_of_mut!((*slot).end_ns).write(record.end_ns);
            std::ptr::addr_of_mut!((*slot).payload).write(record.payload);
        }
        producer.head.store(head + 1, Ordering::Release);
        true
    }

    /// Hands up to `max` unread records, oldest first, to `sink`, then releases their
    /// slots to the producer. Returns how many were handed over. Safe to call from any
    /// thread, concurrently with the producer; consumers are serialized by a lock.
    pub(crate) fn drain_with(&self, max: usize, mut sink: impl FnMut(&Record)) -> usize {
        let consumer = &self.consumer.0;
        let _serialize = consumer
            .lock
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let tail = consumer.tail.load(Ordering::Relaxed);
        let head = self.producer.0.head.load(Ordering::Acquire);
        let count = (head - tail).min(max as u64);
        for position in tail..tail + count {
            let index = (position & self.mask) as usize;
            // SAFETY: `position < head`, so the producer wrote this slot (its Release
            // store of `head` pairs with our Acquire load) and will not write it again
            // until we publish a tail past it; we hold the consumer lock, so no other
            // consumer reads or releases it concurrently.
            let record = unsafe { (*self.slots[index].get()).assume_init_ref() };
            sink(record);
        }
        consumer.tail.store(tail + count, Ordering::Release);
        count as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Payload, Phase, RecordKind};
    use std::sync::Arc;

    fn rec(n: u64) -> Record {
        Record::new(
            RecordKind::Counter,
            Phase::Instant,
            0,
            n,
            n,
            Payload::default(),
        )
    }

    #[test]
    fn full_ring_drops_and_counts() {
        let ring = Ring::with_capacity(4);
        for n in 0..6 {
            // SAFETY: this test is the only producer.
            let stored = unsafe { ring.push(&rec(n)) };
            assert_eq!(stored, n < 4);
        }
        assert_eq!((ring.recorded(), ring.dropped()), (4, 2));
        let mut seen = Vec::new();
        assert_eq!(ring.drain_with(3, |r| seen.push(r.start_ns)), 3);
        assert_eq!(seen, [0, 1, 2]);
        // SAFETY: single producer.
        assert!(unsafe { ring.push(&rec(10)) });
        ring.drain_with(usize::MAX, |r| seen.push(r.start_ns));
        assert_eq!(seen, [0, 1, 2, 3, 10]);
        assert!(ring.is_empty());
        assert_eq!(ring.capacity(), 4);
    }

    #[test]
    fn a_full_ring_keeps_its_reserve_for_user_ranges_and_flow_ends() {
        let ring = Ring::with_capacity(64);
        let keep = |kind, phase, n| Record::new(kind, phase, 0, n, n, Payload::default());
        // 64 slots, 8 of them reserved: ordinary records stop at 56.
        let stored = (0..100)
            // SAFETY: this test is the only producer.
            .filter(|&n| unsafe { ring.push(&rec(n)) })
            .count();
        assert_eq!((stored, ring.dropped()), (56, 44));
        // A flow's start is ordinary; its end, and a user range, take the reserve.
        let flow_start = keep(RecordKind::Flow, Phase::Begin, 100);
        // SAFETY: single producer.
        assert!(!unsafe { ring.push(&flow_start) });
        let mut kept = Vec::new();
        for n in 101..120 {
            let (kind, phase) = match n % 3 {
                0 => (RecordKind::UserRange, Phase::Begin),
                1 => (RecordKind::UserRange, Phase::End),
                _ => (RecordKind::Flow, Phase::End),
            };
            // SAFETY: single producer.
            if unsafe { ring.push(&keep(kind, phase, n)) } {
                kept.push(n);
            }
        }
        assert_eq!(
            kept,
            (101..109).collect::<Vec<u64>>(),
            "the 8 reserved slots"
        );
        assert_eq!(ring.dropped(), 44 + 1 + 11);
        // They come out after the ordinary records, in order.
        let mut seen = Vec::new();
        ring.drain_with(usize::MAX, |r| seen.push(r.start_ns));
        assert_eq!(seen[..56], (0..56).collect::<Vec<u64>>()[..]);
        assert_eq!(seen[56..], kept[..]);
    }

    #[test]
    fn capacity_rounds_up_to_a_power_of_two() {
        assert_eq!(Ring::with_capacity(0).capacity(), 2);
        assert_eq!(Ring::with_capacity(5).capacity(), 8);
    }

    /// One producer and one concurrent consumer: every record arrives once, in order,
    /// and recorded + dropped == attempted.
    #[test]
    fn concurrent_drain_sees_every_record_in_order() {
        let attempts: u64 = if cfg!(miri) { 50 } else { 100_000 };
        let ring = Arc::new(Ring::with_capacity(if cfg!(miri) { 8 } else { 256 }));
        let producer = {
            let ring = Arc::clone(&ring);
            std::thread::spawn(move || {
                for n in 0..attempts {
                    // SAFETY: this thread is the ring's only producer.
                    unsafe { ring.push(&rec(n)) };
                }
            })
        };
        let mut seen = Vec::new();
        while !producer.is_finished() {
            ring.drain_with(usize::MAX, |r| seen.push(r.start_ns));
            std::thread::yield_now();
        }
        producer.join().unwrap();
        ring.drain_with(usize::MAX, |r| seen.push(r.start_ns));
        assert_eq!(ring.recorded() + ring.dropped(), attempts);
        assert_eq!(seen.len() as u64, ring.recorded());
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "records out of order");
    }
}
