//! Memory categories and allocator statistics.

use runtime_hooks::NameId;

/// What a tensor's memory is for; the caller tags tensors, the default is `Other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MemoryCategory {
    /// Model parameters (weights).
    Parameters,
    /// Activations kept for backward, and temporaries.
    Activations,
    /// Gradients.
    Gradients,
    /// Optimizer state (momenta, second moments, master weights).
    OptimizerState,
    /// Anything else.
    #[default]
    Other,
}

impl MemoryCategory {
    /// Every category, in index order.
    pub const ALL: [MemoryCategory; 5] = [
        MemoryCategory::Parameters,
        MemoryCategory::Activations,
        MemoryCategory::Gradients,
        MemoryCategory::OptimizerState,
        MemoryCategory::Other,
    ];

    /// The category's name in records and reports.
    pub fn name(self) -> &'static str {
        match self {
            MemoryCategory::Parameters => "parameters",
            MemoryCategory::Activations => "activations",
            MemoryCategory::Gradients => "gradients",
            MemoryCategory::OptimizerState => "optimizer_state",
            MemoryCategory::Other => "other",
        }
    }

    /// Index into [`MemoryStats::by_category`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The interned name used in memory records.
    pub(crate) fn name_id(self) -> NameId {
        match self {
            MemoryCategory::Parameters => runtime_hooks::name!("parameters"),
            MemoryCategory::Activations => runtime_hooks::name!("activations"),
            MemoryCategory::Gradients => runtime_hooks::name!("gradients"),
            MemoryCategory::OptimizerState => runtime_hooks::name!("optimizer_state"),
            MemoryCategory::Other => runtime_hooks::name!("other"),
        }
    }
}

/// Allocated bytes of one category.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CategoryStats {
    /// Bytes allocated now.
    pub allocated_bytes: u64,
    /// Most bytes allocated at once.
    pub peak_bytes: u64,
}

/// One statistic as c10's `Stat` keeps it: the value now, its peak since the last
/// [`reset_peaks`](MemoryStats::reset_peaks), and the sums of its increases
/// (`allocated`) and decreases (`freed`) since the last
/// [`reset_accumulated`](MemoryStats::reset_accumulated).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stat {
    /// Value now.
    pub current: u64,
    /// Largest value since the last peak reset.
    pub peak: u64,
    /// Sum of the increases.
    pub allocated: u64,
    /// Sum of the decreases.
    pub freed: u64,
}

impl Stat {
    fn increase(&mut self, amount: u64) {
        self.current += amount;
        self.peak = self.peak.max(self.current);
        self.allocated += amount;
    }

    fn decrease(&mut self, amount: u64) {
        self.current -= amount;
        self.freed += amount;
    }
}

/// A statistic for all blocks, the small pool and the large pool, in the order of c10's
/// `StatArray` (`StatType::AGGREGATE`, `SMALL_POOL`, `LARGE_POOL`).
pub type StatArray = [Stat; 3];

/// Index of the small pool in a [`StatArray`] (0 is all blocks).
pub const SMALL_POOL_STAT: usize = 1;
/// Index of the large pool in a [`StatArray`].
pub const LARGE_POOL_STAT: usize = 2;

/// The statistics PyTorch's caching allocators keep (`c10::CachingDeviceAllocator::
/// DeviceStats`), with the same meanings, per pool. A block freed while another stream
/// may still use it (`record_stream`) stops being *allocated* at the free and stops being
/// *active* when those streams pass the free point, as in CUDA's caching allocator.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Blocks handed out (a count).
    pub allocation: StatArray,
    /// Segments reserved from HBM (a count).
    pub segment: StatArray,
    /// Allocated blocks and freed blocks still in use by a stream (a count).
    pub active: StatArray,
    /// Free blocks of a split segment: cached, but not releasable (a count).
    pub inactive_split: StatArray,
    /// Bytes of the allocated blocks.
    pub allocated_bytes: StatArray,
    /// Bytes of the reserved segments.
    pub reserved_bytes: StatArray,
    /// Bytes of the active blocks.
    pub active_bytes: StatArray,
    /// Bytes of the inactive split blocks.
    pub inactive_split_bytes: StatArray,
    /// Bytes the callers asked for (before size-class rounding) of the active blocks.
    pub requested_bytes: StatArray,
}

