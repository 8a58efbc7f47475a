//! The caching device allocator of one logical core.
//!
//! Like the Neuron runtime's (hw.md "What the real runtime does": a caching segment
//! allocator with a small pool under 1 MB and a large pool at or above it; requests
//! under 16 MB round up to size classes, minimum 256 B), and in its policy like the
//! PyTorch caching allocator it resembles:
//! - **Size classes.** Requests round up to at least 256 B; under 16 MiB to one of four
//!   classes per power of two (multiples of 256 B); from 16 MiB to a multiple of 2 MiB.
//! - **Pools and segments.** Blocks under 1 MiB come from the small pool, carved from
//!   2 MiB segments; larger ones from the large pool, carved from 20 MiB segments when
//!   under 10 MiB and otherwise from a segment of exactly their size. Segments are
//!   reserved from the core's HBM address range (first fit).
//! - **Split and reuse.** The best-fitting free block of the pool is used and split when
//!   the rest is worth keeping (≥ 256 B in the small pool, > 1 MiB in the large pool);
//!   a freed block merges with free neighbours of its segment.
//! - **Out of memory.** When no segment can be reserved, fully free cached segments are
//!   released and the reservation retried; if it still fails the request returns
//!   [`BackendError::OutOfMemory`] and nothing changes, so the caller can free and retry.
//! - **Stream-ordered reuse** (as PyTorch's CUDA caching allocator). Every segment
//!   belongs to the stream (queue) that reserved it, and its blocks go only to requests
//!   on that stream: work on one stream runs in order, so a block freed by the host is
//!   safe to hand to that stream's next kernel at once. A block another stream may
//!   still use (`record_stream`) is freed with the modeled instant that stream's queued
//!   work ends ([`Allocator::free_pending`]): it stops counting as allocated at once,
//!   stays *active* (in the statistics) and out of reach until
//!   [`Allocator::release_completed`] sees that instant pass.
//!
//! Every allocate and free is recorded ([`runtime_hooks::memory`]) with the device's
//! allocated and reserved totals after the change.
//!
//! One deliberate difference: hw.md notes that the real runtime's statistics reflect
//! queued work only after a synchronize. Here the statistics are exact at every call
//! (a tensor's memory is counted from the op that allocates it, as PyTorch's caching
//! allocator counts it), because the profiler's `[memory]` events and the analyses'
//! memory timeline need the totals at the instant of each change, not at the next
//! synchronize.

mod stats;

use std::collections::{BTreeMap, BTreeSet};

use runtime_hooks::{MemoryAction, MemoryPayload};

pub use stats::{
    CategoryStats, MemoryCategory, MemoryStats, PoolStats, Stat, StatArray, LARGE_POOL_STAT,
    SMALL_POOL_STAT,
};

use crate::BackendError;

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
/// Smallest block and size-class granularity.
pub const MIN_BLOCK_BYTES: u64 = 256;
/// Blocks below this come from the small pool.
pub const SMALL_POOL_LIMIT_BYTES: u64 = MIB;
/// Requests below this round to size classes; above to 2 MiB multiples.
pub const SIZE_CLASS_LIMIT_BYTES: u64 = 16 * MIB;
const SMALL_SEGMENT_BYTES: u64 = 2 * MIB;
const MEDIUM_SEGMENT_BYTES: u64 = 20 * MIB;
const MEDIUM_LIMIT_BYTES: u64 = 10 * MIB;
const LARGE_ROUNDING_BYTES: u64 = 2 * MIB;

