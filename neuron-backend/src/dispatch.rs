//! The one dispatcher every op goes through, and where each hook point is recorded.
//!
//! For an op it records, in order on the calling host thread: the operator begin (name,
//! input signature (see [`signature`]), sequence number, correlation id, FLOPs, bytes); each output allocation (through the
//! allocator); the kernel launch as a runtime call with the correlation id, holding the
//! queue submission (a second runtime call, long when the queue was full and the host
//! had to wait) and the start of the launch→kernel flow; then, as emulation time that
//! the host clock does not see, the timing model places the kernel and its instructions
//! and the CPU computes the numerics; finally the operator end.

mod signature;

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use runtime_hooks::{
    clock, FlowKind, OperatorPayload, OperatorScope, RuntimeCallKind, RuntimeCallPayload,
    RuntimeCallScope,
};

use crate::host_cost::{HostCost, OpClass};
use crate::tensor::{Data, Storage, Values};
use crate::timing::lower::{MatmulPlan, RowPlan};
use crate::timing::{KernelInfo, KernelRun};
use crate::{BackendError, DType, Device, Tensor};

static SEQUENCE: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// Autograd's view of this thread's ops: the sequence number backward ops reuse
    /// (0: none), whether forward ops start a forward→backward flow, and the last
    /// sequence number handed out.
    static SEQ_OVERRIDE: Cell<u64> = const { Cell::new(0) };
    static FORWARD_FLOWS: Cell<bool> = const { Cell::new(false) };
    static LAST_SEQ: Cell<u64> = const { Cell::new(0) };
}

/// The sequence number for the next op on this thread: the backward override if one
/// is set, else a fresh one. At the forward of an op that needs a gradient, also starts
/// its forward→backward flow (inside the operator's span).
fn next_seq_nr() -> u64 {
    let seq_nr = match SEQ_OVERRIDE.with(Cell::get) {
        0 => SEQUENCE.fetch_add(1, Ordering::Relaxed),
        seq_nr => seq_nr,
    };
    LAST_SEQ.with(|last| last.set(seq_nr));
    seq_nr
}

fn start_forward_flow(seq_nr: u64) {
    if FORWARD_FLOWS.with(Cell::get) && runtime_hooks::is_enabled() {
        runtime_hooks::flow_start(FlowKind::ForwardToBackward, seq_nr);
    }
}

/// The sequence number of the last op dispatched on this thread.
pub(crate) fn last_seq_nr() -> u64 {
    LAST_SEQ.with(Cell::get)
}

/// Which host-cost figure an op dispatched now pays: a backward op inside a
/// [`BackwardScope`], a forward op of a recorded graph inside a [`ForwardScope`], else
/// a plain op.
fn op_class() -> OpClass {
    if SEQ_OVERRIDE.with(Cell::get) != 0 {
        OpClass::Backward
    } else if FORWARD_FLOWS.with(Cell::get) {
        OpClass::Forward
    } else {
        OpClass::Plain
    }
}

/// The host side of one op on a thread with a [`HostCost`]: the op runs as emulation
/// (the emulator's own dispatch is not host time) and its modeled cost is spent at
/// the modeled points. Without a host cost (threads outside ranks), nothing changes:
/// the dispatch's own time is the host time.
pub(crate) struct HostSide {
    cost: Option<HostCost>,
    _modeled: Option<clock::EmulationScope>,
}

impl HostSide {
    /// Enters the op's host side (before its operator begin is recorded).
    pub(crate) fn enter() -> Self {
        let cost = crate::host_cost::thread_host_cost();
        if cost.is_none() {
            // Measured host time: the op's start is a boundary of a CPU-time clock.
            clock::sync();
        }
        HostSide {
            _modeled: cost.map(|_| clock::emulation_scope()),
            cost,
        }
    }

    /// Spends the framework cost of an op of the current class (after the operator
    /// begin, before allocation and launch).
    pub(crate) fn framework(&self) {
        self.framework_as(op_class());
    }

    /// Spends a collective's `c10d` call path.
    pub(crate) fn collective(&self) {
        if let Some(cost) = &self.cost {
            crate::host_cost::spend(cost.collective_ns);
        }
    }

