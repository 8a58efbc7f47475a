//! Kernel breakdown: time by kernel type (and their overlaps), and per-kernel tables.
//!
//! HTA `BreakdownAnalysis.get_gpu_kernel_breakdown` with its `TraceAnalysis` defaults
//! (`include_memory_kernels=True`, `duration_ratio=0.8`; `hta-analyses.md`, "Kernel
//! breakdown"): merge each type separately (computation = bit 1, communication = 2,
//! memory = 4); sweep +bit at starts and −bit at ends; each segment is labelled by the
//! set of types active; sum per label over ranks; percentage `round(100·sum/total, 1)`.
//! Per (type, rank): group by name → sum, max, min, mean, std of durations, sorted by
//! sum; with more than `num_kernels` names, those past the `duration_ratio` quantile of
//! the cumulative sum or beyond the first `num_kernels` fold into `"others"`, and the
//! table is regrouped over the per-name sums (so a kept name shows max = min = sum).
//! That is HTA's table, kept exactly in [`Mode::HtaCompat`].
//!
//! In [`Mode::Default`] the per-kernel table is what each name's launches really did:
//! every name (none folded), with its count, total, mean, min, median (p50), p99, max and
//! standard deviation over its launches (percentiles interpolated linearly, as numpy's
//! default), sorted by total, largest first. HTA's regrouping reports a kernel launched
//! 82 times for 11 to 194 µs as sum = max = min with a standard deviation of 0; this
//! table says 82, 11 and 194.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;

use super::merge_intervals;
use crate::classify::KernelType;
use crate::classify::Mode;
use crate::frame::{Frame, Frames};
use crate::stats::{np_round, quantile_sorted, Describe};

/// Time of one label ("COMPUTATION overlapping COMMUNICATION") summed over ranks.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KernelTypeTime {
    /// The label: types joined by `" overlapping "`, in the order computation,
    /// communication, memory.
    pub kernel_type: String,
    /// Time, µs.
    pub sum_us: f64,
    /// `round(100 · sum / total, 1)`.
    pub percentage: f64,
}

/// One line of a per-kernel table. In compat mode HTA's numbers (after its regrouping,
/// see the module docs); in the default mode the statistics of the name's launches.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KernelStats {
    /// Kernel name, or `"others"` (compat mode only). Shared by the rows of every rank
    /// with that name ([`KernelNames`]): a fleet's ranks run the same kernels, and the
    /// table has a row per name and rank.
    #[serde(serialize_with = "serialize_name")]
    pub name: Arc<str>,
    /// Launches of this name (default mode; in compat mode the number of values HTA's
    /// regrouped table summarises: 1 for a kept name, the folded names for `others`).
    pub count: u64,
    /// Σ duration, µs.
    pub sum_us: f64,
    /// Largest duration (compat: the largest per-name sum), µs.
    pub max_us: f64,
    /// Smallest, µs.
    pub min_us: f64,
    /// Sample standard deviation (0 for a single value), µs.
    pub stddev_us: f64,
    /// Mean, µs.
    pub mean_us: f64,
    /// Median duration, µs (default mode; `null` in compat mode).
    pub p50_us: Option<f64>,
    /// 99th percentile of the durations, µs (default mode; `null` in compat mode).
    pub p99_us: Option<f64>,
    /// The kernel type.
    pub kernel_type: KernelType,
    /// The rank.
    pub rank: i64,
}

/// The kernel breakdown. JSON: `{"by_type": [KernelTypeTime…], "kernels": [KernelStats…]}`;
/// `by_type` sorted by time, largest first; `kernels` sorted by (type, name, rank).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KernelBreakdown {
    /// Time by kernel-type label, over all ranks.
    pub by_type: Vec<KernelTypeTime>,
    /// Per-kernel tables of every (type, rank).
    pub kernels: Vec<KernelStats>,
}

const TYPES: [KernelType; 3] = [
    KernelType::Computation,
    KernelType::Communication,
    KernelType::Memory,
];

/// Kernel names, one copy each however many ranks' tables name them (the tables of a
/// report over many ranks hold a row per name and rank; each row's name points here).
#[derive(Debug, Default)]
pub(crate) struct KernelNames {
    names: Mutex<HashSet<Arc<str>>>,
}

impl KernelNames {
    /// The shared copy of `name`.
    fn get(&self, name: &str) -> Arc<str> {
        let mut names = self.names.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(shared) = names.get(name) {
            return shared.clone();
        }
        let shared: Arc<str> = Arc::from(name);
        names.insert(shared.clone());
        shared
    }
}

/// Computes the kernel breakdown (HTA: `num_kernels` default 10, the shared references
/// use 5; `duration_ratio` 0.8).
pub fn kernel_breakdown(
    frames: &Frames<'_>,
    num_kernels: usize,
    duration_ratio: f64,
) -> KernelBreakdown {
    let names = KernelNames::default();
    kernel_breakdown_from(
        frames
            .ranks
            .iter()
            .map(|frame| kernel_part(frame, num_kernels, duration_ratio, &names)),
    )
}

/// What [`kernel_breakdown`] needs of one rank, made from its frame alone: time per
/// (overlapping) kernel type label, µs, and the rank's kernel tables.
#[derive(Debug)]
pub(crate) struct KernelPart {
    by_label: BTreeMap<String, f64>,
    kernels: Vec<KernelStats>,
}

/// [`KernelPart`] of one rank (its names shared through `names`).
pub(crate) fn kernel_part(
    frame: &Frame<'_>,
    num_kernels: usize,
    duration_ratio: f64,
    names: &KernelNames,
) -> KernelPart {
    let by_label = type_times(frame)
        .into_iter()
        .map(|(label, ticks)| (label, frame.us(ticks)))
        .collect();
    let mut kernels: Vec<KernelStats> = TYPES
        .into_iter()
        .flat_map(|kernel_type| {
            kernel_table(frame, kernel_type, num_kernels, duration_ratio, names)
        })
        .collect();
    // Kept until every rank is read.
    kernels.shrink_to_fit();
    KernelPart { by_label, kernels }
}

