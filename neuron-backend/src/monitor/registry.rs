//! The publishers of this process (one per rank, or one per [`Runtime`](crate::Runtime)),
//! and their short history of samples.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use runtime_hooks::clock::monotonic_ns;

use super::cpu;
use crate::Device;

/// Sampling interval while a client is attached, ns.
pub(crate) const SAMPLE_INTERVAL_NS: u64 = 100_000_000;
/// Samples kept: [`SAMPLE_INTERVAL_NS`] × this is the longest period answered.
pub(crate) const HISTORY_SAMPLES: usize = 300;
/// A finished publisher is still reported (as `finished`) this long, ns.
pub(crate) const FINISHED_LINGER_NS: u64 = 30_000_000_000;
/// At most this many finished publishers linger (a program that makes runtimes in a
/// loop keeps only the latest).
pub(crate) const FINISHED_KEPT: usize = 64;

/// Which part of the process a publisher stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryKind {
    /// Every logical core of a [`Runtime`](crate::Runtime).
    Runtime,
    /// One rank of a [`World`](crate::dist::World) (`world` numbers worlds in this
    /// process).
    Rank {
        world: u64,
        rank: usize,
        world_size: usize,
    },
}

/// One publisher: one `neuron_runtime_data` element.
#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) kind: EntryKind,
    pub(crate) devices: Vec<Device>,
    pub(crate) workload: String,
    /// Monotonic ns when it was first seen finished (0: running).
    finished_at_ns: AtomicU64,
    history: Mutex<VecDeque<Sample>>,
}

/// Cumulative counters of one logical core at one instant.
#[derive(Debug, Clone, Default)]
pub(crate) struct CoreSample {
    /// The submitting thread's host clock (the device timeline) at the sample.
    pub(crate) timeline_ns: u64,
    pub(crate) kernel_busy_ns: u64,
    /// TensorE, VectorE, ScalarE, GpSimdE, then all DMA engines; summed over the
    /// physical cores.
    pub(crate) engine_busy_ns: [u64; 5],
    pub(crate) flops: u64,
    pub(crate) executions: u64,
    pub(crate) errors: [u64; 4],
    /// `(operator index in the device's table, calls, device ns)`.
    pub(crate) ops: Vec<(u32, u64, u64)>,
    pub(crate) collectives_completed: u64,
    pub(crate) waited_for_ns: Vec<u64>,
}

/// Every core of a publisher, and its CPU time, at one instant.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sample {
    pub(crate) mono_ns: u64,
    pub(crate) cores: Vec<CoreSample>,
    /// User and system CPU ns of the rank's thread (or of the process).
    pub(crate) cpu_ns: Option<(u64, u64)>,
}

impl Entry {
    fn new(kind: EntryKind, devices: Vec<Device>, workload: String) -> Self {
        Entry {
            kind,
            devices,
            workload,
            finished_at_ns: AtomicU64::new(0),
            history: Mutex::new(VecDeque::with_capacity(HISTORY_SAMPLES)),
        }
    }

    /// Whether it is finished: its rank left its body, or nothing but the registry
    /// holds its devices any more.
    pub(crate) fn finished(&self) -> bool {
        if self.finished_at_ns.load(Ordering::Relaxed) != 0 {
            return true;
        }
        let done = match self.kind {
            EntryKind::Rank { .. } => self.devices.iter().all(|d| {
                d.shared.live.finished.load(Ordering::Relaxed) || Arc::strong_count(&d.shared) == 1
            }),
            EntryKind::Runtime => self
                .devices
                .iter()
                .all(|d| Arc::strong_count(&d.shared) == 1),
        };
        if done {
            self.finished_at_ns
                .store(monotonic_ns().max(1), Ordering::Relaxed);
        }
        done
    }

    fn expired(&self, now_ns: u64) -> bool {
        self.finished()
            && now_ns.saturating_sub(self.finished_at_ns.load(Ordering::Relaxed))
                > FINISHED_LINGER_NS
    }

