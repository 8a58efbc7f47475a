//! The recording calls: the global enabled flag, correlation ids, and one function per
//! record kind, plus scope guards for begin/end pairs.
//!
//! Every call checks the enabled flag first (one relaxed atomic load) and returns at once
//! when recording is off, before reading any clock. When it is on, a call reads the
//! calling thread's host clock (only the `*_now` style calls; device-side calls take
//! modeled instants), builds a [`Record`] on the stack and pushes it into the thread's
//! ring: no allocation, no lock, no system call. The first record of a thread registers
//! its ring once (see the crate docs).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::local::LOCAL;
use crate::{
    CollectiveOp, CollectivePayload, CounterPayload, DmaDirection, DmaPayload, FlowKind,
    FlowPayload, InstructionPayload, KernelPayload, MemoryAction, MemoryPayload, NameId,
    OperatorPayload, Payload, Phase, RangePayload, Record, RecordKind, RuntimeCallKind,
    RuntimeCallPayload,
};

static ENABLED: AtomicBool = AtomicBool::new(false);
static NEXT_CORR_ID: AtomicU64 = AtomicU64::new(1);

/// Turns recording on or off for the whole process. Recording starts off.
///
/// Enabling also takes the clock [`anchor`](crate::clock::anchor) if nobody has yet.
pub fn set_enabled(enabled: bool) {
    if enabled {
        crate::clock::anchor();
    }
    ENABLED.store(enabled, Ordering::Relaxed);
}

/// Whether recording is on: one relaxed atomic load.
#[inline(always)]
pub fn is_enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// A new process-wide correlation id (never 0), also usable as a flow id.
#[inline]
pub fn next_corr_id() -> u64 {
    NEXT_CORR_ID.fetch_add(1, Ordering::Relaxed)
}

/// Records `record` as is (times included) if recording is on; `thread_id` is filled in.
#[inline]
pub fn record(record: Record) {
    if !is_enabled() {
        return;
    }
    let mut record = record;
    LOCAL.with(|local| local.push(&mut record));
}

/// Records an instant-like record stamped with this thread's host clock (`start_ns ==
/// end_ns == now`), if recording is on.
#[inline]
pub fn record_now(kind: RecordKind, phase: Phase, op: u16, payload: Payload) {
    if !is_enabled() {
        return;
    }
    LOCAL.with(|local| {
        let now_ns = local.now_ns();
        let mut record = Record::new(kind, phase, op, now_ns, now_ns, payload);
        local.push(&mut record);
    });
}

/// Records an activity spanning `start_ns..end_ns` ([`Phase::Complete`]), if on.
#[inline]
pub fn record_span(kind: RecordKind, op: u16, start_ns: u64, end_ns: u64, payload: Payload) {
    record(Record::new(
        kind,
        Phase::Complete,
        op,
        start_ns,
        end_ns,
        payload,
    ));
}

/// Host operator begins now.
#[inline]
pub fn operator_begin(payload: OperatorPayload) {
    record_now(RecordKind::Operator, Phase::Begin, 0, payload.into());
}

/// Host operator ends now (pairs with the last unmatched [`operator_begin`] on this thread).
#[inline]
pub fn operator_end(payload: OperatorPayload) {
    record_now(RecordKind::Operator, Phase::End, 0, payload.into());
}

/// User range (for example `ProfilerStep` with `value` = step) begins now.
///
/// User ranges are coarse (steps, annotations), so on a thread whose host clock follows
/// its CPU time they are boundaries: their stamp is taken after a CPU-time sync
/// ([`crate::clock::sync`]).
#[inline]
pub fn range_begin(payload: RangePayload) {
    if is_enabled() {
        range_boundary();
    }
    record_now(RecordKind::UserRange, Phase::Begin, 0, payload.into());
}

/// User range ends now (a CPU-time boundary too, see [`range_begin`]).
#[inline]
pub fn range_end(payload: RangePayload) {
    if is_enabled() {
        range_boundary();
    }
    record_now(RecordKind::UserRange, Phase::End, 0, payload.into());
}

