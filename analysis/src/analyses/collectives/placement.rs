//! Where each rank runs, and which link a process group's collectives cross: the node
//! of every rank, whether a group spans nodes, and the nominal bus bandwidth its
//! collectives are judged against.
//!
//! **Nodes.** `--ranks-per-node N` ([`Placement::ranks_per_node`]) puts rank `r` on node
//! `r / N`. Otherwise a rank's node is, in order: the emulator's instance (its
//! `neuron_topology` member names the topology and the instance), or the `host_name`
//! PyTorch's profiler writes. A group whose ranks are not all placed has no node count.
//!
//! **The link.** `--peak-bus-gbps` ([`Placement::peak_bus_gbps`]) names one figure for every
//! group. Otherwise:
//! - neuron ranks carry their machine's figures (`neuron_topology`), and a group is judged
//!   against the slowest level it spans, as the emulator's collective model charges it
//!   (`neuron-backend/src/dist/topology.rs`, `Topology::link`): cores of one chip (through
//!   HBM), chips of one instance (NeuronLink), instances of one UltraServer, or EFA; a
//!   chip's link is shared by the group's ranks on that chip, and no level is faster than
//!   a copy between cores of a chip. A test holds this restatement to the emulator's own.
//! - GPUs of one node are judged against their device's scale-up link
//!   ([`perf_model::scale_up_link`]: NVLink, Infinity Fabric, a PCIe slot); a group that
//!   spans nodes, or whose nodes are unknown, has no nominal figure (a trace names no
//!   network card), and its report says so instead of comparing with the wrong link.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// The trace member the emulator writes with a rank's place ([`NeuronPlace`]).
pub const NEURON_TOPOLOGY_KEY: &str = "neuron_topology";

/// Where an emulated rank's logical core sits and the link figures of its machine (the
/// trace's `neuron_topology` member). Bandwidths are per rank, GB/s (10⁹ B/s).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NeuronPlace {
    /// The topology (`trn2.48xlarge`, `trn2-ultraserver`, …).
    pub topology: String,
    /// The rank's chip, counted over all instances.
    pub chip: u64,
    /// The rank's instance (the node).
    pub instance: u64,
    /// The rank's pod (UltraServer); one instance per pod without one.
    pub pod: u64,
    /// Bandwidth of a copy between cores of one chip.
    pub intra_chip_gbps: f64,
    /// NeuronLink bandwidth of one chip to the others of its instance.
    pub chip_link_gbps: f64,
    /// Bandwidth of one chip to the other instances of its pod.
    pub pod_gbps: f64,
    /// EFA bandwidth of one chip to other pods.
    pub efa_gbps: f64,
}

/// What is known of one rank's place.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RankPlace {
    /// `host_name` from the trace.
    pub host_name: Option<String>,
    /// The emulator's `neuron_topology`.
    pub neuron: Option<NeuronPlace>,
    /// The rank's device's scale-up link (GPUs of the device table).
    pub scale_up: Option<perf_model::ScaleUpLink>,
}

/// The link a group's collectives cross.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct GroupLink {
    /// Nodes the group's ranks run on (`None`: a rank's node is unknown).
    pub nodes: Option<u64>,
    /// Whether the group spans nodes (`None`: unknown).
    pub inter_node: Option<bool>,
    /// The link its bandwidth is judged against (`NeuronLink`, `NVLink 4`, …), or why
    /// there is none (`inter-node: no figure`).
    pub link: String,
    /// The link's nominal bus bandwidth, GB/s, when known.
    pub peak_bus_gbps: Option<f64>,
}

/// Every rank's place and the caller's overrides.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Placement {
    /// By rank.
    pub ranks: BTreeMap<i64, RankPlace>,
    /// `--ranks-per-node`: rank `r` runs on node `r / N`.
    pub ranks_per_node: Option<u32>,
    /// `--peak-bus-gbps`: one nominal figure for every group.
    pub peak_bus_gbps: Option<f64>,
}

impl RankPlace {
    /// What `trace` says of its rank's place: its host, the emulator's topology, and the
    /// scale-up link of the first of its devices the device table knows.
    pub fn of(trace: &crate::model::RankTrace) -> RankPlace {
        let scale_up = trace.devices.iter().find_map(|d| {
            let spec = perf_model::DeviceSpec::detect(
                d.name.as_deref(),
                d.num_sms,
                d.memory_bytes,
                d.profile.as_deref(),
                d.lnc,
            )?;
            perf_model::scale_up_link(&spec.name)
        });
        RankPlace {
            host_name: trace.host_name.clone(),
            neuron: trace.neuron_place.clone(),
            scale_up,
        }
    }
}

impl Placement {
    /// The node of `rank`, when known.
    pub fn node_of(&self, rank: i64) -> Option<String> {
        if let Some(n) = self.ranks_per_node.filter(|&n| n > 0) {
            return Some(format!("node {}", rank.div_euclid(i64::from(n))));
        }
        let place = self.ranks.get(&rank)?;
        match (&place.neuron, &place.host_name) {
            (Some(neuron), _) => Some(format!("{} #{}", neuron.topology, neuron.instance)),
            (None, Some(host)) => Some(host.clone()),
            (None, None) => None,
        }
    }

