//! What a collective shares (timing only): its steps' transfers go through the DMA
//! engines compute uses, in both directions, and collectives of different groups that
//! run at the same time share the links between chips.

use neuron_backend::dist::{ReduceOp, World, WorldConfig};
use neuron_backend::{DType, Tensor};
use runtime_hooks::{DmaDirection, Event, Record};

const MIB: usize = 1 << 20;

fn world(ranks: usize) -> World {
    let mut config = WorldConfig::new(ranks);
    config.numerics = false;
    World::new(config).unwrap()
}

/// Both tests that record must not overlap.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn a_collectives_transfers_follow_its_steps() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    // 8 ranks on two chips, 4 MiB: recursive doubling, 2 × log2(8) = 6 steps.
    let w = world(8);
    runtime_hooks::set_enabled(true);
    let corr = w.run(|rank| {
        let x = rank.device().zeros(&[MIB], DType::F32).unwrap();
        let work = rank
            .world_group()
            .all_reduce_async(&x, ReduceOp::Sum)
            .unwrap();
        let kernel = rank.device().last_kernel().unwrap();
        drop(work.wait());
        (rank.rank(), kernel)
    });
    runtime_hooks::set_enabled(false);
    let mut records: Vec<Record> = Vec::new();
    runtime_hooks::drain(&mut records);
    let (_, kernel) = corr[0];
    let mut starts: Vec<u64> = records
        .iter()
        .filter_map(|r| match r.event() {
            Some(Event::Dma(DmaDirection::PeerToPeer, p)) if p.corr_id == kernel.corr_id => {
                Some(r.start_ns)
            }
            _ => None,
        })
        .collect();
    starts.sort_unstable();
    starts.dedup();
    // One batch of transfers per step, one after the other, inside the kernel's span.
    assert_eq!(starts.len(), 6, "{starts:?}");
    assert!(starts[0] >= kernel.start_ns && *starts.last().unwrap() < kernel.end_ns);
    let gaps: Vec<u64> = starts.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(
        gaps.iter().all(|&g| g > 2_000),
        "each step after a hop: {gaps:?}"
    );
}

/// The modeled span of a 64 MiB all-reduce on the world group of 2 ranks (two chips)
/// and the span of an add on 128 MiB launched right after it on the compute queue;
/// `busy` first queues a DMA-heavy add in front of the collective.
fn collective_and_add(busy: bool) -> (u64, u64) {
    let mut config = WorldConfig::new(2);
    config.numerics = false;
    // One rank per chip, so the pair crosses NeuronLink.
    config.topology = Some(neuron_backend::dist::Topology {
        cores_per_chip: 1,
        ..neuron_backend::dist::Topology::trn2_48xlarge(&config.profile)
    });
    let w = World::new(config).unwrap();
    let spans = w.run(|rank| {
        let d = rank.device();
        let big = d.zeros(&[32 * MIB], DType::F32).unwrap();
        let x = d.zeros(&[16 * MIB], DType::F32).unwrap();
        rank.world_group().barrier().unwrap();
        if busy {
            // Compute that keeps the DMA engines busy, placed before the collective on
            // a side stream (the collective's input does not wait for it).
            let side = d.stream(neuron_backend::QueueKind::TensorOp, 0).unwrap();
            side.make_current();
            let _ = big.add(&big).unwrap();
            d.default_stream().make_current();
        }
        let work = rank
            .world_group()
            .all_reduce_async(&x, ReduceOp::Sum)
            .unwrap();
        let collective = d.last_kernel().unwrap();
        let _ = big.add(&big).unwrap();
        let after = d.last_kernel().unwrap();
        drop(work.wait());
        (collective.dur_ns(), after.dur_ns())
    });
    spans[0]
}

#[test]
fn compute_and_collectives_hold_each_other_up_through_the_dma_engines() {
    let (alone, add_beside) = collective_and_add(false);
    let (behind_compute, _) = collective_and_add(true);
    // The add on the compute queue runs while the collective's transfers hold engines.
    let d = World::new(WorldConfig::new(1)).unwrap();
    let solo_add = d.run(|rank| {
        let big = rank.device().zeros(&[32 * MIB], DType::F32).unwrap();
        let _ = big.add(&big).unwrap();
        rank.device().last_kernel().unwrap().dur_ns()
    })[0];
    eprintln!(
        "all-reduce {alone} ns alone, {behind_compute} ns behind a DMA-heavy add; \
         add {solo_add} ns alone, {add_beside} ns beside the all-reduce"
    );
    assert!(
        add_beside > solo_add + solo_add / 10,
        "{add_beside} vs {solo_add}"
    );
    assert!(
        behind_compute > alone + alone / 10,
        "{behind_compute} vs {alone}"
    );
}