/// The CPU-time sync before a user-range stamp (nothing on other threads).
#[inline]
fn range_boundary() {
    LOCAL.with(|local| {
        if local.cpu.is_on() && local.emulation_depth.get() == 0 {
            local.cpu_sync();
        }
    });
}

/// A runtime call that ran from `start_ns` to `end_ns` on this thread's host clock.
#[inline]
pub fn runtime_call(kind: RuntimeCallKind, start_ns: u64, end_ns: u64, p: RuntimeCallPayload) {
    record_span(
        RecordKind::RuntimeCall,
        kind.raw(),
        start_ns,
        end_ns,
        p.into(),
    );
}

/// A kernel that ran from `start_ns` to `end_ns` (modeled) on a device queue.
#[inline]
pub fn kernel(start_ns: u64, end_ns: u64, payload: KernelPayload) {
    record_span(RecordKind::Kernel, 0, start_ns, end_ns, payload.into());
}

/// An engine instruction that ran from `start_ns` to `end_ns` (modeled).
#[inline]
pub fn instruction(start_ns: u64, end_ns: u64, payload: InstructionPayload) {
    record_span(RecordKind::Instruction, 0, start_ns, end_ns, payload.into());
}

/// A DMA transfer that ran from `start_ns` to `end_ns` (modeled).
#[inline]
pub fn dma(direction: DmaDirection, start_ns: u64, end_ns: u64, payload: DmaPayload) {
    record_span(
        RecordKind::Dma,
        direction.raw(),
        start_ns,
        end_ns,
        payload.into(),
    );
}

/// A memory allocation or free now, with the device totals after it.
#[inline]
pub fn memory(action: MemoryAction, payload: MemoryPayload) {
    record_now(
        RecordKind::Memory,
        Phase::Instant,
        action.raw(),
        payload.into(),
    );
}

/// A collective that ran from `start_ns` to `end_ns` (modeled, on a device queue).
#[inline]
pub fn collective(op: CollectiveOp, start_ns: u64, end_ns: u64, payload: CollectivePayload) {
    record_span(
        RecordKind::Collective,
        op.raw(),
        start_ns,
        end_ns,
        payload.into(),
    );
}

/// A collective begins now on this host thread (for example the host side of a wait).
#[inline]
pub fn collective_begin(op: CollectiveOp, payload: CollectivePayload) {
    record_now(
        RecordKind::Collective,
        Phase::Begin,
        op.raw(),
        payload.into(),
    );
}

/// A collective begun by [`collective_begin`] ends now.
#[inline]
pub fn collective_end(op: CollectiveOp, payload: CollectivePayload) {
    record_now(RecordKind::Collective, Phase::End, op.raw(), payload.into());
}

/// A counter sample now.
#[inline]
pub fn counter(payload: CounterPayload) {
    record_now(RecordKind::Counter, Phase::Instant, 0, payload.into());
}

/// A counter sample at a given (for example modeled) instant.
#[inline]
pub fn counter_at(at_ns: u64, payload: CounterPayload) {
    record(Record::new(
        RecordKind::Counter,
        Phase::Instant,
        0,
        at_ns,
        at_ns,
        payload.into(),
    ));
}

/// The start of a flow link, now on this thread.
#[inline]
pub fn flow_start(kind: FlowKind, flow_id: u64) {
    let payload = FlowPayload {
        flow_id,
        ..Default::default()
    };
    record_now(RecordKind::Flow, Phase::Begin, kind.raw(), payload.into());
}

/// The end of a flow link, now on this thread.
#[inline]
pub fn flow_end(kind: FlowKind, flow_id: u64) {
    let payload = FlowPayload {
        flow_id,
        ..Default::default()
    };
    record_now(RecordKind::Flow, Phase::End, kind.raw(), payload.into());
}