    /// The link the collectives of a group of `ranks` cross.
    pub fn link(&self, ranks: &[i64]) -> GroupLink {
        let nodes: Option<BTreeSet<String>> = ranks.iter().map(|&r| self.node_of(r)).collect();
        let nodes = nodes.map(|n| n.len() as u64);
        let inter_node = nodes.map(|n| n > 1);
        let (link, peak_bus_gbps) = match self.peak_bus_gbps {
            Some(peak) => ("--peak-bus-gbps".to_owned(), Some(peak)),
            None => self.nominal(ranks, inter_node),
        };
        GroupLink {
            nodes,
            inter_node,
            link,
            peak_bus_gbps,
        }
    }

    fn nominal(&self, ranks: &[i64], inter_node: Option<bool>) -> (String, Option<f64>) {
        let places: Option<Vec<&RankPlace>> = ranks.iter().map(|r| self.ranks.get(r)).collect();
        let Some(places) = places.filter(|p| !p.is_empty()) else {
            return ("unknown: a rank's device is not described".to_owned(), None);
        };
        let neuron: Option<Vec<&NeuronPlace>> = places.iter().map(|p| p.neuron.as_ref()).collect();
        if let Some(neuron) = neuron {
            return neuron_link(&neuron);
        }
        let first = places[0].scale_up;
        match (first, inter_node) {
            (_, Some(true)) => ("inter-node: no figure (--peak-bus-gbps)".to_owned(), None),
            (None, _) => ("unknown: no scale-up link for the device".to_owned(), None),
            (Some(_), None) => ("unknown: the ranks' nodes are not known".to_owned(), None),
            (Some(link), Some(false)) if places.iter().all(|p| p.scale_up == Some(link)) => {
                (link.name.to_owned(), Some(link.bus_gbps))
            }
            (Some(_), Some(false)) => ("unknown: the ranks' devices differ".to_owned(), None),
        }
    }
}

/// The emulator's rule (`Topology::link`): the slowest level the group spans, a chip's
/// link shared by the group's ranks on it, never faster than a copy inside a chip.
fn neuron_link(places: &[&NeuronPlace]) -> (String, Option<f64>) {
    let first = places[0];
    let mut per_chip: BTreeMap<u64, u64> = BTreeMap::new();
    for p in places {
        *per_chip.entry(p.chip).or_default() += 1;
    }
    let sharing = per_chip.values().copied().max().unwrap_or(1).max(1) as f64;
    let one_instance = places.iter().all(|p| p.instance == first.instance);
    let one_pod = places.iter().all(|p| p.pod == first.pod);
    let intra = first.intra_chip_gbps;
    if per_chip.len() <= 1 {
        ("intra-chip".to_owned(), Some(intra))
    } else if one_instance {
        let bw = (first.chip_link_gbps / sharing).min(intra);
        ("NeuronLink".to_owned(), Some(bw))
    } else if one_pod {
        let bw = (first.chip_link_gbps.min(first.pod_gbps) / sharing).min(intra);
        ("UltraServer link".to_owned(), Some(bw))
    } else {
        let bw = (first.efa_gbps / sharing).min(intra);
        ("EFA".to_owned(), Some(bw))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(host: &str) -> RankPlace {
        RankPlace {
            host_name: Some(host.to_owned()),
            neuron: None,
            scale_up: perf_model::scale_up_link("H100 SXM"),
        }
    }

    #[test]
    fn gpus_of_one_host_are_judged_against_nvlink_and_across_hosts_against_nothing() {
        let mut placement = Placement::default();
        for (rank, host) in [(0, "a"), (1, "a"), (2, "b"), (3, "b")] {
            placement.ranks.insert(rank, gpu(host));
        }
        let one = placement.link(&[0, 1]);
        assert_eq!(one.nodes, Some(1));
        assert_eq!(one.inter_node, Some(false));
        assert_eq!(one.link, "NVLink 4");
        assert_eq!(one.peak_bus_gbps, Some(450.0));
        let both = placement.link(&[0, 1, 2, 3]);
        assert_eq!((both.nodes, both.inter_node), (Some(2), Some(true)));
        assert_eq!(both.peak_bus_gbps, None);
        // --ranks-per-node overrides the host names.
        placement.ranks_per_node = Some(4);
        assert_eq!(placement.link(&[0, 1, 2, 3]).peak_bus_gbps, Some(450.0));
        // --peak-bus-gbps names the figure.
        placement.peak_bus_gbps = Some(100.0);
        assert_eq!(placement.link(&[0, 3]).peak_bus_gbps, Some(100.0));
    }

    #[test]
    fn a_rank_without_a_host_leaves_the_node_count_unknown() {
        let mut placement = Placement::default();
        placement.ranks.insert(0, gpu("a"));
        placement.ranks.insert(
            1,
            RankPlace {
                host_name: None,
                ..gpu("a")
            },
        );
        let link = placement.link(&[0, 1]);
        assert_eq!(
            (link.nodes, link.inter_node, link.peak_bus_gbps),
            (None, None, None)
        );
        assert!(link.link.contains("not known"), "{}", link.link);
    }
}
