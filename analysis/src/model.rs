//! What the analyses need of a trace, built in one streaming pass per rank.
//!
//! A [`RankTrace`] keeps, per rank, only the complete events (`X` with `cat` and `dur`)
//! that an analysis can use: device activity (a `stream` arg), every event with a
//! `correlation` arg (runtime launches and their device work), `ProfilerStep#N`
//! annotations, synchronization rows (`Event Sync`, `Context Sync`) and the first event
//! of the file (HTA joins unmatched kernels onto it, see [`crate::frame`]). Everything else
//! (`cpu_op`s, Python frames, flows, metadata) only updates counters.

mod load;

use std::collections::HashMap;

pub(crate) use load::int_coerce;
pub use load::{load_paths, load_ranks, LoadOptions};

/// Interned event names and categories of one rank; a [`NameId`] indexes [`Names::get`].
#[derive(Clone, Debug, Default)]
pub struct Names {
    texts: Vec<String>,
    ids: HashMap<String, NameId>,
}

/// An interned string (event name or category) of one rank.
pub type NameId = u32;

impl Names {
    /// Interns `text`.
    pub fn intern(&mut self, text: &str) -> NameId {
        if let Some(&name_id) = self.ids.get(text) {
            return name_id;
        }
        let name_id = self.texts.len() as NameId;
        self.texts.push(text.to_owned());
        self.ids.insert(text.to_owned(), name_id);
        name_id
    }

    /// The text of an interned id.
    pub fn get(&self, name_id: NameId) -> &str {
        &self.texts[name_id as usize]
    }

    /// The id of `text`, if it was interned.
    pub fn lookup(&self, text: &str) -> Option<NameId> {
        self.ids.get(text).copied()
    }

    /// Every interned string.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.texts.iter().map(String::as_str)
    }
}

/// One kept complete event. Times are nanoseconds relative to the file's own time base
/// (`baseTimeNanoseconds`, or 0 for traces with absolute timestamps), which is what HTA
/// sees in the file.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Position in `traceEvents`.
    pub event_index: u64,
    /// The `cat` as written (legacy spellings not normalised).
    pub category: NameId,
    /// The `name`.
    pub name: NameId,
    /// `pid` when numeric.
    pub pid: Option<i64>,
    /// `tid` when numeric.
    pub tid: Option<i64>,
    /// `stream` arg as an integer (numeric strings accepted), -1 when absent.
    pub stream: i64,
    /// `correlation` arg, -1 when absent.
    pub correlation: i64,
    /// Start, ns relative to the file's time base.
    pub ts_rel_ns: i64,
    /// Duration, ns.
    pub dur_ns: i64,
    /// `bytes` arg, -1 when absent.
    pub bytes: i64,
    /// `memory bandwidth (GB/s)` arg, 0 when absent.
    pub memory_bw_gbps: f64,
    /// Collective args (`Collective name`, …), on collective kernels and their launches.
    pub collective: Option<Box<CollectiveArgs>>,
}

impl Row {
    /// Whether the event carries collective args.
    pub fn is_collective(&self) -> bool {
        self.collective.is_some()
    }
}

/// The collective args PyTorch copies onto a collective's kernel
/// (`../shared/reference/kineto-format.md`, "args").
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CollectiveArgs {
    /// `Collective name` (`allreduce`, `allgather`, …).
    pub collective: String,
    /// `Process Group Name`.
    pub process_group: String,
    /// `Seq`, the collective's sequence number in its group, when recorded.
    pub seq: Option<i64>,
    /// `In msg nelems`.
    pub in_nelems: i64,
    /// `Out msg nelems`.
    pub out_nelems: i64,
    /// `dtype`.
    pub dtype: String,
    /// `Group size`.
    pub group_size: i64,
}

