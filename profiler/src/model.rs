//! The recorded window as resolved activities: records paired, named, linked and
//! filtered by the session's options, ready to be written as Kineto events
//! ([`crate::emit`]) or summed into the operator table ([`crate::key_averages`]).
//!
//! All times are nanoseconds on the process timeline (`runtime_hooks::clock`); the
//! emitter converts them to wall time.

mod annotations;
mod build;
mod collective;

use std::sync::Arc;

use runtime_hooks::{DmaDirection, FlowKind, RuntimeCallKind};

pub(crate) use annotations::device_annotations;
pub(crate) use build::{build, PROFILER_STEP};
pub(crate) use collective::{dtype_name, Collective};

/// Which host activity a [`HostSpan`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HostKind {
    /// An operator (`cpu_op`).
    Operator,
    /// A user range (`user_annotation`).
    UserRange,
    /// A runtime call (`privateuse1_runtime`).
    Runtime(RuntimeCallKind),
    /// The host side of a collective (`cpu_op` named `record_param_comms`).
    Collective,
}

/// One host activity with a duration, on one host thread.
#[derive(Debug, Clone)]
pub(crate) struct HostSpan {
    pub(crate) kind: HostKind,
    pub(crate) name: Arc<str>,
    /// OS thread id.
    pub(crate) tid: u64,
    pub(crate) start_ns: u64,
    pub(crate) end_ns: u64,
    /// The record's correlation id (a runtime call's `correlation`; 0: none).
    pub(crate) corr_id: u64,
    /// `External id`: an operator's own id; a runtime call's enclosing operator's (0: none).
    pub(crate) external_id: u64,
    /// `Record function id` (operators and user ranges; 0 otherwise).
    pub(crate) record_function_id: u64,
    /// Autograd sequence number (0: none).
    pub(crate) seq_nr: u64,
    /// `Fwd thread id`: OS thread of the first operator with the same sequence number
    /// when that is another operator (a backward op), else 0.
    pub(crate) fwd_tid: u64,
    pub(crate) flops: u64,
    pub(crate) bytes: u64,
    /// `Input Dims` and `Input type` JSON texts.
    pub(crate) input_sig: Option<(Arc<str>, Arc<str>)>,
    /// Index of the enclosing span on the same thread.
    pub(crate) parent: Option<usize>,
    /// Device a runtime call targets.
    pub(crate) device: Option<u16>,
    pub(crate) collective: Option<Collective>,
}

impl HostSpan {
    pub(crate) fn dur_ns(&self) -> u64 {
        self.end_ns - self.start_ns
    }
}

/// Which device activity a [`DeviceSpan`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DeviceKind {
    /// `kernel`.
    Kernel,
    /// `gpu_memcpy` (names starting `Memcpy`).
    Memcpy,
    /// `gpu_memset` (names starting `Memset`).
    Memset,
    /// A collective, written as a `kernel` with NCCL-style args.
    Collective,
}

/// One activity on a device execution queue.
#[derive(Debug, Clone)]
pub(crate) struct DeviceSpan {
    pub(crate) kind: DeviceKind,
    pub(crate) name: Arc<str>,
    pub(crate) device: u16,
    pub(crate) queue: u16,
    pub(crate) start_ns: u64,
    pub(crate) end_ns: u64,
    pub(crate) corr_id: u64,
    /// `External id` of the operator that launched it (0: none in the window).
    pub(crate) external_id: u64,
    /// Index of the host span it is attributed to in `key_averages` (the operator with
    /// its correlation id, else the runtime call).
    pub(crate) host_span: Option<usize>,
    /// Start of its launch on the host, when the launch is in the window.
    pub(crate) launch: Option<(u64, u64)>,
    pub(crate) flops: u64,
    pub(crate) bytes: u64,
    /// Busy time per engine index from its instructions (semaphore waits excluded).
    pub(crate) engine_busy_ns: Vec<(u8, u64)>,
    pub(crate) collective: Option<Collective>,
}

impl DeviceSpan {
    pub(crate) fn dur_ns(&self) -> u64 {
        self.end_ns - self.start_ns
    }
}
/// The kernel names a device records its stream synchronization under
/// (`neuron-backend`'s external streams): an event's mark on its queue and a queue's
/// wait for another queue's event. The model keeps them apart from kernels.
pub(crate) const EVENT_RECORD_NAME: &str = "Event Record";
/// See [`EVENT_RECORD_NAME`].
pub(crate) const STREAM_WAIT_NAME: &str = "Stream Wait Event";