#[test]
fn data_parallel_groups_at_the_same_time_share_the_chip_links() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    // 8 ranks on 2 chips (4 each); tensor parallelism 4 inside each chip, so the 4
    // data-parallel groups {0,4} {1,5} {2,6} {3,7} each cross both chips' NeuronLink.
    let run = |all_groups: bool| {
        let w = world(8);
        w.tp_dp_groups(4).unwrap();
        let ends = w.run(|rank| {
            let d = rank.device();
            let x = Tensor::from_f32(&[1], vec![0.0])
                .unwrap()
                .to_device(d)
                .unwrap();
            let grads = d.zeros(&[64 * MIB / 4], DType::F32).unwrap();
            let square = d.zeros(&[4096, 4096], DType::F32).unwrap();
            rank.world_group().barrier().unwrap();
            // The groups' all-reduces must start at the same modeled instant whatever the
            // host threads' skew (a loaded machine runs them milliseconds apart): a long
            // matmul (milliseconds of device time) and then a world all-reduce of one
            // element end at one instant `aligned` on every rank, long after every host
            // has queued the data-parallel all-reduce behind them. Behind them through
            // the stream's wait: the groups' collectives take the 3 collective queues
            // round-robin (world and dp0 and dp3 share the first), so without the wait
            // dp1 and dp2 would start when their own ranks' matmuls end, apart by the
            // host skew and before `aligned`.
            let _ = square.matmul(&square).unwrap();
            let aligning = rank
                .world_group()
                .all_reduce_async(&x, ReduceOp::Sum)
                .unwrap();
            let aligned = aligning.end_ns();
            drop(aligning.wait());
            let dp = rank.group_with_prefix("dp").unwrap();
            let end = if all_groups || dp.name() == "dp0" {
                let work = dp.all_reduce_async(&grads, ReduceOp::Avg).unwrap();
                assert!(
                    runtime_hooks::clock::now_ns() < aligned,
                    "the host queued the all-reduce after the aligning collective ended"
                );
                Some(work.end_ns() - aligned)
            } else {
                None
            };
            drop(x);
            end
        });
        let spans: Vec<u64> = ends.into_iter().flatten().collect();
        let min = spans.iter().copied().min().unwrap();
        (min, spans.iter().copied().max().unwrap())
    };
    let (_, alone) = run(false);
    let (fastest, together) = run(true);
    eprintln!(
        "64 MiB data-parallel all-reduce: {alone} ns alone, {fastest}-{together} ns with 3 others"
    );
    // Four groups want 4 × 362.5 B/ns of each chip's 1,024 B/ns: the last placed gets
    // a fair quarter, so the slowest takes ~1.4x as long.
    assert!(together > alone + alone / 4, "{together} vs {alone}");
    // Every group started at `aligned`: none is done sooner than one alone.
    assert!(fastest >= alone, "{fastest} vs {alone}");
}

/// A fast rank's kernels after a collective that waits for a late peer run at their own
/// speed: the collective's transfers are placed when the last rank arrives, in the fast
/// rank's future, and the kernels its host queues meanwhile take the DMA engines before
/// them. (The transfers once moved the engines' issue-order frontier into that future,
/// so the fast rank's next kernels queued their loads behind the whole collective: in
/// the demo a 47 µs `gelu_backward` lasted 713 µs on every fast rank.)
#[test]
fn a_collective_waiting_for_a_late_peer_does_not_hold_up_later_compute() {
    let add_after_collective = |late_peer: bool| -> (u64, u64, u64) {
        let w = world(2);
        // Both ranks have launched the collective before rank 0 launches its add, so
        // the collective is placed first whichever host thread runs ahead.
        let launched = std::sync::Barrier::new(2);
        let spans = w.run(|rank| {
            let d = rank.device();
            let x = d.zeros(&[4 * MIB], DType::F32).unwrap();
            let big = d.zeros(&[8 * MIB], DType::F32).unwrap();
            let square = d.zeros(&[4096, 4096], DType::F32).unwrap();
            rank.world_group().barrier().unwrap();
            if late_peer && rank.rank() == 1 {
                // Milliseconds of device time before rank 1 reaches the collective.
                let _ = square.matmul(&square).unwrap();
            }
            let work = rank
                .world_group()
                .all_reduce_async(&x, ReduceOp::Sum)
                .unwrap();
            let collective = d.last_kernel().unwrap();
            launched.wait();
            let _ = big.add(&big).unwrap();
            let add = d.last_kernel().unwrap();
            drop(work.wait());
            (collective.end_ns, add.start_ns, add.dur_ns())
        });
        spans[0]
    };
    let (_, _, on_time) = add_after_collective(false);
    let (collective_end, add_start, beside_late) = add_after_collective(true);
    eprintln!(
        "rank 0's add: {on_time} ns after an all-reduce with both ranks on time, \
         {beside_late} ns after one waiting for rank 1 (starts {add_start}, the all-reduce \
         ends {collective_end})"
    );
    // The add ran while the collective waited, long before it ended...
    assert!(
        add_start + beside_late < collective_end,
        "add {add_start}+{beside_late} ns, all-reduce ends {collective_end}"
    );
    // ...and without the collective's transfers in its way it takes no longer than
    // beside an all-reduce that moves its bytes at once.
    assert!(
        beside_late <= on_time,
        "{beside_late} ns beside the waiting all-reduce vs {on_time} ns"
    );
}
