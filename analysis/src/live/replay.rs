//! Replay: a directory of rank traces as a time series of neuron-monitor documents, so a
//! recorded run shows in the same panes as a live one (`neuron-top --replay`).
//!
//! The run's time span (earliest to latest timed event over every rank, on the traces'
//! common absolute clock) is cut into periods; each period becomes one document with one
//! runtime entry per rank (tag `"<host pid>/rank<N>"`, or `"<host pid>"` for a single
//! trace of a non-distributed run). Per period:
//! - `neuroncore_counters`: per device (`pid` of device rows = logical NeuronCore), the
//!   share of the period covered by the union of its kernels, copies and memsets —
//!   collective kernels excluded, as the live publisher does (a core waiting in a
//!   collective is not computing); `flops` from the kernels' `flops` args, prorated by
//!   overlap.
//! - `execution_stats`: device work that ended in the period — `device_latency` from
//!   durations, `total_latency` from the launching runtime call's start (matched by
//!   `correlation`) to the end; `null` when nothing ended.
//! - `memory_used`: `Total Allocated` of the last `[memory]` event at the period's end,
//!   per device (as `tensors`) and for the host (`Device Type` 0); the allocator does not
//!   split categories, so the others are 0.
//! - `neuronprof.engine_utilization`: union of each engine's instructions
//!   (`neuron_instruction`, `semaphore_wait` excluded: the engine waits), or the kernels'
//!   `<Engine> busy (ns)` args prorated when the trace has no instructions; `dma` from
//!   the union of `neuron_dma` transfers. Engines are named as in the live report
//!   (`TensorE` → `tensor`, `VectorE` → `vector`, `ScalarE` → `scalar`, `GpSimdE` →
//!   `gpsimd`, `SyncE` → `sync`).
//! - `neuronprof.collectives`: collective kernels (with PyTorch's `Collective name` args,
//!   or named `ncclDevKernel_*` / `ncclKernel_*`) matched across ranks by process group
//!   and `Seq` (else occurrence order in the group): those running at the period's end are in flight, waiting for the ranks whose
//!   copy has not started yet; latency percentiles and histogram since the start; the
//!   slowest rank is the one that started last, most often, among collectives finishing
//!   in the period.
//! - `neuronprof.top_operators`: device time per host operator (`cpu_op` whose
//!   `External id` the device work carries), prorated to the period; calls are operators
//!   starting in it.
//! - `neuronprof.dropped_records`: the trace's `dropped_records` metadata.
//!
//! Not replayed: `neuron_runtime_vcpu_usage` and `system_data` (traces record no CPU
//! accounting); those panes show "-".

mod collect;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::error::LiveError;
use super::model::*;
use collect::{collect, RankData};

/// How to cut a run into reports.
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    /// Trace time per report; `None` picks a round period giving about
    /// `target_documents` reports.
    pub period: Option<Duration>,
    /// Reports wanted when the period is chosen automatically.
    pub target_documents: usize,
    /// Refuse to produce more reports than this (a too small `period`).
    pub max_documents: usize,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            period: None,
            target_documents: 100,
            max_documents: 20_000,
        }
    }
}

/// A recorded run as reports.
#[derive(Debug, Clone)]
pub struct ReplaySeries {
    /// One document per period.
    pub documents: Vec<MonitorDocument>,
    /// Seconds from the run's start to the end of each document's period.
    pub times_s: Vec<f64>,
    /// The period, seconds.
    pub period_s: f64,
    /// The period, ns (document `b` covers `[t0_ns + b·period_ns, t0_ns + (b+1)·period_ns)`).
    pub period_ns: i64,
    /// The run's start on the traces' clock, ns: the earliest device work, `cpu_op` or
    /// `[memory]` event over every rank.
    pub t0_ns: i64,
    /// Trace files read.
    pub files: Vec<PathBuf>,
}

