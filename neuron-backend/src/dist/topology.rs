//! Where ranks sit and how fast they talk: the collective cost model.
//!
//! Rank `r` drives logical core `r % cores_per_chip` of chip `r / cores_per_chip`;
//! chips fill an instance (`chips_per_instance`, 16 on a trn2.48xlarge) before the next
//! instance starts, and instances fill a pod (`instances_per_pod`: an UltraServer)
//! before the next pod. A group's collective runs at the pace of the slowest level it
//! spans: cores of one chip (through HBM by DMA), chips of one instance (NeuronLink,
//! shared by the group's cores on a chip), instances of one pod (the UltraServer's
//! links, likewise shared), or pods (EFA, likewise shared).
//!
//! Built-in topologies ([`Topology::builtin`]): `trn2.48xlarge` (16 chips, 4×4 torus;
//! EFA between instances), `trn2-ultraserver` (4 of them, 64 chips in a 3D torus,
//! 256 GB/s per chip between instances), `trn3-ultraserver` and
//! `trn3-ultraserver-144` (64 or 144 chips all-to-all through a switch: one level at
//! NeuronLink-v4 speed). The torus and the switch differ here only in their figures:
//! the model charges each algorithm step one hop of the slowest level, not a distance
//! through the torus.
//!
//! The algorithm is chosen by message size as the Neuron runtime does (hw.md
//! Collectives): Mesh under 1 MB, recursive doubling/halving from 1 to 56 MB (when the
//! group size is a power of two), KangaRing above 56 MB, Ring otherwise. A collective
//! takes `steps × hop latency + wire bytes / per-rank bandwidth`, where the wire bytes
//! per rank are the bus-bandwidth factors nccl-tests report (all-reduce 2(r−1)/r of the
//! message, all-gather, reduce-scatter and all-to-all (r−1)/r) and the steps are those
//! of the algorithm (Mesh O(1), recursive doubling O(log r), KangaRing O(r/2), Ring
//! O(r)). An all-reduce, all-gather or reduce-scatter spanning instances with several
//! of its ranks in each is hierarchical (for an all-reduce: reduce-scatter inside
//! instances, all-reduce of the shards between them, all-gather inside), as
//! multi-node collective libraries do; see [`Topology::cost`].

use runtime_hooks::{CollectiveAlgorithm, CollectiveOp};

use super::links::{LinkId, LinkUse};
use crate::DeviceProfile;

/// Bytes in a megabyte as the runtime's thresholds use it (10^6).
const MB: u64 = 1_000_000;

/// Link figures of the machines the ranks run on.
#[derive(Debug, Clone, PartialEq)]
pub struct Topology {
    /// Name, for example `trn2.48xlarge`.
    pub name: String,
    /// Logical cores (ranks) per chip.
    pub cores_per_chip: u32,
    /// Chips per instance.
    pub chips_per_instance: u32,
    /// Per-rank bandwidth between cores of one chip, bytes per ns.
    pub intra_chip_bytes_per_ns: f64,
    /// Latency of one step between cores of one chip, ns.
    pub intra_chip_hop_ns: u64,
    /// NeuronLink bandwidth of one chip inside an instance, bytes per ns.
    pub chip_link_bytes_per_ns: f64,
    /// Latency of one step between chips of one instance, ns.
    pub chip_hop_ns: u64,
    /// EFA bandwidth of one chip to other instances, bytes per ns.
    pub efa_bytes_per_ns_per_chip: f64,
    /// Latency of one step between instances over EFA, ns.
    pub efa_hop_ns: u64,
    /// Instances joined by a faster fabric than EFA (an UltraServer); 1: none.
    pub instances_per_pod: u32,
    /// Bandwidth of one chip to other instances of its pod, bytes per ns.
    pub pod_bytes_per_ns_per_chip: f64,
    /// Latency of one step between instances of a pod, ns.
    pub pod_hop_ns: u64,
    /// Messages below this many bytes use Mesh.
    pub mesh_below_bytes: u64,
    /// Messages above this many bytes use KangaRing.
    pub kangaring_above_bytes: u64,
}

