//! What the panes show for the selected tab, derived from the state (the "all" tab
//! aggregates every runtime).
//!
//! Aggregation in "all": core rows of every runtime (labelled `tag:NC<i>` when two
//! runtimes report the same core index); device memory summed; host memory and runtime
//! vCPU summed once per process (ranks of one process report the same process's
//! resident memory and CPU use); operators merged by
//! name; latency percentiles cannot be merged, so each runtime keeps its own row.
//!
//! A runtime that has exited or finished does no more work: "all" leaves its core,
//! engine, operator, collective and latency rows out (they would read 0 % and "0 done"
//! beside the running ones) and counts it in [`TabView::not_running`]; its own tab
//! keeps its last figures. An exited runtime's memory is left out too (a finished one
//! may still hold its device memory until its process frees it).

use std::collections::{BTreeMap, BTreeSet};

use analysis::live::{
    CollectiveLatency, CpuTimes, DeviceMemory, HostMemory, InFlightCollective, LatencyPercentiles,
    TopOperator,
};

use super::{App, CoreSort, OpSort, Runtime};
use crate::roofline::OpRoofline;

/// One NeuronCore row of the utilization pane.
#[derive(Debug, Clone, PartialEq)]
pub struct CoreRow {
    /// `NC0`, or `9001/rank1:NC0` when indices repeat across runtimes.
    pub label: String,
    /// Busy percent.
    pub utilization: f64,
    /// Flops per second, when reported.
    pub flops: Option<f64>,
    /// Physical halves at LNC=2: (name, busy %).
    pub physical: Vec<(String, f64)>,
    /// Recent utilization, oldest first.
    pub history: Vec<f64>,
}

/// One engine row of the engine pane.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineRow {
    /// `NC0 tensor`.
    pub label: String,
    /// Busy percent over the last period.
    pub utilization: f64,
    /// Recent utilization, oldest first.
    pub history: Vec<f64>,
}

/// Execution latency of one runtime.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyRow {
    /// Runtime tag.
    pub tag: String,
    /// End to end.
    pub total: Option<LatencyPercentiles>,
    /// On the device.
    pub device: Option<LatencyPercentiles>,
    /// Executions completed over the period.
    pub completed: u64,
    /// Executions with an error or a timeout over the period.
    pub failed: u64,
}

/// Collective figures of one runtime.
#[derive(Debug, Clone, PartialEq)]
pub struct CollectiveRow {
    /// Runtime tag.
    pub tag: String,
    /// Finished since start.
    pub completed: u64,
    /// Latency percentiles since start.
    pub latency: CollectiveLatency,
}

/// The top operators' roofline in a replayed report, for the tab's runtimes
/// ([`crate::roofline`]).
#[derive(Debug, Clone, PartialEq)]
pub struct OperatorsRoofline {
    /// The device the roofline is against (`trn2 (LNC=2)`; several joined by `, `), or
    /// why there is none.
    pub device: Result<String, String>,
    /// Operator name → its figures in the report's period, summed over the tab's
    /// running runtimes. An operator missing here has no modeled row in the period.
    pub ops: BTreeMap<String, OpRoofline>,
    /// Operators of the tab's runtimes with a modeled row in some period of the run.
    pub modeled: BTreeSet<String>,
}

