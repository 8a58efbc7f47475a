//! A send and its matching receive are one transfer: it starts when both sides have
//! arrived and ends at the same modeled instant on both ranks, as collectives do.

use neuron_backend::dist::{World, WorldConfig};
use neuron_backend::{BackendError, DType};

/// Rank 0 sends a [256, 256] f32 tensor to rank 1, which first runs `late_matmuls`
/// bf16 [8192, 8192] matmuls (~7 ms of modeled device time each) on its stream.
/// Returns each rank's (transfer end, last kernel start).
fn exchange(late_matmuls: usize) -> Vec<(u64, u64)> {
    // Timing only (the values are checked in the collectives' own test).
    let mut config = WorldConfig::new(2);
    config.numerics = false;
    let world = World::new(config).unwrap();
    let results = world.run(|rank| -> Result<(u64, u64), BackendError> {
        let device = rank.device();
        let g = rank.world_group();
        let w = device.zeros(&[8192, 8192], DType::BF16)?;
        // Line the host clocks up (a barrier ends at one instant on both ranks), so
        // the receiver's lateness is the modeled matmuls', not thread scheduling.
        g.barrier()?;
        let work = if rank.rank() == 0 {
            let x = device.ones(&[256, 256], DType::F32)?;
            g.isend(&x, 1)?
        } else {
            for _ in 0..late_matmuls {
                drop(w.matmul(&w)?);
            }
            g.irecv(&[256, 256], DType::F32, 0)?
        };
        let end_ns = work.end_ns();
        let outputs = work.wait();
        assert_eq!(outputs.len(), rank.rank(), "the receive has the output");
        Ok((end_ns, device.last_kernel().unwrap().start_ns))
    });
    results.into_iter().map(Result::unwrap).collect()
}

#[test]
fn send_and_recv_end_at_the_same_instant() {
    let on_time = exchange(0);
    assert_eq!(on_time[0].0, on_time[1].0, "one end: {on_time:?}");
    let late = exchange(3);
    assert_eq!(late[0].0, late[1].0, "one end: {late:?}");
    // The receiver arrives later: the sender's transfer waits for it.
    // Each side's kernel starts when its own device is ready and ends at the common
    // instant: on the sender it spans the ~21 ms wait for the receiver.
    assert!(late[0].1 + 15_000_000 < late[1].1, "{late:?}");
    let transfer_ns = |run: &[(u64, u64)]| run[0].0 - run[0].1.max(run[1].1);
    assert_eq!(
        transfer_ns(&late),
        transfer_ns(&on_time),
        "the transfer itself starts when both are there: {on_time:?} {late:?}"
    );
}
