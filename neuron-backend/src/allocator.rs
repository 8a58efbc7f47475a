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

pub use stats::{CategoryStats, MemoryCategory, MemoryStats};

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

#[derive(Debug, Clone, Copy)]
struct Block {
    bytes: u64,
    segment_addr: u64,
    allocated: bool,
    category: MemoryCategory,
}

#[derive(Debug, Clone, Copy)]
struct Segment {
    bytes: u64,
    pool: Pool,
}

/// One logical core's caching allocator.
#[derive(Debug)]
pub(crate) struct Allocator {
    device_index: u16,
    capacity_bytes: u64,
    /// Free blocks of each pool, ordered by (size, address) for best fit.
    free_small: BTreeSet<(u64, u64)>,
    free_large: BTreeSet<(u64, u64)>,
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
            blocks: BTreeMap::new(),
            segments: BTreeMap::new(),
            hbm_free: BTreeMap::from([(base_addr, capacity_bytes)]),
            stats: MemoryStats::default(),
        }
    }

    /// Allocates a block for `requested_bytes`; returns its address and size.
    pub(crate) fn allocate(
        &mut self,
        requested_bytes: u64,
        category: MemoryCategory,
    ) -> Result<(u64, u64), BackendError> {
        let bytes = size_class(requested_bytes);
        let pool = if bytes < SMALL_POOL_LIMIT_BYTES {
            Pool::Small
        } else {
            Pool::Large
        };
        let addr = match self.best_fit(pool, bytes) {
            Some(addr) => addr,
            None => self.reserve_segment(pool, bytes)?,
        };
        // An unsplit block may be a little larger than the size class: count what it holds.
        let bytes = self.take_block(addr, bytes, pool, category);
        self.stats.note_allocate(bytes, category);
        self.record(MemoryAction::Allocate, addr, bytes, category);
        Ok((addr, bytes))
    }

    /// Frees the block at `addr` (returned by [`allocate`](Self::allocate)).
    pub(crate) fn free(&mut self, addr: u64) {
        let Some(block) = self.blocks.get_mut(&addr) else {
            return;
        };
        if !block.allocated {
            return;
        }
        block.allocated = false;
        let Block {
            bytes, category, ..
        } = *block;
        self.stats.note_free(bytes, category);
        self.merge_and_release(addr);
        self.record(MemoryAction::Free, addr, bytes, category);
    }

    /// Moves the allocated block at `addr` to `category` in the statistics.
    pub(crate) fn retag(&mut self, addr: u64, category: MemoryCategory) {
        let Some(block) = self.blocks.get_mut(&addr).filter(|b| b.allocated) else {
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
            self.free_set(segment.pool).remove(&(segment.bytes, addr));
            self.blocks.remove(&addr);
            self.segments.remove(&addr);
            self.release_hbm(addr, segment.bytes);
            self.stats.reserved_bytes -= segment.bytes;
            self.stats.segments -= 1;
            released += segment.bytes;
        }
        released
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

    fn free_set(&mut self, pool: Pool) -> &mut BTreeSet<(u64, u64)> {
        match pool {
            Pool::Small => &mut self.free_small,
            Pool::Large => &mut self.free_large,
        }
    }

    fn best_fit(&mut self, pool: Pool, bytes: u64) -> Option<u64> {
        let &(size, addr) = self.free_set(pool).range((bytes, 0)..).next()?;
        self.free_set(pool).remove(&(size, addr));
        Some(addr)
    }

    /// Reserves a new segment for a `bytes` block and returns the segment's (free) first
    /// block, already out of the free set.
    fn reserve_segment(&mut self, pool: Pool, bytes: u64) -> Result<u64, BackendError> {
        let segment_bytes = match pool {
            Pool::Small => SMALL_SEGMENT_BYTES,
            Pool::Large if bytes < MEDIUM_LIMIT_BYTES => MEDIUM_SEGMENT_BYTES,
            Pool::Large => bytes.div_ceil(LARGE_ROUNDING_BYTES) * LARGE_ROUNDING_BYTES,
        };
        let addr = match self.reserve_hbm(segment_bytes) {
            Some(addr) => addr,
            None => {
                self.empty_cache();
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
            },
        );
        self.blocks.insert(
            addr,
            Block {
                bytes: segment_bytes,
                segment_addr: addr,
                allocated: false,
                category: MemoryCategory::Other,
            },
        );
        self.stats.reserved_bytes += segment_bytes;
        self.stats.peak_reserved_bytes = self
            .stats
            .peak_reserved_bytes
            .max(self.stats.reserved_bytes);
        self.stats.segments += 1;
        Ok(addr)
    }

    /// Marks the free block at `addr` (out of the free set) allocated, splitting off the
    /// rest when worth keeping; returns the block's size.
    fn take_block(&mut self, addr: u64, bytes: u64, pool: Pool, category: MemoryCategory) -> u64 {
        let block = self
            .blocks
            .get_mut(&addr)
            .expect("block of a free-set entry");
        let rest = block.bytes - bytes;
        let split = match pool {
            Pool::Small => rest >= MIN_BLOCK_BYTES,
            Pool::Large => rest > SMALL_POOL_LIMIT_BYTES,
        };
        block.allocated = true;
        block.category = category;
        if split {
            block.bytes = bytes;
            let segment_addr = block.segment_addr;
            self.blocks.insert(
                addr + bytes,
                Block {
                    bytes: rest,
                    segment_addr,
                    allocated: false,
                    category: MemoryCategory::Other,
                },
            );
            self.free_set(pool).insert((rest, addr + bytes));
            bytes
        } else {
            bytes + rest
        }
    }

    /// Merges the newly free block at `addr` with free neighbours in its segment and puts
    /// the result in its pool's free set.
    fn merge_and_release(&mut self, addr: u64) {
        let block = self.blocks[&addr];
        let pool = self.segments[&block.segment_addr].pool;
        let mut start = addr;
        let mut bytes = block.bytes;
        let next_addr = addr + block.bytes;
        if let Some(next) = self.blocks.get(&next_addr).copied() {
            if !next.allocated && next.segment_addr == block.segment_addr {
                self.free_set(pool).remove(&(next.bytes, next_addr));
                self.blocks.remove(&next_addr);
                bytes += next.bytes;
            }
        }
        if let Some((&prev_addr, &prev)) = self.blocks.range(..addr).next_back() {
            if !prev.allocated
                && prev.segment_addr == block.segment_addr
                && prev_addr + prev.bytes == addr
            {
                self.free_set(pool).remove(&(prev.bytes, prev_addr));
                self.blocks.remove(&addr);
                start = prev_addr;
                bytes += prev.bytes;
            }
        }
        let merged = self.blocks.get_mut(&start).expect("merged block");
        merged.bytes = bytes;
        merged.allocated = false;
        merged.category = MemoryCategory::Other;
        self.free_set(pool).insert((bytes, start));
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
