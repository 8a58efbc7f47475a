//! What the analyses need of a trace, built in one streaming pass per rank.
//!
//! A [`RankTrace`] keeps, per rank, only the complete events (`X` with `cat` and `dur`)
//! that an analysis can use: device activity (a `stream` arg), every event with a
//! `correlation` arg (runtime launches and their device work), `ProfilerStep#N`
//! annotations, synchronization rows (`Event Sync`, `Context Sync`) and the first event
//! of the file (HTA joins unmatched kernels onto it, see [`crate::frame`]).
//!
//! Unless [`LoadOptions::with_host_ops`] turns it off, the same pass also keeps what the
//! operator table ([`crate::analyses::operators`]) and the trace diff
//! ([`crate::analyses::trace_diff`]) need of the other complete events, compactly, in
//! [`RankTrace::host_ops`] (see [`HostOps`]): every host operator (`cpu_op`,
//! `user_annotation`) as a 40-byte [`HostOp`], every other complete event that is not a
//! row as a 24-byte [`HostSpan`], and device time summed per `External id`. So no
//! analysis reads a file twice. Flows and metadata only update counters.

mod load;

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

pub use load::{
    load_each, load_inputs, load_paths, load_ranks, plan_inputs, InputPlan, LoadOptions,
    LoadProgress, LoadWindow, ProgressFn, PROGRESS_INTERVAL_BYTES,
};

/// Interned event names and categories of one rank; a [`NameId`] indexes [`Names::get`].
#[derive(Clone, Debug, Default)]
pub struct Names {
    texts: Vec<String>,
    ids: HashMap<String, NameId, BuildHasherDefault<NameHasher>>,
}

/// A hash map with the crate's fast hasher ([`NameHasher`]; keys are ids and names from
/// the user's own file).
pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<NameHasher>>;

/// A hash set with the crate's fast hasher ([`NameHasher`]).
pub(crate) type FastSet<K> = std::collections::HashSet<K, BuildHasherDefault<NameHasher>>;

/// The hasher of [`Names`]: names are looked up once per kept event, host operator and
/// host span, and SipHash (the standard map's, built against hash flooding) was the
/// largest cost of keeping host operators. This multiply-rotate hash over 8-byte words
/// is enough here: a trace is the user's own file, and a flood would only slow its load.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct NameHasher(u64);

impl NameHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        // An odd constant with well-mixed bits (from the digits of π).
        const K: u64 = 0x243f_6a88_85a3_08d3;
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(K);
    }
}

impl Hasher for NameHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.add(u64::from_le_bytes(chunk.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(last));
        }
    }

    #[inline]
    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    #[inline]
    fn write_i64(&mut self, n: i64) {
        self.add(n as u64);
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        // The map takes its control bits from the top: fold the low bits up.
        self.0.rotate_left(26)
    }
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
    /// `flops` arg, -1 when absent.
    pub flops: i64,
    /// `<engine> busy (ns)` args of a neuron kernel: (engine name, busy ns).
    pub engine_busy: Option<Box<[(NameId, i64)]>>,
}

impl Row {
    /// Whether the event carries collective args.
    pub fn is_collective(&self) -> bool {
        self.collective.is_some()
    }
}

/// A compiled graph's kernel split into its passes (`python/`: the kernel args `passes`,
/// `label D ns; …`, `pass_spans_ns`, `start-end; …` after the kernel's start, and
/// `pass_costs`, `flops bytes spec; …`).
#[derive(Clone, Debug, PartialEq)]
pub struct GraphPasses {
    /// The kernel's index in [`RankTrace::rows`].
    pub row: usize,
    /// Each pass's nodes (`gelu+mul+add`), interned.
    pub labels: Vec<NameId>,
    /// Each pass's (start, end), ns after the kernel's start.
    pub spans: Vec<(i64, i64)>,
    /// Each pass's cost, when the kernel states them (`pass_costs`; traces of earlier
    /// versions do not).
    pub costs: Option<Vec<PassCost>>,
}

/// What one pass of a compiled graph costs, as its kernel states it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PassCost {
    /// FLOPs of its nodes.
    pub flops: f64,
    /// HBM bytes it moves (after fusion).
    pub bytes: f64,
    /// The units and type its work runs on (`matrix_fp32`).
    pub compute: perf_model::ComputeSpec,
}