    /// Takes a sample of every core now.
    pub(crate) fn sample(&self) -> Sample {
        let mono_ns = monotonic_ns();
        // Host clocks run on the cut timeline (monotonic minus the process-wide cuts
        // of a host program computing numerics itself): estimate them on it too.
        let process_ns = runtime_hooks::clock::process_ns();
        let mut cores: Vec<CoreSample> = self
            .devices
            .iter()
            .map(|device| {
                let live = &device.shared.live;
                let mut core = {
                    let timeline = device.timeline();
                    let time = timeline.engine_time();
                    let c = &timeline.live;
                    CoreSample {
                        kernel_busy_ns: c.kernel_busy_ns,
                        engine_busy_ns: [
                            time.compute_busy_ns[0],
                            time.compute_busy_ns[1],
                            time.compute_busy_ns[2],
                            time.compute_busy_ns[3],
                            time.dma_busy_ns,
                        ],
                        flops: c.flops,
                        executions: c.executions,
                        ops: c
                            .ops
                            .counts
                            .iter()
                            .enumerate()
                            .map(|(i, c)| (i as u32, c.calls, c.device_ns))
                            .collect(),
                        ..Default::default()
                    }
                };
                core.timeline_ns = live.host_now_ns(process_ns).unwrap_or(0);
                core.errors = live.errors();
                let collectives = live.lock_collectives();
                core.collectives_completed = collectives.completed;
                core.waited_for_ns = collectives.waited_for_ns.clone();
                core
            })
            .collect();
        if let Some(last) = self
            .history
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .back()
        {
            keep_timelines_monotone(&mut cores, last);
        }
        let cpu_ns = match self.kind {
            EntryKind::Rank { .. } => {
                let tid = self
                    .devices
                    .first()
                    .map_or(0, |d| d.shared.live.os_tid.load(Ordering::Relaxed));
                if tid > 0 {
                    // A thread that has exited uses no more CPU: no reading.
                    cpu::thread_cpu_ns(tid)
                } else {
                    cpu::process_cpu_ns()
                }
            }
            EntryKind::Runtime => cpu::process_cpu_ns(),
        };
        Sample {
            mono_ns,
            cores,
            cpu_ns,
        }
    }

    /// Adds a sample to the history (dropping the oldest beyond its length).
    pub(crate) fn push_sample(&self, sample: Sample) {
        let mut history = self.history.lock().unwrap_or_else(|p| p.into_inner());
        if history.len() == HISTORY_SAMPLES {
            history.pop_front();
        }
        history.push_back(sample);
    }

    /// Adds `sample` unless the newest one is less than [`SAMPLE_INTERVAL_NS`] older
    /// (a report's fresh sample extends the history between the sampler's ticks, so
    /// in-process reports without a socket client have windows too).
    pub(crate) fn offer_sample(&self, sample: &Sample) {
        let mut history = self.history.lock().unwrap_or_else(|p| p.into_inner());
        let due = history
            .back()
            .is_none_or(|last| sample.mono_ns >= last.mono_ns + SAMPLE_INTERVAL_NS);
        if due {
            if history.len() == HISTORY_SAMPLES {
                history.pop_front();
            }
            history.push_back(sample.clone());
        }
    }

    /// The start of the window of a report that ends at `now` and covers at least
    /// `period_ns` of wall time: see [`window_start`].
    pub(crate) fn window_start(&self, now: &Sample, period_ns: u64) -> Option<Sample> {
        let history = self.history.lock().unwrap_or_else(|p| p.into_inner());
        window_start(history.iter(), now, period_ns).cloned()
    }

    /// Forgets the history (when no client has been attached for a while, old samples
    /// would make a new client's first window wrong).
    pub(crate) fn clear_history(&self) {
        self.history
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }
}

