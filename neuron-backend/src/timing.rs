//! The timing model of one logical core: engines, DMA queues and execution queues on the
//! process timeline.
//!
//! A kernel starts at max(its launch + the launch latency, the end of the previous
//! kernel on its execution queue, the events its queue waits on). Its lowering
//! ([`lower`]) places instructions one by one: each starts when its engine is free and
//! its inputs are ready, so engines run in parallel and contend with each other's
//! kernels; the kernel ends with its last instruction. What is placed is recorded
//! through `runtime-hooks` (kernels always, instructions and DMA transfers at
//! [`RecordDetail::Instructions`]).

mod backfill;
mod collective;
pub(crate) mod cost;

pub(crate) use collective::{place_step, CollectiveSchedule};
pub(crate) mod lower;

use std::collections::VecDeque;
use std::sync::Arc;

use runtime_hooks::{
    DmaDirection, DmaPayload, FlowKind, InstructionPayload, KernelPayload, NameId,
};

use crate::DeviceProfile;

/// How much device activity is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RecordDetail {
    /// Kernels (and host↔device copies) only.
    Kernels,
    /// Kernels plus every engine instruction, semaphore wait and DMA transfer.
    #[default]
    Instructions,
}

/// A compute engine of a NeuronCore; the value is the `engine` of instruction records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Engine {
    /// The 128×128 systolic array (matmul, transpose).
    Tensor = 0,
    /// Elementwise and reduction engine.
    Vector = 1,
    /// Activation-function engine.
    Scalar = 2,
    /// General-purpose SIMD processors (gathers, random numbers, iota).
    GpSimd = 3,
}

impl Engine {
    /// Every compute engine, in index order.
    pub const ALL: [Engine; 4] = [
        Engine::Tensor,
        Engine::Vector,
        Engine::Scalar,
        Engine::GpSimd,
    ];

    /// The engine's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Tensor => "TensorE",
            Engine::Vector => "VectorE",
            Engine::Scalar => "ScalarE",
            Engine::GpSimd => "GpSimdE",
        }
    }
}

/// Modeled busy time of one logical core, per engine, summed over its physical cores.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EngineTime {
    /// Busy ns of each compute engine, indexed by `Engine as usize`.
    pub compute_busy_ns: [u64; 4],
    /// Busy ns of all DMA engines together (engine occupancy).
    pub dma_busy_ns: u64,
    /// Bytes moved by DMA.
    pub dma_bytes: u64,
    /// Kernels placed.
    pub kernels: u64,
    /// Instructions placed (DMA transfers included).
    pub instructions: u64,
    /// End of the last placed activity, ns on the process timeline.
    pub last_end_ns: u64,
}

#[derive(Debug, Clone)]
pub(crate) struct CoreState {
    engine_free_ns: [u64; 4],
    tensor_last_end_ns: Option<u64>,
    throttle_start_ns: Option<u64>,
    dma_engine_free_ns: Vec<u64>,
    dma_queue_free_ns: Vec<u64>,
    dma_next_queue: Vec<u32>,
    /// Occupancy intervals of each DMA engine, sorted (for transfers that fill idle
    /// gaps: [`backfill`]); pruned as kernels are launched.
    dma_busy: Vec<Vec<(u64, u64)>>,
}