/// The end of a flow link at a modeled instant `at_ns` (a device activity placed by a
/// timing model, not on this thread's clock).
#[inline]
pub fn flow_end_at(kind: FlowKind, flow_id: u64, at_ns: u64) {
    let payload = FlowPayload {
        flow_id,
        ..Default::default()
    };
    record(Record::new(
        RecordKind::Flow,
        Phase::End,
        kind.raw(),
        at_ns,
        at_ns,
        payload.into(),
    ));
}

/// Guard for a host operator: records `Begin` when created and `End` when dropped.
///
/// The end is recorded whenever the begin was, even if recording was turned off in
/// between, so begin/end pairs always balance.
#[must_use = "the operator ends when this guard is dropped"]
#[derive(Debug)]
pub struct OperatorScope {
    payload: OperatorPayload,
    began: bool,
}

impl OperatorScope {
    /// Records the operator's begin now.
    #[inline]
    pub fn new(payload: OperatorPayload) -> Self {
        let began = is_enabled();
        if began {
            operator_begin(payload);
        }
        OperatorScope { payload, began }
    }
}

impl Drop for OperatorScope {
    #[inline]
    fn drop(&mut self) {
        if self.began {
            end_now(RecordKind::Operator, self.payload.into());
        }
    }
}

/// Guard for a user range: records `Begin` when created and `End` when dropped.
///
/// Like [`OperatorScope`], the end is recorded whenever the begin was.
#[must_use = "the range ends when this guard is dropped"]
#[derive(Debug)]
pub struct RangeScope {
    payload: RangePayload,
    began: bool,
}

impl RangeScope {
    /// Begins a range named `name_id` with a user value (the step for `ProfilerStep`).
    #[inline]
    pub fn new(name_id: NameId, value: u64) -> Self {
        let payload = RangePayload {
            name_id,
            value,
            ..Default::default()
        };
        let began = is_enabled();
        if began {
            range_begin(payload);
        }
        RangeScope { payload, began }
    }
}

impl Drop for RangeScope {
    #[inline]
    fn drop(&mut self) {
        if self.began {
            range_boundary();
            end_now(RecordKind::UserRange, self.payload.into());
        }
    }
}

/// Records an `End` now regardless of the enabled flag (its `Begin` was recorded).
#[inline]
fn end_now(kind: RecordKind, payload: Payload) {
    LOCAL.with(|local| {
        let now_ns = local.now_ns();
        let mut record = Record::new(kind, Phase::End, 0, now_ns, now_ns, payload);
        local.push(&mut record);
    });
}

/// Guard for a runtime call: notes the start when created and records one `Complete`
/// record when dropped.
#[must_use = "the runtime call is recorded when this guard is dropped"]
#[derive(Debug)]
pub struct RuntimeCallScope {
    kind: RuntimeCallKind,
    payload: RuntimeCallPayload,
    /// `None` when recording was off at the start.
    start_ns: Option<u64>,
}

impl RuntimeCallScope {
    /// Starts timing a runtime call.
    #[inline]
    pub fn new(kind: RuntimeCallKind, payload: RuntimeCallPayload) -> Self {
        let start_ns = if is_enabled() {
            Some(crate::clock::now_ns())
        } else {
            None
        };
        RuntimeCallScope {
            kind,
            payload,
            start_ns,
        }
    }
}

impl Drop for RuntimeCallScope {
    #[inline]
    fn drop(&mut self) {
        if let Some(start_ns) = self.start_ns {
            runtime_call(self.kind, start_ns, crate::clock::now_ns(), self.payload);
        }
    }
}

/// Begins a user range named by a string literal, ending when the guard drops.
///
/// ```
/// runtime_hooks::set_enabled(true);
/// {
///     let _step = runtime_hooks::range_scope!("ProfilerStep", 3);
///     let _other = runtime_hooks::range_scope!("data loading");
/// }
/// ```
#[macro_export]
macro_rules! range_scope {
    ($name:expr) => {
        $crate::RangeScope::new($crate::name!($name), 0)
    };
    ($name:expr, $value:expr) => {
        $crate::RangeScope::new($crate::name!($name), $value)
    };
}
