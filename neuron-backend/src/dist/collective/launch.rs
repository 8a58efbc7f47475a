//! Running one collective call: records, the meeting of the ranks, the placement on
//! the device and the outputs.

use runtime_hooks::{
    clock, CollectiveOp, CollectivePayload, OperatorPayload, OperatorScope, RuntimeCallKind,
    RuntimeCallPayload, RuntimeCallScope,
};

use super::super::group::{Contribution, Outcome, SlotKey};
use super::super::ProcessGroup;
use super::{Call, Resolve, Work};
use crate::dispatch;
use crate::tensor::Data;
use crate::timing::KernelInfo;
use crate::{BackendError, Tensor};

impl ProcessGroup {
    /// Records, meets the other ranks, places the collective and fills the output.
    pub(super) fn run(&self, call: Call<'_>, numerics: Box<Resolve>) -> Result<Work, BackendError> {
        let result = self.run_on_device(call, numerics);
        if let Err(err) = &result {
            self.device.shared.live.note_error(err);
        }
        result
    }

    fn run_on_device(&self, call: Call<'_>, numerics: Box<Resolve>) -> Result<Work, BackendError> {
        let host = dispatch::HostSide::enter();
        let device = &self.device;
        let shared = &self.shared;
        let global: Vec<usize> = call.participants.iter().map(|&p| shared.ranks[p]).collect();
        let cost = shared.topology.cost(call.op, call.message_bytes, &global);
        let queue = self.queue();
        let corr_id = runtime_hooks::next_corr_id();
        let in_bytes = call.input.map_or(0, Tensor::size_bytes);
        let inputs: Vec<&Tensor> = call.input.into_iter().collect();
        let ids = dispatch::op_ids(call.host_op, &inputs);
        let _op = OperatorScope::new(OperatorPayload {
            name_id: ids.name_id,
            input_sig_id: ids.input_sig_id,
            corr_id,
            bytes: in_bytes,
            ..Default::default()
        });
        let payload = CollectivePayload {
            group_name_id: shared.name_id,
            device: device.shared.index,
            queue: queue as u16,
            corr_id,
            bytes: if call.op == CollectiveOp::Recv {
                call.message_bytes
            } else {
                in_bytes
            },
            group_size: global.len() as u32,
            rank: call.me as u32,
            algorithm: cost.algorithm.raw(),
            dtype: call.dtype.scalar_type_code(),
            group_ranks_id: shared.ranks_id,
        };
        let _host = HostCollective::begin(call.op, payload);
        host.collective();
        let output = match &call.output {
            Some((shape, dtype)) => Some(dispatch::allocate(device, shape, *dtype)?),
            None => None,
        };
        let dtype_name = call.dtype.to_string();
        let kernel_name = match call.reduce {
            Some(r) => format!(
                "ncclDevKernel_{}_{}_{dtype_name}_{}",
                call.kernel_stem,
                r.nccl_name(),
                algorithm_name(cost.algorithm)
            ),
            None => format!(
                "ncclDevKernel_{}_{dtype_name}_{}",
                call.kernel_stem,
                algorithm_name(cost.algorithm)
            ),
        };
        let kernel = KernelInfo {
            name_id: runtime_hooks::intern(&kernel_name),
            corr_id,
            flops: 0,
            bytes: cost.wire_bytes,
        };
        let launch_payload = RuntimeCallPayload {
            name_id: runtime_hooks::name!("nrt_cc_execute"),
            device: device.shared.index,
            queue: queue as u16,
            corr_id,
            bytes: cost.wire_bytes,
            ..Default::default()
        };
        let _launch = RuntimeCallScope::new(RuntimeCallKind::KernelLaunch, launch_payload);
        let launch_ns = dispatch::submit(device, queue, launch_payload);
        let _emulating = clock::emulation_scope();
        let ready_ns = {
            let timeline = device.timeline();
            // The current stream's work, including the waits queued on it (a collective
            // after `Work::wait` of another group's collective starts after that one).
            let inputs_ready = timeline.queues[device.current_queue()].done_ns();
            timeline.collective_ready_ns(queue, launch_ns, inputs_ready)
        };
        let values = match call.input {
            Some(t) if device.numerics() && t.has_values() => Some(t.values(call.collective)?),
            _ => None,
        };
        let contribution = Contribution {
            signature: call.signature.clone(),
            shape: call.shape.clone(),
            dtype: call.dtype,
            values,
            ready_ns,
            device: device.clone(),
        };
        let (collective, group) = (call.collective, shared.name.clone());
        let timing = Timing {
            cost,
            links: shared.topology.link_uses(&global),
            book: std::sync::Arc::clone(&shared.links),
        };
        let meeting = (shared.queue_slot, format!("{:?}", call.key));
        let seq = match call.key {
            SlotKey::Collective(n) | SlotKey::PointToPoint { n, .. } => n,
        };
        device
            .shared
            .live
            .collective_begin(crate::monitor::InFlight {
                op: call.collective,
                group: shared.name.clone(),
                meeting: meeting.clone(),
                seq,
                bytes: call.message_bytes,
                since: std::time::Instant::now(),
                participants: global.clone(),
            });
        // Every participant waits (in emulation time) for the others; a send meets its
        // receive the same way, so both ends of a transfer end at the same instant.
        let met = shared.meet(
            call.key,
            call.collective,
            &call.participants,
            call.me,
            contribution,
            move |all| resolve(collective, group, all, &timing, numerics),
        );
        device.shared.live.collective_left(&meeting);
        let met = met?;
        let outcome: &Outcome = match met.as_ref() {
            Ok(outcome) => outcome,
            Err(err) => return Err(err.clone()),
        };
        let span = {
            let mut timeline = device.timeline();
            let span = timeline.run_collective(
                queue,
                ready_ns,
                outcome.start_ns,
                outcome.end_ns,
                kernel,
                &outcome.schedule,
                device.detail(),
                call.op,
                payload,
            );
            timeline.live.note_op(call.host_op, span.dur_ns());
            span
        };
        device.shared.live.collective_done(
            span.dur_ns(),
            global.get(outcome.last).copied().unwrap_or(0),
            outcome.start_ns.saturating_sub(ready_ns),
        );
        if let (Some(out), Some(Some(values))) = (&output, outcome.outputs.get(call.me)) {
            *out.storage.data.write().unwrap_or_else(|p| p.into_inner()) =
                Data::from_values(out.dtype, values.clone());
        }
        Ok(Work {
            outputs: output.into_iter().collect(),
            device: device.clone(),
            end_ns: span.end_ns,
        })
    }
}

