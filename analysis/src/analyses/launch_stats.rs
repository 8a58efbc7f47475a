//! Kernel launch statistics: launch call duration, device duration, launch delay.
//!
//! HTA `CudaKernelAnalysis.cuda_kernel_launch_stats` (`hta-analyses.md`, "Launch
//! statistics"): pair launch calls (compat: `cudaLaunchKernel`, `cudaLaunchKernelExC`,
//! MTIA's `runFunction…`, `cudaMemcpyAsync`, `cudaMemsetAsync`) with device rows by
//! correlation; `launch_delay = max(0, device.start − launch.start − launch.dur)`.
//!
//! Beyond HTA: [`LaunchStats::idle_launch_delay_outliers`] counts the late launches
//! during whose delay the device itself sat idle for longer than the cutoff. A late
//! start behind other queued work (a busy, device-bound device: the healthy case) is a
//! delay, not a cost; a device that waits with nothing to run is. The insight about
//! launch delays uses this count.
//!
//! Graph replays (the default mode): a launch with several device rows
//! (`cudaGraphLaunch`, `hipGraphLaunch`, a compiled program's `nrt_execute` that runs
//! several kernels) is one launch. Only its first device row waited for it; the others
//! were queued on the device behind that row, so they have no launch delay of their own
//! ([`LaunchStats::graph_replays`], [`LaunchStats::queued_behind_launch`]). HTA pairs
//! every row with the launch, and compat mode does too.

use serde::Serialize;

use super::{merge_intervals, ticks_per_us, RowGroups};
use crate::classify::Mode;
use crate::frame::{Frame, FrameRow};
use crate::model::{FastSet, NameId};
use crate::stats::Describe;

const HTA_STATS_LAUNCH_NAMES: [&str; 5] = [
    "cudaLaunchKernel",
    "cudaLaunchKernelExC",
    "runFunction - job_prep_and_submit_for_execution",
    "cudaMemsetAsync",
    "cudaMemcpyAsync",
];

/// Launch statistics of one rank. JSON: an object with these fields; each `Describe`
/// in µs except `correlation`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LaunchStats {
    /// The rank.
    pub rank: i64,
    /// `describe()` of the correlation ids paired.
    pub correlation: Describe,
    /// Launch call durations.
    pub cpu_duration: Describe,
    /// Device row durations.
    pub gpu_duration: Describe,
    /// Launch delays.
    pub launch_delay: Describe,
    /// Pairs whose launch call took longer than `runtime_cutoff_us`.
    pub cpu_duration_outliers: u64,
    /// Pairs whose launch delay exceeded `launch_delay_cutoff_us`.
    pub launch_delay_outliers: u64,
    /// Of those, the pairs whose device (the device row's `pid`) had no work at all for
    /// more than `launch_delay_cutoff_us` of the delay (between the launch call's end
    /// and the device row's start).
    pub idle_launch_delay_outliers: u64,
    /// Launches with more than one device row (graph replays; default mode, else 0).
    pub graph_replays: u64,
    /// Device rows after the first of their launch: queued on the device behind it, so
    /// without a launch delay of their own (default mode, else 0).
    pub queued_behind_launch: u64,
}