impl Topology {
    /// Trainium2 instances (trn2.48xlarge: 16 chips in a 4×4 torus), cores as `profile`
    /// counts them.
    pub fn trn2_48xlarge(profile: &DeviceProfile) -> Self {
        let cores_per_chip = profile.physical_cores_per_chip / profile.lnc.max(1);
        // Derived: a copy between two cores of a chip reads and writes HBM, so it runs
        // at half a logical core's HBM share (hw.md Chips: 2.9 TB/s over 4 logical
        // cores at LNC=2), capped by its DMA engines (hw.md: 16 × 23 B/ns per core).
        let dma = f64::from(profile.dma_engines * profile.lnc) * profile.dma_engine_bytes_per_ns;
        let intra_chip = (profile.hbm_bytes_per_ns_per_core() / 2.0).min(dma);
        Topology {
            name: "trn2.48xlarge".into(),
            cores_per_chip,
            chips_per_instance: 16, // hw.md Instances: 16 Trainium2 chips per trn2.48xlarge
            intra_chip_bytes_per_ns: intra_chip,
            intra_chip_hop_ns: 1_000, // hw.md Collectives: 1–2 µs per hop inside an instance (low end on one chip)
            chip_link_bytes_per_ns: 1_024.0, // hw.md Instances: NeuronLink 1,024 GB/s per chip (the 1.28 TB/s chip figure not used)
            chip_hop_ns: 2_000, // hw.md Collectives: 1–2 µs per hop inside an instance (high end between chips)
            efa_bytes_per_ns_per_chip: 25.0, // hw.md Instances: EFA 200 Gb/s per chip
            efa_hop_ns: 15_000, // hw.md Collectives: ~15 µs per hop between instances over EFA
            instances_per_pod: 1,
            pod_bytes_per_ns_per_chip: 25.0, // unused with one instance per pod: EFA's
            pod_hop_ns: 15_000,
            mesh_below_bytes: MB, // hw.md Collectives: Mesh for messages < 1 MB
            kangaring_above_bytes: 56 * MB, // hw.md Collectives: KangaRing > 56 MB
        }
    }

    /// A Trn2 UltraServer: 4 trn2.48xlarge instances, 64 chips in a 3D torus, with
    /// 256 GB/s per chip between its instances (hw.md Instances); EFA beyond it.
    ///
    /// The hop latency between its instances is taken as the high end inside an
    /// instance (2 µs): the links are NeuronLink, not EFA (hw.md gives no figure).
    pub fn trn2_ultraserver(profile: &DeviceProfile) -> Self {
        Topology {
            name: "trn2-ultraserver".into(),
            instances_per_pod: 4, // hw.md Instances: 4 instances, 64 chips
            pod_bytes_per_ns_per_chip: 256.0, // hw.md Instances: 256 GB/s per chip between instances
            pod_hop_ns: 2_000,
            ..Self::trn2_48xlarge(profile)
        }
    }

    /// A Trn3 UltraServer of `servers` servers of 16 chips (4: 64 chips; 9: 144 chips),
    /// all-to-all through a switch (hw.md Instances): every chip reaches every other
    /// one at its full NeuronLink-v4 bandwidth (2,560 GB/s, hw.md Chips) in one hop,
    /// within a server and across servers alike. EFA beyond it, with Trainium2's
    /// figures (hw.md gives none for Trn3).
    pub fn trn3_ultraserver(profile: &DeviceProfile, servers: u32) -> Self {
        let chip_link = 2_560.0; // hw.md Chips: NeuronLink-v4, 2.56 TB/s per chip
        let hop = 2_000; // one switch hop: the high end of hw.md's 1–2 µs
        Topology {
            name: format!("trn3-ultraserver-{}", 16 * servers),
            chips_per_instance: 16, // hw.md Instances: 4 servers × 16 chips
            chip_link_bytes_per_ns: chip_link,
            chip_hop_ns: hop,
            instances_per_pod: servers.max(1),
            pod_bytes_per_ns_per_chip: chip_link,
            pod_hop_ns: hop,
            ..Self::trn2_48xlarge(profile)
        }
    }

    /// The topology a run gets by default on `profile`: a trn2.48xlarge for
    /// Trainium2, a 64-chip Trn3 UltraServer for Trainium3.
    pub fn for_profile(profile: &DeviceProfile) -> Self {
        if profile.name.starts_with("trn3") {
            Self::trn3_ultraserver(profile, 4)
        } else {
            Self::trn2_48xlarge(profile)
        }
    }