impl GraphPasses {
    /// Reads the two args; `None` when they do not parse or do not agree.
    pub(crate) fn parse(row: usize, passes: &str, spans: &str, names: &mut Names) -> Option<Self> {
        let labels: Vec<&str> = passes
            .split("; ")
            .map(|pass| {
                let (label, ns) = pass.strip_suffix(" ns")?.rsplit_once(' ')?;
                ns.parse::<i64>().ok()?;
                Some(label)
            })
            .collect::<Option<_>>()?;
        let spans: Vec<(i64, i64)> = spans
            .split("; ")
            .map(|span| {
                let (start, end) = span.split_once('-')?;
                let (start, end) = (start.parse().ok()?, end.parse().ok()?);
                (start <= end).then_some((start, end))
            })
            .collect::<Option<_>>()?;
        (labels.len() == spans.len()).then(|| GraphPasses {
            row,
            labels: labels.into_iter().map(|l| names.intern(l)).collect(),
            spans,
            costs: None,
        })
    }

    /// Adds the `pass_costs` arg; `None` when it does not parse or names another number
    /// of passes.
    pub(crate) fn with_costs(mut self, costs: &str) -> Option<Self> {
        let costs: Vec<PassCost> = costs
            .split("; ")
            .map(|cost| {
                let mut parts = cost.split(' ');
                let flops = parts.next()?.parse::<u64>().ok()? as f64;
                let bytes = parts.next()?.parse::<u64>().ok()? as f64;
                let compute = perf_model::ComputeSpec::parse(parts.next()?)?;
                parts.next().is_none().then_some(PassCost {
                    flops,
                    bytes,
                    compute,
                })
            })
            .collect::<Option<_>>()?;
        (costs.len() == self.labels.len()).then(|| {
            self.costs = Some(costs);
            self
        })
    }
}

/// The collective args PyTorch copies onto a collective's kernel
/// (Kineto's JSON as libkineto's `output_json.cpp` writes it).
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
    /// On a device row: its position, from 1, among the file's device rows with this
    /// process group and collective name, in file order (set by the load, counted over
    /// every row of the file also when a windowed load drops some); 0 on a launch.
    pub occurrence: u64,
    /// `In split size`: elements this rank sends to each rank of the group, in group
    /// order (all-to-all(v); empty: not recorded, or an even split).
    pub in_splits: Vec<i64>,
    /// `Out split size`: elements it receives from each rank of the group.
    pub out_splits: Vec<i64>,
    /// `Process Group Ranks`: the group's global ranks in group order (empty: not
    /// recorded).
    pub group_ranks: Vec<i64>,
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

/// One `neuron_instruction` event: an instruction (or `semaphore_wait`) on one engine of
/// one physical core.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineRow {
    /// The device (`pid`).
    pub device: i64,
    /// `core` arg (physical core within the logical core), 0 when absent.
    pub core: i64,
    /// `engine` arg (`TensorE`, …), interned in [`RankTrace::names`].
    pub engine: NameId,
    /// Start, ns relative to the file's time base.
    pub ts_rel_ns: i64,
    /// Duration, ns.
    pub dur_ns: i64,
    /// `flops` arg, 0 when absent.
    pub flops: i64,
    /// Whether this is a `semaphore_wait` (the engine waits, it is not active).
    pub is_wait: bool,
}

/// One `neuron_throttle` event: a span of thermal or power throttling of one physical
/// core (a Neuron Explorer profile's `Throttle` table).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThrottleRow {
    /// The device (`pid`).
    pub device: i64,
    /// `core` arg (physical core), 0 when absent.
    pub core: i64,
    /// Start, ns relative to the file's time base.
    pub ts_rel_ns: i64,
    /// Duration, ns.
    pub dur_ns: i64,
}

/// One `neuron_dma` event: a DMA transfer on one queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DmaRow {
    /// The device (`pid`).
    pub device: i64,
    /// `dma queue` arg.
    pub queue: i64,
    /// Start, ns relative to the file's time base.
    pub ts_rel_ns: i64,
    /// Duration, ns.
    pub dur_ns: i64,
    /// `bytes` arg, -1 when absent.
    pub bytes: i64,
}

