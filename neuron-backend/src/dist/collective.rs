//! The collectives of a [`ProcessGroup`], with real data and modeled time.
//!
//! Each call records, on the calling rank's host thread: an operator (`c10d::…`) with
//! its input signature, a host-side collective begin/end around it, the launch runtime
//! call holding the queue submission, the output allocation; on the device: a kernel on
//! the group's collective queue, named like NCCL kernels
//! (`ncclDevKernel_AllReduce_Sum_bf16_MESH`) so tools that know NCCL treat it as
//! communication, a collective record with the same correlation id and span carrying
//! the NCCL-style arguments (group name and ranks, size, this rank, dtype, bytes,
//! algorithm), and its DMA transfers. The kernel starts when this rank's device is
//! ready and waits there for the others (as an NCCL kernel spins on a fast rank, so a
//! slow rank shows up as long collectives on the others); the transfer starts when the
//! last rank is ready, and the collective ends at the same instant on every rank (a
//! send and its receive too). The `_async` variants (and `isend`/`irecv`) return a
//! [`Work`]; the others make the current stream wait for the result (on the device:
//! the host does not block), like PyTorch's default synchronous collectives.

mod launch;

pub(crate) use launch::algorithm_name;

use runtime_hooks::{CollectiveOp, RuntimeCallKind, RuntimeCallPayload, RuntimeCallScope};

use super::group::{Contribution, SlotKey};
use super::ProcessGroup;
use crate::tensor::Values;
use crate::{BackendError, DType, Device, Tensor};

/// How a reduction combines the ranks' values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Sum.
    Sum,
    /// Mean over the ranks.
    Avg,
    /// Maximum.
    Max,
}

impl ReduceOp {
    fn nccl_name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "Sum",
            ReduceOp::Avg => "Avg",
            ReduceOp::Max => "Max",
        }
    }
}

/// A collective in flight: its outputs and when it ends on the device.
#[derive(Debug)]
#[must_use = "wait for the collective before using its outputs"]
pub struct Work {
    outputs: Vec<Tensor>,
    device: Device,
    end_ns: u64,
}

impl Work {
    /// The modeled end of the collective, ns on the timeline (the same on every rank).
    pub fn end_ns(&self) -> u64 {
        self.end_ns
    }

    /// Makes the device's current stream wait for the collective (the host goes on) and
    /// returns its outputs.
    pub fn wait(self) -> Vec<Tensor> {
        let queue = self.device.current_queue();
        let _call = RuntimeCallScope::new(
            RuntimeCallKind::EventWait,
            RuntimeCallPayload {
                name_id: runtime_hooks::name!("nrt_event_wait"),
                device: self.device.shared.index,
                queue: queue as u16,
                ..Default::default()
            },
        );
        let q = &mut self.device.timeline().queues[queue];
        q.wait_until_ns = q.wait_until_ns.max(self.end_ns);
        self.outputs
    }

    /// Blocks the host until the collective is done (its clock moves to the end) and
    /// returns its outputs.
    pub fn synchronize(self) -> Vec<Tensor> {
        let _call = RuntimeCallScope::new(
            RuntimeCallKind::Synchronize,
            RuntimeCallPayload {
                name_id: runtime_hooks::name!("nrt_cc_wait"),
                device: self.device.shared.index,
                ..Default::default()
            },
        );
        crate::device::wait_until(self.end_ns);
        self.outputs
    }
}

/// One call, before it meets the other ranks.
pub(super) struct Call<'a> {
    op: CollectiveOp,
    /// `all_reduce` and friends: error messages and the agreement check.
    collective: &'static str,
    /// The host operator, for example `c10d::allreduce_`.
    host_op: &'static str,
    kernel_stem: &'static str,
    reduce: Option<ReduceOp>,
    input: Option<&'a Tensor>,
    /// Output shape and dtype on this rank (`None`: no output).
    output: Option<(Vec<usize>, DType)>,
    /// Shape and dtype every rank must agree on.
    shape: Vec<usize>,
    dtype: DType,
    /// The message size the algorithm and cost are chosen by.
    message_bytes: u64,
    key: SlotKey,
    /// Group ranks taking part, and this rank's index among them.
    participants: Vec<usize>,
    me: usize,
    /// The signature every participant must agree on (root, reduction).
    signature: String,
}

pub(super) type Resolve = dyn FnOnce(&[Contribution]) -> Vec<Option<Values>>;

