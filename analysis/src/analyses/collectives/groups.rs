//! The collectives of one process group and operation together: how many, how large,
//! how fast against the link, and how much of their time was transfer and how much
//! waiting for a late rank.

use std::collections::BTreeMap;

use serde::Serialize;

use super::CollectiveInstance;
use crate::stats::quantile_sorted;

/// Instances of one size class: messages up to `up_to_bytes` (a power of two) and above
/// the class below it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SizeBin {
    /// The class's upper bound, bytes (a power of two).
    pub up_to_bytes: i64,
    /// Instances in the class.
    pub instances: u64,
}

/// One process group's collectives of one operation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CollectiveGroup {
    /// `Process Group Name`.
    pub process_group: String,
    /// `Collective name`.
    pub collective: String,
    /// The ranks seen in the group's instances, in order.
    pub ranks: Vec<i64>,
    /// Matched instances.
    pub instances: u64,
    /// Σ message bytes (instances whose dtype is known).
    pub bytes: i64,
    /// Instances by message size (dtype known), smallest class first.
    pub size_histogram: Vec<SizeBin>,
    /// Σ transfer (the shortest duration of each instance), µs.
    pub transfer_us: f64,
    /// Σ over instances and ranks of the wait (duration − transfer), µs.
    pub wait_us: f64,
    /// Mean start skew, µs.
    pub mean_start_skew_us: f64,
    /// Largest start skew, µs.
    pub max_start_skew_us: f64,
    /// Bus bandwidth over the instances that have one (GB/s): least, median, 90th
    /// percentile (numpy's linear interpolation), largest.
    pub bus_bandwidth_gbps: Option<[f64; 4]>,
    /// Median bus bandwidth / the link's nominal bus bandwidth, when that is known.
    pub median_fraction_of_peak: Option<f64>,
}

/// The groups of `instances`, by (process group, operation).
pub(crate) fn groups(
    instances: &[CollectiveInstance],
    peak_bus_gbps: Option<f64>,
) -> Vec<CollectiveGroup> {
    let mut by_key: BTreeMap<(&str, &str), Vec<&CollectiveInstance>> = BTreeMap::new();
    for inst in instances {
        by_key
            .entry((&inst.process_group, &inst.collective))
            .or_default()
            .push(inst);
    }
    by_key
        .into_iter()
        .map(|((process_group, collective), members)| {
            let mut ranks: Vec<i64> = members
                .iter()
                .flat_map(|i| i.ranks.iter().map(|r| r.rank))
                .collect();
            ranks.sort_unstable();
            ranks.dedup();
            let mut bins: BTreeMap<i64, u64> = BTreeMap::new();
            for bytes in members.iter().filter_map(|i| i.bytes) {
                let up_to = if bytes <= 1 {
                    1
                } else {
                    (bytes as u64).next_power_of_two().min(1 << 62) as i64
                };
                *bins.entry(up_to).or_default() += 1;
            }
            let mut bandwidths: Vec<f64> = members
                .iter()
                .filter_map(|i| i.bus_bandwidth_gbps)
                .collect();
            bandwidths.sort_by(f64::total_cmp);
            let bus_bandwidth_gbps = (!bandwidths.is_empty()).then(|| {
                [
                    bandwidths[0],
                    quantile_sorted(&bandwidths, 0.5),
                    quantile_sorted(&bandwidths, 0.9),
                    bandwidths[bandwidths.len() - 1],
                ]
            });
            let n = members.len() as f64;
            CollectiveGroup {
                process_group: process_group.to_owned(),
                collective: collective.to_owned(),
                ranks,
                instances: members.len() as u64,
                bytes: members.iter().filter_map(|i| i.bytes).sum(),
                size_histogram: bins
                    .into_iter()
                    .map(|(up_to_bytes, instances)| SizeBin {
                        up_to_bytes,
                        instances,
                    })
                    .collect(),
                transfer_us: members.iter().map(|i| i.transfer_us).sum(),
                wait_us: members
                    .iter()
                    .flat_map(|i| i.ranks.iter().map(|r| r.wait_us))
                    .sum(),
                mean_start_skew_us: members.iter().map(|i| i.arrival_skew_us).sum::<f64>() / n,
                max_start_skew_us: members
                    .iter()
                    .map(|i| i.arrival_skew_us)
                    .fold(0.0, f64::max),
                median_fraction_of_peak: bus_bandwidth_gbps
                    .zip(peak_bus_gbps.filter(|&p| p > 0.0))
                    .map(|(b, p)| b[1] / p),
                bus_bandwidth_gbps,
            }
        })
        .collect()
}
