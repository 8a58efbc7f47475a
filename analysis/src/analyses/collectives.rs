//! Collectives matched across ranks: arrival skew, waiting versus transfer time per rank,
//! achieved bus bandwidth, and which rank everyone waited for (no HTA counterpart).
//!
//! A collective's kernel cannot finish on any rank before the last rank has joined, so
//! every rank's duration is the pure transfer plus the time it spent waiting for the
//! others. For one instance matched across ranks:
//! - **transfer** = the shortest duration across its ranks (the rank that arrived last
//!   waited for nobody: its duration is the transfer alone);
//! - each rank's **wait** = its duration − transfer;
//! - **start skew** = latest start − earliest start, **end skew** = latest end − earliest
//!   end;
//! - the rank that **arrived last** (latest start) is the one the others waited for.
//!
//! Instances are matched by (`Process Group Name`, `Seq`) when the trace records `Seq`,
//! else by (`Process Group Name`, `Collective name`, n-th occurrence on the rank). Times
//! are absolute (each rank's `baseTimeNanoseconds` added), so ranks must share a clock.
//!
//! Bandwidth follows NCCL's tests (`nccl-tests` `PERFORMANCE.md`): `algbw = S / t` with S
//! the full message (the larger of the input and the output: all-gather's output,
//! reduce-scatter's input) and t the transfer; `busbw = algbw × 2(n−1)/n` for
//! all-reduce, `× (n−1)/n` for all-gather, reduce-scatter and all-to-all(v), `× 1` for
//! broadcast, reduce and send/recv. GB/s are 10⁹ bytes a second, as NCCL prints them.
//! (AMD's TraceLens divides MiB by µs and then by 1024: its "GB/s" are GiB/s, 2³⁰ bytes,
//! 7.4 % below ours for the same transfer; its collective report is otherwise the same
//! arithmetic, and `analysis/tests/collective_report_equals_tracelens.rs` checks ours
//! against it.) With `peak_bus_gbps` given, the fraction of it achieved.
//!
//! Who arrived first or last is counted only where one rank alone started first (or
//! last): when several ranks start at the same instant, none of them is singled out
//! (TraceLens picks one of the tied ranks by position; for the rank totals of
//! [`CollectiveTotals`] a tie is no evidence against a rank).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::frame::{Frame, Frames};
use crate::model::CollectiveArgs;

mod all_to_all;
mod groups;
mod placement;
mod waits;

pub use all_to_all::AllToAll;
pub use groups::{CollectiveGroup, SizeBin};
pub use placement::{GroupLink, NeuronPlace, Placement, RankPlace, NEURON_TOPOLOGY_KEY};

/// One rank's part in one collective instance.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CollectiveRank {
    /// The rank.
    pub rank: i64,
    /// Kernel start, µs since the earliest start of the instance.
    pub arrival_us: f64,
    /// Its kernel's duration, µs.
    pub dur_us: f64,
    /// Its duration − the instance's transfer, µs: the time it waited for the others.
    pub wait_us: f64,
    /// The instance's transfer (the shortest duration across its ranks), µs.
    pub transfer_us: f64,
    /// The `ProfilerStep` of its launch, -1 if none.
    pub step: i64,
}

/// One collective instance across ranks.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CollectiveInstance {
    /// `Process Group Name`.
    pub process_group: String,
    /// `Seq` when recorded.
    pub seq: Option<i64>,
    /// `Collective name`.
    pub collective: String,
    /// `dtype`.
    pub dtype: String,
    /// `Group size` (the number of ranks seen when the trace does not say).
    pub group_size: i64,
    /// `In msg nelems`.
    pub in_nelems: i64,
    /// `Out msg nelems`.
    pub out_nelems: i64,
    /// Message size in bytes (larger of in and out), when the dtype is known.
    pub bytes: Option<i64>,
    /// Latest start − earliest start (the start skew), µs.
    pub arrival_skew_us: f64,
    /// Latest end − earliest end, µs.
    pub end_skew_us: f64,
    /// The rank that started last (ties: the lowest rank).
    pub waited_for_rank: i64,
    /// The rank that started last, when no other rank started at the same instant.
    pub arrived_last: Option<i64>,
    /// The rank that started first, when no other rank started at the same instant.
    pub arrived_first: Option<i64>,
    /// The transfer: the shortest duration across the ranks, µs.
    pub transfer_us: f64,
    /// Mean wait over the ranks (duration − transfer), µs.
    pub mean_wait_us: f64,
    /// Algorithm bandwidth, `bytes / transfer`, GB/s (10⁹ bytes/s).
    pub algbw_gbps: Option<f64>,
    /// Achieved bus bandwidth (NCCL's factor per operation), GB/s.
    pub bus_bandwidth_gbps: Option<f64>,
    /// `bus_bandwidth_gbps` / the nominal bus bandwidth of the link its ranks cross
    /// ([`GroupLink::peak_bus_gbps`]).
    pub fraction_of_peak: Option<f64>,
    /// Each rank's part, by rank.
    pub ranks: Vec<CollectiveRank>,
}

