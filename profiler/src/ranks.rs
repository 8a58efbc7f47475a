//! Multi-rank runs in one process: one trace per rank, and a session that ranks
//! running on threads of their own step together.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Condvar, Mutex};

use runtime_hooks::{clock, Record, ThreadStats};

use crate::config::{DistributedConfig, ProfilerConfig};
use crate::error::ProfilerError;
use crate::model::PROFILER_STEP;
use crate::result::ProfileResult;
use crate::session::Profiler;
use crate::ProfilerAction;

/// The rank a recording thread belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RankOf {
    /// Global rank.
    pub rank: u32,
    /// Number of ranks.
    pub world_size: u32,
}

/// Splits a window's records into one result per rank, in rank order.
pub(crate) fn split(
    records: &[Record],
    threads: &[ThreadStats],
    config: &ProfilerConfig,
    rank_of: &(dyn Fn(u32) -> Option<RankOf> + Send + Sync),
    index: u64,
    span: (u64, u64),
    dropped_at_start: &HashMap<u32, u64>,
) -> Vec<ProfileResult> {
    let mut ranks: HashMap<u32, Option<RankOf>> = HashMap::new();
    let mut by_rank: BTreeMap<u32, (RankOf, Vec<Record>)> = BTreeMap::new();
    for record in records {
        let rank = *ranks
            .entry(record.thread_id)
            .or_insert_with(|| rank_of(record.thread_id));
        if let Some(rank) = rank {
            by_rank
                .entry(rank.rank)
                .or_insert_with(|| (rank, Vec::new()))
                .1
                .push(*record);
        }
    }
    by_rank
        .into_values()
        .map(|(rank, records)| {
            let dropped: u64 = threads
                .iter()
                .filter(|t| rank_of(t.thread_id).is_some_and(|r| r.rank == rank.rank))
                .map(|t| {
                    let before = dropped_at_start.get(&t.thread_id).copied().unwrap_or(0);
                    t.dropped.saturating_sub(before)
                })
                .sum();
            let mut rank_config = config.clone();
            rank_config.distributed = Some(rank_distributed(config, rank));
            // Describe the devices this rank used (all configured ones if it used none).
            let used: HashSet<u16> = records.iter().filter_map(device_of).collect();
            if !used.is_empty() {
                rank_config.devices.retain(|d| used.contains(&d.index));
            }
            ProfileResult::build(&records, threads, &rank_config, index, span, dropped)
        })
        .collect()
}

/// `distributedInfo` for `rank`: the configured groups with this rank and world size.
fn rank_distributed(config: &ProfilerConfig, rank: RankOf) -> DistributedConfig {
    match &config.distributed {
        Some(template) => DistributedConfig {
            rank: rank.rank,
            world_size: rank.world_size,
            ..template.clone()
        },
        None => DistributedConfig::new("nccom", rank.rank, rank.world_size),
    }
}

/// The device a device-side record belongs to.
fn device_of(record: &Record) -> Option<u16> {
    use runtime_hooks::Event;
    match record.event()? {
        Event::Kernel(p) => Some(p.device),
        Event::Instruction(p) => Some(p.device),
        Event::Dma(_, p) => Some(p.device),
        Event::Collective(_, p) => Some(p.device),
        Event::Memory(_, p) => Some(p.device),
        _ => None,
    }
}

/// A session shared by ranks that run on threads of their own (one process, several
/// ranks): each rank marks its steps with [`RankSteps`]; the schedule moves on when
/// every rank has finished the step.
///
/// Recording is one process-wide switch, so the ranks step together: each rank's
/// [`RankSteps::step`] waits for the others and the last to arrive applies the
/// schedule. A rank whose [`RankSteps`] is dropped (it finished, or failed) leaves:
/// the others stop waiting for it. The wait, and the conversion and writing of a
/// finished window, run as emulation time (`runtime_hooks::clock::emulation_scope`):
/// they do not show in the ranks' host timelines.
#[derive(Clone)]
pub struct SharedProfiler {
    inner: Arc<SharedInner>,
}

