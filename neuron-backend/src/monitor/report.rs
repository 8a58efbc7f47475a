//! One report: a publisher's `neuron_runtime_data` element over a window between two
//! samples, in neuron-monitor's layout plus the `neuronprof` extension.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use monitor_schema::{
    CollectiveLatency, Collectives, CoreCounters, DeviceMemory, ErrorSummary, ExecutionStats,
    ExecutionSummary, HardwareInfo, Hbm, HostMemory, InFlightCollective, LatencyPercentiles,
    LatencyStats, MemoryUsed, NeuroncoreCounters, NeuronprofReport, RuntimeEntry, RuntimeReport,
    RuntimeUsedBytes, RuntimeVcpuUsage, TopOperator, UsageBreakdown, UserSystem,
};
use runtime_hooks::clock::monotonic_ns;

use super::registry::{Entry, EntryKind, Sample};
use crate::{DeviceProfile, MemoryCategory};

/// The extension's schema version (`neuronprof.schema`).
pub const SCHEMA_VERSION: u32 = 1;

/// Engine names in `engine_utilization`, in the order the samples keep them.
pub const ENGINE_NAMES: [&str; 5] = ["tensor", "vector", "scalar", "gpsimd", "dma"];

fn is_trn3(profile: &DeviceProfile) -> bool {
    profile.name.starts_with("trn3")
}

/// `neuron_hardware_info` for `profile` on its default instance.
///
/// From reference/neuron-monitor.md: a trn2.48xlarge at LNC=2 reports `trainium2`,
/// device version `v4`, core version `v3d` (the `d` marks LNC=2), 16 devices of 96 GiB
/// with 4 logical cores each. For Trainium3 the core is NeuronCore-v4
/// (reference/hardware.md), written `v4d` at LNC=2 by the same rule; its device
/// version is not in our references, so it is left empty.
pub(crate) fn hardware_info(profile: &DeviceProfile) -> HardwareInfo {
    let topology = crate::dist::Topology::for_profile(profile);
    let trn3 = is_trn3(profile);
    HardwareInfo {
        neuron_device_type: if trn3 { "trainium3" } else { "trainium2" }.to_string(),
        neuron_device_version: if trn3 { "" } else { "v4" }.to_string(),
        neuroncore_version: format!(
            "{}{}",
            profile.core_version(),
            if profile.lnc >= 2 { "d" } else { "" }
        ),
        neuron_device_count: topology.chips_per_instance,
        neuron_device_memory_size: profile.hbm_bytes_per_chip,
        neuroncore_per_device_count: profile.physical_cores_per_chip / profile.lnc.max(1),
        logical_neuroncore_config: Some(profile.lnc),
        error: String::new(),
    }
}

/// Percentiles and log buckets (from 1 µs, doubling; empty ones left out) of a
/// latency histogram in µs, in seconds.
fn summarize(h: &hdrhistogram::Histogram<u32>) -> (CollectiveLatency, Vec<(f64, u64)>) {
    if h.is_empty() {
        return Default::default();
    }
    let quantile = |q: f64| Some(h.value_at_quantile(q) as f64 / 1e6);
    let buckets = h
        .iter_log(1, 2.0)
        .filter(|v| v.count_since_last_iteration() > 0)
        .map(|v| {
            (
                v.value_iterated_to() as f64 / 1e6,
                v.count_since_last_iteration(),
            )
        })
        .collect();
    (
        CollectiveLatency {
            count: h.len(),
            p50: quantile(0.5),
            p90: quantile(0.9),
            p99: quantile(0.99),
            p100: quantile(1.0),
        },
        buckets,
    )
}

/// Nearest-rank percentile of sorted `values` (ns) in seconds.
fn percentile_s(sorted: &[u64], pct: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((pct / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1] as f64 / 1e9)
}