/// Host-side collective begin/end records around the call (same payload as the
/// device record, so the host op can carry the NCCL-style arguments too).
struct HostCollective {
    op: CollectiveOp,
    payload: CollectivePayload,
    began: bool,
}

impl HostCollective {
    fn begin(op: CollectiveOp, payload: CollectivePayload) -> Self {
        let began = runtime_hooks::is_enabled();
        if began {
            runtime_hooks::collective_begin(op, payload);
        }
        HostCollective { op, payload, began }
    }
}

impl Drop for HostCollective {
    fn drop(&mut self) {
        if self.began {
            runtime_hooks::collective_end(self.op, self.payload);
        }
    }
}

/// What the last rank needs to time a collective: its cost alone, the links it uses,
/// and the world's link occupancy.
struct Timing {
    cost: crate::dist::CollectiveCost,
    links: Vec<crate::dist::LinkUse>,
    book: std::sync::Arc<std::sync::Mutex<crate::dist::links::LinkBook>>,
}

/// Times a collective that starts at `start_ns`: the share of its links it gets beside
/// the collectives already placed there, then its steps one after the other, each after
/// its hop latency and once every participant's DMA engines (busy with compute placed
/// earlier) have carried its share of the step. Returns the schedule and the end.
fn schedule(
    timing: &Timing,
    all: &[Contribution],
    start_ns: u64,
) -> (crate::timing::CollectiveSchedule, u64) {
    let cost = &timing.cost;
    let steps = cost.steps.max(1);
    let hop_ns = cost.latency_ns as f64 / steps as f64;
    // The book stays locked from the share to the reservation: the last ranks of two
    // groups placing their collectives at once on two threads would otherwise both take
    // their share before either reserves it, and neither would see the other. (Nothing
    // holds a device timeline while it waits for the book, so locking the participants'
    // timelines below while holding it cannot deadlock.)
    let mut book = timing.book.lock().unwrap_or_else(|p| p.into_inner());
    let share = book.share(&timing.links, start_ns, cost.dur_ns);
    let bytes_per_ns = cost.transfer_bytes_per_ns() * share;
    let chunk_bytes = cost.wire_bytes.div_ceil(steps);
    // A step's transfer alone (as the cost formula has it).
    let step_ns = if bytes_per_ns > 0.0 {
        cost.wire_bytes as f64 / steps as f64 / bytes_per_ns
    } else {
        0.0
    };
    let mut cores: Vec<_> = all
        .iter()
        .map(|c| c.device.timeline().core_states())
        .collect();
    let profiles: Vec<_> = all.iter().map(|c| c.device.profile().clone()).collect();
    let mut issue_ns = Vec::with_capacity(steps as usize);
    let mut t = start_ns as f64;
    for _ in 0..steps {
        let issue = t + hop_ns;
        issue_ns.push(issue.round() as u64);
        let mut step_end = issue + step_ns;
        if chunk_bytes > 0 && bytes_per_ns > 0.0 {
            for (states, profile) in cores.iter_mut().zip(&profiles) {
                let pieces = crate::timing::place_step(
                    states,
                    profile,
                    chunk_bytes,
                    bytes_per_ns,
                    issue.round() as u64,
                );
                // Later than rounding allows: engines busy with other work held it up.
                if let Some(last) = pieces.iter().map(|p| p.end_ns).max() {
                    if last as f64 > step_end.ceil() + 1.0 {
                        step_end = last as f64;
                    }
                }
            }
        }
        t = step_end;
    }
    let end_ns = (t.round() as u64).max(start_ns + 1);
    book.reserve(&timing.links, share, start_ns, end_ns);
    drop(book);
    let schedule = crate::timing::CollectiveSchedule {
        issue_ns,
        chunk_bytes,
        bytes_per_ns,
    };
    (schedule, end_ns)
}