struct SharedInner {
    profiler: Mutex<Option<Profiler>>,
    /// Steps each rank runs, when known: no `ProfilerStep` is begun after the last.
    total_steps: Option<u64>,
    gate: Mutex<Gate>,
    opened: Condvar,
    error: Mutex<Option<ProfilerError>>,
}

/// Ranks still stepping and how many reached the current step's end.
#[derive(Debug)]
struct Gate {
    members: usize,
    arrived: usize,
    generation: u64,
}

impl std::fmt::Debug for SharedProfiler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedProfiler").finish_non_exhaustive()
    }
}

impl SharedProfiler {
    /// Shares `profiler` between `ranks` rank threads. The session's own
    /// `ProfilerStep` range (on the thread that started it) ends here; the ranks
    /// record their own.
    pub fn new(profiler: Profiler, ranks: usize) -> Self {
        Self::with_total_steps(profiler, ranks, None)
    }

    /// Like [`SharedProfiler::new`] for ranks that run `total_steps` steps each: a
    /// rank's last [`RankSteps::step`] begins no new `ProfilerStep` and takes the rank
    /// out of the step count.
    pub fn with_total_steps(
        mut profiler: Profiler,
        ranks: usize,
        total_steps: Option<u64>,
    ) -> Self {
        profiler.end_step_range();
        SharedProfiler {
            inner: Arc::new(SharedInner {
                profiler: Mutex::new(Some(profiler)),
                total_steps,
                gate: Mutex::new(Gate {
                    members: ranks.max(1),
                    arrived: 0,
                    generation: 0,
                }),
                opened: Condvar::new(),
                error: Mutex::new(None),
            }),
        }
    }

    /// Starts marking the calling rank's steps: `ProfilerStep#N` begins now. Take it
    /// once per rank.
    pub fn rank_steps(&self) -> RankSteps {
        let (step, action) = self.state();
        let mut steps = RankSteps {
            shared: self.clone(),
            step,
            range: None,
            left: false,
        };
        steps.begin(action);
        steps
    }

    /// Ends the calling rank's step, for runtimes that call back after each step on
    /// the rank's thread (`neuron_backend::workloads::run`'s `on_step`): like
    /// [`RankSteps::step`] on a marker kept for the thread. Call
    /// [`SharedProfiler::begin_rank`] on the thread before the first step (from
    /// `neuron_backend::workloads::run_with_hooks`' `on_start`), or the first step has
    /// no `ProfilerStep` range (the marker starts at the first call).
    pub fn step(&self) {
        self.with_thread_steps(false, RankSteps::step);
    }

    /// Begins the calling rank's `ProfilerStep#N` now: call it on the rank's thread
    /// just before its first step (a runtime's per-rank start hook, such as
    /// `neuron_backend::workloads::WorkloadHooks::on_start`), so step 0 has its range
    /// like every later step.
    pub fn begin_rank(&self) {
        self.with_thread_steps(true, |_| {});
    }

    fn with_thread_steps(&self, open_range: bool, f: impl FnOnce(&mut RankSteps)) {
        THREAD_STEPS.with(|cell| {
            let mut list = cell.borrow_mut();
            list.retain(|s| !s.left);
            let at = match list
                .iter()
                .position(|s| Arc::ptr_eq(&s.shared.inner, &self.inner))
            {
                Some(at) => at,
                None => {
                    let steps = if open_range {
                        self.rank_steps()
                    } else {
                        RankSteps {
                            shared: self.clone(),
                            step: self.state().0,
                            range: None,
                            left: false,
                        }
                    };
                    list.push(steps);
                    list.len() - 1
                }
            };
            f(&mut list[at]);
        });
    }

