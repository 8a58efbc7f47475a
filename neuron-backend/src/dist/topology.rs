//! Where ranks sit and how fast they talk: the collective cost model.
//!
//! Rank `r` drives logical core `r % cores_per_chip` of chip `r / cores_per_chip`;
//! chips fill an instance (`chips_per_instance`, 16 on a trn2.48xlarge) before the next
//! instance starts. A group's collective runs at the pace of the slowest level it
//! spans: cores of one chip (through HBM by DMA), chips of one instance (NeuronLink,
//! shared by the group's cores on a chip), or instances (EFA, likewise shared).
//!
//! The algorithm is chosen by message size as the Neuron runtime does (hw.md
//! Collectives): Mesh under 1 MB, recursive doubling/halving from 1 to 56 MB (when the
//! group size is a power of two), KangaRing above 56 MB, Ring otherwise. A collective
//! takes `steps × hop latency + wire bytes / per-rank bandwidth`, where the wire bytes
//! per rank are the bus-bandwidth factors nccl-tests report (all-reduce 2(r−1)/r of the
//! message, all-gather, reduce-scatter and all-to-all (r−1)/r) and the steps are those
//! of the algorithm (Mesh O(1), recursive doubling O(log r), KangaRing O(r/2), Ring
//! O(r)). An all-reduce spanning instances with several of its ranks in each is
//! hierarchical (reduce-scatter inside instances, all-reduce of the shards over EFA,
//! all-gather inside instances), as multi-node collective libraries do.

use runtime_hooks::{CollectiveAlgorithm, CollectiveOp};

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
            mesh_below_bytes: MB, // hw.md Collectives: Mesh for messages < 1 MB
            kangaring_above_bytes: 56 * MB, // hw.md Collectives: KangaRing > 56 MB
        }
    }

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

    /// The local device index (`neuron:i` within its instance) of global rank `rank`.
    pub fn local_device_of(&self, rank: usize) -> usize {
        rank % self.ranks_per_instance().max(1)
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
        if one_chip {
            (self.intra_chip_bytes_per_ns, self.intra_chip_hop_ns)
        } else if one_instance {
            let bw = (self.chip_link_bytes_per_ns / sharing).min(self.intra_chip_bytes_per_ns);
            (bw, self.chip_hop_ns)
        } else {
            let bw = (self.efa_bytes_per_ns_per_chip / sharing).min(self.intra_chip_bytes_per_ns);
            (bw, self.efa_hop_ns)
        }
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
    /// An all-reduce over several instances that each hold `m > 1` of the group's
    /// ranks is hierarchical: a reduce-scatter inside each instance, an all-reduce of
    /// the `1/m` shards across instances over EFA, an all-gather inside each instance.
    pub fn cost(&self, op: CollectiveOp, bytes: u64, ranks: &[usize]) -> CollectiveCost {
        if op == CollectiveOp::AllReduce {
            if let Some(cost) = self.hierarchical_all_reduce(bytes, ranks) {
                return cost;
            }
        }
        self.flat_cost(op, bytes, ranks)
    }

    fn hierarchical_all_reduce(&self, bytes: u64, ranks: &[usize]) -> Option<CollectiveCost> {
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
        let intra = self.flat_cost(CollectiveOp::ReduceScatter, bytes, local);
        // One rank per instance stands for its shard's cross-instance all-reduce; the
        // EFA link is shared as the whole group shares it.
        let (efa_bw, efa_hop) = self.link(ranks);
        let n = per_instance.len();
        let shard = bytes / m as u64;
        let inter_alg = self.algorithm(CollectiveOp::AllReduce, shard, n);
        let inter_steps = 2 * self.pass_steps(inter_alg, n);
        let inter_wire = (shard as f64 * 2.0 * (n as f64 - 1.0) / n as f64).round() as u64;
        let inter_ns = inter_steps * efa_hop + (inter_wire as f64 / efa_bw).round() as u64;
        Some(CollectiveCost {
            algorithm: CollectiveAlgorithm::Hierarchical,
            steps: 2 * intra.steps + inter_steps,
            wire_bytes: 2 * intra.wire_bytes + inter_wire,
            dur_ns: 2 * intra.dur_ns + inter_ns,
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
        let dur_ns = steps * hop_ns + (wire_bytes as f64 / bytes_per_ns).round() as u64;
        CollectiveCost {
            algorithm,
            steps,
            wire_bytes,
            dur_ns: dur_ns.max(1),
        }
    }
}

/// What the model says a collective costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CollectiveCost {
    /// The algorithm chosen.
    pub algorithm: CollectiveAlgorithm,
    /// Latency-bound steps.
    pub steps: u64,
    /// Bytes each rank sends over its links.
    pub wire_bytes: u64,
    /// Modeled duration in ns.
    pub dur_ns: u64,
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
