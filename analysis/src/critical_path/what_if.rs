//! What-if: the dependency graph re-timed with scaled durations.
//!
//! Each [`ScaleRule`] multiplies the duration of the spans it selects; every edge is
//! kept: a node happens at the latest of its predecessors plus the edge weights
//! ([`Graph::retime`]), so shortening work that was not on the path changes nothing, and
//! shortening the path moves everything that depended on it. What scales:
//! - `kernel:REGEX=F`: device rows whose name matches;
//! - `op:REGEX=F`: host events (operators, runtime calls) whose name matches, with the
//!   spans attributed to them;
//! - `rank:R=F`: rank R's device work except collectives (a slow or fast device);
//! - `host=F`: every host span;
//! - `collective=F`: collectives' transfer time (their waiting follows from the ranks);
//! - [`ScaleRule::Rows`]: a factor per device row (the CLI's `--device`/`--lnc`
//!   re-costing of emulator traces for another device profile, and `--device` on any
//!   other trace: [`super::cross_device`]).
//!
//! Factors multiply when several rules select a span. Delays and gaps (launch delays,
//! kernel-kernel gaps) keep their observed weight, host time between top-level
//! operators (zero on HTA's path) its observed length, scaled as host time; the ordering-only edges
//! ([`super::Edge::causal`]) take the rank's smallest observed delay of their kind (a
//! launch latency, a kernel-kernel overhead), so a kernel never starts before its
//! launch could have reached the device. Blocking host calls weigh 0 and end with the
//! device work they waited for. The predicted step of a rank is its window's duration
//! plus the change of the span its nodes cover.

use regex::Regex;
use serde::Serialize;

use super::graph::{Edge, EdgeKind};
use super::{CpGraph, CriticalPath, CriticalPathError};
use crate::model::FastMap;

/// One scaling rule (see the module docs for the syntax).
#[derive(Clone, Debug)]
pub enum ScaleRule {
    /// `kernel:REGEX=F`.
    Kernel(Regex, f64),
    /// `op:REGEX=F`.
    Op(Regex, f64),
    /// `rank:R=F`.
    Rank(i64, f64),
    /// `host=F`.
    Host(f64),
    /// `collective=F`.
    Collective(f64),
    /// A factor per device row, by (rank, event index); rows not in the map keep
    /// theirs (not parsed from text: the CLI computes it).
    Rows(std::sync::Arc<std::collections::HashMap<(i64, u64), f64>>),
}

impl std::str::FromStr for ScaleRule {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (what, factor) = text
            .rsplit_once('=')
            .ok_or_else(|| format!("scale {text:?}: expected WHAT=FACTOR"))?;
        let factor: f64 = factor
            .trim()
            .parse()
            .map_err(|_| format!("scale {text:?}: the factor {factor:?} is not a number"))?;
        if !(factor.is_finite() && factor >= 0.0) {
            return Err(format!("scale {text:?}: the factor must be a number >= 0"));
        }
        let regex = |pattern: &str| {
            Regex::new(pattern).map_err(|e| format!("scale {text:?}: bad regex {pattern:?}: {e}"))
        };
        match what.split_once(':') {
            Some(("kernel", pattern)) => Ok(ScaleRule::Kernel(regex(pattern)?, factor)),
            Some(("op", pattern)) => Ok(ScaleRule::Op(regex(pattern)?, factor)),
            Some(("rank", rank)) => rank
                .trim()
                .parse()
                .map(|r| ScaleRule::Rank(r, factor))
                .map_err(|_| format!("scale {text:?}: the rank {rank:?} is not an integer")),
            None if what == "host" => Ok(ScaleRule::Host(factor)),
            None if what == "collective" => Ok(ScaleRule::Collective(factor)),
            _ => Err(format!(
                "scale {text:?}: expected kernel:REGEX=F, op:REGEX=F, rank:R=F, host=F or \
                 collective=F"
            )),
        }
    }
}

/// One rank's step, measured and predicted. JSON: `{"rank", "step_us",
/// "predicted_step_us", "change_percent"}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RankPrediction {
    /// The rank.
    pub rank: i64,
    /// The window's duration as recorded, µs.
    pub step_us: f64,
    /// Predicted, µs.
    pub predicted_step_us: f64,
    /// (predicted − recorded) / recorded, %.
    pub change_percent: f64,
}