    fn state(&self) -> (u64, ProfilerAction) {
        let guard = self
            .inner
            .profiler
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        guard.as_ref().map_or((0, ProfilerAction::None), |p| {
            (p.step_num(), p.current_action())
        })
    }

    /// Moves the schedule on by one step (the last rank to arrive does this).
    fn advance(&self) {
        let mut guard = self
            .inner
            .profiler
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(profiler) = guard.as_mut() {
            if let Err(e) = profiler.step() {
                let mut error = self.inner.error.lock().unwrap_or_else(|p| p.into_inner());
                error.get_or_insert(e);
            }
        }
    }

    /// Arrives at the end of a step; returns when every rank has.
    fn arrive(&self) {
        let mut gate = self.inner.gate.lock().unwrap_or_else(|p| p.into_inner());
        gate.arrived += 1;
        if gate.arrived >= gate.members {
            self.open(&mut gate);
            return;
        }
        let generation = gate.generation;
        while gate.generation == generation {
            gate = self
                .inner
                .opened
                .wait(gate)
                .unwrap_or_else(|p| p.into_inner());
        }
    }

    /// A rank stops stepping; if the others were all waiting for it, they go on.
    fn leave(&self) {
        let mut gate = self.inner.gate.lock().unwrap_or_else(|p| p.into_inner());
        gate.members = gate.members.saturating_sub(1);
        if gate.arrived > 0 && gate.arrived >= gate.members {
            self.open(&mut gate);
        }
    }

    fn open(&self, gate: &mut Gate) {
        self.advance();
        gate.arrived = 0;
        gate.generation += 1;
        self.inner.opened.notify_all();
    }

    /// Stops the session once the ranks are done; returns the last window's results,
    /// one per rank, or the first error a step met.
    pub fn stop(&self) -> Result<Vec<ProfileResult>, ProfilerError> {
        let profiler = self
            .inner
            .profiler
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(e) = self
            .inner
            .error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            return Err(e);
        }
        match profiler {
            Some(profiler) => profiler.stop_all(),
            None => Ok(Vec::new()),
        }
    }
}

/// One rank's step marker of a [`SharedProfiler`]: holds its `ProfilerStep#N` range.
/// Dropping it ends the range and takes the rank out of the step count.
#[derive(Debug)]
pub struct RankSteps {
    shared: SharedProfiler,
    step: u64,
    range: Option<runtime_hooks::RangeScope>,
    /// Whether the rank left the step count (its last step, or dropped).
    left: bool,
}

thread_local! {
    /// Step markers of [`SharedProfiler::step`], one per shared session.
    static THREAD_STEPS: std::cell::RefCell<Vec<RankSteps>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

impl RankSteps {
    fn begin(&mut self, action: ProfilerAction) {
        if action != ProfilerAction::None {
            self.range = Some(runtime_hooks::RangeScope::new(
                runtime_hooks::name!(PROFILER_STEP),
                self.step,
            ));
        }
    }

    /// The step this rank is in.
    pub fn step_num(&self) -> u64 {
        self.step
    }

    /// Ends this rank's step, waits for every rank (the last one applies the
    /// schedule, handing finished windows to `on_trace_ready`), and begins the next
    /// step. Errors of handlers are returned by [`SharedProfiler::stop`].
    pub fn step(&mut self) {
        self.range = None;
        if self.left {
            return;
        }
        {
            let _outside_the_workload = clock::emulation_scope();
            self.shared.arrive();
        }
        let (step, action) = self.shared.state();
        self.step = step;
        if self
            .shared
            .inner
            .total_steps
            .is_some_and(|total| step >= total)
        {
            self.leave();
        } else {
            self.begin(action);
        }
    }

    fn leave(&mut self) {
        if !self.left {
            self.left = true;
            let _outside_the_workload = clock::emulation_scope();
            self.shared.leave();
        }
    }
}

impl Drop for RankSteps {
    fn drop(&mut self) {
        self.range = None;
        self.leave();
    }
}