/// Which synchronization a [`SyncSpan`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SyncKind {
    /// An event's mark on its queue at the instant it completes.
    EventRecord,
    /// A queue waiting for another queue's event, from when the queue reached the wait
    /// to when the event completed.
    StreamWait,
}

/// One stream synchronization on a device queue.
#[derive(Debug, Clone)]
pub(crate) struct SyncSpan {
    pub(crate) kind: SyncKind,
    pub(crate) device: u16,
    pub(crate) queue: u16,
    pub(crate) start_ns: u64,
    pub(crate) end_ns: u64,
    /// The event's correlation id (the record and the waits on it share it).
    pub(crate) corr_id: u64,
    /// A wait: the queue (and device) of the event it waits for, when its record is in
    /// the window. A record: whether a wait in the window pairs with it.
    pub(crate) paired: Option<(u16, u16)>,
}

/// One engine instruction (or semaphore wait).
#[derive(Debug, Clone)]
pub(crate) struct Instruction {
    pub(crate) name: Arc<str>,
    pub(crate) device: u16,
    pub(crate) core: u8,
    pub(crate) engine: u8,
    pub(crate) start_ns: u64,
    pub(crate) end_ns: u64,
    pub(crate) corr_id: u64,
    pub(crate) flops: u64,
}

/// One DMA transfer.
#[derive(Debug, Clone)]
pub(crate) struct DmaSpan {
    pub(crate) direction: DmaDirection,
    pub(crate) device: u16,
    pub(crate) queue: u16,
    pub(crate) start_ns: u64,
    pub(crate) end_ns: u64,
    pub(crate) corr_id: u64,
    pub(crate) bytes: u64,
}

/// One allocation or free, with the device totals after it.
#[derive(Debug, Clone)]
pub(crate) struct MemoryChange {
    pub(crate) tid: u64,
    pub(crate) ts_ns: u64,
    pub(crate) device: u16,
    pub(crate) addr: u64,
    /// Negative on free.
    pub(crate) bytes: i64,
    pub(crate) total_allocated_bytes: u64,
    pub(crate) total_reserved_bytes: u64,
    pub(crate) category: Option<Arc<str>>,
}

/// Where a flow arrow starts or ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FlowPoint {
    /// `None`: the host process; `Some(d)`: device `d`.
    pub(crate) device: Option<u16>,
    pub(crate) tid: u64,
    pub(crate) ts_ns: u64,
}

/// A flow arrow with both ends in the window.
#[derive(Debug, Clone)]
pub(crate) struct Flow {
    pub(crate) kind: FlowKind,
    pub(crate) flow_id: u64,
    pub(crate) from: FlowPoint,
    pub(crate) to: FlowPoint,
}

/// One sample of a device counter track.
#[derive(Debug, Clone)]
pub(crate) struct CounterSample {
    pub(crate) device: u16,
    pub(crate) name: Arc<str>,
    pub(crate) ts_ns: u64,
    pub(crate) series: Vec<(&'static str, f64)>,
}

/// A host thread that has activity in the window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostThread {
    pub(crate) tid: u64,
    pub(crate) name: Option<String>,
}

/// Everything of one recorded window.
#[derive(Debug, Clone, Default)]
pub(crate) struct TraceModel {
    pub(crate) host: Vec<HostSpan>,
    pub(crate) device: Vec<DeviceSpan>,
    /// Stream synchronization on device queues (not kernels).
    pub(crate) syncs: Vec<SyncSpan>,
    pub(crate) instructions: Vec<Instruction>,
    pub(crate) dmas: Vec<DmaSpan>,
    pub(crate) memory: Vec<MemoryChange>,
    pub(crate) flows: Vec<Flow>,
    pub(crate) counters: Vec<CounterSample>,
    pub(crate) threads: Vec<HostThread>,
    /// Records lost in the window (full rings, threads exiting).
    pub(crate) dropped_records: u64,
    /// Records the converter could not use (unknown kind, unmatched begin or end).
    pub(crate) unpaired_records: u64,
}