/// The `.json` and `.json.gz` files of a directory (sorted), or the file itself.
pub fn trace_files(path: &Path) -> Result<Vec<PathBuf>, LiveError> {
    let meta = std::fs::metadata(path)
        .map_err(|e| LiveError::Replay(format!("{}: {e}", path.display())))?;
    if !meta.is_dir() || crate::inputs::is_profile_dir(path) {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| LiveError::Replay(format!("listing {}: {e}", path.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            p.is_file() && (name.ends_with(".json") || name.ends_with(".json.gz"))
        })
        .collect();
    // Neuron Explorer profile folders in it, or under its `profiles/global/`.
    files.extend(crate::inputs::find_profiles(path));
    if files.is_empty() {
        return Err(LiveError::Replay(format!(
            "{}: no .json or .json.gz trace in this directory",
            path.display()
        )));
    }
    files.sort();
    Ok(files)
}

/// Reads the traces of `path` (a directory of rank traces, or one trace) and cuts the
/// run into reports.
pub fn replay_dir(path: &Path, options: &ReplayOptions) -> Result<ReplaySeries, LiveError> {
    let files = trace_files(path)?;
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut ranks: Vec<RankData> = Vec::with_capacity(files.len());
    for (chunk_index, chunk) in files.chunks(workers).enumerate() {
        let results: Vec<Result<RankData, String>> = std::thread::scope(|scope| {
            let handles: Vec<_> = chunk
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let position = (chunk_index * workers + i) as u32;
                    scope.spawn(move || collect(f, position))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err("reader thread panicked".into()))
                })
                .collect()
        });
        for r in results {
            ranks.push(r.map_err(LiveError::Replay)?);
        }
    }
    ranks.sort_by_key(|r| r.rank);
    for pair in ranks.windows(2) {
        if pair[0].rank == pair[1].rank {
            return Err(LiveError::Replay(format!(
                "two traces claim rank {}: {} and {}",
                pair[0].rank,
                pair[0].path.display(),
                pair[1].path.display()
            )));
        }
    }
    let t0 = ranks.iter().filter_map(|r| r.min_ns).min();
    let t1 = ranks.iter().filter_map(|r| r.max_ns).max();
    let (Some(t0), Some(t1)) = (t0, t1) else {
        return Err(LiveError::Replay(format!(
            "{}: no timed device work, operators or memory events to replay",
            path.display()
        )));
    };
    let span_ns = (t1 - t0).max(1);
    let period_ns = match options.period {
        Some(p) => (p.as_nanos() as i64).max(1),
        None => round_period(span_ns / options.target_documents.max(1) as i64),
    };
    let count = ((span_ns + period_ns - 1) / period_ns).max(1) as usize;
    if count > options.max_documents {
        return Err(LiveError::Replay(format!(
            "a period of {period_ns} ns cuts {:.3} s of trace into {count} reports (at most {})",
            span_ns as f64 / 1e9,
            options.max_documents
        )));
    }
    let grid = Grid {
        t0,
        period_ns,
        count,
    };
    let collectives = CollectiveIndex::new(&ranks);
    let distributed = ranks.len() > 1 || ranks.iter().any(|r| r.world_size.unwrap_or(1) > 1);
    let series: Vec<RankSeries> = ranks.iter().map(|r| RankSeries::build(r, &grid)).collect();
    let hardware = hardware_info(&ranks);
    let slowest = collectives.slowest_by_bucket(&grid);
    let period_s = period_ns as f64 / 1e9;
    let mut documents = Vec::with_capacity(count);
    for (b, slowest_rank) in slowest.iter().enumerate() {
        let entries = ranks
            .iter()
            .zip(&series)
            .map(|(r, s)| {
                s.entry(
                    r,
                    b,
                    &grid,
                    &collectives,
                    distributed,
                    *slowest_rank,
                    b + 1 == count,
                )
            })
            .collect();
        documents.push(MonitorDocument {
            neuron_runtime_data: entries,
            system_data: None,
            instance_info: None,
            neuron_hardware_info: hardware.clone(),
        });
    }
    Ok(ReplaySeries {
        documents,
        times_s: (1..=count)
            .map(|b| (b as i64 * period_ns) as f64 / 1e9)
            .collect(),
        period_s,
        period_ns,
        t0_ns: t0,
        files,
    })
}

/// Rounds a period up to 1, 2 or 5 times a power of ten nanoseconds.
fn round_period(ns: i64) -> i64 {
    let ns = ns.max(1);
    let mut decade = 1i64;
    loop {
        for m in [1, 2, 5] {
            if m * decade >= ns {
                return m * decade;
            }
        }
        decade *= 10;
    }
}

/// The periods.
struct Grid {
    t0: i64,
    period_ns: i64,
    count: usize,
}

impl Grid {
    fn end(&self, b: usize) -> i64 {
        self.t0 + (b as i64 + 1) * self.period_ns
    }

    fn bucket_of(&self, t: i64) -> usize {
        (((t - self.t0).max(0) / self.period_ns) as usize).min(self.count - 1)
    }