    /// A built-in topology by name: `trn2.48xlarge`, `trn2-ultraserver`,
    /// `trn3-ultraserver` (64 chips) or `trn3-ultraserver-144`.
    pub fn builtin(name: &str, profile: &DeviceProfile) -> Option<Self> {
        match name {
            "trn2.48xlarge" => Some(Self::trn2_48xlarge(profile)),
            "trn2-ultraserver" => Some(Self::trn2_ultraserver(profile)),
            "trn3-ultraserver" | "trn3-ultraserver-64" => Some(Self::trn3_ultraserver(profile, 4)),
            "trn3-ultraserver-144" => Some(Self::trn3_ultraserver(profile, 9)),
            _ => None,
        }
    }

    /// Names [`Topology::builtin`] accepts.
    pub const BUILTIN_NAMES: [&'static str; 4] = [
        "trn2.48xlarge",
        "trn2-ultraserver",
        "trn3-ultraserver",
        "trn3-ultraserver-144",
    ];

    /// Ranks per instance.
    pub fn ranks_per_instance(&self) -> usize {
        (self.cores_per_chip * self.chips_per_instance) as usize
    }

    /// The chip of global rank `rank` (counted over all instances).
    pub fn chip_of(&self, rank: usize) -> usize {
        rank / self.cores_per_chip.max(1) as usize
    }

    /// The instance of global rank `rank`.
    pub fn instance_of(&self, rank: usize) -> usize {
        rank / self.ranks_per_instance().max(1)
    }

    /// The pod (UltraServer) of global rank `rank`.
    pub fn pod_of(&self, rank: usize) -> usize {
        self.instance_of(rank) / self.instances_per_pod.max(1) as usize
    }

    /// The local device index (`neuron:i` within its instance) of global rank `rank`.
    pub fn local_device_of(&self, rank: usize) -> usize {
        rank % self.ranks_per_instance().max(1)
    }

    /// Where global rank `rank` sits and this topology's link figures, as the trace's
    /// `neuron_topology` member states them for analyses (`analysis`'s `NeuronPlace`):
    /// `{"topology", "chip", "instance", "pod", "intra_chip_gbps", "chip_link_gbps",
    /// "pod_gbps", "efa_gbps"}`, bandwidths per chip in GB/s (bytes per ns). An analysis
    /// finds a group's link from its ranks' members by the rule of [`Topology::link`].
    pub fn trace_place(&self, rank: usize) -> serde_json::Value {
        serde_json::json!({
            "topology": self.name,
            "chip": self.chip_of(rank),
            "instance": self.instance_of(rank),
            "pod": self.pod_of(rank),
            "intra_chip_gbps": self.intra_chip_bytes_per_ns,
            "chip_link_gbps": self.chip_link_bytes_per_ns,
            "pod_gbps": self.pod_bytes_per_ns_per_chip,
            "efa_gbps": self.efa_bytes_per_ns_per_chip,
        })
    }

    /// Per-rank bandwidth (bytes per ns) and per-step latency (ns) of a group of
    /// `ranks`: those of the slowest level the group spans.
    pub fn link(&self, ranks: &[usize]) -> (f64, u64) {
        let mut per_chip = std::collections::HashMap::<usize, usize>::new();
        for &rank in ranks {
            *per_chip.entry(self.chip_of(rank)).or_default() += 1;
        }
        let sharing = per_chip.values().copied().max().unwrap_or(1).max(1) as f64;
        let first = ranks.first().copied().unwrap_or(0);
        let one_chip = per_chip.len() <= 1;
        let one_instance = ranks
            .iter()
            .all(|&r| self.instance_of(r) == self.instance_of(first));
        let one_pod = ranks.iter().all(|&r| self.pod_of(r) == self.pod_of(first));
        if one_chip {
            (self.intra_chip_bytes_per_ns, self.intra_chip_hop_ns)
        } else if one_instance {
            let bw = (self.chip_link_bytes_per_ns / sharing).min(self.intra_chip_bytes_per_ns);
            (bw, self.chip_hop_ns)
        } else if one_pod {
            // A ring or tree across the pod crosses both the instance links and the
            // pod links: the slower sets the pace.
            let chip = self
                .chip_link_bytes_per_ns
                .min(self.pod_bytes_per_ns_per_chip);
            let bw = (chip / sharing).min(self.intra_chip_bytes_per_ns);
            (bw, self.chip_hop_ns.max(self.pod_hop_ns))
        } else {
            let bw = (self.efa_bytes_per_ns_per_chip / sharing).min(self.intra_chip_bytes_per_ns);
            (bw, self.efa_hop_ns)
        }
    }