    /// Spends the framework cost of an op of `class`.
    pub(crate) fn framework_as(&self, class: OpClass) {
        if let Some(cost) = &self.cost {
            crate::host_cost::spend(cost.op_ns(class));
        }
    }
}

/// While alive, ops on this thread are forward ops of a recorded graph: each starts a
/// forward→backward flow with its sequence number as the flow id.
pub(crate) struct ForwardScope(bool);

impl ForwardScope {
    pub(crate) fn new() -> Self {
        ForwardScope(FORWARD_FLOWS.with(|f| f.replace(true)))
    }
}

impl Drop for ForwardScope {
    fn drop(&mut self) {
        FORWARD_FLOWS.with(|f| f.set(self.0));
    }
}

/// While alive, ops on this thread are backward ops of the forward op `seq_nr`: they
/// carry its sequence number.
pub(crate) struct BackwardScope(u64, bool);

impl BackwardScope {
    pub(crate) fn new(seq_nr: u64) -> Self {
        BackwardScope(
            SEQ_OVERRIDE.with(|s| s.replace(seq_nr)),
            FORWARD_FLOWS.with(|f| f.replace(false)),
        )
    }
}

impl Drop for BackwardScope {
    fn drop(&mut self) {
        SEQ_OVERRIDE.with(|s| s.set(self.0));
        FORWARD_FLOWS.with(|f| f.set(self.1));
    }
}

/// How a kernel is lowered to instructions.
#[derive(Debug, Clone)]
pub(crate) enum Lowering {
    Rows(RowPlan),
    /// Row plans one after the other (a reduction's partial results, then across them).
    RowPasses(Vec<RowPlan>),
    Matmul(MatmulPlan),
    Copy {
        bytes: u64,
        direction: runtime_hooks::DmaDirection,
    },
}

impl Lowering {
    fn lower(&self, run: &mut KernelRun<'_>) {
        match self {
            Lowering::Rows(plan) => plan.lower(run),
            Lowering::RowPasses(plans) => {
                for (i, plan) in plans.iter().enumerate() {
                    if i > 0 {
                        run.begin_next_stage();
                    }
                    plan.lower(run);
                }
            }
            Lowering::Matmul(plan) => plan.lower(run),
            Lowering::Copy { bytes, direction } => {
                crate::timing::lower::copy(run, *bytes, *direction)
            }
        }
    }
}

/// One op to dispatch.
#[derive(Debug)]
pub(crate) struct OpCall<'a> {
    /// The operator name, for example `aten::add`.
    pub(crate) op: &'static str,
    /// The kernel name stem (distinct from the operator name), for example `add`.
    pub(crate) kernel: &'static str,
    pub(crate) inputs: &'a [&'a Tensor],
    pub(crate) outputs: Vec<(Vec<usize>, DType)>,
    pub(crate) flops: u64,
    pub(crate) lowering: Lowering,
}

/// The device all `inputs` live on; errors name the op and each input's place.
pub(crate) fn common_device(op: &'static str, inputs: &[&Tensor]) -> Result<Device, BackendError> {
    for input in inputs {
        input.check_live(op)?;
    }
    let mismatch = || BackendError::DeviceMismatch {
        op,
        devices: inputs.iter().map(|t| t.place()).collect(),
    };
    let first = inputs
        .first()
        .and_then(|t| t.device())
        .ok_or_else(mismatch)?;
    for input in inputs {
        match input.device() {
            Some(device) if device.same(first) => {}
            _ => return Err(mismatch()),
        }
    }
    Ok(first.clone())
}

/// Allocates an output of `shape` and `dtype` on `device` (recorded by the allocator).
pub(crate) fn allocate(
    device: &Device,
    shape: &[usize],
    dtype: DType,
) -> Result<Tensor, BackendError> {
    let bytes = crate::tensor::checked_bytes("allocate", shape, dtype)?;
    let (addr, _) = device.allocator().allocate(bytes, device.category())?;
    Ok(Tensor {
        shape: shape.into(),
        dtype,
        storage: Storage::on_device(device.clone(), addr, Data::Absent),
        offset: 0,
    })
}