impl CoreState {
    /// Places one transfer of `dur_ns` occupying its engine `occupancy_ns` on the DMA
    /// engine that can take it first (its next queue slot, round robin), no earlier than
    /// `floor_ns`, and notes the engine's occupancy; returns `(start, end, queue)`.
    ///
    /// A kernel's transfers are placed in issue order: each after its engine's last
    /// compute transfer (`dma_engine_free_ns`, the order the hardware takes a kernel's
    /// descriptors in), in the earliest idle stretch from there. Only a collective's
    /// transfers can lie beyond that frontier: they are placed when the last rank
    /// arrives, often in a fast rank's future, and compute issued meanwhile goes in the
    /// gaps before and between them rather than behind the whole collective
    /// ([`collective::place_step`]). Without collectives this is plain issue order.
    pub(crate) fn place_dma(
        &mut self,
        queues_per_engine: u32,
        floor_ns: u64,
        dur_ns: f64,
        occupancy_ns: f64,
    ) -> (u64, u64, usize) {
        let occupancy = occupancy_ns.round() as u64;
        let (engine, _) = self
            .dma_engine_free_ns
            .iter()
            .zip(&self.dma_busy)
            .map(|(&free, busy)| backfill::earliest_gap(busy, free, occupancy).0)
            .enumerate()
            .min_by_key(|&(_, start)| start)
            .expect("at least one DMA engine");
        let slot = self.dma_next_queue[engine];
        self.dma_next_queue[engine] = (slot + 1) % queues_per_engine;
        let queue = engine * queues_per_engine as usize + slot as usize;
        let ready_ns = self.dma_engine_free_ns[engine]
            .max(floor_ns)
            .max(self.dma_queue_free_ns[queue]);
        let (start_ns, at) = backfill::earliest_gap(&self.dma_busy[engine], ready_ns, occupancy);
        let end_ns = start_ns + (dur_ns.round() as u64).max(1);
        self.dma_engine_free_ns[engine] = start_ns + occupancy;
        self.dma_queue_free_ns[queue] = end_ns;
        self.dma_busy[engine].insert(at, (start_ns, start_ns + occupancy));
        (start_ns, end_ns, queue)
    }
}

/// One execution queue ("stream").
#[derive(Debug, Default)]
pub(crate) struct QueueState {
    /// Modeled ends of the kernels still in flight, in order.
    in_flight_end_ns: VecDeque<u64>,
    pub(crate) last_end_ns: u64,
    pub(crate) wait_until_ns: u64,
    pub(crate) released: bool,
}

impl QueueState {
    /// The modeled instant the work submitted to the queue so far is done: its last
    /// kernel's end, or the event it was last made to wait for when that is later (a
    /// wait is queued work, as `cudaStreamWaitEvent` is).
    pub(crate) fn done_ns(&self) -> u64 {
        self.last_end_ns.max(self.wait_until_ns)
    }
}

/// Engines and queues of one logical core.
#[derive(Debug)]
pub(crate) struct Timeline {
    pub(crate) profile: Arc<DeviceProfile>,
    pub(crate) device_index: u16,
    cores: Vec<CoreState>,
    pub(crate) queues: Vec<QueueState>,
    time: EngineTime,
    last_kernel: Option<KernelSpan>,
    /// Counters for the live endpoint (`crate::monitor`).
    pub(crate) live: crate::monitor::TimelineLive,
    /// When each collective-communication core is free (a collective needs one).
    pub(crate) cc_free_ns: Vec<u64>,
}

/// Where the model placed a kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelSpan {
    /// Correlation id shared with its launch and operator.
    pub corr_id: u64,
    /// Execution queue.
    pub queue: usize,
    /// Modeled start, ns on the process timeline.
    pub start_ns: u64,
    /// Modeled end.
    pub end_ns: u64,
}

impl KernelSpan {
    /// Modeled duration in ns.
    pub fn dur_ns(&self) -> u64 {
        self.end_ns - self.start_ns
    }
}

impl Timeline {
    pub(crate) fn new(profile: Arc<DeviceProfile>, device_index: u16) -> Self {
        let engines = profile.dma_engines as usize;
        let cores = (0..profile.lnc)
            .map(|_| CoreState {
                engine_free_ns: [0; 4],
                tensor_last_end_ns: None,
                throttle_start_ns: None,
                dma_engine_free_ns: vec![0; engines],
                dma_queue_free_ns: vec![0; engines * profile.dma_queues_per_engine as usize],
                dma_next_queue: vec![0; engines],
                dma_busy: vec![Vec::new(); engines],
            })
            .collect();
        let queues = (0..profile.queues_per_core() as usize + crate::device::USER_STREAM_POOL)
            .map(|_| QueueState::default())
            .collect();
        let cc_cores = (profile.cc_cores_per_core * profile.lnc).max(1) as usize;
        Timeline {
            profile,
            device_index,
            cores,
            queues,
            time: EngineTime::default(),
            last_kernel: None,
            live: Default::default(),
            cc_free_ns: vec![0; cc_cores],
        }
    }