    /// The shared links a collective of the global `ranks` moves its bytes through, with
    /// its demand on each: on every chip it has ranks on, that chip's link at the slowest
    /// level the group spans (NeuronLink inside an instance, the UltraServer's links
    /// inside a pod, EFA beyond), at its per-rank bandwidth times its ranks on the chip.
    /// None for a group inside one chip (its traffic goes through HBM and the cores' DMA
    /// engines, which the timing model shares already).
    pub fn link_uses(&self, ranks: &[usize]) -> Vec<LinkUse> {
        let mut per_chip = std::collections::BTreeMap::<usize, usize>::new();
        for &rank in ranks {
            *per_chip.entry(self.chip_of(rank)).or_default() += 1;
        }
        if per_chip.len() <= 1 {
            return Vec::new();
        }
        let first = ranks.first().copied().unwrap_or(0);
        let one_instance = ranks
            .iter()
            .all(|&r| self.instance_of(r) == self.instance_of(first));
        let one_pod = ranks.iter().all(|&r| self.pod_of(r) == self.pod_of(first));
        let (bw, _) = self.link(ranks);
        per_chip
            .into_iter()
            .map(|(chip, n)| {
                let (link, capacity) = if one_instance {
                    (LinkId::Chip(chip), self.chip_link_bytes_per_ns)
                } else if one_pod {
                    (
                        LinkId::Pod(chip),
                        self.chip_link_bytes_per_ns
                            .min(self.pod_bytes_per_ns_per_chip),
                    )
                } else {
                    (LinkId::Efa(chip), self.efa_bytes_per_ns_per_chip)
                };
                LinkUse {
                    link,
                    demand_bytes_per_ns: bw * n as f64,
                    capacity_bytes_per_ns: capacity,
                }
            })
            .collect()
    }

    /// The algorithm for a message of `bytes` over `group_size` ranks.
    pub fn algorithm(
        &self,
        op: CollectiveOp,
        bytes: u64,
        group_size: usize,
    ) -> CollectiveAlgorithm {
        if matches!(op, CollectiveOp::Send | CollectiveOp::Recv) || group_size <= 1 {
            return CollectiveAlgorithm::Unspecified;
        }
        if bytes < self.mesh_below_bytes {
            CollectiveAlgorithm::Mesh
        } else if bytes > self.kangaring_above_bytes {
            CollectiveAlgorithm::KangaRing
        } else if group_size.is_power_of_two() {
            CollectiveAlgorithm::RecursiveDoubling
        } else {
            CollectiveAlgorithm::Ring
        }
    }

    /// The modeled cost of collective `op` over the global `ranks` with a message of
    /// `bytes` (the full buffer: the input of an all-reduce, reduce-scatter, all-to-all,
    /// broadcast or send, the output of an all-gather).
    ///
    /// An all-reduce, all-gather or reduce-scatter over several instances that each
    /// hold `m > 1` of the group's ranks is hierarchical: an all-reduce is a
    /// reduce-scatter inside each instance, an all-reduce of the `1/m` shards across
    /// instances, an all-gather inside each instance; an all-gather gathers the shards
    /// across instances, then everything inside; a reduce-scatter reduce-scatters
    /// inside, then the shards across. All-to-all, broadcast and send stay flat: every
    /// byte an all-to-all sends to another instance crosses the slow links whatever
    /// the order, and a broadcast's root sends the message once per step either way.
    pub fn cost(&self, op: CollectiveOp, bytes: u64, ranks: &[usize]) -> CollectiveCost {
        self.hierarchical(op, bytes, ranks)
            .unwrap_or_else(|| self.flat_cost(op, bytes, ranks))
    }