/// Everything the panes draw for the selected tab.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TabView {
    /// Core version label (`v3d`), from the hardware info or the LNC of our extension.
    pub core_version: String,
    /// Core rows.
    pub cores: Vec<CoreRow>,
    /// Runtime CPU use: user %, system %, when reported.
    pub runtime_vcpu: Option<(f64, f64)>,
    /// Machine CPU use, when reported.
    pub system_vcpu: Option<CpuTimes>,
    /// Host memory categories and total.
    pub host: HostMemory,
    /// Host bytes in use.
    pub host_total: u64,
    /// Device memory categories and total.
    pub device: DeviceMemory,
    /// Device bytes in use.
    pub device_total: u64,
    /// Whether any runtime reported memory.
    pub has_memory: bool,
    /// Engine rows (our extension).
    pub engines: Vec<EngineRow>,
    /// HBM used, peak, capacity (bytes), summed over the tab's runtimes: each reports
    /// the HBM of its logical NeuronCores (at LNC=2 a logical core owns its two physical
    /// cores' share of the chip's HBM), so a rank tab shows one logical core's HBM and
    /// "all" the sum over the ranks' cores.
    pub hbm: Option<(u64, u64, u64)>,
    /// Logical NeuronCores whose HBM `hbm` sums.
    pub hbm_cores: usize,
    /// Recent device bytes in use.
    pub hbm_history: Vec<f64>,
    /// Collectives in flight: (runtime tag, collective).
    pub in_flight: Vec<(String, InFlightCollective)>,
    /// Collective latency per runtime.
    pub collectives: Vec<CollectiveRow>,
    /// The rank the others wait for: from in-flight collectives, else the publishers'
    /// slowest rank over the period.
    pub waited_for_rank: Option<u32>,
    /// Top operators, merged by name, sorted and filtered.
    pub operators: Vec<TopOperator>,
    /// Their roofline, when replaying recorded traces (live reports carry no shapes).
    pub roofline: Option<OperatorsRoofline>,
    /// Execution latency per runtime.
    pub latencies: Vec<LatencyRow>,
    /// Records dropped by the publishers' rings.
    pub dropped_records: u64,
    /// Whether any runtime carries our extension.
    pub has_extension: bool,
    /// Runtimes of "all" left out of the activity rows because they exited or
    /// finished.
    pub not_running: usize,
}