pub(crate) use signature::op_ids;

/// Records a host-only op (views) on `inputs`: operator begin and end, no kernel.
pub(crate) fn host_op<T>(op: &'static str, inputs: &[&Tensor], body: impl FnOnce() -> T) -> T {
    let host = HostSide::enter();
    let ids = op_ids(op, inputs);
    let seq_nr = next_seq_nr();
    let _scope = OperatorScope::new(OperatorPayload {
        name_id: ids.name_id,
        input_sig_id: ids.input_sig_id,
        seq_nr,
        ..Default::default()
    });
    start_forward_flow(seq_nr);
    host.framework_as(OpClass::View);
    body()
}

/// Dispatches `call` on `device`, computing outputs with `numerics` when numerics are on
/// and every input has values.
pub(crate) fn dispatch(
    device: &Device,
    call: OpCall<'_>,
    numerics: impl FnOnce(&[Values]) -> Vec<Values>,
) -> Result<Vec<Tensor>, BackendError> {
    dispatch_checked(device, call, |values| Ok(numerics(values)))
}

/// Like [`dispatch`], for numerics that can find bad input in the values (indices).
pub(crate) fn dispatch_checked(
    device: &Device,
    call: OpCall<'_>,
    numerics: impl FnOnce(&[Values]) -> Result<Vec<Values>, BackendError>,
) -> Result<Vec<Tensor>, BackendError> {
    let result = dispatch_on_device(device, call, numerics);
    if let Err(err) = &result {
        device.shared.live.note_error(err);
    }
    result
}

fn dispatch_on_device(
    device: &Device,
    call: OpCall<'_>,
    numerics: impl FnOnce(&[Values]) -> Result<Vec<Values>, BackendError>,
) -> Result<Vec<Tensor>, BackendError> {
    let host = HostSide::enter();
    let queue = device.current_queue();
    if device.timeline().queues[queue].released {
        return Err(BackendError::StreamReleased {
            op: call.op,
            stream: device.current_stream().to_string(),
        });
    }
    let mut bytes: u64 = call.inputs.iter().map(|t| t.size_bytes()).sum::<u64>();
    for (shape, dtype) in &call.outputs {
        let output_bytes = crate::tensor::checked_bytes(call.op, shape, *dtype)?;
        bytes = bytes.saturating_add(output_bytes);
    }
    let corr_id = runtime_hooks::next_corr_id();
    let ids = op_ids(call.op, call.inputs);
    let seq_nr = next_seq_nr();
    let _op = OperatorScope::new(OperatorPayload {
        name_id: ids.name_id,
        input_sig_id: ids.input_sig_id,
        corr_id,
        seq_nr,
        flops: call.flops,
        bytes,
    });
    start_forward_flow(seq_nr);
    host.framework();
    let outputs = call
        .outputs
        .iter()
        .map(|(shape, dtype)| allocate(device, shape, *dtype))
        .collect::<Result<Vec<_>, _>>()?;
    let dtype = call.inputs.first().map_or(call.outputs[0].1, |t| t.dtype);
    let kernel_name = if call.kernel.starts_with("Memcpy") {
        call.kernel.to_string()
    } else {
        format!("{}_{dtype}", call.kernel)
    };
    let kernel = KernelInfo {
        name_id: runtime_hooks::intern(&kernel_name),
        corr_id,
        flops: call.flops,
        bytes,
    };
    let (_, end_ns) = launch(device, queue, kernel, Some(call.op), &call.lowering, || {
        if device.numerics() {
            compute(call.op, call.inputs, &outputs, numerics)
        } else {
            Ok(())
        }
    })?;
    if let Lowering::Copy {
        direction: runtime_hooks::DmaDirection::HostToDevice,
        bytes,
    } = call.lowering
    {
        // A copy from (pageable) host memory returns once the data has left it, as
        // PyTorch's default `non_blocking=False` copy does: the host waits for it.
        let _wait = RuntimeCallScope::new(
            RuntimeCallKind::MemoryCopy,
            RuntimeCallPayload {
                name_id: runtime_hooks::name!("nrt_tensor_write"),
                device: device.shared.index,
                queue: queue as u16,
                corr_id,
                bytes,
                ..Default::default()
            },
        );
        crate::device::wait_until(end_ns);
    }
    Ok(outputs)
}

