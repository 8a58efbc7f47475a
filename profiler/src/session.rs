//! The profiling session: `torch.profiler.profile` with its schedule, steps and
//! `on_trace_ready` handler, over the global recording switch of `runtime-hooks`.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use runtime_hooks::{clock, RangeScope, ThreadStats};

use crate::config::{Activity, DeviceDetail, DeviceInfo, DistributedConfig, ProfilerConfig};
use crate::drain::{Collector, DEFAULT_DRAIN_EVERY};
use crate::error::ProfilerError;
use crate::handler::OnTraceReady;
use crate::model::PROFILER_STEP;
use crate::ranks::RankOf;
use crate::result::ProfileResult;
use crate::schedule::{ProfilerAction, Schedule};

/// A boxed `on_trace_ready` handler.
type TraceHandler = Box<dyn OnTraceReady>;

/// Whether a session is active in this process: recording is process-wide (one
/// switch, one set of rings), so sessions take turns, as torch allows one at a time.
static ACTIVE: Mutex<bool> = Mutex::new(false);
static RELEASED: Condvar = Condvar::new();

/// Waits until no other session is active, then marks one active.
fn acquire() -> ActiveToken {
    let mut active = ACTIVE.lock().unwrap_or_else(|p| p.into_inner());
    while *active {
        active = RELEASED.wait(active).unwrap_or_else(|p| p.into_inner());
    }
    *active = true;
    ActiveToken
}

/// Marks the session inactive when dropped.
#[derive(Debug)]
struct ActiveToken;

impl Drop for ActiveToken {
    fn drop(&mut self) {
        runtime_hooks::set_enabled(false);
        *ACTIVE.lock().unwrap_or_else(|p| p.into_inner()) = false;
        RELEASED.notify_one();
    }
}

/// Configures a session; [`ProfilerBuilder::start`] starts it.
///
/// ```
/// use profiler::{Activity, Profiler, Schedule};
/// let mut prof = Profiler::builder()
///     .activities(&[Activity::Cpu, Activity::Neuron])
///     .record_shapes(true)
///     .schedule(Schedule::new(0, 1, 1, 2, 1))
///     .start();
/// for _ in 0..5 {
///     let _r = profiler::record_function("train step body");
///     prof.step()?;
/// }
/// let last = prof.stop()?.expect("one window was recorded");
/// assert_eq!(last.steps(), vec![2, 3]);
/// # Ok::<(), profiler::ProfilerError>(())
/// ```
#[must_use = "a builder does nothing until started"]
pub struct ProfilerBuilder {
    config: ProfilerConfig,
    schedule: Option<Schedule>,
    handler: Option<TraceHandler>,
    ranks: Option<RankMap>,
    drain_every: Option<Duration>,
}

impl std::fmt::Debug for ProfilerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProfilerBuilder")
            .field("config", &self.config)
            .field("schedule", &self.schedule)
            .field("handler", &self.handler.is_some())
            .field("split_by_rank", &self.ranks.is_some())
            .finish()
    }
}

impl ProfilerBuilder {
    /// What to record (default: CPU and NEURON).
    pub fn activities(mut self, activities: &[Activity]) -> Self {
        self.config.activities = activities.to_vec();
        self
    }

    /// Write `Input Dims`/`Input type` on operators (default off).
    pub fn record_shapes(mut self, on: bool) -> Self {
        self.config.record_shapes = on;
        self
    }

    /// Write `[memory]` events and HBM counters (default off).
    pub fn profile_memory(mut self, on: bool) -> Self {
        self.config.profile_memory = on;
        self
    }

    /// Write operator FLOPs (default off).
    pub fn with_flops(mut self, on: bool) -> Self {
        self.config.with_flops = on;
        self
    }

