//! Per-step split: each `ProfilerStep#N` of each rank divided into computation,
//! exposed communication, memory operations, other device work, host-bound idle and
//! other idle time (no HTA counterpart).
//!
//! PyTorch 2.x writes each step twice: a `user_annotation` on the host (the host's
//! window: from the step's first Python line to its last launch) and a
//! `gpu_user_annotation` on the device's stream (the device's window: from the step's
//! first device work to its last). They are one step with two windows: a
//! [`StepSplit`] has both, and its split is measured over the device window when the
//! trace has one (as TraceLens's `gpu_timeline` is), else over the host window;
//! [`StepSplit::window`] says which.
//!
//! Within the measured window, device rows are clipped and swept; each instant goes to
//! the first type active in the order computation, communication, memory, other — so
//! communication hidden under computation counts as computation, and what remains under
//! "communication" is the exposed part. An idle stretch is host-bound when the device
//! work that ends it was launched after the stretch began (the device waited for the
//! host), or when no device work follows in the step; otherwise the device waited on
//! something else (a dependency, a synchronisation).
//!
//! Of the exposed communication, the part during which the rank's collectives waited
//! for a late peer is [`StepSplit::peer_wait_us`]: a collective kernel runs while it
//! waits, but that time is the late rank's, not this device's work. A rank's copy of a
//! collective waits from its start until the last rank arrives, that is for its
//! duration less the instance's transfer time (the shortest duration across ranks, as
//! the collectives analysis measures it); the rest of the exposed communication moved
//! data.

use std::collections::BTreeMap;

use crate::model::FastMap;
use serde::Serialize;

use crate::classify::KernelType;
use crate::frame::{step_number, Frame, Frames};

/// A step's (host window, device window) in ticks, each when the trace has it.
type StepWindows = [Option<(i64, i64)>; 2];

/// The category PyTorch gives a step's (and any range's) device-side copy.
pub(crate) const DEVICE_ANNOTATION_CATEGORY: &str = "gpu_user_annotation";

/// One step of one rank; the six parts add up to `dur_us`, all over [`Self::window`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepSplit {
    /// The rank.
    pub rank: i64,
    /// N of `ProfilerStep#N`.
    pub step: i64,
    /// The window `start_us`, `dur_us` and the six parts are measured over.
    pub window: StepWindow,
    /// Start of the measured window, µs since the rank's first event.
    pub start_us: f64,
    /// Duration of the measured window, µs.
    pub dur_us: f64,
    /// Start of the host window (`user_annotation`), µs since the rank's first event;
    /// `null` when the trace has none.
    pub host_start_us: Option<f64>,
    /// Duration of the host window, µs.
    pub host_dur_us: Option<f64>,
    /// Start of the device window (`gpu_user_annotation`), µs since the rank's first
    /// event; `null` when the trace has none.
    pub device_start_us: Option<f64>,
    /// Duration of the device window, µs.
    pub device_dur_us: Option<f64>,
    /// Device time with computation running.
    pub computation_us: f64,
    /// Device time with communication running and no computation.
    pub communication_us: f64,
    /// Of `communication_us`, the time its collectives waited for a late peer (the
    /// rest moved data); 0 when no other rank's copies were analyzed with this one.
    pub peer_wait_us: f64,
    /// Device time with only memory operations.
    pub memory_us: f64,
    /// Device time with only other device rows.
    pub other_device_us: f64,
    /// Idle device time waiting for the host to launch.
    pub host_bound_idle_us: f64,
    /// Idle device time waiting for anything else.
    pub other_idle_us: f64,
    /// `host` when the device waited for launches longer than it worked, else `device`.
    pub bound: Bound,
}

impl StepSplit {
    /// Device time with work running (the four busy parts), µs.
    pub fn busy_us(&self) -> f64 {
        self.computation_us + self.communication_us + self.memory_us + self.other_device_us
    }
}

/// Which of a step's windows a figure is measured over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepWindow {
    /// The step's `gpu_user_annotation`: its first to its last device work.
    Device,
    /// The step's `user_annotation` on the host (a trace without a device copy).
    Host,
}

impl StepWindow {
    /// `"device window"` / `"host window"`.
    pub fn label(self) -> &'static str {
        match self {
            StepWindow::Device => "device window",
            StepWindow::Host => "host window",
        }
    }
}

/// What limited a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// The device spent more time waiting for launches than working.
    Host,
    /// Otherwise.
    Device,
}

/// Splits every step of every rank (frames built without HTA's last-step filter are
/// best: [`Frames::build_with`]`(set, mode, false)`), with the ranks' waiting for peers
/// in collectives matched across them.
pub fn step_splits(frames: &Frames<'_>) -> Vec<StepSplit> {
    let mut matcher = crate::analyses::collectives::Matcher::default();
    for frame in &frames.ranks {
        matcher.add(crate::analyses::collectives::collective_parts(frame));
    }
    let waits = matcher.peer_waits();
    frames
        .ranks
        .iter()
        .flat_map(|f| {
            let (mut steps, exposed) = rank_steps_exposing(f, None);
            crate::analyses::peer_wait::fill(&mut steps, &exposed, &waits);
            steps
        })
        .collect()
}

/// A step's exposed communication: the stretches of its window (ns, the clock of the
/// rank's collectives) where communication ran and computation did not.
pub(crate) type Exposed = Vec<(i64, i64)>;