/// Launches a kernel on `queue`: the launch runtime call (holding the submission), then,
/// as emulation time, its placement by the timing model and `emulate` (the numerics).
/// The kernel's device time counts for operator `op` in the live monitor. Returns the
/// kernel's modeled `(start, end)`.
pub(crate) fn launch<E>(
    device: &Device,
    queue: usize,
    kernel: KernelInfo,
    op: Option<&'static str>,
    lowering: &Lowering,
    emulate: impl FnOnce() -> Result<(), E>,
) -> Result<(u64, u64), E> {
    let launch_payload = RuntimeCallPayload {
        name_id: runtime_hooks::name!("nrt_execute"),
        device: device.shared.index,
        queue: queue as u16,
        corr_id: kernel.corr_id,
        bytes: kernel.bytes,
        ..Default::default()
    };
    let _launch = RuntimeCallScope::new(RuntimeCallKind::KernelLaunch, launch_payload);
    // The runtime's launch work, then the submission (modeled on a host-cost thread).
    crate::host_cost::spend_figure(|cost| cost.launch_ns);
    let launch_ns = submit(device, queue, launch_payload);
    let _emulating = clock::emulation_scope();
    let detail = device.detail();
    let span = {
        let mut timeline = device.timeline();
        let span = timeline.run_kernel(queue, launch_ns, kernel, detail, |run| lowering.lower(run));
        if let Some(op) = op {
            timeline.live.note_op(op, span.1 - span.0);
        }
        span
    };
    emulate()?;
    Ok(span)
}

/// The queue submission: blocks (moves the host clock) while the queue has
/// `max_in_flight` kernels in flight; returns the host instant of the submission.
pub(crate) fn submit(device: &Device, queue: usize, launch: RuntimeCallPayload) -> u64 {
    submit_waiting(device, queue, launch, crate::device::wait_until)
}

/// [`submit`] with the wait for a free queue slot given: the emulator's own ops move
/// the host clock (`wait_until`), a host program that computes numerics itself really
/// sleeps (`external.rs`).
pub(crate) fn submit_waiting(
    device: &Device,
    queue: usize,
    launch: RuntimeCallPayload,
    wait: impl FnOnce(u64) -> u64,
) -> u64 {
    let _submit = RuntimeCallScope::new(
        RuntimeCallKind::QueueSubmit,
        RuntimeCallPayload {
            name_id: runtime_hooks::name!("nrt_queue_submit"),
            ..launch
        },
    );
    // A boundary of a CPU-time clock: whether the queue is full depends on it.
    let now_ns = clock::sync();
    let ready_ns = device.timeline().submit_ready_ns(queue, now_ns);
    let submitted_ns = wait(ready_ns);
    device.shared.live.note_host(submitted_ns);
    if runtime_hooks::is_enabled() {
        runtime_hooks::flow_start(FlowKind::LaunchToKernel, launch.corr_id);
    }
    submitted_ns
}

fn compute(
    op: &'static str,
    inputs: &[&Tensor],
    outputs: &[Tensor],
    numerics: impl FnOnce(&[Values]) -> Result<Vec<Values>, BackendError>,
) -> Result<(), BackendError> {
    if !inputs.iter().all(|t| t.has_values()) {
        return Ok(());
    }
    let values = inputs
        .iter()
        .map(|t| t.values(op))
        .collect::<Result<Vec<_>, _>>()?;
    let results = numerics(&values)?;
    for (output, result) in outputs.iter().zip(results) {
        let data = Data::from_values(output.dtype, result);
        debug_assert_eq!(
            data.len(),
            output.numel(),
            "{op} produced a wrong element count"
        );
        *output
            .storage
            .data
            .write()
            .unwrap_or_else(|p| p.into_inner()) = data;
    }
    Ok(())
}