    /// torch's `with_stack` (default off): accepted for scripts ported from torch and
    /// noted in the trace metadata (`"with_stack": 1`), but operators get no
    /// `Call stack` arg: there are no Python frames to show (see
    /// [`ProfilerConfig::with_stack`]).
    pub fn with_stack(mut self, on: bool) -> Self {
        self.config.with_stack = on;
        self
    }

    /// Device detail level (default: instructions).
    pub fn device_detail(mut self, detail: DeviceDetail) -> Self {
        self.config.device_detail = detail;
        self
    }

    /// Describes a device in the trace (`deviceProperties`, names); call once per device.
    pub fn device(mut self, device: DeviceInfo) -> Self {
        self.config.devices.retain(|d| d.index != device.index);
        self.config.devices.push(device);
        self
    }

    /// The rank and process groups (`distributedInfo`).
    pub fn distributed(mut self, distributed: DistributedConfig) -> Self {
        self.config.distributed = Some(distributed);
        self
    }

    /// Replaces the whole configuration.
    pub fn config(mut self, config: ProfilerConfig) -> Self {
        self.config = config;
        self
    }

    /// The schedule (default: record everything from start to stop).
    pub fn schedule(mut self, schedule: Schedule) -> Self {
        self.schedule = Some(schedule);
        self
    }

    /// Calls `handler` with each finished window, like torch's `on_trace_ready`.
    pub fn on_trace_ready(
        self,
        handler: impl FnMut(&ProfileResult) -> Result<(), ProfilerError> + Send + 'static,
    ) -> Self {
        self.on_trace_ready_handler(handler)
    }

    /// Hands each finished window to a handler such as
    /// [`crate::tensorboard_trace_handler`].
    pub fn on_trace_ready_handler(mut self, handler: impl OnTraceReady + 'static) -> Self {
        self.handler = Some(Box::new(handler));
        self
    }

    /// Writes one trace per rank: `rank_of` maps a recording thread (its
    /// `runtime_hooks` thread index, `Record::thread_id`) to its rank. Each window
    /// becomes one [`ProfileResult`] per rank that recorded anything, with
    /// `distributedInfo` for that rank (process groups from
    /// [`ProfilerBuilder::distributed`], else one default group of every rank).
    /// Records of threads that belong to no rank are left out.
    pub fn split_by_rank(
        mut self,
        rank_of: impl Fn(u32) -> Option<RankOf> + Send + Sync + 'static,
    ) -> Self {
        self.ranks = Some(Box::new(rank_of));
        self
    }

    /// How often a drainer thread moves the rings' records into an open window
    /// (default [`crate::DEFAULT_DRAIN_EVERY`]); `None` drains only at steps and at the
    /// window's end, so a thread that records more than its ring holds within one step
    /// drops (and counts) the rest.
    pub fn drain_every(mut self, every: Option<Duration>) -> Self {
        self.drain_every = every;
        self
    }

    /// Starts the session (waiting first while another session of this process runs).
    pub fn start(self) -> Profiler {
        let token = acquire();
        let mut profiler = Profiler {
            config: self.config,
            schedule: self.schedule,
            handler: self.handler,
            step_num: 0,
            action: ProfilerAction::None,
            window: None,
            windows_done: 0,
            step_range: None,
            step_ranges: true,
            last: Vec::new(),
            ranks: self.ranks,
            drain_every: self.drain_every,
            _token: token,
        };
        let first = profiler.action_for(0);
        // Opening a window cannot fail; only closing one hands a trace over.
        let _ = profiler.transit(first);
        profiler.begin_step_range();
        profiler
    }
}

/// An open recording window.
#[derive(Debug)]
struct OpenWindow {
    start_ns: u64,
    dropped_at_start: u64,
    /// Records each thread had dropped when the window opened.
    dropped_by_thread: HashMap<u32, u64>,
    /// What the window has collected: at every step (so a window longer than a ring,
    /// 2 MiB a thread, loses nothing), and every few ms by a drainer thread (so a step
    /// longer than a ring loses nothing either; see [`crate::drain`]).
    collector: Collector,
}

