//! Neuron utilization per device: engine and core activity, MFU/HFU, DMA use, TensorE
//! throttling, host- versus device-bound steps (no HTA counterpart).
//!
//! Read from the model rows of one rank (mode-independent):
//! - **Window**: from the first `ProfilerStep#N` start to the last step end (of the
//!   steps selected, see [`utilization`]); without steps, the rank's whole trace.
//!   Activity is clipped to it and every `%` is of it.
//! - **Engines**: from `neuron_instruction` rows (source `instructions`): per (core,
//!   engine) the union of instruction intervals, `semaphore_wait` excluded (the engine
//!   waits, it is not active; its time is `wait_us`); per core the union over its
//!   engines. Without instruction rows for a device, from the kernels'
//!   `<engine> busy (ns)` args (source `kernel_args`), summed per engine, no core split.
//! - **MFU** = Σ `flops` of kernels starting in the window / (window × peak), peak from
//!   `deviceProperties.peakTflops` for [`UtilizationOptions::peak_dtype`] (`bf16`, else
//!   the largest listed). **HFU** is the same with the flops the engines executed
//!   (`flops` of instructions), which include work the model's count leaves out.
//! - **DMA**: `neuron_dma` rows: transfers, bytes, queues used, time with any queue busy,
//!   mean queue occupancy (Σ per-queue busy / (queues × window)), achieved bandwidth
//!   over the busy time, and transfers under [`SMALL_DMA_BYTES`]: every DMA pays
//!   ~1.3 µs of fixed cost (`hardware.md`), which at one queue's 23 B/ns moves ~30 KB,
//!   so smaller transfers are overhead-bound.
//! - **TensorE throttling**: the trace has no throttle marker, so it is estimated with
//!   the hardware rule (`hardware.md`: after ≥ 3 µs idle the array runs at ~50% and
//!   ramps to full over ~3 µs): the time of TensorE instructions issued within 3 µs of
//!   a restart that followed ≥ 3 µs of idleness on that core's TensorE (the first
//!   TensorE instruction counts as a restart). Only from instruction rows.
//! - **Throttling (measured)**: a Neuron Explorer profile's `Throttle` rows
//!   (`neuron_throttle`: thermal or power throttling of a physical core, the utilization
//!   permitted cut to `k / n`): the time any core of the device was throttled in the
//!   window, and the spans starting in it. Kineto traces have none (`None`).
//! - **Steps**: how many of the rank's steps were host- or device-bound
//!   ([`super::steps`]); filled by [`crate::analyze`].
//! - **Waiting for peers**: the part of the busy time during which the device ran
//!   nothing but collective kernels waiting for a late rank (the collectives matched
//!   across ranks, as the steps' `peer_wait_us`): a collective kernel runs while it
//!   waits, so `device_busy_pct` counts that time, but it is the late rank's, not this
//!   device's work. Waiting under other kernels is not subtracted: the device worked.
//!   [`DeviceUtilization::working_pct`] is busy without it. Filled by
//!   [`crate::analyze`] once every rank is read; 0 for one rank.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::classify::is_device_work_category;
use crate::frame::step_number;
use crate::model::{EngineRow, RankTrace};

/// Transfers below this size (bytes) count as small DMAs (32 KiB).
pub const SMALL_DMA_BYTES: i64 = 32 << 10;
/// Idle time after which TensorE throttles, ns (`hardware.md`).
pub const TENSOR_THROTTLE_IDLE_NS: i64 = 3_000;
/// Time over which a throttled TensorE ramps back to full rate, ns (`hardware.md`).
pub const TENSOR_THROTTLE_RAMP_NS: i64 = 3_000;

/// Settings of [`utilization`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct UtilizationOptions {
    /// The dtype whose peak MFU/HFU divide by (`bf16`); when the device does not list
    /// it, the largest listed peak.
    pub peak_dtype: String,
    /// Only this `ProfilerStep#N`; `None`: every step.
    pub step: Option<i64>,
}