/// Computes launch statistics of one rank (HTA cutoffs: 50 µs and 100 µs).
pub fn launch_stats(
    frame: &Frame<'_>,
    runtime_cutoff_us: f64,
    launch_delay_cutoff_us: f64,
) -> LaunchStats {
    let corr_of = |r: &FrameRow| frame.model_row(r).correlation;
    // The launch names interned in this trace, compared by id.
    let launch_names: Vec<NameId> = HTA_STATS_LAUNCH_NAMES
        .iter()
        .filter_map(|name| frame.trace.names.lookup(name))
        .collect();
    let is_launch = |r: &FrameRow| match frame.mode {
        Mode::HtaCompat => launch_names.contains(&frame.model_row(r).name),
        Mode::Default => !r.is_device && corr_of(r) >= 0,
    };
    let is_host = |r: &FrameRow| match frame.mode {
        Mode::HtaCompat => frame.model_row(r).stream == -1,
        Mode::Default => !r.is_device,
    };
    // The join key: compat, HTA's merge on correlation (a correlation repeated k times
    // pairs k² ways, as in HTA); default, each device row with its own launch
    // (`index_correlation`).
    let key_of = |r: &FrameRow| match frame.mode {
        Mode::HtaCompat => corr_of(r),
        Mode::Default if is_host(r) => frame.model_row(r).event_index as i64,
        Mode::Default => r.index_correlation,
    };
    let launch_corrs: FastSet<i64> = frame
        .rows
        .iter()
        .filter(|r| is_launch(r))
        .map(key_of)
        .collect();
    let mut device_by_corr = RowGroups::new();
    for row in frame
        .rows
        .iter()
        .filter(|r| !is_host(r) && launch_corrs.contains(&key_of(r)))
    {
        device_by_corr.push(key_of(row), row);
    }
    let busy = DeviceBusy::of(frame);
    let cutoff_ticks = (launch_delay_cutoff_us * ticks_per_us(frame) as f64) as i64;
    let mut idle_outliers = 0u64;
    let (mut corrs, mut cpu, mut gpu, mut delay) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut graph_replays, mut queued_behind_launch) = (0u64, 0u64);
    for host in frame
        .rows
        .iter()
        .filter(|r| is_host(r) && launch_corrs.contains(&key_of(r)))
    {
        let devices: Vec<&FrameRow> = device_by_corr
            .get(key_of(host))
            .into_iter()
            .flatten()
            .collect();
        // Default mode: the launch once, its delay to its first device row; the rows
        // after it were queued behind that one, not behind the host.
        let first = match frame.mode {
            Mode::Default => devices.iter().map(|d| (d.start_ticks, d.row)).min(),
            Mode::HtaCompat => None,
        };
        if frame.mode == Mode::Default && devices.len() > 1 {
            graph_replays += 1;
            queued_behind_launch += devices.len() as u64 - 1;
        }
        for device in devices {
            let paired = first.is_none_or(|f| f == (device.start_ticks, device.row));
            gpu.push(frame.us(device.dur_ticks()));
            if !paired {
                continue;
            }
            corrs.push(corr_of(host) as f64);
            cpu.push(frame.us(host.dur_ticks()));
            let delay_ticks = (device.start_ticks - host.start_ticks - host.dur_ticks()).max(0);
            delay.push(frame.us(delay_ticks));
            if delay_ticks > cutoff_ticks {
                let from = host.start_ticks + host.dur_ticks();
                let pid = frame.model_row(device).pid;
                if busy.idle_ticks(pid, from, device.start_ticks) > cutoff_ticks {
                    idle_outliers += 1;
                }
            }
        }
    }
    LaunchStats {
        rank: frame.rank(),
        cpu_duration_outliers: cpu.iter().filter(|&&d| d > runtime_cutoff_us).count() as u64,
        launch_delay_outliers: delay
            .iter()
            .filter(|&&d| d > launch_delay_cutoff_us)
            .count() as u64,
        idle_launch_delay_outliers: idle_outliers,
        graph_replays,
        queued_behind_launch,
        correlation: Describe::of(&corrs),
        cpu_duration: Describe::of(&cpu),
        gpu_duration: Describe::of(&gpu),
        launch_delay: Describe::of(&delay),
    }
}

/// When each device of a rank had work: its device rows merged, per device (`pid`).
struct DeviceBusy {
    devices: Vec<BusyDevice>,
}

/// One device (`pid`): merged busy intervals (ticks), sorted, and the busy time before
/// each.
type BusyDevice = (Option<i64>, Vec<(i64, i64)>, Vec<i64>);

impl DeviceBusy {
    fn of(frame: &Frame<'_>) -> Self {
        let mut pids: Vec<Option<i64>> = frame
            .device_rows()
            .map(|r| frame.model_row(r).pid)
            .collect();
        pids.sort_unstable();
        pids.dedup();
        let devices = pids
            .into_iter()
            .map(|pid| {
                let merged = merge_intervals(
                    frame
                        .device_rows()
                        .filter(|r| frame.model_row(r).pid == pid),
                );
                let mut before = Vec::with_capacity(merged.len());
                let mut total = 0;
                for (s, e) in &merged {
                    before.push(total);
                    total += e - s;
                }
                (pid, merged, before)
            })
            .collect();
        DeviceBusy { devices }
    }

    /// Ticks of `[from, to)` during which device `pid` ran nothing.
    fn idle_ticks(&self, pid: Option<i64>, from: i64, to: i64) -> i64 {
        if to <= from {
            return 0;
        }
        let Some((_, merged, before)) = self.devices.iter().find(|d| d.0 == pid) else {
            return to - from;
        };
        let busy_until = |t: i64| -> i64 {
            // Busy time in (-inf, t): whole intervals ending by t, plus the part of the
            // one containing t.
            let i = merged.partition_point(|&(s, _)| s < t);
            if i == 0 {
                return 0;
            }
            let (s, e) = merged[i - 1];
            before[i - 1] + (e.min(t) - s)
        };
        (to - from) - (busy_until(to) - busy_until(from))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_ticks_subtract_busy_intervals_in_the_window() {
        let busy = DeviceBusy {
            devices: vec![(Some(0), vec![(10, 20), (30, 50)], vec![0, 10])],
        };
        assert_eq!(busy.idle_ticks(Some(0), 0, 10), 10);
        assert_eq!(busy.idle_ticks(Some(0), 12, 18), 0);
        assert_eq!(busy.idle_ticks(Some(0), 15, 35), 10);
        assert_eq!(busy.idle_ticks(Some(0), 0, 60), 30);
        assert_eq!(busy.idle_ticks(Some(0), 25, 25), 0);
        assert_eq!(
            busy.idle_ticks(Some(1), 0, 60),
            60,
            "a device with no rows is idle"
        );
    }
}
