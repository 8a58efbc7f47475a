//! A wait queued on a stream is work of that stream (as `cudaStreamWaitEvent` is): an
//! event recorded after it, a host synchronize and a collective whose input comes from
//! that stream all come after the instant waited for, even with no kernel queued since.

use neuron_backend::dist::{ReduceOp, World, WorldConfig};
use neuron_backend::{DType, QueueKind};

const MIB: usize = 1 << 20;

fn world(ranks: usize) -> World {
    let mut config = WorldConfig::new(ranks);
    config.numerics = false;
    World::new(config).unwrap()
}

#[test]
fn an_event_recorded_after_a_wait_completes_after_the_awaited_event() {
    let w = world(1);
    w.run(|rank| {
        let d = rank.device();
        let big = d.zeros(&[32 * MIB], DType::F32).unwrap();
        let _ = big.add(&big).unwrap();
        let busy = d.default_stream().record_event();
        let side = d.stream(QueueKind::TensorOp, 0).unwrap();
        side.wait_event(&busy);
        let after = side.record_event();
        assert!(
            after.ready_ns() >= busy.ready_ns(),
            "{} < {}",
            after.ready_ns(),
            busy.ready_ns()
        );
        assert!(side.synchronize() >= busy.ready_ns());
    });
}

#[test]
fn a_collective_after_waiting_for_another_groups_collective_starts_after_it() {
    let w = world(2);
    // The world group takes the first collective queue, `other` the second: nothing
    // but the current stream's wait orders them.
    w.new_group("other", &[0, 1]).unwrap();
    w.run(|rank| {
        let d = rank.device();
        let x = d.zeros(&[16 * MIB], DType::F32).unwrap();
        rank.world_group().barrier().unwrap();
        let first = rank
            .world_group()
            .all_reduce_async(&x, ReduceOp::Sum)
            .unwrap();
        let first_end_ns = first.end_ns();
        drop(first.wait());
        let other = rank.group("other").unwrap();
        assert_ne!(other.queue(), rank.world_group().queue());
        let second = other.all_reduce_async(&x, ReduceOp::Sum).unwrap();
        let kernel = d.last_kernel().unwrap();
        assert!(
            runtime_hooks::clock::now_ns() < first_end_ns,
            "the host launched the second collective after the first ended"
        );
        assert!(
            kernel.start_ns >= first_end_ns,
            "{} < {first_end_ns}",
            kernel.start_ns
        );
        drop(second.wait());
    });
}