fn resolve(
    collective: &'static str,
    group: String,
    all: &[Contribution],
    timing: &Timing,
    numerics: Box<Resolve>,
) -> Result<Outcome, BackendError> {
    let first = &all[0];
    for (i, c) in all.iter().enumerate().skip(1) {
        if c.signature != first.signature || c.shape != first.shape || c.dtype != first.dtype {
            return Err(BackendError::CollectiveMismatch {
                collective,
                group,
                reason: format!(
                    "participant 0 called {} on {:?} {}, participant {i} called {} on {:?} {}",
                    first.signature, first.shape, first.dtype, c.signature, c.shape, c.dtype
                ),
            });
        }
    }
    let (last, start_ns) = all
        .iter()
        .enumerate()
        .map(|(i, c)| (i, c.ready_ns))
        .max_by_key(|&(i, ready_ns)| (ready_ns, std::cmp::Reverse(i)))
        .unwrap_or((0, 0));
    // Receives bring no values; every other contribution must have them.
    let with_values = all.iter().filter(|c| c.values.is_some()).count();
    let needed = if collective == "send" || collective == "recv" {
        1
    } else {
        all.len()
    };
    let outputs = if with_values >= needed && collective != "barrier" {
        numerics(all)
    } else {
        vec![None; all.len()]
    };
    let (schedule, end_ns) = schedule(timing, all, start_ns);
    Ok(Outcome {
        start_ns,
        last,
        end_ns,
        schedule,
        outputs,
    })
}

/// The algorithm's spelling in NCCL-style kernel names (`ncclDevKernel_…_RING`).
pub(crate) fn algorithm_name(algorithm: runtime_hooks::CollectiveAlgorithm) -> &'static str {
    use runtime_hooks::CollectiveAlgorithm as A;
    match algorithm {
        A::Mesh => "MESH",
        A::RecursiveDoubling => "RDH",
        A::KangaRing => "KANGARING",
        A::Ring => "RING",
        A::Tree => "TREE",
        A::Hierarchical => "HIER",
        A::Unspecified => "P2P",
    }
}
