//! Collectives of a host program's process group (the PyTorch extension's c10d backend
//! `neuron`, one process per rank): the launch on a collective queue and the placement
//! of the collective once every rank's arrival is known.
//!
//! The caller moves the data between the processes itself (inside a process-wide cut)
//! and exchanges with it each rank's *ready* instant from
//! [`Device::external_collective_issue`]; [`Device::external_collective_place`] then
//! places the collective as `crate::dist` does for ranks in one process: the kernel runs
//! on this rank's collective queue from when this core was ready, waits there for the
//! last rank (as an NCCL kernel spins), and ends at the last rank's arrival plus the
//! topology model's cost ([`Topology::cost`]: Mesh, recursive doubling, KangaRing or
//! Ring, hierarchical across instances), which every rank computes from the same
//! numbers, so the end is the same instant on every rank.

use runtime_hooks::{
    CollectiveAlgorithm, CollectiveOp, CollectivePayload, NameId, RuntimeCallKind,
    RuntimeCallPayload, RuntimeCallScope,
};

use crate::dist::Topology;
use crate::timing::KernelInfo;
use crate::{BackendError, Device, KernelSpan};

/// One collective call of this rank (plain data shared by the issue and the placement).
#[derive(Debug, Clone)]
pub struct ExternalCollective {
    /// What it does.
    pub op: CollectiveOp,
    /// The collective queue it runs on ([`Device::collective_queue`]).
    pub queue: usize,
    /// The caller's current stream: the collective starts after the work queued there
    /// (which produces its input).
    pub inputs_queue: usize,
    /// Correlation id of the launch, the kernel and the collective record.
    pub corr_id: u64,
    /// Bytes of the message the algorithm and cost are chosen by.
    pub message_bytes: u64,
    /// Bytes of this rank's input (the record's `bytes`).
    pub input_bytes: u64,
    /// Global ranks of the group, in group order.
    pub ranks: Vec<usize>,
    /// This rank's index in `ranks`.
    pub me: usize,
    /// Interned process group name.
    pub group_name_id: NameId,
    /// Interned `[0, 1, 2, 3]`-style global ranks.
    pub group_ranks_id: NameId,
    /// `c10::ScalarType` code of the elements.
    pub dtype: u16,
    /// Kernel name stem, e.g. `AllReduce`.
    pub kernel_stem: String,
    /// Reduction name in the kernel name (`Sum`, `Avg`, …), if it reduces.
    pub reduce: Option<String>,
    /// Element type in the kernel name (`f32`, `bf16`, …).
    pub dtype_name: String,
}

/// Where a collective was placed and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExternalCollectiveSpan {
    /// The kernel: from this rank's ready instant to the common end.
    pub span: KernelSpan,
    /// When the last rank was ready: the transfer starts then.
    pub start_ns: u64,
    /// Index (in the group) of the last rank to be ready (the lowest index on a tie).
    pub last: usize,
    /// How long this rank's kernel waited for the others.
    pub waited_ns: u64,
    /// The algorithm the topology model chose.
    pub algorithm: CollectiveAlgorithm,
}

impl ExternalCollective {
    fn payload(&self, algorithm: CollectiveAlgorithm, device: u16) -> CollectivePayload {
        CollectivePayload {
            group_name_id: self.group_name_id,
            device,
            queue: self.queue as u16,
            corr_id: self.corr_id,
            bytes: self.input_bytes,
            group_size: self.ranks.len() as u32,
            rank: self.me as u32,
            algorithm: algorithm.raw(),
            dtype: self.dtype,
            group_ranks_id: self.group_ranks_id,
        }
    }

    /// The NCCL-style kernel name, as NCCL before 2.19 names its kernels
    /// (`ncclKernel_AllReduce_RING_LL_Sum_float` there; here
    /// `ncclKernel_AllReduce_MESH_Sum_f32`): HTA's straggler analysis takes only kernels
    /// whose names start with `ncclKernel`, and every tool files `nccl*` kernels as
    /// communication (`analysis::classify`).
    pub fn kernel_name(&self, algorithm: CollectiveAlgorithm) -> String {
        let algo = crate::dist::algorithm_name(algorithm);
        match &self.reduce {
            Some(r) => format!(
                "ncclKernel_{}_{algo}_{r}_{}",
                self.kernel_stem, self.dtype_name
            ),
            None => format!("ncclKernel_{}_{algo}_{}", self.kernel_stem, self.dtype_name),
        }
    }
}