impl ProcessGroup {
    #[allow(clippy::too_many_arguments)]
    fn call<'a>(
        &self,
        op: CollectiveOp,
        collective: &'static str,
        host_op: &'static str,
        kernel_stem: &'static str,
        input: Option<&'a Tensor>,
        shape: Vec<usize>,
        dtype: DType,
    ) -> Call<'a> {
        Call {
            op,
            collective,
            host_op,
            kernel_stem,
            reduce: None,
            input,
            output: Some((shape.clone(), dtype)),
            message_bytes: shape.iter().product::<usize>() as u64 * dtype.size_bytes(),
            shape,
            dtype,
            key: SlotKey::Collective(self.shared.next_seq(self.group_rank)),
            participants: (0..self.size()).collect(),
            me: self.group_rank,
            signature: collective.to_string(),
        }
    }

    fn check_input(&self, collective: &'static str, t: &Tensor) -> Result<(), BackendError> {
        t.check_live(collective)?;
        match t.device() {
            Some(d) if d.same(&self.device) => Ok(()),
            _ => Err(BackendError::DeviceMismatch {
                op: collective,
                devices: vec![t.place(), self.device.to_string()],
            }),
        }
    }

    /// Leading-dimension chunking that reduce-scatter and all-to-all need.
    fn check_divisible(&self, collective: &'static str, t: &Tensor) -> Result<(), BackendError> {
        let r = self.size();
        match t.shape.first() {
            Some(&d0) if d0.is_multiple_of(r) => Ok(()),
            _ => Err(BackendError::ShapeMismatch {
                op: collective,
                shapes: vec![t.shape.to_vec()],
                reason: format!("dimension 0 must be a multiple of the group size {r}"),
            }),
        }
    }

    /// Sum, average or maximum of `t` over the group; every rank gets the result.
    pub fn all_reduce(&self, t: &Tensor, op: ReduceOp) -> Result<Tensor, BackendError> {
        Ok(first(self.all_reduce_async(t, op)?.wait()))
    }

    /// [`all_reduce`](Self::all_reduce) without waiting.
    pub fn all_reduce_async(&self, t: &Tensor, op: ReduceOp) -> Result<Work, BackendError> {
        const C: &str = "all_reduce";
        self.check_input(C, t)?;
        let mut call = self.call(
            CollectiveOp::AllReduce,
            C,
            "c10d::allreduce_",
            "AllReduce",
            Some(t),
            t.shape.to_vec(),
            t.dtype,
        );
        call.reduce = Some(op);
        call.signature = format!("{C}({op:?})");
        self.run(call, Box::new(move |all| reduce_all(all, op, all.len())))
    }

    /// The ranks' tensors concatenated along dimension 0, in group-rank order.
    pub fn all_gather(&self, t: &Tensor) -> Result<Tensor, BackendError> {
        Ok(first(self.all_gather_async(t)?.wait()))
    }

    /// [`all_gather`](Self::all_gather) without waiting.
    pub fn all_gather_async(&self, t: &Tensor) -> Result<Work, BackendError> {
        const C: &str = "all_gather";
        self.check_input(C, t)?;
        let r = self.size();
        let mut out = t.shape.to_vec();
        if out.is_empty() {
            out.push(1);
        }
        out[0] *= r;
        let mut call = self.call(
            CollectiveOp::AllGather,
            C,
            "c10d::_allgather_base_",
            "AllGather",
            Some(t),
            t.shape.to_vec(),
            t.dtype,
        );
        call.message_bytes *= r as u64;
        call.output = Some((out, t.dtype));
        self.run(
            call,
            Box::new(move |all| {
                let joined = Values::gather_ranges(
                    &values_of(all),
                    (0..all.len()).map(|i| (i, 0, all[i].shape.iter().product())),
                );
                vec![Some(joined); all.len()]
            }),
        )
    }

    /// The reduction over the group, split along dimension 0: group rank `i` gets
    /// chunk `i`.
    pub fn reduce_scatter(&self, t: &Tensor, op: ReduceOp) -> Result<Tensor, BackendError> {
        Ok(first(self.reduce_scatter_async(t, op)?.wait()))
    }

    /// [`reduce_scatter`](Self::reduce_scatter) without waiting.
    pub fn reduce_scatter_async(&self, t: &Tensor, op: ReduceOp) -> Result<Work, BackendError> {
        const C: &str = "reduce_scatter";
        self.check_input(C, t)?;
        self.check_divisible(C, t)?;
        let r = self.size();
        let mut out = t.shape.to_vec();
        out[0] /= r;
        let mut call = self.call(
            CollectiveOp::ReduceScatter,
            C,
            "c10d::_reduce_scatter_base_",
            "ReduceScatter",
            Some(t),
            t.shape.to_vec(),
            t.dtype,
        );
        call.reduce = Some(op);
        call.signature = format!("{C}({op:?})");
        call.output = Some((out, t.dtype));
        self.run(
            call,
            Box::new(move |all| {
                let reduced = reduce_all(all, op, 1).remove(0);
                let Some(reduced) = reduced else {
                    return vec![None; all.len()];
                };
                let chunk = reduced.f32().len() / all.len();
                (0..all.len())
                    .map(|i| {
                        Some(Values::gather_ranges(
                            std::slice::from_ref(&reduced),
                            std::iter::once((0, i * chunk, chunk)),
                        ))
                    })
                    .collect()
            }),
        )
    }

    /// Group rank `root`'s tensor on every rank (the others pass a tensor of the same
    /// shape and dtype, whose values are ignored).
    pub fn broadcast(&self, t: &Tensor, root: usize) -> Result<Tensor, BackendError> {
        Ok(first(self.broadcast_async(t, root)?.wait()))
    }

    /// [`broadcast`](Self::broadcast) without waiting.
    pub fn broadcast_async(&self, t: &Tensor, root: usize) -> Result<Work, BackendError> {
        const C: &str = "broadcast";
        self.check_input(C, t)?;
        self.check_group_rank(C, root)?;
        let mut call = self.call(
            CollectiveOp::Broadcast,
            C,
            "c10d::broadcast_",
            "Broadcast",
            Some(t),
            t.shape.to_vec(),
            t.dtype,
        );
        call.signature = format!("{C}(root {root})");
        self.run(
            call,
            Box::new(move |all| {
                let root_values = all[root].values.clone();
                vec![root_values; all.len()]
            }),
        )
    }

    /// Every rank splits `t` along dimension 0 into group-size chunks and sends chunk
    /// `j` to group rank `j`; the output is the received chunks in group-rank order.
    pub fn all_to_all(&self, t: &Tensor) -> Result<Tensor, BackendError> {
        Ok(first(self.all_to_all_async(t)?.wait()))
    }

    /// [`all_to_all`](Self::all_to_all) without waiting.
    pub fn all_to_all_async(&self, t: &Tensor) -> Result<Work, BackendError> {
        const C: &str = "all_to_all";
        self.check_input(C, t)?;
        self.check_divisible(C, t)?;
        let call = self.call(
            CollectiveOp::AllToAll,
            C,
            "c10d::alltoall_base_",
            "AllToAll",
            Some(t),
            t.shape.to_vec(),
            t.dtype,
        );
        self.run(
            call,
            Box::new(move |all| {
                let r = all.len();
                let chunk = all[0].shape.iter().product::<usize>() / r;
                let parts = values_of(all);
                (0..r)
                    .map(|j| {
                        Some(Values::gather_ranges(
                            &parts,
                            (0..r).map(|i| (i, j * chunk, chunk)),
                        ))
                    })
                    .collect()
            }),
        )
    }

    /// Waits until every rank of the group has arrived: the host clock of every rank
    /// moves to the same modeled instant.
    pub fn barrier(&self) -> Result<(), BackendError> {
        const C: &str = "barrier";
        let mut call = self.call(
            CollectiveOp::Barrier,
            C,
            "c10d::barrier",
            "Barrier",
            None,
            Vec::new(),
            DType::F32,
        );
        call.output = None;
        call.message_bytes = 0;
        let work = self.run(call, Box::new(|all| vec![None; all.len()]))?;
        work.synchronize();
        Ok(())
    }

    /// Sends `t` to group rank `dst` (which calls [`recv`](Self::recv) or
    /// [`irecv`](Self::irecv)); the current stream waits for the transfer, the host
    /// does not. Like NCCL's point-to-point (and [`all_reduce`](Self::all_reduce)),
    /// the transfer starts when both sides have arrived and ends at the same modeled
    /// instant on both: the emulator's rank thread waits for the receiver (as
    /// emulation time), so a ring where every rank sends before it receives times out
    /// with a [`BackendError::CollectiveTimeout`] naming the missing ranks, as it
    /// deadlocks with NCCL; order such exchanges (even ranks send first, odd ranks
    /// receive first).
    pub fn send(&self, t: &Tensor, dst: usize) -> Result<(), BackendError> {
        self.isend(t, dst)?.wait();
        Ok(())
    }

    /// Like [`send`](Self::send), returning the transfer's [`Work`] (its
    /// [`Work::end_ns`] is the receive's too) instead of making the stream wait.
    pub fn isend(&self, t: &Tensor, dst: usize) -> Result<Work, BackendError> {
        const C: &str = "send";
        self.check_input(C, t)?;
        self.check_group_rank(C, dst)?;
        let me = self.group_rank;
        let n = self.shared.next_p2p(me, dst, true);
        let mut call = self.call(
            CollectiveOp::Send,
            C,
            "c10d::send",
            "SendRecv",
            Some(t),
            t.shape.to_vec(),
            t.dtype,
        );
        self.p2p(&mut call, me, dst, n, 0);
        self.run(call, Box::new(|all| vec![None, all[0].values.clone()]))
    }

    /// Receives a tensor of `shape` and `dtype` from group rank `src` (which calls
    /// [`send`](Self::send) or [`isend`](Self::isend)); the current stream waits for
    /// it. The transfer starts when both sides have arrived.
    pub fn recv(&self, shape: &[usize], dtype: DType, src: usize) -> Result<Tensor, BackendError> {
        Ok(first(self.irecv(shape, dtype, src)?.wait()))
    }

    /// Like [`recv`](Self::recv), returning the transfer's [`Work`] (its one output is
    /// the received tensor).
    pub fn irecv(&self, shape: &[usize], dtype: DType, src: usize) -> Result<Work, BackendError> {
        const C: &str = "recv";
        self.check_group_rank(C, src)?;
        let me = self.group_rank;
        let n = self.shared.next_p2p(src, me, false);
        let mut call = self.call(
            CollectiveOp::Recv,
            C,
            "c10d::recv_",
            "SendRecv",
            None,
            shape.to_vec(),
            dtype,
        );
        self.p2p(&mut call, src, me, n, 1);
        self.run(call, Box::new(|all| vec![None, all[0].values.clone()]))
    }

    fn p2p(&self, call: &mut Call<'_>, src: usize, dst: usize, n: u64, me: usize) {
        call.key = SlotKey::PointToPoint { src, dst, n };
        call.participants = vec![src, dst];
        call.me = me;
        call.signature = format!("send/recv {src}->{dst}");
        if me == 0 {
            call.output = None;
        }
    }

    fn check_group_rank(&self, collective: &'static str, rank: usize) -> Result<(), BackendError> {
        if rank >= self.size() {
            return Err(BackendError::InvalidArgument {
                op: collective,
                reason: format!(
                    "group rank {rank} is not in process group {} of size {}",
                    self.name(),
                    self.size()
                ),
            });
        }
        Ok(())
    }
}

