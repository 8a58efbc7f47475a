//! Memory bandwidth summary per copy kind.
//!
//! HTA `TraceCounters.get_memory_bw_summary` (`hta-analyses.md`, "Memory bandwidth"):
//! memory-type device rows; name cut to its first 11 characters (`Memcpy DtoH`) or
//! `Memset`; zero durations count as 1 µs; +bandwidth at start, −bandwidth at end,
//! cumulative per name in time order; `describe()` over the points with bandwidth > 0.

use std::collections::BTreeMap;

use serde::Serialize;

use super::ticks_per_us;
use crate::classify::{memory_kind, KernelType};
use crate::frame::Frame;
use crate::stats::Describe;

/// Bandwidth statistics of one copy kind. JSON: `{"rank", "name", "memory_bw_gbps":
/// Describe}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryBwEntry {
    /// The rank.
    pub rank: i64,
    /// `Memcpy DtoH`, `Memcpy HtoD`, `Memcpy DtoD`, `Memset`, …
    pub name: String,
    /// `describe()` of the concurrent bandwidth (GB/s) at each change, when positive.
    pub memory_bw_gbps: Describe,
}

/// Computes the memory bandwidth summary of one rank, by name.
pub fn memory_bw_summary(frame: &Frame<'_>) -> Vec<MemoryBwEntry> {
    let one_us = ticks_per_us(frame);
    let mut starts = Vec::new();
    let mut ends = Vec::new();
    for row in frame
        .device_rows()
        .filter(|r| r.kernel_type == KernelType::Memory)
    {
        let model = frame.model_row(row);
        let name = memory_kind(frame.name(row));
        let dur = if row.dur_ticks() == 0 {
            one_us
        } else {
            row.dur_ticks()
        };
        starts.push((row.start_ticks, name.clone(), model.memory_bw_gbps));
        ends.push((row.start_ticks + dur, name, -model.memory_bw_gbps));
    }
    starts.extend(ends);
    // pandas' `sort_values` (numpy's unstable quicksort) decides the order of equal
    // times, which changes the running sums seen: the order numpy's argsort gives
    // (`Frame::numpy_sort`; AVX-512 by default, as for HTA's reference outputs).
    let keys: Vec<i64> = starts.iter().map(|p| p.0).collect();
    let order = frame.numpy_sort.argsort(&keys);
    let starts: Vec<_> = order.into_iter().map(|i| starts[i].clone()).collect();
    let mut by_name: BTreeMap<String, (f64, Vec<f64>)> = BTreeMap::new();
    for (_, name, delta) in starts {
        let (running, values) = by_name.entry(name).or_default();
        *running += delta;
        if *running > 0.0 {
            values.push(*running);
        }
    }
    by_name
        .into_iter()
        .filter(|(_, (_, values))| !values.is_empty())
        .map(|(name, (_, values))| MemoryBwEntry {
            rank: frame.rank(),
            name,
            memory_bw_gbps: Describe::of(&values),
        })
        .collect()
}