/// Maps a recording thread to its rank.
type RankMap = Box<dyn Fn(u32) -> Option<RankOf> + Send + Sync>;

/// A running session: `torch.profiler.profile` after `start()`.
///
/// Recording is process-wide: every thread's records land in the window, as torch
/// profiles every thread. One session runs at a time; [`ProfilerBuilder::start`] waits
/// for a running one to stop. Dropping a session stops recording without producing a
/// trace.
pub struct Profiler {
    config: ProfilerConfig,
    schedule: Option<Schedule>,
    handler: Option<TraceHandler>,
    step_num: u64,
    action: ProfilerAction,
    window: Option<OpenWindow>,
    windows_done: u64,
    step_range: Option<RangeScope>,
    /// Whether the session marks `ProfilerStep#N` on its own thread (off when shared
    /// by rank threads, which mark their own).
    step_ranges: bool,
    last: Vec<ProfileResult>,
    ranks: Option<RankMap>,
    drain_every: Option<Duration>,
    _token: ActiveToken,
}

impl std::fmt::Debug for Profiler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Profiler")
            .field("config", &self.config)
            .field("schedule", &self.schedule)
            .field("step_num", &self.step_num)
            .field("action", &self.action)
            .finish_non_exhaustive()
    }
}

impl Profiler {
    /// A builder with the defaults: CPU and NEURON, no shapes, memory or FLOPs,
    /// instruction detail, no schedule.
    pub fn builder() -> ProfilerBuilder {
        ProfilerBuilder {
            config: ProfilerConfig::default(),
            schedule: None,
            handler: None,
            ranks: None,
            drain_every: Some(DEFAULT_DRAIN_EVERY),
        }
    }

    /// The current step number.
    pub fn step_num(&self) -> u64 {
        self.step_num
    }

    /// What the session does during the current step.
    pub fn current_action(&self) -> ProfilerAction {
        self.action
    }

    /// The configuration.
    pub fn config(&self) -> &ProfilerConfig {
        &self.config
    }

    fn action_for(&self, step: u64) -> ProfilerAction {
        match &self.schedule {
            Some(schedule) => schedule.action(step),
            None => ProfilerAction::Record,
        }
    }

    /// Ends the current step and begins the next: closes `ProfilerStep#N`, applies the
    /// schedule (a window that ends is handed to `on_trace_ready`), opens
    /// `ProfilerStep#N+1`.
    pub fn step(&mut self) -> Result<(), ProfilerError> {
        self.step_range = None;
        if let Some(window) = &self.window {
            window.collector.collect();
        }
        self.step_num += 1;
        let next = self.action_for(self.step_num);
        let result = self.transit(next);
        self.begin_step_range();
        result
    }

    /// Stops the session. Returns the last window produced (the one the stop ended, or
    /// the last one the schedule saved), after handing a window still open to
    /// `on_trace_ready`.
    pub fn stop(self) -> Result<Option<ProfileResult>, ProfilerError> {
        Ok(self.stop_all()?.into_iter().next())
    }

    /// Like [`Profiler::stop`], returning every result of the last window: one per
    /// rank with [`ProfilerBuilder::split_by_rank`], in rank order.
    pub fn stop_all(mut self) -> Result<Vec<ProfileResult>, ProfilerError> {
        self.step_range = None;
        self.transit(ProfilerAction::None)?;
        Ok(std::mem::take(&mut self.last))
    }

    /// Ends the session's own `ProfilerStep` range and stops marking steps on this
    /// thread (rank threads mark their own).
    pub(crate) fn end_step_range(&mut self) {
        self.step_range = None;
        self.step_ranges = false;
    }

    fn begin_step_range(&mut self) {
        if self.step_ranges && self.action != ProfilerAction::None && self.config.has(Activity::Cpu)
        {
            self.step_range = Some(RangeScope::new(
                runtime_hooks::name!(PROFILER_STEP),
                self.step_num,
            ));
        }
    }