impl PoolStats {
    fn arrays_mut(&mut self) -> [&mut StatArray; 9] {
        [
            &mut self.allocation,
            &mut self.segment,
            &mut self.active,
            &mut self.inactive_split,
            &mut self.allocated_bytes,
            &mut self.reserved_bytes,
            &mut self.active_bytes,
            &mut self.inactive_split_bytes,
            &mut self.requested_bytes,
        ]
    }
}

/// Increases entry 0 (all blocks) and the pool's entry of `array` by `amount`.
pub(crate) fn increase(array: &mut StatArray, pool: usize, amount: u64) {
    array[0].increase(amount);
    array[pool].increase(amount);
}

/// Decreases entry 0 (all blocks) and the pool's entry of `array` by `amount`.
pub(crate) fn decrease(array: &mut StatArray, pool: usize, amount: u64) {
    array[0].decrease(amount);
    array[pool].decrease(amount);
}

/// Statistics of one logical core's allocator (bytes are after size-class rounding).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryStats {
    /// Bytes in allocated blocks.
    pub allocated_bytes: u64,
    /// Bytes reserved in segments (allocated plus cached).
    pub reserved_bytes: u64,
    /// Most bytes allocated at once.
    pub peak_allocated_bytes: u64,
    /// Most bytes reserved at once.
    pub peak_reserved_bytes: u64,
    /// Allocated blocks now.
    pub active_blocks: u64,
    /// Segments reserved now.
    pub segments: u64,
    /// Allocations so far.
    pub num_allocs: u64,
    /// Frees so far.
    pub num_frees: u64,
    /// Requests that failed with out-of-memory.
    pub num_ooms: u64,
    /// Reservations that failed, released the cached segments and were retried.
    pub num_alloc_retries: u64,
    /// Segments reserved from HBM so far.
    pub num_device_alloc: u64,
    /// Segments released to HBM so far.
    pub num_device_free: u64,
    /// Times an allocation waited for every stream to pass its pending frees (out of
    /// memory while freed blocks were still in use by a stream).
    pub num_sync_all_streams: u64,
    /// Per category, indexed by [`MemoryCategory::index`].
    pub by_category: [CategoryStats; 5],
    /// c10's `DeviceStats`: per statistic, per pool, current/peak/allocated/freed.
    pub pools: PoolStats,
}

impl MemoryStats {
    /// The statistics of one category.
    pub fn category(&self, category: MemoryCategory) -> CategoryStats {
        self.by_category[category.index()]
    }

    /// Categories holding memory now, largest first.
    pub fn largest_categories(&self) -> Vec<(String, u64)> {
        let mut held: Vec<(String, u64)> = MemoryCategory::ALL
            .iter()
            .map(|c| (c.name().to_string(), self.category(*c).allocated_bytes))
            .filter(|(_, bytes)| *bytes > 0)
            .collect();
        held.sort_by_key(|entry| std::cmp::Reverse(entry.1));
        held
    }

    /// Sets every peak to the current value (as `torch.cuda.reset_peak_memory_stats`).
    pub(crate) fn reset_peaks(&mut self) {
        self.peak_allocated_bytes = self.allocated_bytes;
        self.peak_reserved_bytes = self.reserved_bytes;
        for cat in &mut self.by_category {
            cat.peak_bytes = cat.allocated_bytes;
        }
        for array in self.pools.arrays_mut() {
            for stat in array {
                stat.peak = stat.current;
            }
        }
    }

