//! Queue length per stream: how many launched operations wait to run.
//!
//! HTA `TraceCounters.get_queue_length_summary` (`hta-analyses.md`, "Queue length"): +1 at
//! each launch call that has a device row, −1 at the start of that device row; the
//! cumulative sum per stream over time; `describe()` of the step values.
//! Launch calls: in compat mode HTA's names (`cudaLaunchKernel`, `cudaMemcpyAsync`,
//! `hipLaunchKernel`, MTIA's `runFunction - job_prep_and_submit_for_execution`, …); in
//! the default mode any host row linked to device work by its correlation.
//! In compat mode a trace whose correlation ids pair launches and device rows other
//! than one to one gets no result: HTA 0.5 fails an assertion there.
//! In the default mode a launch with several device rows (a CUDA/HIP graph replay) is
//! one queued operation, from the launch to its first row's start: the rows behind it
//! were queued by the device, not by the host's launch queue (1,516 kernels of one
//! `hipGraphLaunch` are not 1,516 launches blocking on a full queue).

use std::collections::BTreeMap;

use serde::Serialize;

use super::RowGroups;
use crate::classify::{HtaVersion, Mode};
use crate::frame::{Frame, FrameRow};
use crate::model::{FastMap, FastSet, NameId};
use crate::stats::Describe;

/// Launch names HTA recognises (`TraceSymbolTable.get_runtime_launch_events_mask`).
pub(crate) const HTA_LAUNCH_NAMES: [&str; 12] = [
    "cudaLaunchKernel",
    "cudaLaunchKernelExC",
    "cuLaunchKernel",
    "cuLaunchKernelEx",
    "cudaMemcpyAsync",
    "cudaMemsetAsync",
    "runFunction - job_prep_and_submit_for_execution",
    "hipLaunchKernel",
    "hipExtModuleLaunchKernel",
    "hipMemsetAsync",
    "hipMemcpyAsync",
    "hipMemcpyWithStream",
];

/// Queue length statistics of one stream. JSON: `{"rank", "stream", "queue_length":
/// Describe}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QueueLengthStream {
    /// The rank.
    pub rank: i64,
    /// The stream.
    pub stream: i64,
    /// `describe()` of the queue length after each change.
    pub queue_length: Describe,
    /// The largest queue length seen.
    pub max_queue_length: i64,
    /// The limit used for the blocked time (1024 for CUDA).
    pub queue_limit: i64,
    /// Time the queue spent at or above the limit, when launches block, µs (HTA
    /// `get_time_spent_blocked_on_full_queue`).
    pub time_blocked_on_full_queue_us: f64,
}

/// CUDA's launch queue depth per stream (HTA `CUDA_MAX_LAUNCH_QUEUE_PER_STREAM`).
pub const CUDA_MAX_QUEUE_LENGTH: i64 = 1024;

/// Which rows are launch calls under the frame's mode: in compat mode HTA's names
/// (`cuLaunchKernelEx` joined the list in HTA 0.6), compared by interned id.
struct Launches {
    names: Vec<NameId>,
}

impl Launches {
    fn new(frame: &Frame<'_>) -> Self {
        let names = HTA_LAUNCH_NAMES
            .iter()
            .filter(|&&name| !(frame.hta_version == HtaVersion::V0_5 && name == "cuLaunchKernelEx"))
            .filter_map(|name| frame.trace.names.lookup(name))
            .collect();
        Launches { names }
    }

    fn is_launch(&self, frame: &Frame<'_>, row: &FrameRow) -> bool {
        match frame.mode {
            Mode::HtaCompat => self.names.contains(&frame.model_row(row).name),
            Mode::Default => !row.is_device && frame.model_row(row).correlation >= 0,
        }
    }
}

/// Computes the queue length summary of one rank, streams in increasing order, with
/// CUDA's queue limit.
pub fn queue_length_summary(frame: &Frame<'_>) -> Vec<QueueLengthStream> {
    queue_length_summary_with_limit(frame, CUDA_MAX_QUEUE_LENGTH)
}