/// neuron-monitor's latency percentiles (p0, p1, p25, p50, p75, p99, p100) of `values`
/// (ns); all `None` when nothing ran.
fn latency_percentiles(mut values: Vec<u64>) -> LatencyPercentiles {
    values.sort_unstable();
    let p = |pct: f64| percentile_s(&values, pct);
    LatencyPercentiles {
        p0: p(0.0),
        p1: p(1.0),
        p25: p(25.0),
        p50: p(50.0),
        p75: p(75.0),
        p99: p(99.0),
        p100: p(100.0),
    }
}

fn percent(busy_ns: u64, capacity_ns: f64) -> f64 {
    if capacity_ns <= 0.0 {
        0.0
    } else {
        (busy_ns as f64 / capacity_ns * 100.0).clamp(0.0, 100.0)
    }
}

/// What a report needs to know about every publisher's collectives in flight, to name
/// the ranks a collective still waits for.
pub(crate) struct InFlightIndex {
    /// `(world, group slot, meeting key, global rank)` of every rank inside a meeting.
    arrived: HashSet<(u64, usize, String, usize)>,
}

impl InFlightIndex {
    pub(crate) fn new(entries: &[Arc<Entry>]) -> Self {
        let mut arrived = HashSet::new();
        for entry in entries {
            if let EntryKind::Rank { world, rank, .. } = entry.kind {
                for device in &entry.devices {
                    let stats = device.shared.live.lock_collectives();
                    for f in &stats.in_flight {
                        arrived.insert((world, f.meeting.0, f.meeting.1.clone(), rank));
                    }
                }
            }
        }
        InFlightIndex { arrived }
    }
}

/// Everything a report is built from besides the entry and its two samples.
pub(crate) struct ReportContext<'a> {
    pub(crate) pid: u32,
    pub(crate) address: &'a str,
    pub(crate) tag: String,
    pub(crate) started_ns: u64,
    pub(crate) in_flight: &'a InFlightIndex,
    pub(crate) thread_dropped: &'a [(u32, u64)],
    pub(crate) dropped_total: u64,
    pub(crate) online_cpus: u64,
    /// Resident host memory of the process, bytes (`None`: `/proc` unreadable).
    pub(crate) host_rss_bytes: Option<u64>,
}

/// The report of `entry` over the window from `before` to `now`.
/// Which of an entry's logical cores its report shows. A process that is one rank of a
/// multi-process job (a PyTorch rank under `torchrun`, on `neuron:<LOCAL_RANK>`) holds
/// an emulated runtime of every core of the device, but the job's other ranks drive
/// the other cores: such an entry shows only the cores it has used (a kernel run or
/// memory reserved), as neuron-monitor lists a runtime's `neuroncores_in_use`, so a
/// reader summing the ranks' entries counts each core, and its HBM, once. Until it has
/// used one it shows them all; any other entry shows every core.
fn shown_cores(entry: &Entry, now: &Sample) -> Vec<bool> {
    let every = vec![true; entry.devices.len()];
    let one_of_many = matches!(entry.kind, EntryKind::Runtime)
        && super::registry::process_rank().is_some_and(|(_, world_size)| world_size > 1);
    if !one_of_many {
        return every;
    }
    let used: Vec<bool> = entry
        .devices
        .iter()
        .enumerate()
        .map(|(i, device)| {
            now.cores.get(i).is_some_and(|c| c.executions > 0)
                || device.memory_stats().reserved_bytes > 0
        })
        .collect();
    if used.iter().any(|&u| u) {
        used
    } else {
        every
    }
}