/// One `deviceProperties` entry.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeviceInfo {
    /// `id` (the device's `pid`).
    pub id: i64,
    /// `name` (`NeuronCore 0 (trn2, LNC=2)`, `NVIDIA A100-…`).
    pub name: Option<String>,
    /// `deviceType` (`neuron` for our traces).
    pub device_type: Option<String>,
    /// `coreVersion` (neuron).
    pub core_version: Option<String>,
    /// `lnc`: physical cores per logical core (neuron).
    pub lnc: Option<i64>,
    /// `profile` (`trn2`, …; neuron).
    pub profile: Option<String>,
    /// `peakTflops` per dtype (neuron).
    pub peak_tflops: Vec<(String, f64)>,
    /// `totalGlobalMem`, bytes.
    pub memory_bytes: Option<i64>,
    /// `numSms`: streaming multiprocessors (NVIDIA) or compute units (AMD).
    pub num_sms: Option<i64>,
}

/// What the operator table and the trace diff need beyond [`RankTrace::rows`], gathered in
/// the same streaming pass: a few numbers per event, names interned.
///
/// Together, [`RankTrace::rows`], [`HostOps::operators`] not marked
/// [`HostOp::in_rows`] and [`HostOps::spans`] hold every complete event of the file (`cat`,
/// `ts` and `dur` present, `cat` not `Trace`) exactly once.
#[derive(Clone, Debug, Default)]
pub struct HostOps {
    /// Interned operator and span names and `Input Dims` texts. Kept apart from
    /// [`RankTrace::names`], whose lookups (device type, steps) concern rows only.
    pub names: Names,
    /// Host operators: events whose category is `cpu_op` or `user_annotation` after
    /// normalisation (legacy `Operator` included), host-side runtime and driver calls
    /// (`cuda_runtime`, `privateuse1_runtime`, …, which `key_averages` counts as CPU
    /// events too) and Python frames ([`HostOpKind`]), in file order, rows or not.
    pub operators: Vec<HostOp>,
    /// Every other complete event that is not a row (its `stream` is then absent), in
    /// file order: Python frames, runtime calls without a correlation, and so on.
    pub spans: Vec<HostSpan>,
    /// Σ duration (ns) of device work (kernels, copies, memsets, see
    /// [`crate::classify::is_device_work_category`]) per `External id` arg: the device
    /// time of the operator with that id.
    pub device_ns_by_external_id: std::collections::HashMap<i64, i64>,
    /// Distinct (`pid`, `tid`) of the operators; [`HostOp::thread`] indexes it.
    pub threads: Vec<(IdentKey, IdentKey)>,
    /// The other `record_shapes` arrays of the operators that have any, in operator
    /// order: what the performance model ([`crate::analyses::roofline`]) reads.
    pub shape_args: Vec<OpShapeArgs>,
}

/// The `Input type`, `Input Strides` and `Concrete Inputs` arrays of one operator, as
/// written (JSON texts interned in [`HostOps::names`]; the empty string when absent).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpShapeArgs {
    /// Index of the operator in [`HostOps::operators`].
    pub op: u32,
    /// `Input type`.
    pub input_types: NameId,
    /// `Input Strides`.
    pub input_strides: NameId,
    /// `Concrete Inputs`.
    pub concrete_inputs: NameId,
}

/// A `pid` or `tid` as written.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum IdentKey {
    /// Absent.
    Absent,
    /// A number.
    Num(i64),
    /// A string.
    Text(String),
}

/// One host operator (40 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostOp {
    /// Start, ns relative to the file's time base.
    pub ts_rel_ns: i64,
    /// Duration, ns.
    pub dur_ns: i64,
    /// `External id` arg, -1 when absent.
    pub external_id: i64,
    /// The name, in [`HostOps::names`].
    pub name: NameId,
    /// `Input Dims` as written (the JSON array's text) in [`HostOps::names`]; the empty
    /// string when absent or not an array.
    pub input_dims: NameId,
    /// Index into [`HostOps::threads`].
    pub thread: u32,
    /// Whether the event is also in [`RankTrace::rows`] (a step annotation, an operator
    /// with a `correlation` or `stream` arg, the file's first event).
    pub in_rows: bool,
    /// What kind of host event it is.
    pub kind: HostOpKind,
}

/// The kinds of [`HostOp`], as PyTorch's profiler tells them apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostOpKind {
    /// An operator (`cpu_op`) or a `record_function` range (`user_annotation`).
    Operator,
    /// A runtime or driver call (`cuda_runtime`, `privateuse1_runtime`, …): a line of
    /// its own in `key_averages`, but the device work of its `External id` belongs to
    /// the operator that launched it.
    RuntimeCall,
    /// A Python frame (`python_function`, `with_stack`): part of the nesting (an
    /// operator's parent may be one), not a line of `key_averages`.
    PythonFunction,
}