/// The timelines of `cores` never go back behind those of the `last` sample.
///
/// A sample reads a core's timeline as `monotonic − the emulation offset the submitting
/// thread had at its last submission`: while that thread is inside an emulation span
/// (numerics, placement) its host clock stands still but the estimate runs on, and at
/// its next submission the estimate falls back. Without the clamp such a sample made the
/// next window negative, read as empty: 0 % utilization between two busy ones.
fn keep_timelines_monotone(cores: &mut [CoreSample], last: &Sample) {
    for (core, before) in cores.iter_mut().zip(&last.cores) {
        core.timeline_ns = core.timeline_ns.max(before.timeline_ns);
    }
}

/// Whether some core's timeline moved from `earlier` to `later`.
fn progressed(earlier: &Sample, later: &Sample) -> bool {
    earlier
        .cores
        .iter()
        .zip(&later.cores)
        .any(|(a, b)| a.timeline_ns < b.timeline_ns)
}

/// Where the window of a report ending at `now` starts, in `history` (oldest first):
/// the newest sample such that the stretches between it and `now` in which the
/// emulated timeline moved add up to `period_ns` of wall time; else the oldest.
///
/// The emulated timeline moves in steps: a rank's host clock stands still while it
/// waits for a peer, is preempted or the emulator computes, and moves at its next
/// submission. A plain wall-clock period could therefore hold no emulated time at all
/// and read 0 % utilization and nothing done between two busy periods. Stretches
/// without progress are skipped over instead, so every report covers `period_ns` of
/// activity (its `period` says how much wall time that took); with no progress in the
/// whole history the window is the whole history and reads idle.
fn window_start<'a>(
    history: impl DoubleEndedIterator<Item = &'a Sample>,
    now: &Sample,
    period_ns: u64,
) -> Option<&'a Sample> {
    let mut later = now;
    let mut active_ns = 0u64;
    let mut start = None;
    for sample in history.rev().filter(|s| s.mono_ns <= now.mono_ns) {
        if progressed(sample, later) {
            active_ns += later.mono_ns - sample.mono_ns;
        }
        start = Some(sample);
        if active_ns >= period_ns {
            break;
        }
        later = sample;
    }
    start
}

#[derive(Debug, Default)]
struct Registry {
    entries: Vec<Arc<Entry>>,
    next_world: u64,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    entries: Vec::new(),
    next_world: 0,
});

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|p| p.into_inner())
}

static WORKLOAD: Mutex<String> = Mutex::new(String::new());

/// `(rank, world size)` of this process in a job of one process per rank.
static PROCESS_RANK: Mutex<Option<(usize, usize)>> = Mutex::new(None);

/// This process is rank `rank` of `world_size` (see `monitor::set_process_rank`).
pub(crate) fn set_process_rank(rank: usize, world_size: usize) {
    *PROCESS_RANK.lock().unwrap_or_else(|p| p.into_inner()) = Some((rank, world_size));
}

/// The rank and world size [`set_process_rank`] gave, if any.
pub(crate) fn process_rank() -> Option<(usize, usize)> {
    *PROCESS_RANK.lock().unwrap_or_else(|p| p.into_inner())
}

/// Names the workload that publishers registered from now on run.
pub(crate) fn set_workload(name: &str) {
    *WORKLOAD.lock().unwrap_or_else(|p| p.into_inner()) = name.to_owned();
}