    /// The hierarchical form of an all-reduce, all-gather or reduce-scatter whose
    /// ranks span several instances with `m > 1` of them in each (the same number):
    /// the instance-local part over the fast links, the cross-instance part over the
    /// `1/m` shards, the instances' `m` links to the others working in parallel.
    fn hierarchical(
        &self,
        op: CollectiveOp,
        bytes: u64,
        ranks: &[usize],
    ) -> Option<CollectiveCost> {
        // (the local phase, how many times it runs, cross-instance passes)
        let (local_op, local_runs, passes) = match op {
            // reduce-scatter inside, all-reduce of the shards across, all-gather inside
            CollectiveOp::AllReduce => (CollectiveOp::ReduceScatter, 2, 2),
            // all-gather of the shards across, then of everything inside
            CollectiveOp::AllGather => (CollectiveOp::AllGather, 1, 1),
            // reduce-scatter inside, then of the shards across
            CollectiveOp::ReduceScatter => (CollectiveOp::ReduceScatter, 1, 1),
            _ => return None,
        };
        let mut per_instance = std::collections::BTreeMap::<usize, Vec<usize>>::new();
        for &rank in ranks {
            per_instance
                .entry(self.instance_of(rank))
                .or_default()
                .push(rank);
        }
        let m = per_instance.values().next()?.len();
        if per_instance.len() < 2 || m < 2 || per_instance.values().any(|r| r.len() != m) {
            return None;
        }
        let local = per_instance.values().next()?;
        let intra = self.flat_cost(local_op, bytes, local);
        // One rank per instance stands for its shard's cross-instance part; the links
        // between instances are shared as the whole group shares them.
        let (inter_bw, inter_hop) = self.link(ranks);
        let n = per_instance.len();
        let shard = bytes / m as u64;
        let inter_alg = self.algorithm(op, shard, n);
        let inter_steps = passes * self.pass_steps(inter_alg, n);
        let inter_wire =
            (shard as f64 * passes as f64 * (n as f64 - 1.0) / n as f64).round() as u64;
        let inter_ns = inter_steps * inter_hop + (inter_wire as f64 / inter_bw).round() as u64;
        Some(CollectiveCost {
            algorithm: CollectiveAlgorithm::Hierarchical,
            steps: local_runs * intra.steps + inter_steps,
            wire_bytes: local_runs * intra.wire_bytes + inter_wire,
            dur_ns: local_runs * intra.dur_ns + inter_ns,
            latency_ns: local_runs * intra.latency_ns + inter_steps * inter_hop,
        })
    }

    /// Latency-bound steps of one pass (a reduce-scatter or an all-gather) of
    /// `algorithm` over `r` ranks.
    fn pass_steps(&self, algorithm: CollectiveAlgorithm, r: usize) -> u64 {
        let log_r = (r as f64).log2().ceil() as u64;
        let half_r = r.div_ceil(2) as u64;
        match algorithm {
            CollectiveAlgorithm::Mesh => 1,
            CollectiveAlgorithm::RecursiveDoubling => log_r,
            CollectiveAlgorithm::KangaRing => half_r,
            CollectiveAlgorithm::Ring => r as u64 - 1,
            _ => u64::from(r > 1),
        }
    }

    /// The cost without hierarchy: every step at the pace of the slowest level.
    fn flat_cost(&self, op: CollectiveOp, bytes: u64, ranks: &[usize]) -> CollectiveCost {
        let r = ranks.len().max(1);
        let algorithm = self.algorithm(op, bytes, r);
        let (bytes_per_ns, hop_ns) = self.link(ranks);
        let rf = r as f64;
        let wire_factor = match op {
            CollectiveOp::AllReduce => 2.0 * (rf - 1.0) / rf,
            CollectiveOp::AllGather | CollectiveOp::ReduceScatter | CollectiveOp::AllToAll => {
                (rf - 1.0) / rf
            }
            CollectiveOp::Barrier => 0.0,
            _ if r == 1 => 0.0,
            _ => 1.0,
        };
        let one_pass = self.pass_steps(algorithm, r);
        // An all-reduce is a reduce-scatter then an all-gather: two passes.
        let steps = match op {
            CollectiveOp::AllReduce => 2 * one_pass,
            _ => one_pass,
        };
        let wire_bytes = (bytes as f64 * wire_factor).round() as u64;
        let latency_ns = steps * hop_ns;
        let dur_ns = latency_ns + (wire_bytes as f64 / bytes_per_ns).round() as u64;
        CollectiveCost {
            algorithm,
            steps,
            wire_bytes,
            dur_ns: dur_ns.max(1),
            latency_ns: latency_ns.min(dur_ns.max(1)),
        }
    }
}

