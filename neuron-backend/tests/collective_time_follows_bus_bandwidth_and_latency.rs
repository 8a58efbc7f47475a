//! The collective timing model against the bus-bandwidth formulas nccl-tests and
//! nccom-test report (all-reduce 2(r−1)/r, all-gather and reduce-scatter (r−1)/r) on
//! large messages, and latency-bound behaviour on small ones (timing only).

use neuron_backend::dist::{ReduceOp, Topology, World, WorldConfig};
use neuron_backend::{DType, DeviceProfile};

const MIB: usize = 1 << 20;

#[derive(Debug, Clone, Copy)]
enum Kind {
    AllReduce,
    AllGather,
    ReduceScatter,
}

/// Modeled time (ns) of one collective over `world`, from the instant the last rank was
/// ready to the common end; `elems` f32 elements per rank input.
fn collective_ns(world: &World, kind: Kind, elems: usize) -> u64 {
    let spans = world.run(|rank| {
        let x = rank.device().zeros(&[elems], DType::F32).unwrap();
        let g = rank.world_group();
        let work = match kind {
            Kind::AllReduce => g.all_reduce_async(&x, ReduceOp::Sum),
            Kind::AllGather => g.all_gather_async(&x),
            Kind::ReduceScatter => g.reduce_scatter_async(&x, ReduceOp::Sum),
        }
        .unwrap();
        let end_ns = work.end_ns();
        drop(work.wait());
        (rank.device().last_kernel().unwrap().start_ns, end_ns)
    });
    let last_ready = spans.iter().map(|s| s.0).max().unwrap();
    let end = spans[0].1;
    assert!(
        spans.iter().all(|s| s.1 == end),
        "one end instant: {spans:?}"
    );
    end - last_ready
}

fn world(ranks: usize, topology: Option<Topology>) -> World {
    let mut config = WorldConfig::new(ranks);
    config.numerics = false;
    config.topology = topology;
    World::new(config).unwrap()
}

/// Bus bandwidth in bytes per ns, as nccl-tests computes it from the message size.
fn bus_bw(kind: Kind, message_bytes: usize, ranks: usize, ns: u64) -> f64 {
    let r = ranks as f64;
    let factor = match kind {
        Kind::AllReduce => 2.0 * (r - 1.0) / r,
        Kind::AllGather | Kind::ReduceScatter => (r - 1.0) / r,
    };
    message_bytes as f64 / ns as f64 * factor
}