/// Totals of one rank (over all instances, or one step).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CollectiveTotals {
    /// The rank.
    pub rank: i64,
    /// The step (`None` for the whole trace).
    pub step: Option<i64>,
    /// Instances the rank took part in.
    pub instances: u64,
    /// Σ waiting, µs.
    pub wait_us: f64,
    /// Σ transfer, µs.
    pub transfer_us: f64,
    /// Σ kernel duration, µs.
    pub dur_us: f64,
    /// Instances where everyone waited for this rank (it alone started last).
    pub times_waited_for: u64,
    /// Instances where it alone started first.
    pub times_arrived_first: u64,
    /// Σ over those instances of the other ranks' waiting, µs: the time this rank cost
    /// the others.
    pub others_waited_us: f64,
}

/// The collective analysis. JSON: `{"instances": […], "groups": […], "per_rank": […],
/// "per_step": […], "bottleneck_rank": rank | null, "all_to_all": […]}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Collectives {
    /// Every instance, in order of first arrival.
    pub instances: Vec<CollectiveInstance>,
    /// Per process group and operation.
    pub groups: Vec<CollectiveGroup>,
    /// Totals per rank.
    pub per_rank: Vec<CollectiveTotals>,
    /// Totals per (rank, step).
    pub per_step: Vec<CollectiveTotals>,
    /// The rank that cost the others the most waiting, if anyone waited.
    pub bottleneck_rank: Option<i64>,
    /// All-to-all(v) traffic per process group: the rank × rank matrix of bytes.
    pub all_to_all: Vec<AllToAll>,
}

type Key = (String, Option<i64>, String, u64);

/// One rank's copy of a collective: (rank, start ns, end ns, step, args), keyed by how
/// it is matched across ranks (group and `Seq`, else group, name and occurrence).
pub(crate) type Part = (Key, RankCopy);

/// One rank's copy of a collective: rank, start and end (ns), iteration, arguments.
pub(crate) type RankCopy = (i64, i64, i64, i64, CollectiveArgs);

/// Matches collectives across ranks (use frames in [`crate::Mode::Default`], built
/// without the last-step filter, for exact times). Each group is judged against the link
/// its ranks' traces describe, or against `peak_bus_gbps` when given ([`Placement`]).
pub fn collectives(frames: &Frames<'_>, peak_bus_gbps: Option<f64>) -> Collectives {
    let placement = Placement {
        ranks: frames
            .ranks
            .iter()
            .map(|f| (f.rank(), RankPlace::of(f.trace)))
            .collect(),
        ranks_per_node: None,
        peak_bus_gbps,
    };
    collectives_from(frames.ranks.iter().flat_map(collective_parts), &placement)
}

/// One rank's copies of collectives (what [`collectives`] needs of a rank), in the
/// order of their start.
pub(crate) fn collective_parts(frame: &Frame<'_>) -> Vec<Part> {
    let to_ns = |ticks: i64| ticks * frame.tick_ns + frame.trace.base_ns;
    let with_args = |r| frame.model_row(r).collective.as_deref().map(|c| (r, c));
    let mut rows: Vec<_> = frame.device_rows().filter_map(with_args).collect();
    // No device collective: the host's (gloo's annotations), matched by operation, size
    // and order since they name no group or sequence number.
    let on_host = rows.is_empty();
    if on_host {
        rows = frame.rows.iter().filter_map(with_args).collect();
    }
    rows.sort_by_key(|(r, _)| r.start_ticks);
    let mut occurrence: BTreeMap<(String, String), u64> = BTreeMap::new();
    let mut parts = Vec::with_capacity(rows.len());
    for (row, args) in rows {
        // What ranks match an instance by without `Seq`: the operation, and on the host
        // its size too.
        let kind = if on_host {
            format!("{} of {} elements", args.collective, args.in_nelems)
        } else {
            args.collective.clone()
        };
        let nth = occurrence
            .entry((args.process_group.clone(), kind.clone()))
            .or_default();
        let key = match args.seq {
            Some(seq) => (args.process_group.clone(), Some(seq), String::new(), 0),
            None => (args.process_group.clone(), None, kind, *nth),
        };
        *nth += 1;
        parts.push((
            key,
            (
                frame.rank(),
                to_ns(row.start_ticks),
                to_ns(row.end_ticks),
                row.iteration,
                args.clone(),
            ),
        ));
    }
    parts
}