    /// Zeroes the counts of events so far: allocations, frees, out-of-memory failures,
    /// retries, segment reservations and releases, and every statistic's `allocated` and
    /// `freed` sums (as `torch.cuda.reset_accumulated_memory_stats`).
    pub(crate) fn reset_accumulated(&mut self) {
        self.num_allocs = 0;
        self.num_frees = 0;
        self.num_ooms = 0;
        self.num_alloc_retries = 0;
        self.num_device_alloc = 0;
        self.num_device_free = 0;
        self.num_sync_all_streams = 0;
        for array in self.pools.arrays_mut() {
            for stat in array {
                stat.allocated = 0;
                stat.freed = 0;
            }
        }
    }

    /// A block of `bytes` (`requested` asked for) handed out from pool `pool`.
    pub(crate) fn note_allocate(
        &mut self,
        bytes: u64,
        requested: u64,
        category: MemoryCategory,
        pool: usize,
    ) {
        self.allocated_bytes += bytes;
        self.peak_allocated_bytes = self.peak_allocated_bytes.max(self.allocated_bytes);
        self.active_blocks += 1;
        self.num_allocs += 1;
        let cat = &mut self.by_category[category.index()];
        cat.allocated_bytes += bytes;
        cat.peak_bytes = cat.peak_bytes.max(cat.allocated_bytes);
        increase(&mut self.pools.allocation, pool, 1);
        increase(&mut self.pools.allocated_bytes, pool, bytes);
        increase(&mut self.pools.active, pool, 1);
        increase(&mut self.pools.active_bytes, pool, bytes);
        increase(&mut self.pools.requested_bytes, pool, requested);
    }

    /// The host freed a block of `bytes`: no longer allocated (it stays active until
    /// [`note_inactive`](Self::note_inactive)).
    pub(crate) fn note_free(&mut self, bytes: u64, category: MemoryCategory, pool: usize) {
        self.allocated_bytes -= bytes;
        self.active_blocks -= 1;
        self.num_frees += 1;
        self.by_category[category.index()].allocated_bytes -= bytes;
        decrease(&mut self.pools.allocation, pool, 1);
        decrease(&mut self.pools.allocated_bytes, pool, bytes);
    }

    /// A freed block of `bytes` (`requested` asked for) is no longer in use by any
    /// stream: reusable.
    pub(crate) fn note_inactive(&mut self, bytes: u64, requested: u64, pool: usize) {
        decrease(&mut self.pools.active, pool, 1);
        decrease(&mut self.pools.active_bytes, pool, bytes);
        decrease(&mut self.pools.requested_bytes, pool, requested);
    }

    /// A segment of `bytes` reserved from HBM for pool `pool`.
    pub(crate) fn note_reserve(&mut self, bytes: u64, pool: usize) {
        self.reserved_bytes += bytes;
        self.peak_reserved_bytes = self.peak_reserved_bytes.max(self.reserved_bytes);
        self.segments += 1;
        self.num_device_alloc += 1;
        increase(&mut self.pools.segment, pool, 1);
        increase(&mut self.pools.reserved_bytes, pool, bytes);
    }

    /// A segment of `bytes` of pool `pool` released to HBM.
    pub(crate) fn note_release(&mut self, bytes: u64, pool: usize) {
        self.reserved_bytes -= bytes;
        self.segments -= 1;
        self.num_device_free += 1;
        decrease(&mut self.pools.segment, pool, 1);
        decrease(&mut self.pools.reserved_bytes, pool, bytes);
    }

    /// A free block of `bytes` in a split segment appears (`true`) or goes (`false`).
    pub(crate) fn note_inactive_split(&mut self, appears: bool, bytes: u64, pool: usize) {
        if appears {
            increase(&mut self.pools.inactive_split, pool, 1);
            increase(&mut self.pools.inactive_split_bytes, pool, bytes);
        } else {
            decrease(&mut self.pools.inactive_split, pool, 1);
            decrease(&mut self.pools.inactive_split_bytes, pool, bytes);
        }
    }

    pub(crate) fn move_category(&mut self, bytes: u64, from: MemoryCategory, to: MemoryCategory) {
        self.by_category[from.index()].allocated_bytes -= bytes;
        let cat = &mut self.by_category[to.index()];
        cat.allocated_bytes += bytes;
        cat.peak_bytes = cat.peak_bytes.max(cat.allocated_bytes);
    }
}