fn values_of(all: &[Contribution]) -> Vec<Values> {
    all.iter()
        .map(|c| c.values.clone().unwrap_or(Values::F32(Vec::new())))
        .collect()
}

/// The elementwise reduction of every contribution, `copies` times.
fn reduce_all(all: &[Contribution], op: ReduceOp, copies: usize) -> Vec<Option<Values>> {
    let parts: Vec<_> = all
        .iter()
        .filter_map(|c| c.values.as_ref().map(Values::f32))
        .collect();
    let Some(first) = parts.first() else {
        return vec![None; copies];
    };
    let mut acc: Vec<f64> = first.iter().map(|&v| f64::from(v)).collect();
    for part in &parts[1..] {
        for (a, &v) in acc.iter_mut().zip(part.iter()) {
            let v = f64::from(v);
            *a = match op {
                ReduceOp::Sum | ReduceOp::Avg => *a + v,
                ReduceOp::Max => a.max(v),
            };
        }
    }
    if op == ReduceOp::Avg {
        let n = parts.len() as f64;
        acc.iter_mut().for_each(|a| *a /= n);
    }
    let values = Values::F32(acc.into_iter().map(|a| a as f32).collect());
    vec![Some(values); copies]
}

fn first(outputs: Vec<Tensor>) -> Tensor {
    outputs
        .into_iter()
        .next()
        .expect("the collective has an output")
}