/// [`collectives`] from every rank's [`collective_parts`], ranks in order.
pub(crate) fn collectives_from(
    parts: impl IntoIterator<Item = Part>,
    placement: &Placement,
) -> Collectives {
    let mut matcher = Matcher::default();
    matcher.add(parts);
    matcher.finish(placement)
}

/// One rank's copy of a matched collective: rank, start and end (ns), iteration.
type Copy = (i64, i64, i64, i64);

/// One collective instance being matched: the arguments of its lowest rank's first
/// copy (with that rank) and every rank's copy.
struct Instance {
    args: (i64, CollectiveArgs),
    copies: Vec<Copy>,
    /// For an all-to-all(v): each rank's split sizes and message elements.
    splits: Vec<all_to_all::RankSplits>,
}

/// Collectives matched across ranks as the ranks' [`collective_parts`] come, in any
/// order of ranks: what [`collectives_from`] makes of them, without holding the parts.
/// Each instance keeps its key and one rank's arguments once, and per rank 32 bytes
/// (the report's own row of that rank, [`CollectiveRank`], is 40).
#[derive(Default)]
pub(crate) struct Matcher {
    matched: BTreeMap<Key, Instance>,
}

impl Matcher {
    /// Adds one rank's parts (all of them at once: a rank's copies of one instance keep
    /// their order).
    pub(crate) fn add(&mut self, parts: impl IntoIterator<Item = Part>) {
        for (key, (rank, start, end, step, mut args)) in parts {
            let copy = (rank, start, end, step);
            let splits = all_to_all::is_all_to_all(&args.collective)
                .then(|| (rank, std::mem::take(&mut args.in_splits), args.in_nelems));
            match self.matched.get_mut(&key) {
                Some(instance) => {
                    if rank < instance.args.0 {
                        instance.args = (rank, args);
                    }
                    instance.copies.push(copy);
                    instance.splits.extend(splits);
                }
                None => {
                    self.matched.insert(
                        key,
                        Instance {
                            args: (rank, args),
                            copies: vec![copy],
                            splits: splits.into_iter().collect(),
                        },
                    );
                }
            }
        }
    }

    /// The analysis of the collectives added.
    pub(crate) fn finish(self, placement: &Placement) -> Collectives {
        let mut links: BTreeMap<Vec<i64>, GroupLink> = BTreeMap::new();
        let mut instances: Vec<(i64, CollectiveInstance)> = Vec::new();
        let mut matrices = all_to_all::Matrices::default();
        for ((process_group, seq, _, _), instance) in self.matched {
            let Instance {
                args: (_, args),
                mut copies,
                mut splits,
            } = instance;
            if !splits.is_empty() {
                splits.sort_by_key(|s| s.0);
                matrices.add(
                    (&process_group, &args.collective),
                    &args.group_ranks,
                    args.group_size,
                    dtype_bytes(&args.dtype),
                    &splits,
                );
            }
            // Stable: one rank's copies of an instance stay in the order it gave them.
            copies.sort_by_key(|p| p.0);
            let first = copies.iter().map(|p| p.1).min().unwrap_or(0);
            let last = copies.iter().map(|p| p.1).max().unwrap_or(0);
            let first_end = copies.iter().map(|p| p.2).min().unwrap_or(0);
            let last_end = copies.iter().map(|p| p.2).max().unwrap_or(0);
            let transfer_ns = copies.iter().map(|p| p.2 - p.1).min().unwrap_or(0).max(0);
            let waited_for_rank = copies.iter().find(|p| p.1 == last).map_or(-1, |p| p.0);
            let alone = |at: i64| {
                let mut at_that_instant = copies.iter().filter(|p| p.1 == at);
                match (at_that_instant.next(), at_that_instant.next()) {
                    (Some(p), None) if copies.len() > 1 => Some(p.0),
                    _ => None,
                }
            };
            let transfer_us = transfer_ns as f64 / 1000.0;
            let ranks: Vec<CollectiveRank> = copies
                .iter()
                .map(|&(rank, start, end, step)| CollectiveRank {
                    rank,
                    arrival_us: (start - first) as f64 / 1000.0,
                    dur_us: (end - start) as f64 / 1000.0,
                    wait_us: ((end - start).max(0) - transfer_ns) as f64 / 1000.0,
                    transfer_us,
                    step,
                })
                .collect();
            let mean_wait_us = ranks.iter().map(|r| r.wait_us).sum::<f64>() / ranks.len() as f64;
            let bytes = dtype_bytes(&args.dtype).map(|b| b * args.in_nelems.max(args.out_nelems));
            let group = if args.group_size > 0 {
                args.group_size
            } else {
                copies.len() as i64
            };
            let algbw_gbps = bytes
                .filter(|_| transfer_ns > 0)
                .map(|b| b as f64 / transfer_ns as f64);
            let bus_bandwidth_gbps = algbw_gbps.map(|a| a * bus_factor(&args.collective, group));
            let rank_list: Vec<i64> = copies.iter().map(|p| p.0).collect();
            let peak_bus_gbps = links
                .entry(rank_list)
                .or_insert_with_key(|ranks| placement.link(ranks))
                .peak_bus_gbps;
            instances.push((
                first,
                CollectiveInstance {
                    process_group,
                    seq,
                    collective: args.collective,
                    dtype: args.dtype,
                    group_size: group,
                    in_nelems: args.in_nelems,
                    out_nelems: args.out_nelems,
                    bytes,
                    arrival_skew_us: (last - first) as f64 / 1000.0,
                    end_skew_us: (last_end - first_end) as f64 / 1000.0,
                    waited_for_rank,
                    arrived_last: alone(last),
                    arrived_first: alone(first),
                    transfer_us,
                    mean_wait_us,
                    algbw_gbps,
                    fraction_of_peak: bus_bandwidth_gbps.zip(peak_bus_gbps).map(|(b, p)| b / p),
                    bus_bandwidth_gbps,
                    ranks,
                },
            ));
        }
        instances.sort_by_key(|(first, _)| *first);
        let mut report = totals(instances.into_iter().map(|(_, i)| i).collect(), placement);
        report.all_to_all = matrices.finish();
        report
    }
}