#[test]
fn large_messages_reach_the_link_bandwidth_by_the_bus_bandwidth_formulas() {
    let profile = DeviceProfile::trn2();
    let topology = Topology::trn2_48xlarge(&profile);
    // Eight ranks on two chips of one instance: four share each chip's NeuronLink.
    let link = topology.chip_link_bytes_per_ns / 4.0;
    let w = world(8, None);
    let s = 256 * MIB;
    for (kind, elems, message) in [
        (Kind::AllReduce, s / 4, s),
        (Kind::ReduceScatter, s / 4, s),
        (Kind::AllGather, s / 4 / 8, s),
    ] {
        let ns = collective_ns(&w, kind, elems);
        let bw = bus_bw(kind, message, 8, ns);
        eprintln!(
            "{kind:?} 256 MiB over 8 ranks: {ns} ns, bus bandwidth {bw:.1} B/ns (link {link})"
        );
        assert!(bw > 0.98 * link && bw <= link, "{kind:?}: {bw} vs {link}");
    }
    // Four ranks of one chip talk through HBM, faster than NeuronLink.
    let chip = world(4, None);
    let ns = collective_ns(&chip, Kind::AllReduce, s / 4);
    let bw = bus_bw(Kind::AllReduce, s, 4, ns);
    eprintln!("AllReduce 256 MiB on one chip: bus bandwidth {bw:.1} B/ns");
    assert!(bw > 0.98 * topology.intra_chip_bytes_per_ns && bw > link);
    // Two ranks on two instances: a flat all-reduce over EFA at 25 B/ns per chip.
    let two_instances = Topology {
        cores_per_chip: 1,
        chips_per_instance: 1,
        ..topology.clone()
    };
    let efa = world(2, Some(two_instances.clone()));
    let ns = collective_ns(&efa, Kind::AllReduce, 64 * MIB / 4);
    let bw = bus_bw(Kind::AllReduce, 64 * MIB, 2, ns);
    let efa_link = two_instances.efa_bytes_per_ns_per_chip;
    eprintln!("AllReduce 64 MiB over EFA, 2 ranks: bus bandwidth {bw:.2} B/ns (link {efa_link})");
    assert!(bw > 0.98 * efa_link && bw <= efa_link);
    // Eight ranks, four per instance (one chip each): hierarchical. Reduce-scatter
    // inside the chip, all-reduce of quarter shards over EFA (25 B/ns shared by the
    // chip's four ranks), all-gather inside the chip.
    let hier_topology = Topology {
        chips_per_instance: 1,
        ..topology.clone()
    };
    let hier = world(8, Some(hier_topology.clone()));
    let s = 64 * MIB;
    let ns = collective_ns(&hier, Kind::AllReduce, s / 4);
    let intra = 2.0 * (s as f64 * 3.0 / 4.0 / hier_topology.intra_chip_bytes_per_ns);
    let inter = (s / 4) as f64 * 2.0 * 0.5 / (hier_topology.efa_bytes_per_ns_per_chip / 4.0);
    // Latency: KangaRing inside (64 MiB > 56 MB: 2 steps of 1 µs per pass, two
    // passes), recursive doubling across (16 MiB, 2 instances: 2 steps of 15 µs).
    let latency =
        2.0 * 2.0 * hier_topology.intra_chip_hop_ns as f64 + 2.0 * hier_topology.efa_hop_ns as f64;
    let expect = intra + inter + latency;
    eprintln!(
        "AllReduce 64 MiB, 8 ranks on 2 instances, hierarchical: {ns} ns (model {expect:.0} ns)"
    );
    assert!((ns as f64 - expect).abs() < 3.0, "{ns} vs {expect}");
}

#[test]
fn small_messages_are_latency_bound() {
    let topology = Topology::trn2_48xlarge(&DeviceProfile::trn2());
    let w = world(8, None);
    let small = collective_ns(&w, Kind::AllReduce, 1024); // 4 KiB
    let double = collective_ns(&w, Kind::AllReduce, 2048);
    // Mesh: a reduce-scatter step and an all-gather step, each one inter-chip hop.
    let latency = 2 * topology.chip_hop_ns;
    eprintln!("AllReduce 4 KiB: {small} ns, 8 KiB: {double} ns (2 hops = {latency} ns)");
    assert!(
        small >= latency && small < latency + latency / 50,
        "{small}"
    );
    assert!(
        (double - small) * 50 < small,
        "doubling a small message barely matters"
    );
    // Over EFA a hop costs ~15 µs.
    let efa = world(
        2,
        Some(Topology {
            cores_per_chip: 1,
            chips_per_instance: 1,
            ..topology.clone()
        }),
    );
    let ns = collective_ns(&efa, Kind::AllReduce, 1024);
    assert!(
        ns >= 2 * topology.efa_hop_ns && ns < 2 * topology.efa_hop_ns + 2_000,
        "{ns}"
    );
    // Recursive doubling for mid-size messages: 2 log2(8) = 6 hops plus the wire time.
    let mid = collective_ns(&w, Kind::AllReduce, 4 * MIB / 4);
    let wire = (4 * MIB) as f64 * 2.0 * 7.0 / 8.0 / 256.0;
    let expect = 6 * topology.chip_hop_ns + wire.round() as u64;
    assert!(mid.abs_diff(expect) <= 1, "{mid} vs {expect}");
}