/// What the model says a collective costs alone (no other traffic on its links or
/// DMA engines).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CollectiveCost {
    /// The algorithm chosen.
    pub algorithm: CollectiveAlgorithm,
    /// Latency-bound steps.
    pub steps: u64,
    /// Bytes each rank sends over its links.
    pub wire_bytes: u64,
    /// Modeled duration in ns: `latency_ns` plus the wire bytes at the links' rate.
    pub dur_ns: u64,
    /// The steps' hop latencies together, ns.
    pub latency_ns: u64,
}

impl CollectiveCost {
    /// Bytes per ns each rank moves while transferring (0 without wire bytes).
    pub fn transfer_bytes_per_ns(&self) -> f64 {
        let transfer_ns = self.dur_ns.saturating_sub(self.latency_ns);
        if self.wire_bytes == 0 || transfer_ns == 0 {
            0.0
        } else {
            self.wire_bytes as f64 / transfer_ns as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo() -> Topology {
        Topology::trn2_48xlarge(&DeviceProfile::trn2())
    }

    #[test]
    fn algorithm_follows_message_size() {
        let t = topo();
        let ar = CollectiveOp::AllReduce;
        assert_eq!(t.algorithm(ar, 512 * 1024, 8), CollectiveAlgorithm::Mesh);
        assert_eq!(
            t.algorithm(ar, 8 * MB, 8),
            CollectiveAlgorithm::RecursiveDoubling
        );
        assert_eq!(t.algorithm(ar, 8 * MB, 6), CollectiveAlgorithm::Ring);
        assert_eq!(t.algorithm(ar, 100 * MB, 8), CollectiveAlgorithm::KangaRing);
    }

    #[test]
    fn ultraservers_join_instances_faster_than_efa() {
        let p = DeviceProfile::trn2();
        let us = Topology::trn2_ultraserver(&p);
        // Ranks 0 and 64: chips 0 and 16, instances 0 and 1 of pod 0.
        assert_eq!((us.pod_of(64), us.pod_of(255), us.pod_of(256)), (0, 0, 1));
        assert_eq!(us.link(&[0, 64]), (256.0, 2_000));
        assert_eq!(
            us.link(&[0, 256]),
            (25.0, 15_000),
            "EFA between UltraServers"
        );
        assert_eq!(
            topo().link(&[0, 64]),
            (25.0, 15_000),
            "EFA between instances"
        );
        let p3 = DeviceProfile::trn3();
        let t3 = Topology::for_profile(&p3);
        assert_eq!(t3.name, "trn3-ultraserver-64");
        // The switch: as fast across servers as inside one.
        assert_eq!(t3.link(&[0, 4]), t3.link(&[0, 64]));
        assert_eq!(
            t3.link(&[0, 64]),
            (2_560.0_f64.min(t3.intra_chip_bytes_per_ns), 2_000)
        );
        let names: Vec<String> = Topology::BUILTIN_NAMES
            .iter()
            .map(|n| Topology::builtin(n, &p).unwrap().name)
            .collect();
        assert_eq!(
            names,
            [
                "trn2.48xlarge",
                "trn2-ultraserver",
                "trn3-ultraserver-64",
                "trn3-ultraserver-144"
            ]
        );
        assert!(Topology::builtin("trn1", &p).is_none());
    }

    #[test]
    fn the_slowest_level_sets_the_pace() {
        let t = topo();
        assert_eq!(t.cores_per_chip, 4);
        let (chip_bw, chip_hop) = t.link(&[0, 1, 2, 3]);
        let (inst_bw, inst_hop) = t.link(&[0, 1, 2, 3, 4, 5, 6, 7]);
        let (efa_bw, efa_hop) = t.link(&[0, 64]);
        assert!(chip_bw > inst_bw && inst_bw > efa_bw);
        assert!(chip_hop < inst_hop && inst_hop < efa_hop);
        // Four ranks of a chip share its 1,024 B/ns of NeuronLink.
        assert_eq!(inst_bw, 256.0);
        assert_eq!(efa_bw, 25.0);
        assert_eq!(t.instance_of(64), 1);
        assert_eq!(t.local_device_of(65), 1);
    }
}