    /// The period in which something ending at `t` ended (an end on a period's boundary
    /// belongs to the period before it).
    fn bucket_of_end(&self, t: i64) -> usize {
        self.bucket_of(t - 1)
    }

    /// Calls `f(bucket, overlap ns)` for each period `[start, end)` overlaps.
    fn spread(&self, start: i64, end: i64, mut f: impl FnMut(usize, i64)) {
        if end <= start {
            return;
        }
        let first = self.bucket_of(start);
        let last = self.bucket_of(end - 1);
        for b in first..=last {
            let lo = start.max(self.t0 + b as i64 * self.period_ns);
            let hi = end.min(self.end(b));
            if hi > lo {
                f(b, hi - lo);
            }
        }
    }
}

/// Union of intervals sorted by start.
fn union(intervals: impl Iterator<Item = (i64, i64)>) -> Vec<(i64, i64)> {
    let mut out: Vec<(i64, i64)> = Vec::new();
    for (s, e) in intervals {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

fn latency_percentiles(mut values: Vec<f64>) -> Option<LatencyPercentiles> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let p = |q| percentile(&values, q);
    Some(LatencyPercentiles {
        p0: values.first().copied(),
        p1: p(1.0),
        p25: p(25.0),
        p50: p(50.0),
        p75: p(75.0),
        p99: p(99.0),
        p100: values.last().copied(),
    })
}

/// Upper bounds of the collective latency histogram: 1-2-5 steps from 1 µs to 10 s
/// (parsed from decimal text, so they print as written: `5e-6`, not `4.9999…e-6`).
fn histogram_bounds() -> Vec<f64> {
    let mut out = Vec::new();
    for exponent in -6..=0 {
        for m in [1, 2, 5] {
            out.push(format!("{m}e{exponent}").parse().expect("a decimal number"));
        }
    }
    out.push(10.0);
    out
}

/// A collective's identity across ranks: (process group, sequence number).
type CollectiveKey = (String, u64);

/// One rank's copy of a collective: (rank, start ns, end ns).
type CollectiveCopy = (u32, i64, i64);

/// Collectives of every rank, by key.
struct CollectiveIndex {
    by_key: HashMap<CollectiveKey, Vec<CollectiveCopy>>,
}

impl CollectiveIndex {
    fn new(ranks: &[RankData]) -> Self {
        let mut by_key: HashMap<CollectiveKey, Vec<CollectiveCopy>> = HashMap::new();
        for r in ranks {
            for c in &r.collectives {
                by_key
                    .entry((c.group.clone(), c.seq))
                    .or_default()
                    .push((r.rank, c.start_ns, c.end_ns));
            }
        }
        CollectiveIndex { by_key }
    }

    /// Ranks of `key` whose copy starts after `t`.
    fn waiting_at(&self, key: &CollectiveKey, t: i64) -> Vec<u32> {
        let mut out: Vec<u32> = self
            .by_key
            .get(key)
            .map(|v| {
                v.iter()
                    .filter(|(_, s, _)| *s > t)
                    .map(|(r, _, _)| *r)
                    .collect()
            })
            .unwrap_or_default();
        out.sort_unstable();
        out
    }

    /// Per period: the rank that started last most often among collectives (with more
    /// than one participant) whose last copy ended in the period.
    fn slowest_by_bucket(&self, grid: &Grid) -> Vec<Option<u32>> {
        let mut counts: Vec<BTreeMap<u32, usize>> = vec![BTreeMap::new(); grid.count];
        for copies in self.by_key.values() {
            if copies.len() < 2 {
                continue;
            }
            let end = copies.iter().map(|c| c.2).max().unwrap_or(0);
            let Some(last) = copies.iter().max_by_key(|c| (c.1, c.0)) else {
                continue;
            };
            *counts[grid.bucket_of_end(end)].entry(last.0).or_default() += 1;
        }
        counts
            .into_iter()
            .map(|c| {
                let best = c.values().copied().max()?;
                c.iter().find(|(_, n)| **n == best).map(|(r, _)| *r)
            })
            .collect()
    }
}

/// Per-period figures of one rank.
struct RankSeries {
    /// Device → busy ns per period.
    busy_ns: BTreeMap<i64, Vec<i64>>,
    /// Device → flops per period.
    flops: BTreeMap<i64, Vec<f64>>,
    /// (device, engine name) → busy ns per period.
    engine_ns: BTreeMap<(i64, String), Vec<f64>>,
    /// Device and total latencies (s) of work ending in each period.
    device_latency: Vec<Vec<f64>>,
    total_latency: Vec<Vec<f64>>,
    /// Device → allocated bytes at each period's end.
    device_memory: BTreeMap<i64, Vec<u64>>,
    host_memory: Vec<u64>,
    /// Peak of the device total up to each period's end.
    peak: Vec<u64>,
    /// Operator name → (calls, device ns) per period.
    ops: Vec<HashMap<u32, (u64, f64)>>,
    capacity_bytes: u64,
}

impl RankSeries {
    fn build(r: &RankData, grid: &Grid) -> Self {
        let n = grid.count;
        let mut s = RankSeries {
            busy_ns: BTreeMap::new(),
            flops: BTreeMap::new(),
            engine_ns: BTreeMap::new(),
            device_latency: vec![Vec::new(); n],
            total_latency: vec![Vec::new(); n],
            device_memory: BTreeMap::new(),
            host_memory: vec![0; n],
            peak: vec![0; n],
            ops: vec![HashMap::new(); n],
            capacity_bytes: r.devices.iter().filter_map(|d| d.memory_bytes).sum(),
        };
        // Kernel busy time and flops per device.
        let mut devices: Vec<i64> = r.work.iter().map(|w| w.device).collect();
        devices.extend(r.devices.iter().map(|d| d.id));
        devices.sort_unstable();
        devices.dedup();
        for &d in &devices {
            let busy = s.busy_ns.entry(d).or_insert_with(|| vec![0; n]);
            let merged = union(
                r.work
                    .iter()
                    .filter(|w| w.device == d && !w.is_collective)
                    .map(|w| (w.start_ns, w.end_ns)),
            );
            for (a, b) in merged {
                grid.spread(a, b, |k, ns| busy[k] += ns);
            }
            s.flops.insert(d, vec![0.0; n]);
        }
        let op_by_external: HashMap<i64, u32> = r
            .ops
            .iter()
            .filter(|o| o.external_id >= 0)
            .map(|o| (o.external_id, o.name))
            .collect();
        for w in &r.work {
            let dur = (w.end_ns - w.start_ns).max(1) as f64;
            if w.flops > 0.0 {
                let f = s.flops.get_mut(&w.device).expect("device listed");
                grid.spread(w.start_ns, w.end_ns, |k, ns| {
                    f[k] += w.flops * ns as f64 / dur
                });
            }
            let end_bucket = grid.bucket_of_end(w.end_ns.max(w.start_ns + 1));
            s.device_latency[end_bucket].push((w.end_ns - w.start_ns) as f64 / 1e9);
            if let Some(launch) = r.launches.get(&w.correlation) {
                s.total_latency[end_bucket].push((w.end_ns - launch).max(0) as f64 / 1e9);
            }
            if let Some(&name) = op_by_external.get(&w.external_id) {
                let ops = &mut s.ops;
                grid.spread(w.start_ns, w.end_ns, |k, ns| {
                    ops[k].entry(name).or_default().1 += ns as f64;
                });
            }
        }
        for o in &r.ops {
            s.ops[grid.bucket_of(o.start_ns)]
                .entry(o.name)
                .or_default()
                .0 += 1;
        }
        // Engines: instructions when recorded, else the kernels' busy args; DMA
        // transfers as the `dma` engine.
        let mut tracks: BTreeMap<(i64, u32), Vec<(i64, i64)>> = BTreeMap::new();
        for i in &r.dma {
            tracks
                .entry((i.device, i.engine))
                .or_default()
                .push((i.start_ns, i.end_ns));
        }
        if !r.instructions.is_empty() {
            for i in &r.instructions {
                tracks
                    .entry((i.device, i.engine))
                    .or_default()
                    .push((i.start_ns, i.end_ns));
            }
        } else {
            for w in &r.work {
                let dur = (w.end_ns - w.start_ns).max(1) as f64;
                for &(engine, busy) in &w.engine_busy {
                    let series = s
                        .engine_ns
                        .entry((w.device, r.names[engine as usize].clone()))
                        .or_insert_with(|| vec![0.0; n]);
                    grid.spread(w.start_ns, w.end_ns, |k, ns| {
                        series[k] += busy as f64 * ns as f64 / dur
                    });
                }
            }
        }
        for ((device, engine), mut intervals) in tracks {
            intervals.sort_unstable();
            let series = s
                .engine_ns
                .entry((device, r.names[engine as usize].clone()))
                .or_insert_with(|| vec![0.0; n]);
            for (a, b) in union(intervals.into_iter()) {
                grid.spread(a, b, |k, ns| series[k] += ns as f64);
            }
        }
        // Memory at each period's end.
        let mut current: BTreeMap<i64, u64> = BTreeMap::new();
        let mut host = 0u64;
        let mut peak = 0u64;
        let mut next = 0;
        for b in 0..n {
            let end = grid.end(b);
            while next < r.memory.len() && r.memory[next].ts_ns <= end {
                let m = &r.memory[next];
                let bytes = m.total_allocated.max(0) as u64;
                if m.host {
                    host = bytes;
                } else {
                    current.insert(m.device, bytes);
                    peak = peak.max(current.values().sum());
                }
                next += 1;
            }
            for (d, bytes) in &current {
                s.device_memory.entry(*d).or_insert_with(|| vec![0; n])[b] = *bytes;
            }
            s.host_memory[b] = host;
            s.peak[b] = peak;
        }
        s
    }

    #[allow(clippy::too_many_arguments)]
    fn entry(
        &self,
        r: &RankData,
        b: usize,
        grid: &Grid,
        index: &CollectiveIndex,
        distributed: bool,
        slowest_rank: Option<u32>,
        last: bool,
    ) -> RuntimeEntry {
        let period_s = grid.period_ns as f64 / 1e9;
        let end = grid.end(b);
        let pid = r.host_pid.unwrap_or(0);
        let tag = if distributed {
            format!("{pid}/rank{}", r.rank)
        } else {
            pid.to_string()
        };
        let pct = |ns: f64| (ns / grid.period_ns as f64 * 100.0).min(100.0);
        let neuroncores_in_use = self
            .busy_ns
            .iter()
            .map(|(d, busy)| {
                let core = CoreCounters {
                    neuroncore_utilization: round2(pct(busy[b] as f64)),
                    flops: Some((self.flops[d][b] / period_s).round()),
                    extra: BTreeMap::new(),
                };
                (core_index(*d), core)
            })
            .collect();
        let mut engine_utilization: BTreeMap<u32, BTreeMap<String, f64>> = BTreeMap::new();
        for ((d, engine), ns) in &self.engine_ns {
            engine_utilization
                .entry(core_index(*d))
                .or_default()
                .insert(engine.clone(), round2(pct(ns[b])));
        }
        let device_used: u64 = self.device_memory.values().map(|v| v[b]).sum();
        let neuroncore_memory_usage = self
            .device_memory
            .iter()
            .map(|(d, v)| {
                (
                    core_index(*d),
                    DeviceMemory {
                        tensors: v[b],
                        ..DeviceMemory::default()
                    },
                )
            })
            .collect();
        let completed = self.device_latency[b].len() as u64;
        let execution_stats = ExecutionStats {
            period: period_s,
            error_summary: ErrorSummary::default(),
            execution_summary: ExecutionSummary {
                completed,
                ..ExecutionSummary::default()
            },
            latency_stats: LatencyStats {
                total_latency: latency_percentiles(self.total_latency[b].clone()),
                device_latency: latency_percentiles(self.device_latency[b].clone()),
            },
            error: String::new(),
        };
        let mut ops: Vec<TopOperator> = self.ops[b]
            .iter()
            .filter(|(_, (_, ns))| *ns > 0.0)
            .map(|(name, (calls, ns))| TopOperator {
                name: r.names[*name as usize].clone(),
                calls: *calls,
                device_time_s: ns / 1e9,
            })
            .collect();
        ops.sort_by(|a, c| {
            c.device_time_s
                .total_cmp(&a.device_time_s)
                .then_with(|| a.name.cmp(&c.name))
        });
        ops.truncate(10);
        let device = r.devices.first();
        let neuronprof = NeuronprofReport {
            schema: 1,
            rank: Some(r.rank),
            world_size: r.world_size,
            workload: String::new(),
            device: device.and_then(|d| d.profile.clone()).unwrap_or_default(),
            lnc: device.and_then(|d| d.lnc).unwrap_or(1),
            // Traces name no machine, and carry no memory categories.
            topology: String::new(),
            state: if last { "finished" } else { "running" }.to_string(),
            period: period_s,
            uptime_s: (end - grid.t0) as f64 / 1e9,
            step: r
                .steps
                .iter()
                .filter(|(e, _)| *e <= end)
                .map(|(_, n)| *n)
                .max(),
            engine_utilization,
            hbm: Some(Hbm {
                used_bytes: device_used,
                peak_bytes: self.peak[b],
                capacity_bytes: self.capacity_bytes,
            }),
            memory_categories: BTreeMap::new(),
            collectives: Some(collectives_at(r, end, index, slowest_rank)),
            top_operators: ops,
            dropped_records: r.dropped_records,
        };
        RuntimeEntry {
            pid,
            address: String::new(),
            neuron_runtime_tag: tag,
            error: String::new(),
            report: RuntimeReport {
                neuroncore_counters: Some(NeuroncoreCounters {
                    period: period_s,
                    neuroncores_in_use,
                    error: String::new(),
                }),
                execution_stats: Some(execution_stats),
                memory_used: Some(MemoryUsed {
                    period: period_s,
                    neuron_runtime_used_bytes: RuntimeUsedBytes {
                        host: self.host_memory[b],
                        neuron_device: device_used,
                        usage_breakdown: UsageBreakdown {
                            host: HostMemory {
                                tensors: self.host_memory[b],
                                ..HostMemory::default()
                            },
                            neuroncore_memory_usage,
                        },
                    },
                    loaded_models: Vec::new(),
                    error: String::new(),
                }),
                neuron_runtime_vcpu_usage: None,
                neuronprof: Some(neuronprof),
            },
        }
    }
}

/// The collectives of rank `r` as seen at time `end`.
fn collectives_at(
    r: &RankData,
    end: i64,
    index: &CollectiveIndex,
    slowest_rank: Option<u32>,
) -> Collectives {
    let mut in_flight = Vec::new();
    let mut latencies = Vec::new();
    for c in &r.collectives {
        if c.start_ns > end {
            break; // sorted by start
        }
        if c.end_ns <= end {
            latencies.push((c.end_ns - c.start_ns) as f64 / 1e9);
        } else {
            in_flight.push(InFlightCollective {
                op: c.op.clone(),
                group: c.group.clone(),
                seq: c.seq,
                bytes: c.bytes,
                age_s: (end - c.start_ns) as f64 / 1e9,
                waiting_for_ranks: index.waiting_at(&(c.group.clone(), c.seq), end),
            });
        }
    }
    latencies.sort_by(f64::total_cmp);
    let bounds = histogram_bounds();
    let mut histogram: Vec<(f64, u64)> = Vec::new();
    let mut i = 0;
    for bound in &bounds {
        let start = i;
        while i < latencies.len() && latencies[i] <= *bound {
            i += 1;
        }
        if i > start {
            histogram.push((*bound, (i - start) as u64));
        }
    }
    if i < latencies.len() {
        histogram.push((latencies[latencies.len() - 1], (latencies.len() - i) as u64));
    }
    Collectives {
        in_flight,
        completed: latencies.len() as u64,
        latency_s: CollectiveLatency {
            count: latencies.len() as u64,
            p50: percentile(&latencies, 50.0),
            p90: percentile(&latencies, 90.0),
            p99: percentile(&latencies, 99.0),
            p100: latencies.last().copied(),
        },
        histogram,
        slowest_rank,
    }
}

/// A device id as a core index (negative ids, which real traces do not use, become 0).
fn core_index(device: i64) -> u32 {
    u32::try_from(device).unwrap_or(0)
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Hardware info from the first rank's `deviceProperties`, for neuron traces.
fn hardware_info(ranks: &[RankData]) -> Option<HardwareInfo> {
    let device = ranks.iter().find_map(|r| r.devices.first())?;
    let profile = device.profile.clone()?;
    let lnc = device.lnc.unwrap_or(1);
    let core_version = device.core_version.clone().unwrap_or_default();
    // AWS labels Trn2 cores at LNC=2 `v3d` (reference/neuron-monitor.md).
    let neuroncore_version = if profile == "trn2" && lnc == 2 && core_version == "v3" {
        "v3d".to_string()
    } else {
        core_version
    };
    let neuron_device_type = match profile.as_str() {
        "trn2" => "trainium2".to_string(),
        "trn3" => "trainium3".to_string(),
        other => other.to_string(),
    };
    Some(HardwareInfo {
        neuron_device_type,
        neuron_device_version: String::new(),
        neuroncore_version,
        neuron_device_count: 0,
        neuron_device_memory_size: 0,
        neuroncore_per_device_count: 0,
        logical_neuroncore_config: Some(lnc),
        error: "replayed from traces: device counts and sizes not recorded".to_string(),
    })
}

#[cfg(test)]
mod tests;