    /// Physical cores of this logical core.
    pub(crate) fn core_count(&self) -> usize {
        self.cores.len()
    }

    /// A copy of the cores' engine and DMA state, for planning a collective's
    /// transfers without placing them (its pieces go in the engines' idle gaps, so the
    /// occupancy intervals are copied too).
    pub(crate) fn core_states(&self) -> Vec<CoreState> {
        self.cores
            .iter()
            .map(|core| CoreState {
                engine_free_ns: core.engine_free_ns,
                tensor_last_end_ns: core.tensor_last_end_ns,
                throttle_start_ns: core.throttle_start_ns,
                dma_engine_free_ns: core.dma_engine_free_ns.clone(),
                dma_queue_free_ns: core.dma_queue_free_ns.clone(),
                dma_next_queue: core.dma_next_queue.clone(),
                dma_busy: core.dma_busy.clone(),
            })
            .collect()
    }

    pub(crate) fn last_kernel(&self) -> Option<KernelSpan> {
        self.last_kernel
    }

    pub(crate) fn engine_time(&self) -> EngineTime {
        self.time.clone()
    }

    /// The host instant at which a submission at `host_ns` to `queue` may proceed: when
    /// the queue already has `max_in_flight` kernels still running, the host waits for
    /// the oldest to finish.
    pub(crate) fn submit_ready_ns(&mut self, queue: usize, host_ns: u64) -> u64 {
        let max = self.profile.max_in_flight as usize;
        let state = &mut self.queues[queue];
        while state
            .in_flight_end_ns
            .front()
            .is_some_and(|&end| end <= host_ns)
        {
            state.in_flight_end_ns.pop_front();
        }
        if state.in_flight_end_ns.len() < max {
            return host_ns;
        }
        let wait_for = state.in_flight_end_ns.len() - max;
        state.in_flight_end_ns[wait_for]
    }

    /// End of all work on every queue.
    pub(crate) fn all_done_ns(&self) -> u64 {
        self.queues.iter().map(|q| q.last_end_ns).max().unwrap_or(0)
    }

    /// Places a kernel launched at `launch_ns` on `queue`; returns `(start, end)`.
    pub(crate) fn run_kernel(
        &mut self,
        queue: usize,
        launch_ns: u64,
        kernel: KernelInfo,
        detail: RecordDetail,
        lower: impl FnOnce(&mut KernelRun<'_>),
    ) -> (u64, u64) {
        self.prune_dma_busy(launch_ns);
        let q = &self.queues[queue];
        let start_ns = (launch_ns + self.profile.launch_latency_ns)
            .max(q.last_end_ns)
            .max(q.wait_until_ns);
        let mut run = KernelRun {
            timeline: self,
            record_instructions: detail == RecordDetail::Instructions
                && runtime_hooks::is_enabled(),
            corr_id: kernel.corr_id,
            start_ns,
            end_ns: start_ns,
        };
        lower(&mut run);
        let end_ns = run.end_ns.max(start_ns + 1);
        let q = &mut self.queues[queue];
        q.last_end_ns = end_ns;
        q.in_flight_end_ns.push_back(end_ns);
        self.time.kernels += 1;
        self.live
            .note_kernel(launch_ns, start_ns, end_ns, kernel.flops);
        self.last_kernel = Some(KernelSpan {
            corr_id: kernel.corr_id,
            queue,
            start_ns,
            end_ns,
        });
        self.time.last_end_ns = self.time.last_end_ns.max(end_ns);
        if runtime_hooks::is_enabled() {
            runtime_hooks::kernel(
                start_ns,
                end_ns,
                KernelPayload {
                    name_id: kernel.name_id,
                    device: self.device_index,
                    queue: queue as u16,
                    corr_id: kernel.corr_id,
                    flops: kernel.flops,
                    bytes: kernel.bytes,
                    ..Default::default()
                },
            );
            runtime_hooks::flow_end_at(FlowKind::LaunchToKernel, kernel.corr_id, start_ns);
        }
        (start_ns, end_ns)
    }
}

/// What the kernel record says about a kernel.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KernelInfo {
    pub(crate) name_id: NameId,
    pub(crate) corr_id: u64,
    pub(crate) flops: u64,
    pub(crate) bytes: u64,
}