/// The steps of one rank (see [`step_splits`]); only `ProfilerStep#only` when given.
/// The windows are read from every row of the trace, so a frame cut to one step's rows
/// (whose device copy of the step, launched by nothing, has no iteration) still has
/// both. Each step comes with its exposed communication, for
/// [`crate::analyses::peer_wait::fill`] once the ranks' collectives are matched.
pub(crate) fn rank_steps_exposing(
    frame: &Frame<'_>,
    only: Option<i64>,
) -> (Vec<StepSplit>, Vec<Exposed>) {
    let to_ns = |ticks: i64| ticks * frame.tick_ns + frame.trace.base_ns;
    let origin = frame.rows.iter().map(|r| r.start_ticks).min().unwrap_or(0);
    let start_by_event: FastMap<u64, i64> = frame
        .rows
        .iter()
        .filter(|r| !r.is_device)
        .map(|r| (frame.model_row(r).event_index, r.start_ticks))
        .collect();
    // Per step: (host window, device window), each the span of its rows.
    let mut windows: BTreeMap<i64, StepWindows> = BTreeMap::new();
    for row in &frame.trace.rows {
        let Some(step) = step_number(frame.trace.name(row), true) else {
            continue;
        };
        if only.is_some_and(|s| s != step) {
            continue;
        }
        let side = usize::from(frame.trace.category(row) == DEVICE_ANNOTATION_CATEGORY);
        let (s, e) = frame.ticks_of(row);
        let slot = &mut windows.entry(step).or_default()[side];
        *slot = Some(slot.map_or((s, e), |(a, b)| (a.min(s), b.max(e))));
    }
    let mut steps: Vec<(i64, i64, i64, StepWindows)> = windows
        .into_iter()
        .filter_map(|(step, w)| {
            let (ws, we) = w[1].or(w[0])?;
            Some((ws, we, step, w))
        })
        .collect();
    steps.sort_unstable();
    // Device rows by start, so each step looks only at rows that can overlap it (those
    // starting before its end and at most the longest duration before its start).
    // Device-side annotations are ranges over work, not work (compat mode's frame has
    // them among its device rows).
    let mut device: Vec<&crate::frame::FrameRow> = frame
        .device_rows()
        .filter(|r| frame.category(r) != DEVICE_ANNOTATION_CATEGORY)
        .collect();
    device.sort_by_key(|r| r.start_ticks);
    let longest = device
        .iter()
        .map(|r| r.dur_ticks())
        .max()
        .unwrap_or(0)
        .max(0);
    steps
        .into_iter()
        .map(|(ws, we, step, [host, device_window])| {
            let mut parts = [0i64; 6];
            let mut exposed: Exposed = Vec::new();
            // (time, kind, +1/-1, launch start for row starts)
            let mut points: Vec<(i64, usize, i64, Option<i64>)> = Vec::new();
            let first = device.partition_point(|r| r.start_ticks < ws.saturating_sub(longest));
            let last = device.partition_point(|r| r.start_ticks < we);
            for &row in &device[first..last.max(first)] {
                let (s, e) = (row.start_ticks.max(ws), row.end_ticks.min(we));
                if s >= e {
                    continue;
                }
                let kind = match row.kernel_type {
                    KernelType::Computation => 0,
                    KernelType::Communication => 1,
                    KernelType::Memory => 2,
                    KernelType::Other => 3,
                };
                let launch = u64::try_from(row.index_correlation)
                    .ok()
                    .and_then(|ic| start_by_event.get(&ic).copied());
                points.push((s, kind, 1, launch));
                points.push((e, kind, -1, None));
            }
            points.sort_by_key(|p| (p.0, -p.2));
            let mut active = [0i64; 4];
            let mut t = ws;
            let mut i = 0;
            loop {
                let next = points.get(i).map_or(we, |p| p.0);
                if next > t {
                    let part = match active.iter().position(|&c| c > 0) {
                        Some(kind) => kind,
                        None => {
                            // Idle [t, next): who ends it?
                            let launches: Vec<i64> = points[i..]
                                .iter()
                                .take_while(|p| p.0 == next && p.2 > 0)
                                .filter_map(|p| p.3)
                                .collect();
                            let host_bound = next == we || launches.iter().any(|&l| l > t);
                            if host_bound {
                                4
                            } else {
                                5
                            }
                        }
                    };
                    parts[part] += next - t;
                    if part == 1 {
                        match exposed.last_mut() {
                            Some(last) if last.1 == to_ns(t) => last.1 = to_ns(next),
                            _ => exposed.push((to_ns(t), to_ns(next))),
                        }
                    }
                    t = next;
                }
                let Some(p) = points.get(i) else { break };
                active[p.1] += p.2;
                i += 1;
            }
            let us = |ticks: i64| frame.us(ticks);
            let busy: i64 = parts[..4].iter().sum();
            let split = StepSplit {
                bound: if parts[4] > busy {
                    Bound::Host
                } else {
                    Bound::Device
                },
                rank: frame.rank(),
                step,
                window: if device_window.is_some() {
                    StepWindow::Device
                } else {
                    StepWindow::Host
                },
                start_us: us(ws - origin),
                dur_us: us(we - ws),
                host_start_us: host.map(|(s, _)| us(s - origin)),
                host_dur_us: host.map(|(s, e)| us(e - s)),
                device_start_us: device_window.map(|(s, _)| us(s - origin)),
                device_dur_us: device_window.map(|(s, e)| us(e - s)),
                computation_us: us(parts[0]),
                communication_us: us(parts[1]),
                peer_wait_us: 0.0,
                memory_us: us(parts[2]),
                other_device_us: us(parts[3]),
                host_bound_idle_us: us(parts[4]),
                other_idle_us: us(parts[5]),
            };
            (split, exposed)
        })
        .unzip()
}