impl Device {
    /// The collective queue of the `slot`-th process group of this process (groups
    /// take the core's collective queues round-robin, as `crate::dist` does).
    pub fn collective_queue(&self, slot: usize) -> usize {
        let p = self.profile();
        p.compute_queues as usize + slot % p.collective_queues.max(1) as usize
    }

    /// Issues collective `c` on its queue: records the `nrt_cc_execute` launch (holding
    /// the queue submission; the start of the launch→kernel flow) and returns the
    /// instant this core is ready to start it (after the launch latency, the queue's
    /// earlier work and events, the work queued on the caller's stream and a free DMA
    /// engine). The caller sends that instant to the other ranks.
    pub fn external_collective_issue(&self, c: &ExternalCollective) -> Result<u64, BackendError> {
        self.check_queue("collective", c.queue)?;
        self.check_queue("collective", c.inputs_queue)?;
        if c.me >= c.ranks.len() {
            return Err(BackendError::InvalidArgument {
                op: "collective",
                reason: format!("rank {} outside a group of {}", c.me, c.ranks.len()),
            });
        }
        let payload = RuntimeCallPayload {
            name_id: runtime_hooks::name!("nrt_cc_execute"),
            device: self.shared.index,
            queue: c.queue as u16,
            corr_id: c.corr_id,
            bytes: c.input_bytes,
            ..Default::default()
        };
        let _launch = RuntimeCallScope::new(RuntimeCallKind::KernelLaunch, payload);
        let launch_ns = crate::dispatch::submit_waiting(self, c.queue, payload, super::sleep_until);
        if !matches!(c.op, CollectiveOp::Send | CollectiveOp::Recv) {
            let group = runtime_hooks::resolve(c.group_name_id);
            self.shared.live.external_issued(
                in_flight_name(c.op),
                group.as_deref().unwrap_or(""),
                c.corr_id,
                c.message_bytes,
                &c.ranks,
            );
        }
        let _cut = runtime_hooks::clock::cut_scope();
        let timeline = self.timeline();
        let inputs_ready = timeline.queues[c.inputs_queue].done_ns();
        Ok(timeline.collective_ready_ns(c.queue, launch_ns, inputs_ready))
    }

    /// Places collective `c` once every rank's ready instant is known (`ready_ns`, in
    /// group order, this rank's own at `c.me`): starts when the last is ready, lasts what
    /// `topology` says for the message over the group's ranks; records the kernel (named
    /// by [`ExternalCollective::kernel_name`]) and the collective record. Placement is
    /// the emulator's work: cut from the timeline.
    pub fn external_collective_place(
        &self,
        c: &ExternalCollective,
        topology: &Topology,
        ready_ns: &[u64],
    ) -> Result<ExternalCollectiveSpan, BackendError> {
        if ready_ns.len() != c.ranks.len() || c.me >= ready_ns.len() {
            return Err(BackendError::InvalidArgument {
                op: "collective",
                reason: format!(
                    "{} ready instants for a group of {} (rank {})",
                    ready_ns.len(),
                    c.ranks.len(),
                    c.me
                ),
            });
        }
        let _cut = runtime_hooks::clock::cut_scope();
        let cost = topology.cost(c.op, c.message_bytes, &c.ranks);
        let (last, start_ns) = ready_ns
            .iter()
            .copied()
            .enumerate()
            .max_by_key(|&(i, t)| (t, std::cmp::Reverse(i)))
            .unwrap_or((0, 0));
        let mine = ready_ns[c.me];
        let kernel = KernelInfo {
            name_id: runtime_hooks::intern(&c.kernel_name(cost.algorithm)),
            corr_id: c.corr_id,
            flops: 0,
            bytes: cost.wire_bytes,
        };
        let span = {
            // This rank's bytes move through its DMA engines over the modeled span, issued
            // when the last rank is ready (one step: the other ranks' engines are in
            // their own processes).
            let schedule = crate::timing::CollectiveSchedule {
                issue_ns: if cost.wire_bytes > 0 {
                    vec![start_ns]
                } else {
                    Vec::new()
                },
                chunk_bytes: cost.wire_bytes,
                bytes_per_ns: cost.wire_bytes as f64 / cost.dur_ns.max(1) as f64,
            };
            let mut timeline = self.timeline();
            let span = timeline.run_collective(
                c.queue,
                mine,
                start_ns,
                start_ns + cost.dur_ns,
                kernel,
                &schedule,
                self.detail(),
                c.op,
                c.payload(cost.algorithm, self.shared.index),
            );
            timeline
                .live
                .note_op(collective_op_name(c.op), span.dur_ns());
            span
        };
        let waited_ns = start_ns.saturating_sub(mine);
        self.shared.live.external_placed(c.corr_id);
        self.shared.live.collective_done(
            span.dur_ns(),
            c.ranks.get(last).copied().unwrap_or(0),
            waited_ns,
        );
        Ok(ExternalCollectiveSpan {
            span,
            start_ns,
            last,
            waited_ns,
            algorithm: cost.algorithm,
        })
    }
}

