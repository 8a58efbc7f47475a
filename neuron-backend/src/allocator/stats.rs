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
    /// Per category, indexed by [`MemoryCategory::index`].
    pub by_category: [CategoryStats; 5],
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
    }

    /// Zeroes the counts of events so far: allocations, frees and out-of-memory
    /// failures (as `torch.cuda.reset_accumulated_memory_stats`).
    pub(crate) fn reset_accumulated(&mut self) {
        self.num_allocs = 0;
        self.num_frees = 0;
        self.num_ooms = 0;
    }

    pub(crate) fn note_allocate(&mut self, bytes: u64, category: MemoryCategory) {
        self.allocated_bytes += bytes;
        self.peak_allocated_bytes = self.peak_allocated_bytes.max(self.allocated_bytes);
        self.active_blocks += 1;
        self.num_allocs += 1;
        let cat = &mut self.by_category[category.index()];
        cat.allocated_bytes += bytes;
        cat.peak_bytes = cat.peak_bytes.max(cat.allocated_bytes);
    }

    pub(crate) fn note_free(&mut self, bytes: u64, category: MemoryCategory) {
        self.allocated_bytes -= bytes;
        self.active_blocks -= 1;
        self.num_frees += 1;
        self.by_category[category.index()].allocated_bytes -= bytes;
    }

    pub(crate) fn move_category(&mut self, bytes: u64, from: MemoryCategory, to: MemoryCategory) {
        self.by_category[from.index()].allocated_bytes -= bytes;
        let cat = &mut self.by_category[to.index()];
        cat.allocated_bytes += bytes;
        cat.peak_bytes = cat.peak_bytes.max(cat.allocated_bytes);
    }
}