/// One `[memory]` instant: an allocation (`bytes` > 0) or a free (`bytes` < 0), with the
/// allocator's totals after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryEvent {
    /// Time, ns relative to the file's time base.
    pub ts_rel_ns: i64,
    /// `Device Type` (0 CPU, 1 CUDA, 20 PrivateUse1 such as `neuron`).
    pub device_type: i64,
    /// `Device Id` (-1 for the CPU).
    pub device_id: i64,
    /// `Addr`.
    pub addr: i64,
    /// `Bytes`: positive for an allocation, negative for a free.
    pub bytes: i64,
    /// `Total Allocated` after the event.
    pub total_allocated_bytes: i64,
    /// `Total Reserved` after the event.
    pub total_reserved_bytes: i64,
}

/// Counters over every complete event of a rank, kept or not.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RankCounts {
    /// Events in `traceEvents`.
    pub events: u64,
    /// Complete events with `cat` and `dur`, `cat` not `Trace` (HTA's rows).
    pub complete_rows: u64,
    /// Rows kept in [`RankTrace::rows`].
    pub kept_rows: u64,
    /// Damaged events skipped by a lenient read.
    pub events_skipped: u64,
}

/// What the analyses need of one rank's trace.
#[derive(Clone, Debug)]
pub struct RankTrace {
    /// The rank: `distributedInfo.rank`, else the file's position in the input list.
    pub rank: i64,
    /// The file it was read from.
    pub path: std::path::PathBuf,
    /// Interned names and categories.
    pub names: Names,
    /// Kept rows, in file order.
    pub rows: Vec<Row>,
    /// `[memory]` events, in file order.
    pub memory: Vec<MemoryEvent>,
    /// Counters.
    pub counts: RankCounts,
    /// Whether some event has a `ts` with a fraction of a µs, or none at all: then HTA's
    /// `ts` column is floating point and HTA rounds (see [`crate::frame`]).
    pub ts_is_float: bool,
    /// Smallest start over all HTA rows (ns, relative).
    pub min_ts_rel_ns: Option<i64>,
    /// Smallest start over HTA rows that are not device rows (ns, relative).
    pub min_host_ts_rel_ns: Option<i64>,
    /// `distributedInfo.backend`.
    pub backend: Option<String>,
    /// `baseTimeNanoseconds` (0 when timestamps are absolute): add it to a relative time
    /// to compare ranks.
    pub base_ns: i64,
    /// `deviceProperties`: (device id, total memory in bytes) where known.
    pub device_memory_bytes: Vec<(i64, i64)>,
    /// Lenient reads: the first errors of skipped events, then the error that stopped the
    /// read early (a truncated file), as messages with file, byte offset and event index.
    pub damage: Vec<String>,
}

impl RankTrace {
    /// The name of a row.
    pub fn name(&self, row: &Row) -> &str {
        self.names.get(row.name)
    }

    /// The category of a row, as written.
    pub fn category(&self, row: &Row) -> &str {
        self.names.get(row.category)
    }

    /// HTA's device type: `MTIA`, `NVIDIA GPU`, `AMD GPU` or `UNKNOWN GPU`, from the
    /// backend and the launch call names seen (HTA `infer_gpu_type`).
    pub fn device_type(&self) -> &'static str {
        if self
            .backend
            .as_deref()
            .is_some_and(|b| b.contains("mtia:hccl"))
        {
            return "MTIA";
        }
        if self.names.lookup("cudaLaunchKernel").is_some() {
            "NVIDIA GPU"
        } else if self.names.lookup("hipLaunchKernel").is_some() {
            "AMD GPU"
        } else if self
            .names
            .lookup("runFunction - job_prep_and_submit_for_execution")
            .is_some()
        {
            "MTIA"
        } else {
            "UNKNOWN GPU"
        }
    }
}

/// The traces of a run, one per rank, sorted by rank.
#[derive(Clone, Debug)]
pub struct TraceSet {
    /// Ranks, sorted.
    pub ranks: Vec<RankTrace>,
}

impl TraceSet {
    /// The trace of `rank`.
    pub fn rank(&self, rank: i64) -> Option<&RankTrace> {
        self.ranks.iter().find(|r| r.rank == rank)
    }
}