pub(crate) fn build(
    entry: &Entry,
    before: &Sample,
    now: &Sample,
    ctx: &ReportContext<'_>,
) -> RuntimeEntry {
    let period = now.mono_ns.saturating_sub(before.mono_ns) as f64 / 1e9;
    let mut cores = BTreeMap::new();
    let mut engines = BTreeMap::new();
    let mut memory = BTreeMap::new();
    let mut categories = BTreeMap::new();
    let mut total_latencies = Vec::new();
    let mut device_latencies = Vec::new();
    let mut errors = [0u64; 4];
    let mut completed = 0u64;
    let mut hbm = Hbm::default();
    let mut reserved_total = 0u64;
    let mut ops: BTreeMap<&'static str, (u64, u64)> = BTreeMap::new();
    let mut waited: Vec<u64> = Vec::new();
    let mut collectives_completed = 0u64;
    let mut in_flight = Vec::new();
    let mut histogram = None::<hdrhistogram::Histogram<u32>>;
    let mut latency_summary = None::<(CollectiveLatency, Vec<(f64, u64)>)>;
    // Collectives run on ranks, one device each: read that histogram in place; a
    // runtime's several devices (if ever) are merged into a copy.
    let with_collectives = entry
        .devices
        .iter()
        .filter(|d| !d.shared.live.lock_collectives().latency_us.is_empty())
        .count();

    let shown = shown_cores(entry, now);
    for (i, device) in entry.devices.iter().enumerate() {
        let (Some(a), Some(b)) = (before.cores.get(i), now.cores.get(i)) else {
            continue;
        };
        if !shown[i] {
            continue;
        }
        let profile = device.profile();
        let key = u32::try_from(device.index()).unwrap_or(u32::MAX);
        let window_ns = b.timeline_ns.saturating_sub(a.timeline_ns) as f64;
        let lnc = f64::from(profile.lnc.max(1));
        let flops_per_sec = if window_ns > 0.0 {
            (b.flops - a.flops) as f64 / (window_ns / 1e9)
        } else {
            0.0
        };
        cores.insert(
            key,
            CoreCounters {
                neuroncore_utilization: percent(b.kernel_busy_ns - a.kernel_busy_ns, window_ns),
                flops: Some(flops_per_sec),
                extra: BTreeMap::new(),
            },
        );
        let dma_capacity = f64::from(profile.dma_engines.max(1));
        engines.insert(
            key,
            ENGINE_NAMES
                .iter()
                .enumerate()
                .map(|(e, &name)| {
                    let units = if e == 4 { lnc * dma_capacity } else { lnc };
                    let busy = b.engine_busy_ns[e] - a.engine_busy_ns[e];
                    (name.to_string(), percent(busy, window_ns * units))
                })
                .collect(),
        );
        for (slot, err) in errors.iter_mut().enumerate() {
            *err += b.errors[slot] - a.errors[slot];
        }
        completed += b.executions - a.executions;
        {
            let timeline = device.timeline();
            for (total, dev) in timeline.live.latencies_since(a.executions) {
                total_latencies.push(total);
                device_latencies.push(dev);
            }
            let names = &timeline.live.ops.names;
            for &(op, calls, ns) in &b.ops {
                let (calls0, ns0) = a.ops.get(op as usize).map_or((0, 0), |&(_, c, n)| (c, n));
                if calls > calls0 {
                    let slot = ops.entry(names[op as usize]).or_default();
                    slot.0 += calls - calls0;
                    slot.1 += ns - ns0;
                }
            }
        }
        let stats = device.memory_stats();
        let capacity = device.memory_capacity_bytes();
        reserved_total += stats.reserved_bytes;
        hbm.used_bytes += stats.allocated_bytes;
        hbm.peak_bytes += stats.peak_allocated_bytes;
        hbm.capacity_bytes += capacity;
        memory.insert(
            key,
            DeviceMemory {
                runtime_memory: stats.reserved_bytes.saturating_sub(stats.allocated_bytes),
                tensors: stats.allocated_bytes,
                ..DeviceMemory::default()
            },
        );
        categories.insert(
            key,
            MemoryCategory::ALL
                .iter()
                .map(|c| (c.name().to_string(), stats.category(*c).allocated_bytes))
                .collect(),
        );
        collectives_completed += b.collectives_completed;
        if waited.len() < b.waited_for_ns.len() {
            waited.resize(b.waited_for_ns.len(), 0);
        }
        for (r, &ns) in b.waited_for_ns.iter().enumerate() {
            waited[r] += ns - a.waited_for_ns.get(r).copied().unwrap_or(0);
        }
        let stats = device.shared.live.lock_collectives();
        if !stats.latency_us.is_empty() {
            if with_collectives == 1 {
                latency_summary = Some(summarize(&stats.latency_us));
            } else {
                match &mut histogram {
                    Some(h) => {
                        let _ = h.add(&stats.latency_us);
                    }
                    None => histogram = Some(stats.latency_us.clone()),
                }
            }
        }
        let world = match entry.kind {
            EntryKind::Rank { world, .. } => Some(world),
            EntryKind::Runtime => None,
        };
        for f in &stats.in_flight {
            let waiting_for_ranks = f
                .participants
                .iter()
                .filter(|&&r| {
                    world.is_some_and(|w| {
                        !ctx.in_flight
                            .arrived
                            .contains(&(w, f.meeting.0, f.meeting.1.clone(), r))
                    })
                })
                .map(|&r| r as u32)
                .collect();
            in_flight.push(InFlightCollective {
                op: f.op.to_string(),
                group: f.group.clone(),
                seq: f.seq,
                bytes: f.bytes,
                age_s: f.since.elapsed().as_secs_f64(),
                waiting_for_ranks,
            });
        }
    }

    let cpu = match (before.cpu_ns, now.cpu_ns) {
        (Some((u0, s0)), Some((u1, s1))) if period > 0.0 => {
            let capacity_ns = period * 1e9 * ctx.online_cpus.max(1) as f64;
            (
                percent(u1.saturating_sub(u0), capacity_ns),
                percent(s1.saturating_sub(s0), capacity_ns),
            )
        }
        _ => (0.0, 0.0),
    };

    let [timed_out, failed_to_queue, incorrect_input, completed_with_err] = errors;
    let mut top: Vec<TopOperator> = ops
        .into_iter()
        .map(|(name, (calls, ns))| TopOperator {
            name: name.to_owned(),
            calls,
            device_time_s: ns as f64 / 1e9,
        })
        .collect();
    top.sort_by(|x, y| {
        y.device_time_s
            .total_cmp(&x.device_time_s)
            .then_with(|| x.name.cmp(&y.name))
    });
    top.truncate(10);

    let (latency_s, buckets) = latency_summary
        .or_else(|| histogram.as_ref().map(summarize))
        .unwrap_or_default();
    let slowest_rank = waited
        .iter()
        .enumerate()
        .filter(|(_, &ns)| ns > 0)
        .max_by_key(|(_, &ns)| ns)
        .map(|(r, _)| r as u32);

    let (rank, world_size) = match entry.kind {
        EntryKind::Rank {
            rank, world_size, ..
        } => (Some(rank as u32), Some(world_size as u32)),
        EntryKind::Runtime => super::registry::process_rank()
            .map_or((None, None), |(r, n)| (Some(r as u32), Some(n as u32))),
    };
    let dropped_records = match entry
        .devices
        .first()
        .map(|d| d.shared.live.hooks_thread.load(Ordering::Relaxed))
    {
        Some(thread) if thread != u32::MAX => ctx
            .thread_dropped
            .iter()
            .find(|(t, _)| *t == thread)
            .map_or(0, |(_, d)| *d),
        _ => ctx.dropped_total,
    };
    let profile = entry.devices.first().map(|d| d.profile().clone());
    let (device, lnc, topology) = profile.as_ref().map_or(("trn2", 2, String::new()), |p| {
        (
            if is_trn3(p) { "trn3" } else { "trn2" },
            p.lnc,
            crate::dist::Topology::for_profile(p).name,
        )
    });

    RuntimeEntry {
        pid: ctx.pid,
        address: ctx.address.to_owned(),
        neuron_runtime_tag: ctx.tag.clone(),
        error: String::new(),
        report: RuntimeReport {
            neuroncore_counters: Some(NeuroncoreCounters {
                period,
                neuroncores_in_use: cores,
                error: String::new(),
            }),
            execution_stats: Some(ExecutionStats {
                period,
                error_summary: ErrorSummary {
                    transient: timed_out,
                    model: incorrect_input,
                    runtime: failed_to_queue + completed_with_err,
                    ..ErrorSummary::default()
                },
                execution_summary: ExecutionSummary {
                    completed,
                    completed_with_err,
                    timed_out,
                    incorrect_input,
                    failed_to_queue,
                    ..ExecutionSummary::default()
                },
                latency_stats: LatencyStats {
                    total_latency: Some(latency_percentiles(total_latencies)),
                    device_latency: Some(latency_percentiles(device_latencies)),
                },
                error: String::new(),
            }),
            memory_used: Some(MemoryUsed {
                period,
                neuron_runtime_used_bytes: RuntimeUsedBytes {
                    host: ctx.host_rss_bytes.unwrap_or(0),
                    neuron_device: reserved_total,
                    usage_breakdown: UsageBreakdown {
                        // The process's resident memory is the application's: the
                        // emulated runtime keeps no host-side constants, DMA buffers or
                        // host tensors of its own (device tensors' values live in this
                        // resident memory too, and count as device memory above).
                        host: HostMemory {
                            application_memory: ctx.host_rss_bytes.unwrap_or(0),
                            ..HostMemory::default()
                        },
                        neuroncore_memory_usage: memory,
                    },
                },
                loaded_models: Vec::new(),
                error: if ctx.host_rss_bytes.is_some() {
                    String::new()
                } else {
                    "host memory unknown: /proc/self/statm could not be read".to_string()
                },
            }),
            neuron_runtime_vcpu_usage: Some(RuntimeVcpuUsage {
                period,
                vcpu_usage: UserSystem {
                    user: cpu.0,
                    system: cpu.1,
                },
                error: String::new(),
            }),
            neuronprof: Some(NeuronprofReport {
                schema: SCHEMA_VERSION,
                rank,
                world_size,
                workload: entry.workload.clone(),
                device: device.to_string(),
                lnc,
                topology,
                state: if entry.finished() {
                    "finished"
                } else {
                    "running"
                }
                .to_string(),
                period,
                uptime_s: monotonic_ns().saturating_sub(ctx.started_ns) as f64 / 1e9,
                step: entry.devices.first().and_then(|d| d.shared.live.step()),
                engine_utilization: engines,
                hbm: Some(hbm),
                memory_categories: categories,
                collectives: Some(Collectives {
                    in_flight,
                    completed: collectives_completed,
                    latency_s,
                    histogram: buckets,
                    slowest_rank,
                }),
                top_operators: top,
                dropped_records,
            }),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v = [1_000_000_000, 2_000_000_000, 3_000_000_000, 4_000_000_000];
        assert_eq!(percentile_s(&v, 0.0), Some(1.0));
        assert_eq!(percentile_s(&v, 50.0), Some(2.0));
        assert_eq!(percentile_s(&v, 75.0), Some(3.0));
        assert_eq!(percentile_s(&v, 100.0), Some(4.0));
        assert_eq!(percentile_s(&[], 50.0), None);
    }

    #[test]
    fn hardware_info_follows_the_reference_for_trn2() {
        let info = hardware_info(&DeviceProfile::trn2());
        assert_eq!(info.neuron_device_type, "trainium2");
        assert_eq!(info.neuron_device_version, "v4");
        assert_eq!(info.neuroncore_version, "v3d");
        assert_eq!(info.neuron_device_count, 16);
        assert_eq!(info.neuron_device_memory_size, 103_079_215_104);
        assert_eq!(info.neuroncore_per_device_count, 4);
        assert_eq!(info.logical_neuroncore_config, Some(2));
        let lnc1 = hardware_info(&DeviceProfile::trn2_lnc1());
        assert_eq!(
            (
                lnc1.neuroncore_version.as_str(),
                lnc1.neuroncore_per_device_count
            ),
            ("v3", 8)
        );
    }
}