    /// torch's `_transit_action`: what moving from the current action to `next` does.
    fn transit(&mut self, next: ProfilerAction) -> Result<(), ProfilerError> {
        use ProfilerAction::*;
        let previous = self.action;
        self.action = next;
        // A handler's error is returned after the transition is complete, so the
        // session stays in step with its schedule.
        let mut handled = Ok(());
        match (previous, next) {
            (None, None) | (Warmup, Warmup) | (Record, Record) | (Record, RecordAndSave) => {}
            (None, Warmup) => prepare(),
            (None, Record | RecordAndSave) => {
                prepare();
                self.open_window();
            }
            (Warmup, None) => {
                // torch warns about a warm-up followed by nothing; the warm-up is dropped.
                runtime_hooks::set_enabled(false);
                discard();
            }
            (Warmup, Record | RecordAndSave) => self.open_window(),
            (Record | RecordAndSave, None) => {
                handled = self.close_window();
            }
            (Record | RecordAndSave, Warmup) => {
                handled = self.close_window();
                prepare();
            }
            (RecordAndSave, Record | RecordAndSave) => {
                handled = self.close_window();
                prepare();
                self.open_window();
            }
        }
        handled
    }

    fn open_window(&mut self) {
        // What warm-up recorded is thrown away.
        discard();
        self.window = Some(OpenWindow {
            start_ns: clock::now_ns(),
            dropped_at_start: runtime_hooks::dropped_total(),
            dropped_by_thread: runtime_hooks::thread_stats()
                .into_iter()
                .map(|t| (t.thread_id, t.dropped))
                .collect(),
            collector: Collector::start(self.drain_every),
        });
    }

    fn close_window(&mut self) -> Result<(), ProfilerError> {
        let end_ns = clock::now_ns();
        runtime_hooks::set_enabled(false);
        let Some(window) = self.window.take() else {
            return Ok(());
        };
        let collected = window.collector.finish();
        let records = collected.records.into_vec();
        let dropped = runtime_hooks::dropped_total().saturating_sub(window.dropped_at_start);
        let mut threads: Vec<ThreadStats> = collected.threads.into_values().collect();
        threads.sort_by_key(|t| t.thread_id);
        let span = (window.start_ns, end_ns);
        let results = match &self.ranks {
            None => vec![ProfileResult::build(
                &records,
                &threads,
                &self.config,
                self.windows_done,
                span,
                dropped,
            )],
            Some(rank_of) => crate::ranks::split(
                &records,
                &threads,
                &self.config,
                rank_of,
                self.windows_done,
                span,
                &window.dropped_by_thread,
            ),
        };
        self.windows_done += 1;
        let mut handled = Ok(());
        if let Some(handler) = &mut self.handler {
            for result in &results {
                if let Err(e) = handler.on_trace_ready(result) {
                    handled = handled.and(Err(e));
                }
            }
        }
        self.last = results;
        handled
    }
}

/// Turns recording on and empties the rings of what came before.
fn prepare() {
    discard();
    runtime_hooks::set_enabled(true);
}

/// Drains and drops every record in the rings.
fn discard() {
    runtime_hooks::drain_with(usize::MAX, |_| {});
}

/// A user range (`user_annotation`) that ends when the guard drops, like torch's
/// `record_function`. Interns `name` (a lock and a hash): for hot loops keep a
/// `runtime_hooks::name!` id and use `runtime_hooks::RangeScope` directly.
pub fn record_function(name: &str) -> RecordFunction {
    RecordFunction {
        _scope: RangeScope::new(runtime_hooks::intern(name), 0),
    }
}

/// Guard of [`record_function`].
#[must_use = "the range ends when this guard is dropped"]
#[derive(Debug)]
pub struct RecordFunction {
    _scope: RangeScope,
}
