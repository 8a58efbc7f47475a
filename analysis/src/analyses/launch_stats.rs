//! Kernel launch statistics: launch call duration, device duration, launch delay.
//!
//! HTA `CudaKernelAnalysis.cuda_kernel_launch_stats` (`hta-analyses.md`, "Launch
//! statistics"): pair launch calls (compat: `cudaLaunchKernel`, `cudaLaunchKernelExC`,
//! MTIA's `runFunction…`, `cudaMemcpyAsync`, `cudaMemsetAsync`) with device rows by
//! correlation; `launch_delay = max(0, device.start − launch.start − launch.dur)`.

use serde::Serialize;

use super::RowGroups;
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
    let (mut corrs, mut cpu, mut gpu, mut delay) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for host in frame
        .rows
        .iter()
        .filter(|r| is_host(r) && launch_corrs.contains(&key_of(r)))
    {
        for device in device_by_corr.get(key_of(host)).into_iter().flatten() {
            corrs.push(corr_of(host) as f64);
            cpu.push(frame.us(host.dur_ticks()));
            gpu.push(frame.us(device.dur_ticks()));
            delay.push(frame.us((device.start_ticks - host.start_ticks - host.dur_ticks()).max(0)));
        }
    }
    LaunchStats {
        rank: frame.rank(),
        cpu_duration_outliers: cpu.iter().filter(|&&d| d > runtime_cutoff_us).count() as u64,
        launch_delay_outliers: delay
            .iter()
            .filter(|&&d| d > launch_delay_cutoff_us)
            .count() as u64,
        correlation: Describe::of(&corrs),
        cpu_duration: Describe::of(&cpu),
        gpu_duration: Describe::of(&gpu),
        launch_delay: Describe::of(&delay),
    }
}