/// One complete event that is neither a row nor a host operator (24 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostSpan {
    /// Start, ns relative to the file's time base.
    pub ts_rel_ns: i64,
    /// Duration, ns.
    pub dur_ns: i64,
    /// The name, in [`HostOps::names`].
    pub name: NameId,
}

/// Every complete event of a rank that is not a row ([`RankTrace::rows`]), in file
/// order, with what a call stack needs (thread, category, event index), and the wait
/// args of the sync rows: what the critical path ([`crate::critical_path`]) needs beyond
/// the rows. Kept only with [`LoadOptions::with_timeline`].
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    /// Names and categories of [`Timeline::events`].
    pub names: Names,
    /// Distinct numeric (`pid`, `tid`) of the events; [`TimelineEvent::thread`] indexes it.
    pub threads: Vec<(Option<i64>, Option<i64>)>,
    /// The events, in file order.
    pub events: Vec<TimelineEvent>,
    /// `wait_on_stream` / `wait_on_cuda_event_record_corr_id` args of rows, in file order.
    pub waits: Vec<SyncWait>,
    /// Set when the load kept only an annotation's window
    /// ([`crate::LoadOptions::with_window`]): what was kept, and every row with a
    /// correlation in compact form. `None`: every event was kept.
    pub window: Option<KeptWindow>,
}

/// What a windowed load ([`crate::LoadOptions::with_window`]) kept of one rank.
///
/// Rows and timeline events are those of the window, found while reading: once the
/// annotation's last asked-for instance has been read, events are kept when they start
/// within [`KeptWindow::host_ns`] (host events) or [`KeptWindow::device_ns`] (device
/// rows, whose work may run after the host's window), and the events already read are
/// pruned by the same rule. Kept whatever their time: the file's first event, every
/// `Stream Wait Event` row and every annotation instance up to the last asked for.
/// Before that instance is read nothing is dropped; when it is never read, nothing is.
/// Of the rows dropped, what HTA's links and queue length need is in
/// [`KeptWindow::correlations`].
#[derive(Clone, Debug, Default)]
pub struct KeptWindow {
    /// The annotation and instances (first, last; from 0) the window is of.
    pub annotation: String,
    /// First and last instance.
    pub instances: (usize, usize),
    /// Host events kept: start in this range, ns relative to the file's time base;
    /// `None` when the instance was never read (nothing dropped).
    pub host_ns: Option<(i64, i64)>,
    /// Device rows (`stream` set) kept: start in this range.
    pub device_ns: Option<(i64, i64)>,
    /// Rows and timeline events dropped as outside the window.
    pub dropped_events: u64,
    /// What HTA computes over the whole trace (which launch pairs with which device
    /// row, and the queue length), in the form the load kept it.
    pub correlations: WindowCorrelations,
}