/// A what-if's answer. JSON: `{"scales": [string…], "ranks": [RankPrediction…],
/// "step_us", "predicted_step_us", "critical_path": CriticalPath, "cross_device"?:
/// CrossDevice}` (the step of the run is its slowest rank's).
#[derive(Clone, Debug, Serialize)]
pub struct WhatIf {
    /// The rules, as given.
    pub scales: Vec<String>,
    /// Per rank.
    pub ranks: Vec<RankPrediction>,
    /// Slowest rank's recorded step, µs.
    pub step_us: f64,
    /// Slowest rank's predicted step, µs.
    pub predicted_step_us: f64,
    /// The critical path of the re-timed graph.
    pub critical_path: CriticalPath,
    /// New time of every node, in the graph's ticks (not serialized).
    #[serde(skip)]
    pub node_times: Vec<i64>,
    /// On another device (`what-if --device` on a GPU or neuron trace): the device
    /// time by op group, recorded and predicted ([`super::cross_device`]); absent
    /// otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cross_device: Option<super::cross_device::CrossDevice>,
}

/// Re-times `graph` under `rules` (`labels`: the rules as the user wrote them).
pub fn what_if(
    graph: &CpGraph<'_>,
    rules: &[ScaleRule],
    labels: &[String],
) -> Result<WhatIf, CriticalPathError> {
    check_rules_select_something(graph, rules, labels)?;
    // The smallest observed weight per (rank, kind) of the edges HTA's rules chose, for
    // the ordering-only edges.
    let mut smallest: FastMap<(i64, EdgeKind), i64> = FastMap::default();
    for edge in graph.graph.edges.iter().filter(|e| !e.causal) {
        if matches!(
            edge.kind,
            EdgeKind::LaunchDelay | EdgeKind::KernelKernelDelay
        ) {
            let rank = graph.rank_of_node(edge.dst);
            let slot = smallest.entry((rank, edge.kind)).or_insert(i64::MAX);
            *slot = (*slot).min(edge.weight.max(0));
        }
    }
    let host_factor: f64 = rules
        .iter()
        .map(|r| match r {
            ScaleRule::Host(f) => *f,
            _ => 1.0,
        })
        .product();
    let weight = |edge: &Edge| -> i64 {
        if edge.causal {
            let rank = graph.rank_of_node(edge.dst);
            return smallest
                .get(&(rank, edge.kind))
                .copied()
                .filter(|&w| w != i64::MAX)
                .unwrap_or(0);
        }
        if edge.kind == EdgeKind::Dependency {
            // Host time between two top-level operators (Python, the framework): it
            // weighs 0 on HTA's path but is time the thread spends; it scales as host.
            let gap =
                graph.graph.nodes[edge.dst as usize].ts - graph.graph.nodes[edge.src as usize].ts;
            return (gap.max(0) as f64 * host_factor).round() as i64;
        }
        if !edge.scales {
            return edge.weight;
        }
        let factor = factor_of(graph, edge, rules);
        (edge.weight as f64 * factor).round() as i64
    };
    let node_times = graph
        .graph
        .retime(weight)
        .map_err(CriticalPathError::Cycle)?;
    let path = graph
        .graph
        .longest_path(weight)
        .map_err(CriticalPathError::Cycle)?;
    let critical_path = graph.describe(&path, weight);
    let us = |ticks: i64| ticks as f64 / graph.ticks_per_us as f64;
    let mut ranks = Vec::new();
    for &(rank, (start, end), _) in &graph.windows {
        let (mut lo, mut hi, mut new_lo, mut new_hi) = (i64::MAX, i64::MIN, i64::MAX, i64::MIN);
        for (id, node) in graph.graph.nodes.iter().enumerate() {
            if graph.events[node.event as usize].rank != rank
                || (graph.graph.preds(id as u32).is_empty()
                    && graph.graph.succs(id as u32).is_empty())
            {
                continue;
            }
            lo = lo.min(node.ts);
            hi = hi.max(node.ts);
            new_lo = new_lo.min(node_times[id]);
            new_hi = new_hi.max(node_times[id]);
        }
        let step = end - start;
        let predicted = if lo <= hi {
            step + (new_hi - new_lo) - (hi - lo)
        } else {
            step
        };
        ranks.push(RankPrediction {
            rank,
            step_us: us(step),
            predicted_step_us: us(predicted),
            change_percent: if step == 0 {
                0.0
            } else {
                (predicted - step) as f64 / step as f64 * 100.0
            },
        });
    }
    let step_us = ranks.iter().map(|r| r.step_us).fold(0.0, f64::max);
    let predicted_step_us = ranks
        .iter()
        .map(|r| r.predicted_step_us)
        .fold(0.0, f64::max);
    Ok(WhatIf {
        scales: labels.to_vec(),
        ranks,
        step_us,
        predicted_step_us,
        critical_path,
        node_times,
        cross_device: None,
    })
}

