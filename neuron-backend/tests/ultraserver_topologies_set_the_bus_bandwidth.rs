//! The Trn2 UltraServer (4 instances joined at 256 GB/s per chip) and the Trn3
//! UltraServer (chips all-to-all through a switch) against the bus-bandwidth formulas:
//! large collectives across instances run at the pod links' pace, not EFA's.

use neuron_backend::dist::{ReduceOp, Topology, World, WorldConfig};
use neuron_backend::{DType, DeviceProfile};

const MIB: usize = 1 << 20;

/// Ranks one per chip and one chip per instance, so `ranks` ranks span `ranks`
/// instances of `topology`'s pods.
fn one_rank_per_instance(topology: Topology) -> Topology {
    Topology {
        cores_per_chip: 1,
        chips_per_instance: 1,
        ..topology
    }
}

fn world(ranks: usize, profile: DeviceProfile, topology: Topology) -> World {
    let mut config = WorldConfig::new(ranks);
    config.numerics = false;
    config.profile = profile;
    config.topology = Some(topology);
    World::new(config).unwrap()
}

/// All-reduce (or all-gather) bus bandwidth in bytes per ns of a `message_bytes`
/// collective over every rank of `world`, from the last rank ready to the common end.
fn bus_bw(world: &World, gather: bool, message_bytes: usize) -> f64 {
    let r = world.world_size();
    let spans = world.run(|rank| {
        let g = rank.world_group();
        let elems = message_bytes / 4 / if gather { r } else { 1 };
        let x = rank.device().zeros(&[elems], DType::F32).unwrap();
        let work = if gather {
            g.all_gather_async(&x)
        } else {
            g.all_reduce_async(&x, ReduceOp::Sum)
        }
        .unwrap();
        let end_ns = work.end_ns();
        drop(work.wait());
        (rank.device().last_kernel().unwrap().start_ns, end_ns)
    });
    let ready = spans.iter().map(|s| s.0).max().unwrap();
    assert!(spans.iter().all(|s| s.1 == spans[0].1), "{spans:?}");
    let ns = (spans[0].1 - ready) as f64;
    let rf = r as f64;
    let factor = if gather {
        (rf - 1.0) / rf
    } else {
        2.0 * (rf - 1.0) / rf
    };
    message_bytes as f64 / ns * factor
}

#[test]
fn trn2_ultraserver_instances_talk_at_256_gb_per_s_per_chip() {
    let profile = DeviceProfile::trn2();
    let ultra = one_rank_per_instance(Topology::trn2_ultraserver(&profile));
    let separate = Topology {
        instances_per_pod: 1,
        ..ultra.clone()
    };
    let s = 256 * MIB;
    for gather in [false, true] {
        // Four instances of one UltraServer.
        let bw = bus_bw(&world(4, profile.clone(), ultra.clone()), gather, s);
        eprintln!("trn2 UltraServer, 4 instances, gather {gather}: bus bandwidth {bw:.1} B/ns");
        assert!(bw > 0.98 * 256.0 && bw <= 256.0, "{bw}");
        // The same four instances without the UltraServer links: EFA.
        let efa = bus_bw(
            &world(4, profile.clone(), separate.clone()),
            gather,
            64 * MIB,
        );
        eprintln!("4 separate instances, gather {gather}: bus bandwidth {efa:.2} B/ns");
        assert!(efa > 0.98 * 25.0 && efa <= 25.0, "{efa}");
    }
    // Eight ranks on two UltraServers: EFA between them sets the pace.
    let bw = bus_bw(&world(8, profile, ultra), false, s);
    assert!(bw > 0.98 * 25.0 && bw <= 25.0, "{bw}");
}

#[test]
fn trn3_ultraserver_switch_is_as_fast_across_servers_as_inside_one() {
    let profile = DeviceProfile::trn3();
    let ultra = Topology::for_profile(&profile);
    assert_eq!(ultra.name, "trn3-ultraserver-64");
    // Two ranks on two chips of one server, and on two servers (one chip each).
    let one_server = Topology {
        cores_per_chip: 1,
        ..ultra.clone()
    };
    let across = one_rank_per_instance(ultra.clone());
    let s = 256 * MIB;
    let inside = bus_bw(&world(2, profile.clone(), one_server), false, s);
    let between = bus_bw(&world(2, profile, across.clone()), false, s);
    let link = across
        .chip_link_bytes_per_ns
        .min(across.intra_chip_bytes_per_ns);
    eprintln!("trn3 UltraServer: inside a server {inside:.1} B/ns, across servers {between:.1} B/ns (link {link:.1})");
    assert!(
        between > 0.98 * link && between <= link,
        "{between} vs {link}"
    );
    assert!(
        (inside - between).abs() < 1e-9 * inside,
        "{inside} vs {between}"
    );
}