fn workload() -> String {
    WORKLOAD.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

fn add(entries: impl IntoIterator<Item = Entry>) {
    let now_ns = monotonic_ns();
    let mut registry = registry();
    registry.entries.retain(|e| !e.expired(now_ns));
    let finished = registry.entries.iter().filter(|e| e.finished()).count();
    let mut surplus = finished.saturating_sub(FINISHED_KEPT);
    registry.entries.retain(|e| {
        let drop = surplus > 0 && e.finished();
        surplus -= usize::from(drop);
        !drop
    });
    registry.entries.extend(entries.into_iter().map(Arc::new));
}

/// Publishes a runtime's logical cores as one entry.
pub(crate) fn register_runtime(devices: &[Device]) {
    add([Entry::new(EntryKind::Runtime, devices.to_vec(), workload())]);
}

/// Publishes each rank of a new world as an entry of its own.
pub(crate) fn register_world(devices: &[Device]) {
    let world = {
        let mut registry = registry();
        registry.next_world += 1;
        registry.next_world
    };
    let workload = workload();
    add(devices.iter().enumerate().map(|(rank, device)| {
        Entry::new(
            EntryKind::Rank {
                world,
                rank,
                world_size: devices.len(),
            },
            vec![device.clone()],
            workload.clone(),
        )
    }));
}

/// Stops publishing every finished publisher now instead of after
/// [`FINISHED_LINGER_NS`].
pub(crate) fn forget_finished() {
    registry().entries.retain(|e| !e.finished());
}

/// Every publisher not yet expired (finished ones linger for
/// [`FINISHED_LINGER_NS`]).
pub(crate) fn entries() -> Vec<Arc<Entry>> {
    let now_ns = monotonic_ns();
    let mut registry = registry();
    registry.entries.retain(|e| !e.expired(now_ns));
    registry.entries.clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Runtime;

    fn at(mono_ms: u64, timeline_ms: u64) -> Sample {
        Sample {
            mono_ns: mono_ms * 1_000_000,
            cores: vec![CoreSample {
                timeline_ns: timeline_ms * 1_000_000,
                ..CoreSample::default()
            }],
            cpu_ns: None,
        }
    }

    /// A rank's samples every 100 ms: busy until 1.0 s, then 1.5 s waiting for a peer
    /// (its timeline stands still), then busy again. A 1 s report during and right
    /// after the wait covers the last second of progress, not an empty second.
    #[test]
    fn a_window_skips_the_stretches_without_progress() {
        let mut history: Vec<Sample> = (0..=10).map(|i| at(i * 100, i * 100)).collect();
        history.extend((11..=25).map(|i| at(i * 100, 1000)));
        let window = |history: &[Sample], now: &Sample| {
            let start = window_start(history.iter(), now, 1_000_000_000).unwrap();
            (
                start.mono_ns / 1_000_000,
                start.cores[0].timeline_ns / 1_000_000,
            )
        };
        // In the wait: the window goes back to the last second with progress.
        let now = at(2500, 1000);
        assert_eq!(window(&history, &now), (0, 0));
        // Progress again (0.1 s of it): 0.9 s from before the wait plus that.
        history.push(at(2600, 1100));
        let now = at(2600, 1100);
        assert_eq!(window(&history, &now), (100, 100));
        // Steady progress: the plain period.
        let history: Vec<Sample> = (0..=30).map(|i| at(i * 100, i * 50)).collect();
        assert_eq!(window(&history, &at(3000, 1500)), (2000, 1000));
        // No progress in the whole history: all of it.
        let history: Vec<Sample> = (0..=30).map(|i| at(i * 100, 7)).collect();
        assert_eq!(window(&history, &at(3000, 7)), (0, 7));
    }

    #[test]
    fn sampled_timelines_never_go_back() {
        let last = at(100, 500);
        let mut cores = at(200, 400).cores;
        keep_timelines_monotone(&mut cores, &last);
        assert_eq!(cores[0].timeline_ns, 500_000_000);
        let mut cores = at(200, 600).cores;
        keep_timelines_monotone(&mut cores, &last);
        assert_eq!(cores[0].timeline_ns, 600_000_000);
    }

    #[test]
    fn finished_runtimes_linger_but_only_the_latest_few() {
        if !crate::monitor::enabled() {
            return;
        }
        let held = Runtime::trn2();
        for _ in 0..FINISHED_KEPT + 10 {
            drop(Runtime::trn2());
        }
        let _trigger = Runtime::trn2();
        let all = entries();
        let finished = all.iter().filter(|e| e.finished()).count();
        assert!(
            finished <= FINISHED_KEPT + 1,
            "{finished} finished entries kept"
        );
        let mine = all
            .iter()
            .find(|e| e.devices[0].same(&held.device(0).unwrap()))
            .expect("a runtime in use stays published");
        assert!(!mine.finished());
    }
}
