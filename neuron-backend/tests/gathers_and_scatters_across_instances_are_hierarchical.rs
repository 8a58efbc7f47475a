//! All-gather and reduce-scatter over ranks on several instances run hierarchically,
//! like all-reduce: the instance-local part over the chip's links, the cross-instance
//! part over the `1/m` shards only; checked against the formula to the nanosecond.

use neuron_backend::dist::{ReduceOp, Topology, World, WorldConfig};
use neuron_backend::{DType, DeviceProfile};
use runtime_hooks::CollectiveAlgorithm;

const MIB: usize = 1 << 20;

/// Modeled time of one collective over every rank of `world` (last ready to end).
fn collective_ns(world: &World, gather: bool, message_bytes: usize) -> u64 {
    let r = world.world_size();
    let spans = world.run(|rank| {
        let g = rank.world_group();
        let elems = message_bytes / 4 / if gather { r } else { 1 };
        let x = rank.device().zeros(&[elems], DType::F32).unwrap();
        let work = if gather {
            g.all_gather_async(&x)
        } else {
            g.reduce_scatter_async(&x, ReduceOp::Sum)
        }
        .unwrap();
        let end_ns = work.end_ns();
        drop(work.wait());
        (rank.device().last_kernel().unwrap().start_ns, end_ns)
    });
    let ready = spans.iter().map(|s| s.0).max().unwrap();
    assert!(spans.iter().all(|s| s.1 == spans[0].1), "{spans:?}");
    spans[0].1 - ready
}

#[test]
fn gathers_and_scatters_across_instances_are_hierarchical() {
    let profile = DeviceProfile::trn2();
    // Eight ranks, four per instance (one chip each).
    let t = Topology {
        chips_per_instance: 1,
        ..Topology::trn2_48xlarge(&profile)
    };
    let mut config = WorldConfig::new(8);
    config.numerics = false;
    config.topology = Some(t.clone());
    let world = World::new(config).unwrap();
    let m = 64 * MIB;
    let ranks: Vec<usize> = (0..8).collect();
    for (gather, op) in [
        (true, runtime_hooks::CollectiveOp::AllGather),
        (false, runtime_hooks::CollectiveOp::ReduceScatter),
    ] {
        let ns = collective_ns(&world, gather, m);
        assert_eq!(
            t.cost(op, m as u64, &ranks).algorithm,
            CollectiveAlgorithm::Hierarchical
        );
        // Inside the chip: KangaRing (64 MiB > 56 MB), 2 steps of 1 µs, 3/4 of the
        // message through HBM. Across: the 16 MiB shard by recursive doubling over 2
        // instances, 1 step of 15 µs, 1/2 of it over EFA shared by the chip's 4 ranks.
        let intra =
            2.0 * t.intra_chip_hop_ns as f64 + (m as f64 * 0.75 / t.intra_chip_bytes_per_ns);
        let inter =
            t.efa_hop_ns as f64 + (m as f64 / 4.0 * 0.5 / (t.efa_bytes_per_ns_per_chip / 4.0));
        let expect = intra + inter;
        // Flat, every byte would cross EFA at 6.25 B/ns per rank.
        let flat = m as f64 * 7.0 / 8.0 / (t.efa_bytes_per_ns_per_chip / 4.0);
        eprintln!(
            "{op:?} 64 MiB, 8 ranks on 2 instances: {ns} ns (model {expect:.0}, flat {flat:.0})"
        );
        assert!((ns as f64 - expect).abs() < 3.0, "{op:?}: {ns} vs {expect}");
        assert!((ns as f64) < flat / 3.0);
    }
}