impl UtilizationOptions {
    /// Sets [`UtilizationOptions::peak_dtype`].
    pub fn with_peak_dtype(mut self, dtype: &str) -> Self {
        self.peak_dtype = dtype.to_owned();
        self
    }

    /// Sets [`UtilizationOptions::step`].
    pub fn with_step(mut self, step: Option<i64>) -> Self {
        self.step = step;
        self
    }
}

impl Default for UtilizationOptions {
    fn default() -> Self {
        UtilizationOptions {
            peak_dtype: "bf16".to_owned(),
            step: None,
        }
    }
}

/// Where engine activity was read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineSource {
    /// `neuron_instruction` rows.
    Instructions,
    /// The kernels' `<engine> busy (ns)` args.
    KernelArgs,
    /// Neither was recorded.
    None,
}

/// One engine of one core.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EngineActivity {
    /// The physical core (`None` with source `kernel_args`).
    pub core: Option<i64>,
    /// `TensorE`, `VectorE`, `ScalarE`, `GpSimdE`, …
    pub engine: String,
    /// Time active, µs.
    pub busy_us: f64,
    /// `busy_us` / window, %.
    pub active_pct: f64,
    /// Instructions executed (0 with source `kernel_args`).
    pub instructions: u64,
    /// Time in `semaphore_wait`, µs.
    pub wait_us: f64,
}

/// One physical core: time with any engine active.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CoreActivity {
    /// The core.
    pub core: i64,
    /// Time with any engine active, µs.
    pub busy_us: f64,
    /// `busy_us` / window, %.
    pub active_pct: f64,
}

/// DMA use of one device.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DmaUtilization {
    /// Transfers.
    pub transfers: u64,
    /// Σ bytes.
    pub bytes: i64,
    /// DMA queues used.
    pub queues: u64,
    /// Time with at least one queue busy, µs.
    pub busy_us: f64,
    /// `busy_us` / window, %.
    pub active_pct: f64,
    /// Mean occupancy of the queues used: Σ per-queue busy / (queues × window), %.
    pub queue_utilization_pct: f64,
    /// `bytes` / `busy_us`, GB/s.
    pub achieved_gbps: Option<f64>,
    /// The small-transfer limit, bytes.
    pub small_limit_bytes: i64,
    /// Transfers under the limit.
    pub small_transfers: u64,
    /// Σ bytes of those.
    pub small_bytes: i64,
    /// Σ duration of those, µs.
    pub small_time_us: f64,
    /// Σ duration of all transfers, µs.
    pub transfer_time_us: f64,
}

/// Utilization of one device of one rank. JSON: this struct (times µs, `%` 0–100,
/// `null` where the trace lacks what is needed).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeviceUtilization {
    /// The rank.
    pub rank: i64,
    /// The device (`pid` of its rows, `id` in `deviceProperties`).
    pub device: i64,
    /// Window start, µs since the rank's first event.
    pub window_start_us: f64,
    /// Window length, µs.
    pub window_us: f64,
    /// Time with any kernel, copy or memset running, % of the window.
    pub device_busy_pct: f64,
    /// Of the busy time, the time the device's collectives waited for a late peer, µs
    /// (see the module docs).
    pub peer_wait_us: f64,
    /// The same, % of the window.
    pub peer_wait_pct: f64,
    /// Where engine activity came from.
    pub engine_source: EngineSource,
    /// Per (core, engine), sorted.
    pub engines: Vec<EngineActivity>,
    /// Per physical core (source `instructions` only).
    pub cores: Vec<CoreActivity>,
    /// Σ `flops` of kernels in the window (model flops).
    pub model_flops: i64,
    /// Σ `flops` of instructions in the window (hardware flops); `None` without
    /// instruction rows.
    pub hardware_flops: Option<i64>,
    /// The peak used, TFLOP/s.
    pub peak_tflops: Option<f64>,
    /// Its dtype.
    pub peak_dtype: Option<String>,
    /// Model flops utilization, %.
    pub mfu_pct: Option<f64>,
    /// Hardware flops utilization, %.
    pub hfu_pct: Option<f64>,
    /// DMA use; `None` without `neuron_dma` rows.
    pub dma: Option<DmaUtilization>,
    /// Estimated TensorE time below full rate after idling (see the module docs), µs;
    /// `None` without TensorE instruction rows.
    pub tensor_throttled_us: Option<f64>,
    /// TensorE restarts after ≥ 3 µs idle.
    pub tensor_throttle_events: u64,
    /// Time any core of the device was throttled (thermal or power; measured, from
    /// `neuron_throttle` rows), µs; `None` without such rows.
    pub throttled_us: Option<f64>,
    /// The same, % of the window.
    pub throttled_pct: Option<f64>,
    /// Throttle spans starting in the window.
    pub throttle_events: u64,
    /// Steps of this rank that were host-bound.
    pub host_bound_steps: u64,
    /// Steps of this rank that were device-bound.
    pub device_bound_steps: u64,
    /// The stretches of the window when the device ran collective kernels and nothing
    /// else, disjoint and in order, as absolute ns (relative time + the trace's
    /// `base_ns`, the clock the collectives are matched on): where
    /// [`DeviceUtilization::fill_peer_waits`] looks for waiting.
    #[serde(skip)]
    collective_spans_abs_ns: Vec<(i64, i64)>,
}

