//! Idle time breakdown per stream: host wait, kernel wait, other.
//!
//! HTA `BreakdownAnalysis.get_idle_time_breakdown` (`hta-analyses.md`, "Idle time
//! breakdown"): kernels = device rows of a kernel, memcpy, memset (or MTIA
//! command-processor) category; per stream, sorted by start, `gap = start − previous
//! end`; host wait if the launching runtime call started after the previous kernel
//! ended; else kernel wait if `gap < consecutive_kernel_delay` (30 µs); else other.
//! Ratios are category sums over the stream's total, rounded to 2 decimals, as are the
//! interval statistics.

use crate::model::FastMap;
use serde::Serialize;

use super::ticks_per_us;
use crate::classify::Mode;
use crate::frame::Frame;
use crate::stats::{np_round, Describe};

/// Why a device stream was idle before a kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IdleCategory {
    /// The launch happened after the previous kernel had ended: the host was late.
    HostWait,
    /// A short gap between back-to-back kernels (launch overhead).
    KernelWait,
    /// Anything else (waiting on another stream, a synchronisation, …).
    Other,
}

impl IdleCategory {
    /// HTA's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            IdleCategory::HostWait => "host_wait",
            IdleCategory::KernelWait => "kernel_wait",
            IdleCategory::Other => "other",
        }
    }
}

/// One (stream, category) line.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IdleTimeEntry {
    /// The rank.
    pub rank: i64,
    /// The stream.
    pub stream: i64,
    /// The category.
    pub idle_category: IdleCategory,
    /// Σ gaps of this category, µs (rounded to 2 decimals like HTA).
    pub idle_time_us: f64,
    /// Share of the stream's idle time; `None` when the stream was never idle.
    pub idle_time_ratio: Option<f64>,
    /// Statistics of the gaps (µs, rounded to 2 decimals).
    pub interval_stats: Describe,
}

/// The breakdown of one rank. JSON: `{"entries": [IdleTimeEntry…]}`, streams in order of
/// first appearance, categories host_wait, kernel_wait, other.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IdleTimeBreakdown {
    /// One line per (stream, category present).
    pub entries: Vec<IdleTimeEntry>,
}

const KERNEL_CATEGORIES: [&str; 7] = [
    "kernel",
    "Kernel",
    "gpu_memset",
    "Memset",
    "gpu_memcpy",
    "Memcpy",
    "mtia_ccp_events",
];

/// Computes the idle time breakdown of one rank (HTA default delay: 30 µs).
pub fn idle_time_breakdown(
    frame: &Frame<'_>,
    consecutive_kernel_delay_us: i64,
) -> IdleTimeBreakdown {
    let start_by_event: FastMap<u64, i64> = frame
        .rows
        .iter()
        .rev()
        .map(|r| (frame.model_row(r).event_index, r.start_ticks))
        .collect();
    let kernels: Vec<_> = frame
        .device_rows()
        .filter(|r| frame.mode == Mode::Default || KERNEL_CATEGORIES.contains(&frame.category(r)))
        .collect();
    let mut streams: Vec<i64> = Vec::new();
    for row in &kernels {
        let stream = frame.model_row(row).stream;
        if !streams.contains(&stream) {
            streams.push(stream);
        }
    }
    let delay = consecutive_kernel_delay_us * ticks_per_us(frame);
    let mut entries = Vec::new();
    for stream in streams {
        let on_stream: Vec<_> = kernels
            .iter()
            .filter(|r| frame.model_row(r).stream == stream)
            .collect();
        // Equal starts in the order numpy's argsort leaves them (`Frame::numpy_sort`).
        let keys: Vec<i64> = on_stream.iter().map(|r| r.start_ticks).collect();
        let on_stream: Vec<_> = frame
            .numpy_sort
            .argsort(&keys)
            .into_iter()
            .map(|i| on_stream[i])
            .collect();
        let mut gaps: [(bool, Vec<f64>); 3] = Default::default();
        let mut prev_end: Option<i64> = None;
        for row in on_stream {
            let runtime_start = u64::try_from(row.index_correlation)
                .ok()
                .and_then(|ic| start_by_event.get(&ic).copied());
            let gap = prev_end.map(|p| row.start_ticks - p);
            let category = match (prev_end, runtime_start, gap) {
                (Some(p), Some(rt), _) if rt > p => IdleCategory::HostWait,
                (_, _, Some(g)) if g < delay => IdleCategory::KernelWait,
                _ => IdleCategory::Other,
            };
            let slot = &mut gaps[category as usize];
            slot.0 = true;
            slot.1.extend(gap.map(|g| frame.us(g)));
            prev_end = Some(row.end_ticks);
        }
        let total: f64 = gaps.iter().flat_map(|g| g.1.iter()).sum::<f64>() + 0.0;
        for (i, (present, values)) in gaps.iter().enumerate() {
            if !present {
                continue;
            }
            let idle: f64 = values.iter().sum::<f64>() + 0.0;
            let stats = Describe::of(values);
            entries.push(IdleTimeEntry {
                rank: frame.rank(),
                stream,
                idle_category: [
                    IdleCategory::HostWait,
                    IdleCategory::KernelWait,
                    IdleCategory::Other,
                ][i],
                idle_time_us: np_round(idle, 2),
                idle_time_ratio: (total != 0.0).then(|| np_round(idle / total, 2)),
                interval_stats: round_describe(stats),
            });
        }
    }
    IdleTimeBreakdown { entries }
}

fn round_describe(d: Describe) -> Describe {
    let r = |v: Option<f64>| v.map(|x| np_round(x, 2));
    Describe {
        count: d.count,
        mean: r(d.mean),
        std: r(d.std),
        min: r(d.min),
        p25: r(d.p25),
        p50: r(d.p50),
        p75: r(d.p75),
        max: r(d.max),
    }
}