/// How a windowed load kept what HTA's links and queue length need of the rows it
/// dropped ([`KeptWindow::correlations`]).
///
/// HTA pairs a launch with the last device-side row of its correlation and the
/// device-side row with the last host-side one, over the whole trace; its queue length
/// is a cumulative count per stream over every counted launch and device row of the
/// file, in the order numpy's unstable argsort leaves equal times, which depends on
/// every key of the array. So some state per launch and device row of the file is
/// unavoidable if the path is to be HTA's exactly; the compact form keeps only that.
#[derive(Clone, Debug)]
pub enum WindowCorrelations {
    /// Every row of the file with a correlation, in file order (40 bytes each): what
    /// [`crate::LoadOptions::with_window_records`] asks for, for files where the compact
    /// form cannot be proven exact.
    Records(Vec<CorrelatedRow>),
    /// The compact form (the default): exact when no correlation id repeats on one
    /// side (host or device) of the file, which the load checks.
    Compact(CompactCorrelations),
    /// The compact form could not be proven exact for this file (the reason): load
    /// again with [`crate::LoadOptions::with_window_records`].
    Unproven(&'static str),
}

impl Default for WindowCorrelations {
    fn default() -> Self {
        WindowCorrelations::Records(Vec::new())
    }
}

/// The compact form of [`WindowCorrelations`]: HTA's pairs for the kept rows, and the
/// queue length's changes as HTA sorts them (10 bytes per launch and device row of the
/// file), proven exact by the load: no correlation id appears twice on one side (host
/// or device), no row has a correlation below -1 or a stream below -1, so each
/// correlation has at most one launch and one device row and "the last of a
/// correlation" is the only one.
#[derive(Clone, Debug, Default)]
pub struct CompactCorrelations {
    /// (correlation, device-side row, host-side row, stream) of every correlation with
    /// a kept row and both sides in the file (event indices; [`CompactCorrelations::UNKNOWN`]
    /// for a host side that was dropped before its device row was read: such a device
    /// row's launch is outside the window, so no clipped event needs the position);
    /// stream: the device row's when it is work a launch queued (on a stream, not
    /// `cuda_sync`), else -1.
    pub pairs: Vec<(i64, u64, u64, i64)>,
    /// HTA's launch calls (`stream` -1), in file order.
    pub launches: ChangeLog,
    /// Device rows on a stream with a correlation, in file order.
    pub device_rows: ChangeLog,
    /// The streams [`ChangeLog::stream`] numbers.
    pub streams: Vec<i64>,
}

impl CompactCorrelations {
    /// A host side whose position was not kept ([`CompactCorrelations::pairs`]).
    pub const UNKNOWN: u64 = u64::MAX;
}

/// Candidate changes of HTA's queue length ([`CompactCorrelations`]), in file order.
#[derive(Clone, Debug, Default)]
pub struct ChangeLog {
    /// Start, ns relative to the file's time base.
    pub ts_rel_ns: Vec<i64>,
    /// 0: not counted (no partner of the right kind); k: counted, on stream
    /// `streams[k - 1]`.
    pub stream: Vec<u16>,
    /// (position in this log, event index) of the kept rows.
    pub kept: Vec<(u32, u64)>,
}

/// A row with a correlation, in compact form (40 bytes), for
/// [`WindowCorrelations::Records`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CorrelatedRow {
    /// Start, ns relative to the file's time base.
    pub ts_rel_ns: i64,
    /// Position in `traceEvents`.
    pub event_index: u64,
    /// `correlation` arg.
    pub correlation: i64,
    /// `stream` arg, -1 when absent.
    pub stream: i64,
    /// [`CorrelatedRow::GPU_SIDE`], [`CorrelatedRow::HTA_LAUNCH`],
    /// [`CorrelatedRow::CUDA_SYNC`].
    pub flags: u8,
}

impl CorrelatedRow {
    /// HTA's device side of a correlation: on a stream with a correlation, or a
    /// device-wide sync row.
    pub const GPU_SIDE: u8 = 1;
    /// Named as one of HTA's launch calls (`cudaLaunchKernel`, …).
    pub const HTA_LAUNCH: u8 = 2;
    /// Category `cuda_sync` (a sync row, not work a launch queued).
    pub const CUDA_SYNC: u8 = 4;
}

/// One complete event that is not a row (40 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimelineEvent {
    /// Start, ns relative to the file's time base.
    pub ts_rel_ns: i64,
    /// Duration, ns.
    pub dur_ns: i64,
    /// Position in `traceEvents`.
    pub event_index: u64,
    /// The name, in [`Timeline::names`].
    pub name: NameId,
    /// The category as written, in [`Timeline::names`].
    pub category: NameId,
    /// Index into [`Timeline::threads`].
    pub thread: u32,
}

/// The wait args of one row (CUDA's `Stream Wait Event` and `Event Sync`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncWait {
    /// Position of the row's event in `traceEvents`.
    pub event_index: u64,
    /// `wait_on_stream`, -1 when absent.
    pub wait_on_stream: i64,
    /// `wait_on_cuda_event_record_corr_id`, -1 when absent.
    pub wait_on_event_corr: i64,
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
    /// The `host_name` PyTorch's profiler writes at the top level (the machine the rank
    /// ran on), when present.
    pub host_name: Option<String>,
    /// The emulator's `neuron_topology` member: where the rank's logical core sits and
    /// the link figures of its machine ([`crate::analyses::collectives::NeuronPlace`]).
    pub neuron_place: Option<crate::analyses::collectives::NeuronPlace>,
    /// The top-level `neuron_compile` member's raw JSON (the PyTorch extension's compile
    /// counts, [`crate::analyses::compile`]), when present.
    pub compile_meta: Option<String>,
    /// `baseTimeNanoseconds` (0 when timestamps are absolute): add it to a relative time
    /// to compare ranks.
    pub base_ns: i64,
    /// `deviceProperties`: (device id, total memory in bytes) where known.
    pub device_memory_bytes: Vec<(i64, i64)>,
    /// `deviceProperties`, every entry.
    pub devices: Vec<DeviceInfo>,
    /// `neuron_instruction` events (engine activity), in file order.
    pub engine_rows: Vec<EngineRow>,
    /// The passes of compiled-graph kernels (their `passes` and `pass_spans_ns` args),
    /// in file order.
    pub graph_passes: Vec<GraphPasses>,
    /// Events whose `passes`/`pass_spans_ns` could not be read (event indices).
    pub graph_passes_unreadable: Vec<u64>,
    /// `neuron_dma` events, in file order.
    pub dma_rows: Vec<DmaRow>,
    /// `neuron_throttle` events (measured throttling), in file order.
    pub throttle_rows: Vec<ThrottleRow>,
    /// Largest end over all complete events (ns, relative).
    pub max_end_rel_ns: Option<i64>,
    /// Lenient reads: the first errors of skipped events, then the error that stopped the
    /// read early (a truncated file), as messages with file, byte offset and event index.
    pub damage: Vec<String>,
    /// Host operators and the other complete events that are not rows, for the operator
    /// table and the trace diff; `None` when the load was asked not to keep them
    /// ([`LoadOptions::with_host_ops`]).
    pub host_ops: Option<HostOps>,
    /// Every other complete event and the sync rows' wait args, for the critical path;
    /// `None` unless the load asked for it ([`LoadOptions::with_timeline`]).
    pub timeline: Option<Timeline>,
}