fn totals(instances: Vec<CollectiveInstance>, placement: &Placement) -> Collectives {
    let mut per_rank: BTreeMap<i64, CollectiveTotals> = BTreeMap::new();
    let mut per_step: BTreeMap<(i64, i64), CollectiveTotals> = BTreeMap::new();
    for inst in &instances {
        let others_waited: f64 = inst.ranks.iter().map(|r| r.wait_us).sum();
        for r in &inst.ranks {
            for totals in [
                per_rank.entry(r.rank).or_insert_with(|| CollectiveTotals {
                    rank: r.rank,
                    ..CollectiveTotals::default()
                }),
                per_step
                    .entry((r.rank, r.step))
                    .or_insert_with(|| CollectiveTotals {
                        rank: r.rank,
                        step: Some(r.step),
                        ..CollectiveTotals::default()
                    }),
            ] {
                totals.instances += 1;
                totals.wait_us += r.wait_us;
                totals.transfer_us += r.transfer_us;
                totals.dur_us += r.dur_us;
                if inst.arrived_last == Some(r.rank) {
                    totals.times_waited_for += 1;
                    totals.others_waited_us += others_waited;
                }
                if inst.arrived_first == Some(r.rank) {
                    totals.times_arrived_first += 1;
                }
            }
        }
    }
    let bottleneck_rank = per_rank
        .values()
        .filter(|t| t.others_waited_us > 0.0)
        .max_by(|a, b| a.others_waited_us.total_cmp(&b.others_waited_us))
        .map(|t| t.rank);
    Collectives {
        groups: groups::groups(&instances, placement),
        instances,
        per_rank: per_rank.into_values().collect(),
        per_step: per_step.into_values().collect(),
        bottleneck_rank,
        all_to_all: Vec::new(),
    }
}

/// Bytes per element of PyTorch's `dtype` spellings.
fn dtype_bytes(dtype: &str) -> Option<i64> {
    Some(match dtype {
        "Double" | "Long" | "ComplexFloat" => 8,
        "Float" | "Int" => 4,
        "Half" | "BFloat16" | "Short" => 2,
        "Byte" | "Char" | "Bool" | "Float8_e4m3fn" | "Float8_e5m2" => 1,
        _ => return None,
    })
}

fn bus_factor(collective: &str, group: i64) -> f64 {
    let n = group.max(1) as f64;
    match collective
        .to_ascii_lowercase()
        .replace(['_', ' '], "")
        .as_str()
    {
        "allreduce" | "allreducecoalesced" => 2.0 * (n - 1.0) / n,
        "allgather"
        | "allgatherintotensor"
        | "allgathercoalesced"
        | "reducescatter"
        | "reducescattertensor"
        | "alltoall"
        | "alltoallv"
        | "alltoallbase" => (n - 1.0) / n,
        _ => 1.0,
    }
}