/// Rounds a request to its size class (see the module docs).
pub fn size_class(requested_bytes: u64) -> u64 {
    let bytes = requested_bytes.max(MIN_BLOCK_BYTES);
    if bytes >= SIZE_CLASS_LIMIT_BYTES {
        return bytes.div_ceil(LARGE_ROUNDING_BYTES) * LARGE_ROUNDING_BYTES;
    }
    let lower_pow2 = 1u64 << (63 - bytes.leading_zeros());
    let step = (lower_pow2 / 4).max(MIN_BLOCK_BYTES);
    bytes.div_ceil(step) * step
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pool {
    Small,
    Large,
}

impl Pool {
    /// Index in a [`StatArray`].
    fn stat(self) -> usize {
        match self {
            Pool::Small => SMALL_POOL_STAT,
            Pool::Large => LARGE_POOL_STAT,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Block {
    bytes: u64,
    /// Bytes the caller asked for (0 for a free block).
    requested: u64,
    segment_addr: u64,
    /// Handed out and not yet reusable (allocated, or freed and pending).
    allocated: bool,
    /// Freed by the host while a stream may still use it.
    pending: bool,
    category: MemoryCategory,
}

impl Block {
    fn free(bytes: u64, segment_addr: u64) -> Self {
        Block {
            bytes,
            requested: 0,
            segment_addr,
            allocated: false,
            pending: false,
            category: MemoryCategory::Other,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Segment {
    bytes: u64,
    pool: Pool,
    /// The stream (queue) whose requests its blocks serve.
    stream: u16,
}

/// What a block of a segment holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockState {
    /// Handed out and not freed.
    Allocated,
    /// Freed by the host while a stream may still use it.
    PendingFree,
    /// Free (cached).
    Free,
}

/// One block of a segment, as a memory snapshot shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockInfo {
    /// Address of the block's segment.
    pub segment_addr: u64,
    /// Size of the segment.
    pub segment_bytes: u64,
    /// Whether the segment is of the small pool.
    pub small_pool: bool,
    /// The stream (queue) the segment serves.
    pub stream: u16,
    /// Address of the block.
    pub addr: u64,
    /// Size of the block.
    pub bytes: u64,
    /// Bytes its caller asked for (0 for a free block).
    pub requested_bytes: u64,
    /// What it holds.
    pub state: BlockState,
}

/// A free block in a pool's free set: by stream, then best fit by (size, address).
type FreeKey = (u16, u64, u64);

/// One logical core's caching allocator.
#[derive(Debug)]
pub(crate) struct Allocator {
    device_index: u16,
    capacity_bytes: u64,
    /// Free blocks of each pool, ordered by (stream, size, address) for best fit.
    free_small: BTreeSet<FreeKey>,
    free_large: BTreeSet<FreeKey>,
    /// Blocks freed while a stream may still use them: (modeled instant that stream
    /// passes the free, address).
    pending: Vec<(u64, u64)>,
    /// Every block of every segment by address.
    blocks: BTreeMap<u64, Block>,
    segments: BTreeMap<u64, Segment>,
    /// Unreserved HBM ranges: address → bytes.
    hbm_free: BTreeMap<u64, u64>,
    stats: MemoryStats,
}

impl Allocator {
    /// An empty allocator over `capacity_bytes` of HBM.
    pub(crate) fn new(device_index: u16, capacity_bytes: u64) -> Self {
        // Each device gets its own address range so addresses in traces are distinct.
        let base_addr = (u64::from(device_index) + 1) << 40;
        Allocator {
            device_index,
            capacity_bytes,
            free_small: BTreeSet::new(),
            free_large: BTreeSet::new(),
            pending: Vec::new(),
            blocks: BTreeMap::new(),
            segments: BTreeMap::new(),
            hbm_free: BTreeMap::from([(base_addr, capacity_bytes)]),
            stats: MemoryStats::default(),
        }
    }

    /// Allocates a block for `requested_bytes` on stream 0; returns its address and size.
    pub(crate) fn allocate(
        &mut self,
        requested_bytes: u64,
        category: MemoryCategory,
    ) -> Result<(u64, u64), BackendError> {
        self.allocate_on(requested_bytes, category, 0)
    }

    /// Allocates a block for `requested_bytes` for work on stream (queue) `stream`, from
    /// that stream's free blocks or a new segment of its own; returns its address and
    /// size.
    pub(crate) fn allocate_on(
        &mut self,
        requested_bytes: u64,
        category: MemoryCategory,
        stream: u16,
    ) -> Result<(u64, u64), BackendError> {
        let bytes = size_class(requested_bytes);
        let pool = if bytes < SMALL_POOL_LIMIT_BYTES {
            Pool::Small
        } else {
            Pool::Large
        };
        let addr = match self.best_fit(pool, stream, bytes) {
            Some(addr) => addr,
            None => self.reserve_segment(pool, stream, bytes)?,
        };
        // An unsplit block may be a little larger than the size class: count what it holds.
        let bytes = self.take_block(addr, bytes, pool, category, requested_bytes);
        self.stats
            .note_allocate(bytes, requested_bytes, category, pool.stat());
        self.record(MemoryAction::Allocate, addr, bytes, category);
        Ok((addr, bytes))
    }

    /// Frees the block at `addr` (returned by [`allocate`](Self::allocate)): reusable at
    /// once by its stream.
    pub(crate) fn free(&mut self, addr: u64) {
        if self.begin_free(addr) {
            self.finish_free(addr);
        }
    }

    /// Frees the block at `addr` while another stream may use it until the modeled
    /// instant `ready_ns`: no longer allocated, but reused only once
    /// [`release_completed`](Self::release_completed) is called with an instant at or
    /// after `ready_ns`.
    pub(crate) fn free_pending(&mut self, addr: u64, ready_ns: u64) {
        if self.begin_free(addr) {
            if let Some(block) = self.blocks.get_mut(&addr) {
                block.pending = true;
            }
            self.pending.push((ready_ns, addr));
        }
    }

    /// Makes the pending blocks whose streams passed their free by `now_ns` reusable;
    /// returns how many.
    pub(crate) fn release_completed(&mut self, now_ns: u64) -> usize {
        let (done, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|&(ready_ns, _)| ready_ns <= now_ns);
        self.pending = waiting;
        for &(_, addr) in &done {
            self.finish_free(addr);
        }
        done.len()
    }

    /// The latest instant a pending block waits for (None: nothing pending).
    pub(crate) fn latest_pending_ns(&self) -> Option<u64> {
        self.pending.iter().map(|&(ready_ns, _)| ready_ns).max()
    }

    /// Counts one wait for every stream to pass the pending frees (before a retry).
    pub(crate) fn note_sync_all_streams(&mut self) {
        self.stats.num_sync_all_streams += 1;
    }

    /// The host's free of an allocated block: it stops counting as allocated. False
    /// when `addr` is no allocated block (unknown, free, or already freed).
    fn begin_free(&mut self, addr: u64) -> bool {
        let Some(block) = self.blocks.get(&addr).copied() else {
            return false;
        };
        if !block.allocated || block.pending {
            return false;
        }
        let pool = self.segments[&block.segment_addr].pool;
        self.stats
            .note_free(block.bytes, block.category, pool.stat());
        self.record(MemoryAction::Free, addr, block.bytes, block.category);
        true
    }

    /// A freed block no stream uses any more: back to its pool's free set.
    fn finish_free(&mut self, addr: u64) {
        let block = self.blocks[&addr];
        let pool = self.segments[&block.segment_addr].pool;
        self.stats
            .note_inactive(block.bytes, block.requested, pool.stat());
        self.merge_and_release(addr);
    }

    /// Moves the allocated block at `addr` to `category` in the statistics.
    pub(crate) fn retag(&mut self, addr: u64, category: MemoryCategory) {
        let Some(block) = self
            .blocks
            .get_mut(&addr)
            .filter(|b| b.allocated && !b.pending)
        else {
            return;
        };
        let (bytes, old) = (block.bytes, block.category);
        block.category = category;
        self.stats.move_category(bytes, old, category);
    }

    /// Releases every fully free segment back to HBM; returns the bytes released.
    pub(crate) fn empty_cache(&mut self) -> u64 {
        let idle: Vec<(u64, Segment)> = self
            .segments
            .iter()
            .filter(|(addr, segment)| {
                self.blocks
                    .get(addr)
                    .is_some_and(|b| !b.allocated && b.bytes == segment.bytes)
            })
            .map(|(addr, segment)| (*addr, *segment))
            .collect();
        let mut released = 0;
        for (addr, segment) in idle {
            self.free_set(segment.pool)
                .remove(&(segment.stream, segment.bytes, addr));
            self.blocks.remove(&addr);
            self.segments.remove(&addr);
            self.release_hbm(addr, segment.bytes);
            self.stats.note_release(segment.bytes, segment.pool.stat());
            released += segment.bytes;
        }
        released
    }

    /// Every block of every segment, by address (a memory snapshot's segments).
    pub(crate) fn blocks(&self) -> Vec<BlockInfo> {
        self.blocks
            .iter()
            .map(|(&addr, block)| {
                let segment = self.segments[&block.segment_addr];
                BlockInfo {
                    segment_addr: block.segment_addr,
                    segment_bytes: segment.bytes,
                    small_pool: segment.pool == Pool::Small,
                    stream: segment.stream,
                    addr,
                    bytes: block.bytes,
                    requested_bytes: block.requested,
                    state: match (block.allocated, block.pending) {
                        (true, false) => BlockState::Allocated,
                        (true, true) => BlockState::PendingFree,
                        _ => BlockState::Free,
                    },
                }
            })
            .collect()
    }

    /// Current statistics.
    pub(crate) fn stats(&self) -> MemoryStats {
        self.stats.clone()
    }

    pub(crate) fn reset_peak_stats(&mut self) {
        self.stats.reset_peaks();
    }

    pub(crate) fn reset_accumulated_stats(&mut self) {
        self.stats.reset_accumulated();
    }

    /// HBM capacity in bytes.
    pub(crate) fn capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }

    fn free_set(&mut self, pool: Pool) -> &mut BTreeSet<FreeKey> {
        match pool {
            Pool::Small => &mut self.free_small,
            Pool::Large => &mut self.free_large,
        }
    }

    fn best_fit(&mut self, pool: Pool, stream: u16, bytes: u64) -> Option<u64> {
        let key = *self
            .free_set(pool)
            .range((stream, bytes, 0)..=(stream, u64::MAX, u64::MAX))
            .next()?;
        self.free_set(pool).remove(&key);
        Some(key.2)
    }

    /// Reserves a new segment for a `bytes` block and returns the segment's (free) first
    /// block, already out of the free set.
    fn reserve_segment(
        &mut self,
        pool: Pool,
        stream: u16,
        bytes: u64,
    ) -> Result<u64, BackendError> {
        let segment_bytes = match pool {
            Pool::Small => SMALL_SEGMENT_BYTES,
            Pool::Large if bytes < MEDIUM_LIMIT_BYTES => MEDIUM_SEGMENT_BYTES,
            Pool::Large => bytes.div_ceil(LARGE_ROUNDING_BYTES) * LARGE_ROUNDING_BYTES,
        };
        let addr = match self.reserve_hbm(segment_bytes) {
            Some(addr) => addr,
            None => {
                self.empty_cache();
                self.stats.num_alloc_retries += 1;
                match self.reserve_hbm(segment_bytes) {
                    Some(addr) => addr,
                    None => {
                        self.stats.num_ooms += 1;
                        return Err(self.out_of_memory(bytes));
                    }
                }
            }
        };
        self.segments.insert(
            addr,
            Segment {
                bytes: segment_bytes,
                pool,
                stream,
            },
        );
        self.blocks.insert(addr, Block::free(segment_bytes, addr));
        self.stats.note_reserve(segment_bytes, pool.stat());
        Ok(addr)
    }

    /// Whether a free block of `bytes` in segment `segment_addr` is a split one (not the
    /// whole segment).
    fn splits(&self, bytes: u64, segment_addr: u64) -> bool {
        self.segments[&segment_addr].bytes != bytes
    }

    /// Marks the free block at `addr` (out of the free set) allocated, splitting off the
    /// rest when worth keeping; returns the block's size.
    fn take_block(
        &mut self,
        addr: u64,
        bytes: u64,
        pool: Pool,
        category: MemoryCategory,
        requested: u64,
    ) -> u64 {
        let Block {
            bytes: held,
            segment_addr,
            ..
        } = self.blocks[&addr];
        if self.splits(held, segment_addr) {
            self.stats.note_inactive_split(false, held, pool.stat());
        }
        let stream = self.segments[&segment_addr].stream;
        let rest = held - bytes;
        let split = match pool {
            Pool::Small => rest >= MIN_BLOCK_BYTES,
            Pool::Large => rest > SMALL_POOL_LIMIT_BYTES,
        };
        let block = self
            .blocks
            .get_mut(&addr)
            .expect("block of a free-set entry");
        block.allocated = true;
        block.pending = false;
        block.category = category;
        block.requested = requested;
        if split {
            block.bytes = bytes;
            self.blocks
                .insert(addr + bytes, Block::free(rest, segment_addr));
            self.free_set(pool).insert((stream, rest, addr + bytes));
            self.stats.note_inactive_split(true, rest, pool.stat());
            bytes
        } else {
            held
        }
    }

    /// Merges the newly free block at `addr` with free neighbours in its segment and puts
    /// the result in its pool's free set.
    fn merge_and_release(&mut self, addr: u64) {
        let block = self.blocks[&addr];
        let Segment { pool, stream, .. } = self.segments[&block.segment_addr];
        let mut start = addr;
        let mut bytes = block.bytes;
        let next_addr = addr + block.bytes;
        if let Some(next) = self.blocks.get(&next_addr).copied() {
            if !next.allocated && next.segment_addr == block.segment_addr {
                self.free_set(pool).remove(&(stream, next.bytes, next_addr));
                self.blocks.remove(&next_addr);
                self.stats
                    .note_inactive_split(false, next.bytes, pool.stat());
                bytes += next.bytes;
            }
        }
        if let Some((&prev_addr, &prev)) = self.blocks.range(..addr).next_back() {
            if !prev.allocated
                && prev.segment_addr == block.segment_addr
                && prev_addr + prev.bytes == addr
            {
                self.free_set(pool).remove(&(stream, prev.bytes, prev_addr));
                self.blocks.remove(&addr);
                self.stats
                    .note_inactive_split(false, prev.bytes, pool.stat());
                start = prev_addr;
                bytes += prev.bytes;
            }
        }
        self.blocks
            .insert(start, Block::free(bytes, block.segment_addr));
        if self.splits(bytes, block.segment_addr) {
            self.stats.note_inactive_split(true, bytes, pool.stat());
        }
        self.free_set(pool).insert((stream, bytes, start));
    }

    fn reserve_hbm(&mut self, bytes: u64) -> Option<u64> {
        let (&addr, &size) = self.hbm_free.iter().find(|(_, &size)| size >= bytes)?;
        self.hbm_free.remove(&addr);
        if size > bytes {
            self.hbm_free.insert(addr + bytes, size - bytes);
        }
        Some(addr)
    }

    fn release_hbm(&mut self, addr: u64, bytes: u64) {
        let mut start = addr;
        let mut size = bytes;
        if let Some(next_size) = self.hbm_free.remove(&(addr + bytes)) {
            size += next_size;
        }
        if let Some((&prev_addr, &prev_size)) = self.hbm_free.range(..addr).next_back() {
            if prev_addr + prev_size == addr {
                self.hbm_free.remove(&prev_addr);
                start = prev_addr;
                size += prev_size;
            }
        }
        self.hbm_free.insert(start, size);
    }

    fn out_of_memory(&self, requested_bytes: u64) -> BackendError {
        BackendError::OutOfMemory {
            device: format!("neuron:{}", self.device_index),
            requested_bytes,
            free_bytes: self.capacity_bytes - self.stats.reserved_bytes,
            reserved_bytes: self.stats.reserved_bytes,
            allocated_bytes: self.stats.allocated_bytes,
            capacity_bytes: self.capacity_bytes,
            largest_categories: self.stats.largest_categories(),
        }
    }

    fn record(&self, action: MemoryAction, addr: u64, bytes: u64, category: MemoryCategory) {
        if !runtime_hooks::is_enabled() {
            return;
        }
        runtime_hooks::memory(
            action,
            MemoryPayload {
                category_id: category.name_id(),
                device: self.device_index,
                addr,
                bytes,
                total_allocated_bytes: self.stats.allocated_bytes,
                total_reserved_bytes: self.stats.reserved_bytes,
                ..Default::default()
            },
        );
    }
}

#[cfg(test)]
mod tests;