impl RankTrace {
    /// The index in [`RankTrace::rows`] of the row of event `event_index` (rows are kept
    /// in event order), if that event was kept.
    pub fn row_of_event(&self, event_index: u64) -> Option<usize> {
        let i = self.rows.partition_point(|r| r.event_index < event_index);
        (self.rows.get(i)?.event_index == event_index).then_some(i)
    }

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

    /// A readable device label: from `deviceProperties` for neuron devices
    /// (`Trainium2 NeuronCore (trn2, LNC=2)`), else `Neuron device` when neuron categories
    /// were seen, else HTA's [`RankTrace::device_type`] (with a GPU's own name when
    /// `deviceProperties` has one, e.g. `NVIDIA GPU (NVIDIA A100-PG509-200)`).
    pub fn device_label(&self) -> String {
        let neuron = self
            .devices
            .iter()
            .find(|d| d.device_type.as_deref() == Some("neuron") || d.core_version.is_some());
        if let Some(d) = neuron {
            let chip = d.profile.as_deref().map_or("Neuron", chip_name);
            let mut details: Vec<String> = Vec::new();
            if let Some(profile) = &d.profile {
                details.push(profile.clone());
            }
            if let Some(lnc) = d.lnc {
                details.push(format!("LNC={lnc}"));
            }
            return if details.is_empty() {
                format!("{chip} NeuronCore")
            } else {
                format!("{chip} NeuronCore ({})", details.join(", "))
            };
        }
        let has_neuron_categories = ["neuron_instruction", "neuron_dma", "privateuse1_runtime"]
            .iter()
            .any(|c| self.names.lookup(c).is_some());
        if has_neuron_categories || !self.engine_rows.is_empty() || !self.dma_rows.is_empty() {
            return "Neuron device".to_owned();
        }
        let hta = self.device_type();
        match self.devices.iter().find_map(|d| d.name.as_deref()) {
            Some(name) if hta != "UNKNOWN GPU" => format!("{hta} ({name})"),
            Some(name) => name.to_owned(),
            None => hta.to_owned(),
        }
    }
}

/// `trn2` → `Trainium2`, `trn1` → `Trainium1`, `inf2` → `Inferentia2`, else as written.
fn chip_name(profile: &str) -> &str {
    let lower = profile.to_ascii_lowercase();
    match lower.as_str() {
        p if p.starts_with("trn1") => "Trainium1",
        p if p.starts_with("trn2") => "Trainium2",
        p if p.starts_with("trn3") => "Trainium3",
        p if p.starts_with("inf2") => "Inferentia2",
        _ => profile,
    }
}

/// The traces of a run, one per rank, sorted by rank.
#[derive(Clone, Debug)]
pub struct TraceSet {
    /// Ranks, sorted.
    pub ranks: Vec<RankTrace>,
    /// Ranks with several files (profiling windows) and the one loaded of each, when
    /// the set was loaded with [`crate::load_inputs`]; empty otherwise.
    pub windows: Vec<crate::inputs::RankWindows>,
}

impl TraceSet {
    /// The trace of `rank`.
    pub fn rank(&self, rank: i64) -> Option<&RankTrace> {
        self.ranks.iter().find(|r| r.rank == rank)
    }
}