impl DeviceUtilization {
    /// Busy time without the time spent waiting for peers, % of the window.
    pub fn working_pct(&self) -> f64 {
        self.device_busy_pct - self.peer_wait_pct
    }

    /// Sets `peer_wait_us` and `peer_wait_pct` from the rank's waits for peers (absolute
    /// ns intervals, disjoint and in order, as the collectives' matcher gives them).
    pub(crate) fn fill_peer_waits(&mut self, waits: &[(i64, i64)]) {
        let waited_ns = super::peer_wait::overlap_ns(&self.collective_spans_abs_ns, waits);
        self.peer_wait_us = waited_ns as f64 / 1000.0;
        self.peer_wait_pct = if self.window_us > 0.0 {
            100.0 * self.peer_wait_us / self.window_us
        } else {
            0.0
        };
    }
}

/// The parts of the union of `collectives` that no span of `others` covers, disjoint
/// and in order.
fn collective_only(
    mut collectives: Vec<(i64, i64)>,
    mut others: Vec<(i64, i64)>,
) -> Vec<(i64, i64)> {
    use super::peer_wait::union;
    collectives.sort_unstable();
    others.sort_unstable();
    let others = union(&others);
    let mut out = Vec::new();
    let mut j = 0;
    for (mut s, e) in union(&collectives) {
        while j < others.len() && others[j].1 <= s {
            j += 1;
        }
        let mut k = j;
        while s < e {
            match others.get(k) {
                Some(&(os, oe)) if os < e => {
                    if os > s {
                        out.push((s, os));
                    }
                    s = s.max(oe);
                    k += 1;
                }
                _ => {
                    out.push((s, e));
                    break;
                }
            }
        }
    }
    out
}

/// One engine track being summed: active spans, instructions, wait ns.
type Track = (Vec<(i64, i64)>, u64, i64);