impl App {
    /// The panes' data for the selected tab, with histories of at most `history_len`.
    pub fn tab_view(&self, history_len: usize) -> TabView {
        let selected = self.selected_runtimes();
        let mut v = TabView::default();
        // Runtimes whose activity rows are shown: on "all" the running ones.
        let runtimes: Vec<&super::Runtime> = selected
            .iter()
            .copied()
            .filter(|rt| self.selected != 0 || (rt.exited.is_none() && !rt.finished()))
            .collect();
        v.not_running = selected.len() - runtimes.len();
        let hist = |h: &crate::history::History| h.tail(history_len).collect::<Vec<f64>>();

        // Cores.
        let mut seen_cores = BTreeMap::<u32, usize>::new();
        for rt in &runtimes {
            if let Some(c) = &rt.entry.report.neuroncore_counters {
                for core in c.neuroncores_in_use.keys() {
                    *seen_cores.entry(*core).or_default() += 1;
                }
            }
        }
        for rt in &runtimes {
            let Some(counters) = &rt.entry.report.neuroncore_counters else {
                continue;
            };
            for (core, c) in &counters.neuroncores_in_use {
                let label = if seen_cores[core] > 1 {
                    format!("{}:NC{core}", rt.tag)
                } else {
                    format!("NC{core}")
                };
                v.cores.push(CoreRow {
                    label,
                    utilization: c.neuroncore_utilization,
                    flops: c.flops,
                    physical: c
                        .physical_cores()
                        .into_iter()
                        .map(|(_, name, u)| (name.to_string(), u))
                        .collect(),
                    history: rt.core_history.get(core).map(hist).unwrap_or_default(),
                });
            }
        }
        if self.core_sort == CoreSort::Utilization {
            v.cores
                .sort_by(|a, b| b.utilization.total_cmp(&a.utilization));
        }
        v.core_version = self
            .hardware
            .as_ref()
            .map(|h| h.neuroncore_version.clone())
            .filter(|s| !s.is_empty())
            .or_else(|| {
                selected.iter().find_map(|rt| {
                    let ext = rt.entry.report.neuronprof.as_ref()?;
                    Some(match (ext.device.as_str(), ext.lnc) {
                        ("trn2", 2) => "v3d".to_string(),
                        ("trn2", _) => "v3".to_string(),
                        (device, lnc) => format!("{device} LNC={lnc}"),
                    })
                })
            })
            .unwrap_or_default();

        // vCPU: once per pid.
        let mut pids = BTreeSet::new();
        for rt in &runtimes {
            if let Some(cpu) = &rt.entry.report.neuron_runtime_vcpu_usage {
                if pids.insert(rt.entry.pid) {
                    let (u, s) = v.runtime_vcpu.unwrap_or((0.0, 0.0));
                    v.runtime_vcpu = Some((u + cpu.vcpu_usage.user, s + cpu.vcpu_usage.system));
                }
            }
        }
        v.system_vcpu = self
            .system
            .as_ref()
            .and_then(|s| s.vcpu_usage.as_ref())
            .map(|u| u.average_usage.clone());

        // Memory. Host memory is the process's (every rank of a process reports the
        // same resident figure): summed once per pid, like the runtime vCPU.
        let mut host_pids = BTreeSet::new();
        for rt in &selected {
            if rt.exited.is_some() && self.selected == 0 {
                continue; // an exited process holds no memory
            }
            let Some(mem) = &rt.entry.report.memory_used else {
                continue;
            };
            v.has_memory = true;
            let used = &mem.neuron_runtime_used_bytes;
            v.device_total += used.neuron_device;
            if host_pids.insert(rt.entry.pid) {
                v.host_total += used.host;
                let h = &used.usage_breakdown.host;
                v.host.application_memory += h.application_memory;
                v.host.constants += h.constants;
                v.host.dma_buffers += h.dma_buffers;
                v.host.tensors += h.tensors;
            }
            for m in used.usage_breakdown.neuroncore_memory_usage.values() {
                v.device.add(m);
            }
        }

        // Our extension.
        let mut ops = BTreeMap::<String, TopOperator>::new();
        let mut waiting = BTreeMap::<u32, usize>::new();
        let mut slowest = BTreeMap::<u32, usize>::new();
        let mut hbm: Option<(u64, u64, u64)> = None;
        for rt in &selected {
            let Some(ext) = &rt.entry.report.neuronprof else {
                continue;
            };
            v.has_extension = true;
            v.dropped_records += ext.dropped_records;
            if let Some(h) = &ext.hbm {
                if rt.exited.is_none() || self.selected != 0 {
                    let (u, p, c) = hbm.unwrap_or((0, 0, 0));
                    hbm = Some((u + h.used_bytes, p + h.peak_bytes, c + h.capacity_bytes));
                    v.hbm_cores += rt
                        .entry
                        .report
                        .neuroncore_counters
                        .as_ref()
                        .map_or(1, |c| c.neuroncores_in_use.len().max(1));
                }
            }
            if !runtimes.iter().any(|r| std::ptr::eq(*r, *rt)) {
                continue; // exited or finished, on "all"
            }
            for (core, engines) in &ext.engine_utilization {
                let mut engines: Vec<(&String, &f64)> = engines.iter().collect();
                engines.sort_by_key(|(name, _)| (engine_rank(name), name.as_str()));
                for (engine, pct) in engines {
                    let label = if seen_cores.get(core).copied().unwrap_or(1) > 1 {
                        format!("{}:NC{core} {engine}", rt.tag)
                    } else {
                        format!("NC{core} {engine}")
                    };
                    v.engines.push(EngineRow {
                        label,
                        utilization: *pct,
                        history: rt
                            .engine_history
                            .get(&(*core, engine.clone()))
                            .map(hist)
                            .unwrap_or_default(),
                    });
                }
            }
            if let Some(c) = &ext.collectives {
                for f in &c.in_flight {
                    if self.matches_filter(&f.op) || self.matches_filter(&f.group) {
                        v.in_flight.push((rt.tag.clone(), f.clone()));
                    }
                    for r in &f.waiting_for_ranks {
                        *waiting.entry(*r).or_default() += 1;
                    }
                }
                v.collectives.push(CollectiveRow {
                    tag: rt.tag.clone(),
                    completed: c.completed,
                    latency: c.latency_s.clone(),
                });
                if let Some(r) = c.slowest_rank {
                    *slowest.entry(r).or_default() += 1;
                }
            }
            for op in &ext.top_operators {
                let e = ops.entry(op.name.clone()).or_insert_with(|| TopOperator {
                    name: op.name.clone(),
                    ..TopOperator::default()
                });
                e.calls += op.calls;
                e.device_time_s += op.device_time_s;
            }
        }
        v.roofline = self.operators_roofline(&runtimes);
        v.hbm = hbm;
        v.waited_for_rank = mode(&waiting).or_else(|| mode(&slowest));
        v.operators = ops
            .into_values()
            .filter(|o| self.matches_filter(&o.name))
            .collect();
        match self.op_sort {
            OpSort::DeviceTime => v
                .operators
                .sort_by(|a, b| b.device_time_s.total_cmp(&a.device_time_s)),
            OpSort::Calls => v.operators.sort_by_key(|o| std::cmp::Reverse(o.calls)),
            OpSort::Name => v.operators.sort_by(|a, b| a.name.cmp(&b.name)),
        }
        v.hbm_history = if self.selected == 0 {
            hist(&self.all_hbm_history)
        } else {
            runtimes
                .first()
                .map(|r| hist(&r.hbm_history))
                .unwrap_or_default()
        };

        // Execution latency.
        for rt in &runtimes {
            let Some(stats) = &rt.entry.report.execution_stats else {
                continue;
            };
            let s = &stats.execution_summary;
            v.latencies.push(LatencyRow {
                tag: rt.tag.clone(),
                total: stats.latency_stats.total_latency.clone(),
                device: stats.latency_stats.device_latency.clone(),
                completed: s.completed,
                failed: s.completed_with_err
                    + s.completed_with_num_err
                    + s.timed_out
                    + s.incorrect_input
                    + s.failed_to_queue,
            });
        }
        v
    }
}