/// The product of the factors of the rules that select `edge`'s span.
fn factor_of(graph: &CpGraph<'_>, edge: &Edge, rules: &[ScaleRule]) -> f64 {
    rules
        .iter()
        .map(|rule| rule_factor(graph, edge, rule).unwrap_or(1.0))
        .product()
}

/// `rule`'s factor for `edge`'s span, when it selects it.
fn rule_factor(graph: &CpGraph<'_>, edge: &Edge, rule: &ScaleRule) -> Option<f64> {
    let event = edge.attributed.map(|i| &graph.events[i as usize]);
    let on_host = event.is_none_or(|e| e.stream == -1);
    match (rule, event) {
        (ScaleRule::Host(f), _) if on_host => Some(*f),
        (ScaleRule::Op(re, f), Some(e)) if on_host && re.is_match(e.name) => Some(*f),
        (ScaleRule::Kernel(re, f), Some(e)) if !on_host && re.is_match(e.name) => Some(*f),
        (ScaleRule::Rank(r, f), Some(e)) if !on_host && !e.is_comm && e.rank == *r => Some(*f),
        (ScaleRule::Collective(f), Some(e)) if !on_host && e.is_comm => Some(*f),
        (ScaleRule::Rows(factors), Some(e)) if !on_host => {
            factors.get(&(e.rank, e.event_index)).copied()
        }
        _ => None,
    }
}

/// An error naming the first rule (`labels[i]` is rule `i` as the user wrote it) that
/// selects no span the graph scales: `kernel:^matmull=0.5` (a typo) or `rank:9=0.5` on
/// four ranks would otherwise answer a confident "+0.0 %".
fn check_rules_select_something(
    graph: &CpGraph<'_>,
    rules: &[ScaleRule],
    labels: &[String],
) -> Result<(), CriticalPathError> {
    for (i, rule) in rules.iter().enumerate() {
        let selects = graph
            .graph
            .edges
            .iter()
            .any(|edge| edge.scales && rule_factor(graph, edge, rule).is_some());
        if selects {
            continue;
        }
        let mut ranks: Vec<i64> = graph.windows.iter().map(|w| w.0).collect();
        ranks.sort_unstable();
        ranks.dedup();
        let looked_in = match rule {
            ScaleRule::Rank(..) => format!(
                "no device work of that rank; the ranks are {}",
                crate::insights::rank_list(&ranks)
            ),
            ScaleRule::Kernel(..) => "no kernel name matches the pattern".to_owned(),
            ScaleRule::Op(..) => "no host operator or runtime call name matches".to_owned(),
            ScaleRule::Host(_) => "no host span".to_owned(),
            ScaleRule::Collective(_) => "no collective".to_owned(),
            ScaleRule::Rows(_) => "no device row has a factor".to_owned(),
        };
        return Err(CriticalPathError::ScaleMatchesNothing {
            rule: labels
                .get(i)
                .cloned()
                .unwrap_or_else(|| format!("rule {}", i + 1)),
            looked_in,
        });
    }
    Ok(())
}

impl CpGraph<'_> {
    /// The rank of a node's event.
    pub fn rank_of_node(&self, node: u32) -> i64 {
        self.events[self.graph.nodes[node as usize].event as usize].rank
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse_and_bad_ones_say_why() {
        assert!(matches!("rank:2=0.5".parse(), Ok(ScaleRule::Rank(2, f)) if f == 0.5));
        assert!(matches!("host=2".parse(), Ok(ScaleRule::Host(f)) if f == 2.0));
        assert!(matches!("collective=0".parse(), Ok(ScaleRule::Collective(f)) if f == 0.0));
        assert!(matches!(
            "kernel:^matmul=0.5".parse(),
            Ok(ScaleRule::Kernel(..))
        ));
        assert!(matches!("op:a=b=0.5".parse(), Ok(ScaleRule::Op(re, _)) if re.as_str() == "a=b"));
        for bad in [
            "rank:x=1",
            "host",
            "host=-1",
            "gpu=2",
            "kernel:(=1",
            "host=nan",
        ] {
            let err = bad.parse::<ScaleRule>().unwrap_err();
            assert!(err.contains(bad), "{bad}: {err}");
        }
    }
}