/// A kernel being placed: lowerings call [`exec`](Self::exec) and [`dma`](Self::dma).
#[derive(Debug)]
pub(crate) struct KernelRun<'a> {
    timeline: &'a mut Timeline,
    record_instructions: bool,
    corr_id: u64,
    pub(crate) start_ns: u64,
    end_ns: u64,
}

impl KernelRun<'_> {
    /// Makes what is placed from now on start after everything placed so far (one plan
    /// after another in one kernel).
    pub(crate) fn begin_next_stage(&mut self) {
        self.start_ns = self.end_ns;
    }

    /// Places what `place` places from `start_ns` on (it may overlap what was placed
    /// before, as far as the engines are free); returns when its last instruction or
    /// transfer ends (a compiled program's groups: `external/program.rs`).
    pub(crate) fn place_from(&mut self, start_ns: u64, place: impl FnOnce(&mut Self)) -> u64 {
        let before = self.end_ns;
        self.start_ns = start_ns;
        self.end_ns = start_ns;
        place(self);
        let end = self.end_ns;
        self.end_ns = before.max(end);
        end
    }

    pub(crate) fn profile(&self) -> &DeviceProfile {
        &self.timeline.profile
    }

    pub(crate) fn core_count(&self) -> usize {
        self.timeline.core_count()
    }

    /// Runs an instruction of `nominal_ns` on `engine` of physical core `core` once
    /// `ready_ns` has passed; returns its end.
    pub(crate) fn exec(
        &mut self,
        core: usize,
        engine: Engine,
        nominal_ns: f64,
        ready_ns: u64,
        name_id: NameId,
        flops: u64,
    ) -> u64 {
        let profile = Arc::clone(&self.timeline.profile);
        let state = &mut self.timeline.cores[core];
        let free_ns = state.engine_free_ns[engine as usize].max(self.start_ns);
        let start_ns = free_ns.max(ready_ns);
        let mut dur_ns = nominal_ns;
        if engine == Engine::Tensor {
            let idle = state.tensor_last_end_ns.is_none_or(|last| {
                start_ns.saturating_sub(last) >= profile.tensor_throttle_idle_ns
            });
            if idle {
                state.throttle_start_ns = Some(start_ns);
            }
            if let Some(throttle_ns) = state.throttle_start_ns {
                let into_ramp = (start_ns - throttle_ns) as f64;
                let ramp = (profile.tensor_throttle_ramp_ns as f64).max(1.0);
                if into_ramp >= ramp {
                    state.throttle_start_ns = None;
                } else {
                    let low = profile.tensor_throttle_rate;
                    dur_ns /= low + (1.0 - low) * into_ramp / ramp;
                }
            }
        }
        let end_ns = start_ns + (dur_ns.round() as u64).max(1);
        state.engine_free_ns[engine as usize] = end_ns;
        if engine == Engine::Tensor {
            state.tensor_last_end_ns = Some(end_ns);
        }
        self.timeline.time.compute_busy_ns[engine as usize] += end_ns - start_ns;
        self.timeline.time.instructions += 1;
        self.end_ns = self.end_ns.max(end_ns);
        if self.record_instructions {
            let payload = InstructionPayload {
                device: self.timeline.device_index,
                core: core as u8,
                engine: engine as u8,
                corr_id: self.corr_id,
                ..Default::default()
            };
            if start_ns > free_ns {
                let wait = InstructionPayload {
                    name_id: runtime_hooks::name!("semaphore_wait"),
                    ..payload
                };
                runtime_hooks::instruction(free_ns, start_ns, wait);
            }
            let payload = InstructionPayload {
                name_id,
                flops,
                ..payload
            };
            runtime_hooks::instruction(start_ns, end_ns, payload);
        }
        end_ns
    }

    /// One DMA transfer of shape `transfer` on the least busy engine of `core` once
    /// `ready_ns` has passed, recorded under `name_id` (`dma`, or `dma_spill` /
    /// `dma_reload` for traffic a capacity limit causes); returns its end.
    pub(crate) fn dma(
        &mut self,
        core: usize,
        transfer: cost::Transfer,
        direction: DmaDirection,
        ready_ns: u64,
        name_id: NameId,
    ) -> u64 {
        let rate = cost::dma_bytes_per_ns(&self.timeline.profile);
        self.dma_with(core, transfer, direction, ready_ns, name_id, rate)
    }

    /// [`dma`](Self::dma) with the bytes moving at `bytes_per_ns`.
    fn dma_with(
        &mut self,
        core: usize,
        transfer: cost::Transfer,
        direction: DmaDirection,
        ready_ns: u64,
        name_id: NameId,
        bytes_per_ns: f64,
    ) -> u64 {
        let (dur_ns, occupancy_ns) =
            cost::dma_ns_at(&self.timeline.profile, transfer, bytes_per_ns);
        let bytes = transfer.bytes();
        let queues_per_engine = self.timeline.profile.dma_queues_per_engine;
        let floor_ns = ready_ns.max(self.start_ns);
        let (start_ns, end_ns, queue) =
            self.timeline.cores[core].place_dma(queues_per_engine, floor_ns, dur_ns, occupancy_ns);
        let occupancy_ns = occupancy_ns.round() as u64;
        self.note_dma(
            core,
            queue,
            direction,
            (start_ns, end_ns),
            occupancy_ns,
            bytes,
            name_id,
        );
        end_ns
    }

    /// Accounts a placed transfer on DMA queue `queue` of `core` (busy time, bytes,
    /// the kernel's end) and records it at instruction detail under `name_id`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn note_dma(
        &mut self,
        core: usize,
        queue: usize,
        direction: DmaDirection,
        (start_ns, end_ns): (u64, u64),
        occupancy_ns: u64,
        bytes: u64,
        name_id: NameId,
    ) {
        let queues_per_engine = self.timeline.profile.dma_queues_per_engine;
        let time = &mut self.timeline.time;
        time.dma_busy_ns += occupancy_ns;
        time.dma_bytes += bytes;
        time.instructions += 1;
        self.end_ns = self.end_ns.max(end_ns);
        if self.record_instructions {
            let dma_queue =
                core * self.timeline.profile.dma_engines as usize * queues_per_engine as usize
                    + queue;
            runtime_hooks::dma(
                direction,
                start_ns,
                end_ns,
                DmaPayload {
                    name_id,
                    device: self.timeline.device_index,
                    queue: dma_queue as u16,
                    corr_id: self.corr_id,
                    bytes,
                    ..Default::default()
                },
            );
        }
    }

    /// Moves `transfer` split over up to all DMA engines of `core` (pieces of at least
    /// 32 KiB with row overheads: `cost::spread_pieces`) once `ready_ns` has passed;
    /// returns when the last piece ends.
    pub(crate) fn dma_spread(
        &mut self,
        core: usize,
        transfer: cost::Transfer,
        direction: DmaDirection,
        ready_ns: u64,
    ) -> u64 {
        self.dma_spread_named(
            core,
            transfer,
            direction,
            ready_ns,
            runtime_hooks::name!("dma"),
        )
    }

    /// [`dma_spread`](Self::dma_spread) recorded under `name_id`.
    pub(crate) fn dma_spread_named(
        &mut self,
        core: usize,
        transfer: cost::Transfer,
        direction: DmaDirection,
        ready_ns: u64,
        name_id: NameId,
    ) -> u64 {
        if transfer.bytes() == 0 {
            return ready_ns;
        }
        let pieces = cost::spread_pieces(&self.timeline.profile, transfer);
        let mut end_ns = ready_ns;
        for piece in transfer.split(pieces) {
            end_ns = end_ns.max(self.dma(core, piece, direction, ready_ns, name_id));
        }
        end_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timeline() -> Timeline {
        Timeline::new(Arc::new(DeviceProfile::trn2()), 0)
    }

    fn info() -> KernelInfo {
        KernelInfo {
            name_id: NameId::NONE,
            corr_id: 1,
            flops: 0,
            bytes: 0,
        }
    }

    #[test]
    fn tensor_engine_throttles_after_idle_and_ramps_back() {
        let mut tl = timeline();
        let mut ends = Vec::new();
        tl.run_kernel(0, 0, info(), RecordDetail::Kernels, |run| {
            let mut ready = 0;
            for _ in 0..5 {
                ready = run.exec(0, Engine::Tensor, 1_000.0, ready, NameId::NONE, 0);
                ends.push(ready);
            }
        });
        let start = tl.last_kernel().unwrap().start_ns;
        let durations: Vec<u64> = std::iter::once(ends[0] - start)
            .chain(ends.windows(2).map(|w| w[1] - w[0]))
            .collect();
        // 50% at first, ramping over 3 µs (2 µs in: 83%), then full rate.
        assert_eq!(durations[0], 2_000);
        assert_eq!(durations[1], 1_200);
        assert_eq!(&durations[3..], &[1_000, 1_000]);
        // After ≥ 3 µs idle the next kernel starts throttled again.
        let launch = tl.last_kernel().unwrap().end_ns + 5_000;
        let (start, end) = tl.run_kernel(0, launch, info(), RecordDetail::Kernels, |run| {
            run.exec(0, Engine::Tensor, 1_000.0, 0, NameId::NONE, 0);
        });
        assert_eq!(end - start, 2_000);
    }

    #[test]
    fn kernels_queue_in_order_and_a_full_queue_makes_the_host_wait() {
        let mut tl = timeline();
        let mut ends = Vec::new();
        for _ in 0..10 {
            let (start, end) = tl.run_kernel(0, 0, info(), RecordDetail::Kernels, |run| {
                run.exec(0, Engine::Vector, 10_000.0, 0, NameId::NONE, 0);
            });
            assert!(ends.last().is_none_or(|&last| start >= last));
            ends.push(end);
        }
        // Ten kernels in flight at host time 0: the host may submit once the third
        // oldest is done (leaving seven, so the new one is the eighth).
        assert_eq!(tl.submit_ready_ns(0, 0), ends[2]);
        assert_eq!(tl.submit_ready_ns(0, ends[2]), ends[2]);
        // Another queue is independent.
        assert_eq!(tl.submit_ready_ns(4, 0), 0);
    }

    #[test]
    fn dma_spreads_over_engines_and_shares_bandwidth() {
        let mut tl = timeline();
        let transfer = cost::Transfer::contiguous(16 * 64 * 1024);
        let (start, end) = tl.run_kernel(0, 0, info(), RecordDetail::Kernels, |run| {
            run.dma_spread(0, transfer, DmaDirection::DeviceToDevice, 0);
        });
        // 16 pieces of 64 KiB (one row each) in parallel at the engine rate capped by
        // the HBM share.
        let piece = cost::dma_ns(&tl.profile, cost::Transfer::contiguous(64 * 1024)).0;
        assert_eq!(end - start, piece.round() as u64);
        assert_eq!(tl.engine_time().dma_bytes, 16 * 64 * 1024);
    }
}