/// The name of a collective in flight, as `crate::dist` names them.
fn in_flight_name(op: CollectiveOp) -> &'static str {
    match op {
        CollectiveOp::AllReduce => "all_reduce",
        CollectiveOp::AllGather => "all_gather",
        CollectiveOp::ReduceScatter => "reduce_scatter",
        CollectiveOp::Broadcast => "broadcast",
        CollectiveOp::Reduce => "reduce",
        CollectiveOp::AllToAll => "all_to_all",
        CollectiveOp::Send => "send",
        CollectiveOp::Recv => "recv",
        CollectiveOp::Barrier => "barrier",
    }
}

fn collective_op_name(op: CollectiveOp) -> &'static str {
    match op {
        CollectiveOp::AllReduce => "c10d::allreduce_",
        CollectiveOp::AllGather => "c10d::allgather_",
        CollectiveOp::ReduceScatter => "c10d::reduce_scatter_",
        CollectiveOp::Broadcast => "c10d::broadcast_",
        CollectiveOp::Reduce => "c10d::reduce_",
        CollectiveOp::AllToAll => "c10d::alltoall_",
        CollectiveOp::Send => "c10d::send",
        CollectiveOp::Recv => "c10d::recv_",
        CollectiveOp::Barrier => "c10d::barrier",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DeviceProfile, Runtime};

    fn call(device: &Device, me: usize) -> ExternalCollective {
        ExternalCollective {
            op: CollectiveOp::AllReduce,
            queue: device.collective_queue(0),
            inputs_queue: 0,
            corr_id: runtime_hooks::next_corr_id(),
            message_bytes: 4 << 20,
            input_bytes: 4 << 20,
            ranks: vec![0, 1, 2, 3],
            me,
            group_name_id: runtime_hooks::intern("0"),
            group_ranks_id: runtime_hooks::intern("[0, 1, 2, 3]"),
            dtype: 6,
            kernel_stem: "AllReduce".into(),
            reduce: Some("Sum".into()),
            dtype_name: "f32".into(),
        }
    }

    #[test]
    fn a_collective_is_in_flight_from_its_issue_to_its_placement() {
        let runtime = Runtime::new(DeviceProfile::trn2()).unwrap();
        let topology = Topology::for_profile(&DeviceProfile::trn2());
        let device = runtime.device(0).unwrap();
        for seq in 1..=2 {
            let c = call(&device, 1);
            let ready = device.external_collective_issue(&c).unwrap();
            {
                let stats = device.shared.live.lock_collectives();
                assert_eq!(stats.in_flight.len(), 1, "{:?}", stats.in_flight);
                let f = &stats.in_flight[0];
                assert_eq!((f.op, f.group.as_str(), f.seq), ("all_reduce", "0", seq));
                assert_eq!(
                    (f.bytes, f.participants.as_slice()),
                    (4 << 20, &[0, 1, 2, 3][..])
                );
            }
            device
                .external_collective_place(&c, &topology, &[ready; 4])
                .unwrap();
            let stats = device.shared.live.lock_collectives();
            assert!(stats.in_flight.is_empty(), "{:?}", stats.in_flight);
            assert_eq!(stats.completed, seq);
        }
    }

    #[test]
    fn the_end_is_the_last_arrival_plus_the_topology_cost_on_every_rank() {
        let runtime = Runtime::new(DeviceProfile::trn2()).unwrap();
        let topology = Topology::for_profile(&DeviceProfile::trn2());
        let device = runtime.device(0).unwrap();
        let c = call(&device, 1);
        let ready = device.external_collective_issue(&c).unwrap();
        // Rank 2 arrives 5 ms later than this one.
        let others = [ready + 1_000, ready, ready + 5_000_000, ready];
        let placed = device
            .external_collective_place(&c, &topology, &others)
            .unwrap();
        let cost = topology.cost(CollectiveOp::AllReduce, 4 << 20, &[0, 1, 2, 3]);
        assert_eq!(placed.last, 2);
        assert_eq!(placed.start_ns, ready + 5_000_000);
        assert_eq!(placed.span.end_ns, ready + 5_000_000 + cost.dur_ns);
        assert_eq!(placed.span.start_ns, ready);
        assert_eq!(placed.waited_ns, 5_000_000);
        assert_eq!(placed.algorithm, cost.algorithm);
        // The queue's next collective cannot start before this one ended.
        let next = call(&device, 1);
        let ready2 = device.external_collective_issue(&next).unwrap();
        assert!(
            ready2 >= placed.span.end_ns,
            "{ready2} < {}",
            placed.span.end_ns
        );
    }

    #[test]
    fn a_collective_waits_for_the_waits_queued_on_the_callers_stream() {
        let runtime = Runtime::new(DeviceProfile::trn2()).unwrap();
        let topology = Topology::for_profile(&DeviceProfile::trn2());
        let device = runtime.device(0).unwrap();
        let c = call(&device, 1);
        let ready = device.external_collective_issue(&c).unwrap();
        let placed = device
            .external_collective_place(&c, &topology, &[ready + 5_000_000; 4])
            .unwrap();
        // The caller's stream waits for it (as after `work.wait()`), with no kernel since;
        // the next collective, of another group on another queue, comes after it.
        let done = device.external_record_event(c.queue).unwrap();
        device.external_wait_event(0, &done).unwrap();
        let mut next = call(&device, 1);
        next.queue = device.collective_queue(1);
        let ready2 = device.external_collective_issue(&next).unwrap();
        assert!(
            ready2 >= placed.span.end_ns,
            "{ready2} < {}",
            placed.span.end_ns
        );
    }

    #[test]
    fn a_wrong_number_of_arrivals_is_refused() {
        let runtime = Runtime::new(DeviceProfile::trn2()).unwrap();
        let topology = Topology::for_profile(&DeviceProfile::trn2());
        let device = runtime.device(0).unwrap();
        let c = call(&device, 0);
        let err = device
            .external_collective_place(&c, &topology, &[1, 2])
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("2 ready instants for a group of 4"),
            "{err}"
        );
    }

    #[test]
    fn kernel_names_follow_nccl() {
        let runtime = Runtime::new(DeviceProfile::trn2()).unwrap();
        let device = runtime.device(0).unwrap();
        let mut c = call(&device, 0);
        assert_eq!(
            c.kernel_name(CollectiveAlgorithm::Mesh),
            "ncclKernel_AllReduce_MESH_Sum_f32"
        );
        c.reduce = None;
        c.kernel_stem = "AllGather".into();
        assert_eq!(
            c.kernel_name(CollectiveAlgorithm::RecursiveDoubling),
            "ncclKernel_AllGather_RDH_f32"
        );
    }
}