impl App {
    /// The replay's roofline of the document under the cursor, merged over `runtimes`
    /// (by the rank of their report); `None` outside a replay.
    fn operators_roofline(&self, runtimes: &[&Runtime]) -> Option<OperatorsRoofline> {
        let replay = self.replay.as_ref()?;
        let roofline = match replay.roofline.as_ref()? {
            Ok(r) => r,
            Err(why) => {
                return Some(OperatorsRoofline {
                    device: Err(why.clone()),
                    ops: BTreeMap::new(),
                    modeled: BTreeSet::new(),
                })
            }
        };
        let devices: BTreeSet<&str> = roofline
            .ranks
            .iter()
            .filter_map(|r| r.device.as_deref())
            .collect();
        let device = if devices.is_empty() {
            // `analyze`'s hint names its `--device-spec`, which neuron-top does not have.
            Err(roofline.ranks.first().map_or("no traces".to_string(), |r| {
                r.device_source.replace("; name one with --device-spec", "")
            }))
        } else {
            Ok(devices.into_iter().collect::<Vec<_>>().join(", "))
        };
        let mut ops = BTreeMap::<String, OpRoofline>::new();
        let mut modeled = BTreeSet::new();
        for rt in runtimes {
            let Some(rank) = rt.entry.report.neuronprof.as_ref().and_then(|n| n.rank) else {
                continue;
            };
            let Some(r) = roofline.rank(rank) else {
                continue;
            };
            for (name, op) in r.steps.get(replay.index).into_iter().flatten() {
                ops.entry(name.clone()).or_default().merge(op);
            }
            modeled.extend(r.modeled.iter().cloned());
        }
        Some(OperatorsRoofline {
            device,
            ops,
            modeled,
        })
    }
}

/// Engines in the order of a NeuronCore's data path (compute first, then data movement
/// and synchronization); others after them, alphabetically.
fn engine_rank(name: &str) -> u8 {
    match name {
        "tensor" => 0,
        "vector" => 1,
        "scalar" => 2,
        "gpsimd" => 3,
        "dma" => 4,
        "sync" => 5,
        _ => 6,
    }
}

/// The key counted most often (smallest key on ties).
fn mode(counts: &BTreeMap<u32, usize>) -> Option<u32> {
    let best = counts.values().copied().max()?;
    counts.iter().find(|(_, n)| **n == best).map(|(k, _)| *k)
}