/// The utilization of every device of one rank.
pub fn utilization(trace: &RankTrace, options: &UtilizationOptions) -> Vec<DeviceUtilization> {
    let origin = trace.min_ts_rel_ns.unwrap_or(0);
    let Some((ws, we)) = window(trace, options.step) else {
        return Vec::new();
    };
    let clip = |s: i64, d: i64| -> Option<(i64, i64)> {
        let (a, b) = (s.max(ws), (s + d).min(we));
        (a < b).then_some((a, b))
    };
    let mut devices: BTreeSet<i64> = BTreeSet::new();
    let kernels: Vec<_> = trace
        .rows
        .iter()
        .filter(|r| is_device_work_category(trace.category(r)))
        .collect();
    devices.extend(kernels.iter().map(|r| r.pid.unwrap_or(-1)));
    devices.extend(trace.engine_rows.iter().map(|e| e.device));
    devices.extend(trace.dma_rows.iter().map(|d| d.device));
    devices.extend(trace.throttle_rows.iter().map(|t| t.device));
    let window_ns = (we - ws) as f64;
    let pct = |ns: i64| 100.0 * ns as f64 / window_ns;
    let us = |ns: i64| ns as f64 / 1000.0;
    devices
        .into_iter()
        .map(|device| {
            let on_device: Vec<_> = kernels
                .iter()
                .filter(|r| r.pid.unwrap_or(-1) == device)
                .collect();
            let busy = union_ns(
                on_device
                    .iter()
                    .filter_map(|r| clip(r.ts_rel_ns, r.dur_ns))
                    .collect(),
            );
            let collective_spans_abs_ns = collective_only(
                on_device
                    .iter()
                    .filter(|r| r.is_collective())
                    .filter_map(|r| clip(r.ts_rel_ns, r.dur_ns))
                    .collect(),
                on_device
                    .iter()
                    .filter(|r| !r.is_collective())
                    .filter_map(|r| clip(r.ts_rel_ns, r.dur_ns))
                    .collect(),
            )
            .into_iter()
            .map(|(s, e)| (s + trace.base_ns, e + trace.base_ns))
            .collect();
            let in_window = |s: i64| ws <= s && s < we;
            let model_flops: i64 = on_device
                .iter()
                .filter(|r| in_window(r.ts_rel_ns))
                .map(|r| r.flops.max(0))
                .sum();
            let engine_rows: Vec<&EngineRow> = trace
                .engine_rows
                .iter()
                .filter(|e| e.device == device)
                .collect();
            let (engine_source, engines, cores, hardware_flops) = if !engine_rows.is_empty() {
                let mut tracks: BTreeMap<(i64, &str), Track> = BTreeMap::new();
                let mut per_core: BTreeMap<i64, Vec<(i64, i64)>> = BTreeMap::new();
                let mut flops = 0i64;
                for e in &engine_rows {
                    let track = tracks
                        .entry((e.core, trace.names.get(e.engine)))
                        .or_default();
                    let Some(span) = clip(e.ts_rel_ns, e.dur_ns) else {
                        continue;
                    };
                    if e.is_wait {
                        track.2 += span.1 - span.0;
                        continue;
                    }
                    track.0.push(span);
                    track.1 += 1;
                    per_core.entry(e.core).or_default().push(span);
                    flops += e.flops.max(0);
                }
                let engines = tracks
                    .into_iter()
                    .map(|((core, engine), (spans, n, wait))| {
                        let busy = union_ns(spans);
                        EngineActivity {
                            core: Some(core),
                            engine: engine.to_owned(),
                            busy_us: us(busy),
                            active_pct: pct(busy),
                            instructions: n,
                            wait_us: us(wait),
                        }
                    })
                    .collect();
                let cores = per_core
                    .into_iter()
                    .map(|(core, spans)| {
                        let busy = union_ns(spans);
                        CoreActivity {
                            core,
                            busy_us: us(busy),
                            active_pct: pct(busy),
                        }
                    })
                    .collect();
                (EngineSource::Instructions, engines, cores, Some(flops))
            } else {
                let mut per_engine: BTreeMap<&str, i64> = BTreeMap::new();
                for r in on_device.iter().filter(|r| in_window(r.ts_rel_ns)) {
                    for &(engine, ns) in r.engine_busy.iter().flat_map(|b| b.iter()) {
                        *per_engine.entry(trace.names.get(engine)).or_default() += ns;
                    }
                }
                let source = if per_engine.is_empty() {
                    EngineSource::None
                } else {
                    EngineSource::KernelArgs
                };
                let engines = per_engine
                    .into_iter()
                    .map(|(engine, busy)| EngineActivity {
                        core: None,
                        engine: engine.to_owned(),
                        busy_us: us(busy),
                        active_pct: pct(busy),
                        instructions: 0,
                        wait_us: 0.0,
                    })
                    .collect();
                (source, engines, Vec::new(), None)
            };
            let info = trace.devices.iter().find(|d| d.id == device);
            let peak = info.and_then(|d| {
                d.peak_tflops
                    .iter()
                    .find(|(dtype, _)| *dtype == options.peak_dtype)
                    .or_else(|| d.peak_tflops.iter().max_by(|a, b| a.1.total_cmp(&b.1)))
                    .cloned()
            });
            let utilization_pct = |flops: i64| {
                peak.as_ref()
                    .filter(|(_, tflops)| *tflops > 0.0)
                    .map(|(_, tflops)| 100.0 * flops as f64 / (window_ns * tflops * 1e3))
            };
            let (throttled_ns, throttle_events) = tensor_throttle(&engine_rows, trace, ws, we);
            let throttles: Vec<_> = trace
                .throttle_rows
                .iter()
                .filter(|t| t.device == device)
                .collect();
            let measured_throttle_ns = (!throttles.is_empty()).then(|| {
                union_ns(
                    throttles
                        .iter()
                        .filter_map(|t| clip(t.ts_rel_ns, t.dur_ns))
                        .collect(),
                )
            });
            DeviceUtilization {
                rank: trace.rank,
                device,
                window_start_us: us(ws - origin),
                window_us: us(we - ws),
                device_busy_pct: pct(busy),
                peer_wait_us: 0.0,
                peer_wait_pct: 0.0,
                engine_source,
                engines,
                cores,
                model_flops,
                hardware_flops,
                mfu_pct: utilization_pct(model_flops),
                hfu_pct: hardware_flops.and_then(utilization_pct),
                peak_tflops: peak.as_ref().map(|p| p.1),
                peak_dtype: peak.map(|p| p.0),
                dma: dma_utilization(trace, device, &clip, window_ns),
                tensor_throttled_us: throttled_ns.map(us),
                tensor_throttle_events: throttle_events,
                throttled_us: measured_throttle_ns.map(us),
                throttled_pct: measured_throttle_ns.map(pct),
                throttle_events: throttles.iter().filter(|t| in_window(t.ts_rel_ns)).count() as u64,
                host_bound_steps: 0,
                device_bound_steps: 0,
                collective_spans_abs_ns,
            }
        })
        .collect()
}