/// [`kernel_breakdown`] from each rank's [`KernelPart`], in rank order.
pub(crate) fn kernel_breakdown_from(
    parts: impl IntoIterator<Item = KernelPart>,
) -> KernelBreakdown {
    let mut by_label: BTreeMap<String, f64> = BTreeMap::new();
    let parts: Vec<KernelPart> = parts.into_iter().collect();
    let mut kernels = Vec::with_capacity(parts.iter().map(|p| p.kernels.len()).sum());
    for part in parts {
        for (label, us) in part.by_label {
            *by_label.entry(label).or_default() += us;
        }
        kernels.extend(part.kernels);
    }
    let total: f64 = by_label.values().sum();
    let mut by_type: Vec<KernelTypeTime> = by_label
        .into_iter()
        .map(|(kernel_type, sum_us)| KernelTypeTime {
            percentage: np_round(sum_us / total * 100.0, 1),
            kernel_type,
            sum_us,
        })
        .collect();
    by_type.sort_by(|a, b| b.sum_us.total_cmp(&a.sum_us));
    kernels.sort_by(|a, b| {
        (a.kernel_type.as_str(), &a.name, a.rank).cmp(&(b.kernel_type.as_str(), &b.name, b.rank))
    });
    KernelBreakdown { by_type, kernels }
}

/// Ticks per label on one rank.
fn type_times(frame: &Frame<'_>) -> BTreeMap<String, i64> {
    let mut points: Vec<(i64, i32)> = Vec::new();
    for (bit_index, kernel_type) in TYPES.iter().enumerate() {
        let bit = 1 << bit_index;
        for (s, e) in merge_intervals(
            frame
                .device_rows()
                .filter(|r| r.kernel_type == *kernel_type),
        ) {
            points.extend([(s, bit), (e, -bit)]);
        }
    }
    points.sort_by_key(|p| p.0);
    let mut out = BTreeMap::new();
    let mut running = 0;
    for (i, &(time, delta)) in points.iter().enumerate() {
        running += delta;
        if running <= 0 {
            continue;
        }
        let Some(next) = points.get(i + 1) else {
            continue;
        };
        let label: Vec<&str> = TYPES
            .iter()
            .enumerate()
            .filter(|(b, _)| running & (1 << b) != 0)
            .map(|(_, t)| t.as_str())
            .collect();
        *out.entry(label.join(" overlapping ")).or_default() += next.0 - time;
    }
    out
}

fn kernel_table(
    frame: &Frame<'_>,
    kernel_type: KernelType,
    num_kernels: usize,
    duration_ratio: f64,
    names: &KernelNames,
) -> Vec<KernelStats> {
    let mut durations: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for row in frame.device_rows().filter(|r| r.kernel_type == kernel_type) {
        durations
            .entry(frame.name(row))
            .or_default()
            .push(frame.us(row.dur_ticks()));
    }
    // groupby(name) sorts by name; then a stable sort by sum, largest first.
    let mut groups: Vec<(Arc<str>, Vec<f64>)> = durations
        .into_iter()
        .map(|(name, d)| (names.get(name), d))
        .collect();
    groups.sort_by(|a, b| sum(&b.1).total_cmp(&sum(&a.1)));
    let line = |name: Arc<str>, mut values: Vec<f64>, percentiles: bool| {
        // Summed (and described) in the order HTA sums them, then sorted for the
        // percentiles.
        let d = Describe::of(&values);
        let sum_us = sum(&values);
        values.sort_by(f64::total_cmp);
        KernelStats {
            name,
            count: values.len() as u64,
            sum_us,
            max_us: d.max.unwrap_or(0.0),
            min_us: d.min.unwrap_or(0.0),
            stddev_us: d.std.unwrap_or(0.0),
            mean_us: d.mean.unwrap_or(0.0),
            p50_us: percentiles.then(|| quantile_sorted(&values, 0.5)),
            p99_us: percentiles.then(|| quantile_sorted(&values, 0.99)),
            kernel_type,
            rank: frame.rank(),
        }
    };
    if frame.mode == Mode::Default {
        return groups
            .into_iter()
            .map(|(name, values)| line(name, values, true))
            .collect();
    }
    if groups.len() > num_kernels {
        let sums: Vec<f64> = groups.iter().map(|g| sum(&g.1)).collect();
        let cumsum: Vec<f64> = sums
            .iter()
            .scan(0.0, |acc, s| {
                *acc += s;
                Some(*acc)
            })
            .collect();
        let mut sorted = cumsum.clone();
        sorted.sort_by(f64::total_cmp);
        let threshold = quantile_sorted(&sorted, duration_ratio);
        let mut regrouped: BTreeMap<Arc<str>, Vec<f64>> = BTreeMap::new();
        for (i, (name, _)) in groups.iter().enumerate() {
            let folded = cumsum[i] > threshold || i >= num_kernels;
            let key = if folded {
                names.get("others")
            } else {
                name.clone()
            };
            regrouped.entry(key).or_default().push(sums[i]);
        }
        groups = regrouped.into_iter().collect();
    }
    groups
        .into_iter()
        .map(|(name, values)| line(name, values, false))
        .collect()
}

/// A shared name as a JSON string (serde's `Arc` support is a feature this workspace
/// does not turn on).
fn serialize_name<S: serde::Serializer>(name: &Arc<str>, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(name)
}

fn sum(values: &[f64]) -> f64 {
    values.iter().sum()
}