/// [`queue_length_summary`] with another queue limit (a device's own launch queue depth).
pub fn queue_length_summary_with_limit(
    frame: &Frame<'_>,
    queue_limit: i64,
) -> Vec<QueueLengthStream> {
    let launch_names = Launches::new(frame);
    let launches: Vec<&FrameRow> = frame
        .rows
        .iter()
        .filter(|r| launch_names.is_launch(frame, r) && r.index_correlation > 0)
        .collect();
    // Compat: HTA's merge on correlation (every device row of the correlation; a
    // correlation repeated k times gives k² points, as in HTA). Default: the device rows
    // linked to this launch (`index_correlation`), so each is queued once.
    let key = |row: &FrameRow| match frame.mode {
        Mode::HtaCompat => frame.model_row(row).correlation,
        Mode::Default => row.index_correlation,
    };
    let mut device_by_corr = RowGroups::new();
    for row in frame.device_rows() {
        device_by_corr.push(key(row), row);
    }
    if frame.mode == Mode::HtaCompat {
        // HTA asserts that the launches joined to device rows are as many as the device
        // rows with a launch (`trace_counters.py`); a correlation id shared by several
        // launches or device rows breaks it and HTA raises: no result, as there.
        let joined: usize = launches
            .iter()
            .map(|l| {
                device_by_corr
                    .get(frame.model_row(l).correlation)
                    .map_or(1, Iterator::count)
            })
            .sum();
        let corrs: FastSet<i64> = launches
            .iter()
            .map(|r| frame.model_row(r).correlation)
            .collect();
        let with_launch = frame
            .device_rows()
            .filter(|r| corrs.contains(&frame.model_row(r).correlation))
            .count();
        if joined != with_launch {
            return Vec::new();
        }
    }
    // (time, stream, delta): launches joined to their device rows, then the device rows.
    // A launch without a device row stays in the sort with no stream (pandas' NaN): it
    // takes part in the order of equal timestamps, then drops out of the grouping.
    let mut points: Vec<(i64, Option<i64>, i64)> = Vec::new();
    // Default mode: the first device row of each launch (the one that leaves the queue).
    let mut first_rows: FastSet<u32> = FastSet::default();
    for launch in &launches {
        let corr = match frame.mode {
            Mode::HtaCompat => frame.model_row(launch).correlation,
            Mode::Default => frame.model_row(launch).event_index as i64,
        };
        match device_by_corr.get(corr) {
            Some(devices) if frame.mode == Mode::Default => {
                let first = devices
                    .min_by_key(|d| (d.start_ticks, d.row))
                    .expect("a group has a row");
                first_rows.insert(first.row);
                points.push((launch.start_ticks, Some(frame.model_row(first).stream), 1));
            }
            Some(devices) => {
                for device in devices {
                    points.push((launch.start_ticks, Some(frame.model_row(device).stream), 1));
                }
            }
            None => points.push((launch.start_ticks, None, 1)),
        }
    }
    let launch_corrs: FastSet<i64> = launches
        .iter()
        .map(|r| match frame.mode {
            Mode::HtaCompat => frame.model_row(r).correlation,
            Mode::Default => frame.model_row(r).event_index as i64,
        })
        .collect();
    for row in frame.device_rows() {
        let model = frame.model_row(row);
        let queued = match frame.mode {
            Mode::HtaCompat => launch_corrs.contains(&key(row)),
            Mode::Default => first_rows.contains(&row.row),
        };
        if queued {
            points.push((row.start_ticks, Some(model.stream), -1));
        }
    }
    // Equal times in the order pandas' `sort_values` leaves them with numpy's argsort
    // (`Frame::numpy_sort`; AVX-512 by default, as for HTA's reference outputs).
    let keys: Vec<i64> = points.iter().map(|p| p.0).collect();
    let points: Vec<(i64, Option<i64>, i64)> = frame
        .numpy_sort
        .argsort(&keys)
        .into_iter()
        .map(|i| points[i])
        .collect();
    // Per stream: (time, queue length after the change).
    let mut by_stream: BTreeMap<i64, Vec<(i64, i64)>> = BTreeMap::new();
    let mut running: FastMap<i64, i64> = FastMap::default();
    for (time, stream, delta) in points {
        let Some(stream) = stream else { continue };
        let value = running.entry(stream).or_default();
        *value += delta;
        by_stream.entry(stream).or_default().push((time, *value));
    }
    by_stream
        .into_iter()
        .map(|(stream, series)| {
            let values: Vec<f64> = series.iter().map(|s| s.1 as f64).collect();
            let blocked: i64 = series
                .windows(2)
                .filter(|w| w[0].1 >= queue_limit)
                .map(|w| w[1].0 - w[0].0)
                .sum();
            QueueLengthStream {
                rank: frame.rank(),
                stream,
                max_queue_length: series.iter().map(|s| s.1).max().unwrap_or(0),
                queue_limit,
                time_blocked_on_full_queue_us: frame.us(blocked),
                queue_length: Describe::of(&values),
            }
        })
        .collect()
}