/// The window of a rank: its steps (or one step), else the whole trace.
fn window(trace: &RankTrace, step: Option<i64>) -> Option<(i64, i64)> {
    let steps: Vec<(i64, i64)> = trace
        .rows
        .iter()
        .filter_map(|r| {
            let n = step_number(trace.name(r), true)?;
            step.is_none_or(|s| s == n)
                .then_some((r.ts_rel_ns, r.ts_rel_ns + r.dur_ns))
        })
        .collect();
    let span = if steps.is_empty() {
        if step.is_some() {
            return None;
        }
        (trace.min_ts_rel_ns?, trace.max_end_rel_ns?)
    } else {
        (
            steps.iter().map(|s| s.0).min()?,
            steps.iter().map(|s| s.1).max()?,
        )
    };
    (span.0 < span.1).then_some(span)
}

fn dma_utilization(
    trace: &RankTrace,
    device: i64,
    clip: &impl Fn(i64, i64) -> Option<(i64, i64)>,
    window_ns: f64,
) -> Option<DmaUtilization> {
    let mut per_queue: BTreeMap<i64, Vec<(i64, i64)>> = BTreeMap::new();
    let mut all = Vec::new();
    let (mut transfers, mut bytes, mut small, mut small_bytes) = (0u64, 0i64, 0u64, 0i64);
    let (mut small_ns, mut total_ns) = (0i64, 0i64);
    for d in trace.dma_rows.iter().filter(|d| d.device == device) {
        let Some(span) = clip(d.ts_rel_ns, d.dur_ns) else {
            continue;
        };
        transfers += 1;
        bytes += d.bytes.max(0);
        total_ns += span.1 - span.0;
        if (0..SMALL_DMA_BYTES).contains(&d.bytes) {
            small += 1;
            small_bytes += d.bytes;
            small_ns += span.1 - span.0;
        }
        per_queue.entry(d.queue).or_default().push(span);
        all.push(span);
    }
    if transfers == 0 {
        return None;
    }
    let queues = per_queue.len() as u64;
    let queue_busy: i64 = per_queue.into_values().map(union_ns).sum();
    let busy = union_ns(all);
    Some(DmaUtilization {
        transfers,
        bytes,
        queues,
        busy_us: busy as f64 / 1000.0,
        active_pct: 100.0 * busy as f64 / window_ns,
        queue_utilization_pct: 100.0 * queue_busy as f64 / (queues as f64 * window_ns),
        achieved_gbps: (busy > 0).then(|| bytes as f64 / busy as f64),
        small_limit_bytes: SMALL_DMA_BYTES,
        small_transfers: small,
        small_bytes,
        small_time_us: small_ns as f64 / 1000.0,
        transfer_time_us: total_ns as f64 / 1000.0,
    })
}

/// Estimated TensorE time below full rate: instructions issued within the ramp after
/// each restart that followed ≥ 3 µs idle (per core). `None` without TensorE instructions.
fn tensor_throttle(
    engine_rows: &[&EngineRow],
    trace: &RankTrace,
    ws: i64,
    we: i64,
) -> (Option<i64>, u64) {
    let Some(tensor) = trace.names.lookup("TensorE") else {
        return (None, 0);
    };
    let mut per_core: BTreeMap<i64, Vec<(i64, i64)>> = BTreeMap::new();
    for e in engine_rows
        .iter()
        .filter(|e| e.engine == tensor && !e.is_wait)
    {
        per_core
            .entry(e.core)
            .or_default()
            .push((e.ts_rel_ns, e.ts_rel_ns + e.dur_ns));
    }
    if per_core.is_empty() {
        return (None, 0);
    }
    let (mut throttled, mut events) = (0i64, 0u64);
    for spans in per_core.values_mut() {
        spans.sort_unstable();
        let mut last_end: Option<i64> = None;
        let mut ramp_end = i64::MIN;
        for &(s, e) in spans.iter() {
            let idle = last_end.is_none_or(|l| s - l >= TENSOR_THROTTLE_IDLE_NS);
            if idle {
                ramp_end = s + TENSOR_THROTTLE_RAMP_NS;
                if (ws..we).contains(&s) {
                    events += 1;
                }
            }
            // An instruction issued during the ramp runs below full rate throughout.
            let (a, b) = (s.max(ws), e.min(we));
            if s < ramp_end && a < b {
                throttled += b - a;
            }
            last_end = Some(last_end.map_or(e, |l| l.max(e)));
        }
    }
    (Some(throttled), events)
}

/// Total length of the union of intervals.
fn union_ns(spans: Vec<(i64, i64)>) -> i64 {
    crate::stats::union_length(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn union_merges_overlaps() {
        assert_eq!(union_ns(vec![(5, 8), (0, 3), (2, 4), (8, 9)]), 8);
        assert_eq!(union_ns(Vec::new()), 0);
    }

    #[test]
    fn collective_only_leaves_out_time_other_kernels_cover() {
        // Collectives [0, 10) and [8, 20), [30, 40); other kernels [2, 4), [6, 12),
        // [15, 35): the device ran collectives alone in [0, 2), [4, 6), [12, 15),
        // [35, 40).
        let only = collective_only(
            vec![(30, 40), (0, 10), (8, 20)],
            vec![(6, 12), (2, 4), (15, 35)],
        );
        assert_eq!(only, vec![(0, 2), (4, 6), (12, 15), (35, 40)]);
        assert_eq!(collective_only(vec![(0, 5)], Vec::new()), vec![(0, 5)]);
        assert!(collective_only(vec![(3, 5)], vec![(0, 10)]).is_empty());
    }
}
