//! Collectives move real data: every result is checked against a direct computation,
//! ranks meet at one modeled instant, and the records carry what NCCL-style traces show.

use std::sync::Mutex;
use std::time::Duration;

use neuron_backend::dist::{self, Rank, ReduceOp, World, WorldConfig};
use neuron_backend::{BackendError, DType, Tensor};
use runtime_hooks::{CollectiveAlgorithm, CollectiveOp, Event, Phase};

static SERIAL: Mutex<()> = Mutex::new(());

/// Rank `r`'s input: `[rows, 2]` with element `i` = `10 r + i`.
fn input_values(rank: usize, rows: usize) -> Vec<f32> {
    (0..rows * 2).map(|i| (10 * rank + i) as f32).collect()
}

fn input(rank: &Rank, rows: usize) -> Tensor {
    Tensor::from_f32(&[rows, 2], input_values(rank.rank(), rows))
        .unwrap()
        .to_device(rank.device())
        .unwrap()
}

#[test]
fn every_collective_matches_a_direct_computation() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let n = 4;
    let mut config = WorldConfig::new(n);
    config.timeout = Duration::from_secs(5);
    let world = World::new(config).unwrap();
    world.tp_dp_groups(2).unwrap();
    let all: Vec<Vec<f32>> = (0..n).map(|r| input_values(r, 4)).collect();
    let elementwise = |f: &dyn Fn(&[f32]) -> f32| -> Vec<f32> {
        (0..8)
            .map(|i| f(&all.iter().map(|v| v[i]).collect::<Vec<_>>()))
            .collect()
    };
    let sum = elementwise(&|xs| xs.iter().sum());
    let avg: Vec<f32> = sum.iter().map(|s| s / n as f32).collect();
    let max = elementwise(&|xs| xs.iter().cloned().fold(f32::MIN, f32::max));
    let results = world.run(|rank| -> Result<(), BackendError> {
        let r = rank.rank();
        let g = rank.world_group();
        let x = input(rank, 4);
        assert_eq!(g.all_reduce(&x, ReduceOp::Sum)?.to_vec_f32()?, sum);
        assert_eq!(g.all_reduce(&x, ReduceOp::Avg)?.to_vec_f32()?, avg);
        assert_eq!(g.all_reduce(&x, ReduceOp::Max)?.to_vec_f32()?, max);
        let gathered = g.all_gather(&x)?;
        assert_eq!(gathered.shape(), &[16, 2]);
        assert_eq!(gathered.to_vec_f32()?, all.concat());
        // Rank r gets rows r of the sum ([4, 2] split into four [1, 2] chunks).
        let scattered = g.reduce_scatter(&x, ReduceOp::Sum)?;
        assert_eq!(scattered.shape(), &[1, 2]);
        assert_eq!(scattered.to_vec_f32()?, sum[2 * r..2 * r + 2].to_vec());
        assert_eq!(g.broadcast(&x, 2)?.to_vec_f32()?, all[2]);
        // Rank r gets chunk r of every rank, in rank order.
        let exchanged = g.all_to_all(&x)?.to_vec_f32()?;
        let expected: Vec<f32> = (0..n)
            .flat_map(|s| all[s][2 * r..2 * r + 2].to_vec())
            .collect();
        assert_eq!(exchanged, expected);
        // A ring of sends: each rank sends to the next and receives from the previous
        // (even ranks send first, odd ranks receive first: a send waits for its
        // receive, as with NCCL).
        let next = (r + 1) % n;
        let prev = (r + n - 1) % n;
        let got = if r % 2 == 0 {
            g.send(&x, next)?;
            g.recv(&[4, 2], DType::F32, prev)?
        } else {
            let got = g.recv(&[4, 2], DType::F32, prev)?;
            g.send(&x, next)?;
            got
        };
        assert_eq!(got.to_vec_f32()?, all[prev]);
        g.barrier()?;
        // Sub-groups: tp{r/2} = [2t, 2t+1], dp{r%2} = [d, d+2].
        let tp = rank.group_with_prefix("tp")?;
        let dp = rank.group_with_prefix("dp")?;
        assert_eq!(tp.ranks(), &[r / 2 * 2, r / 2 * 2 + 1]);
        assert_eq!(dp.ranks(), &[r % 2, r % 2 + 2]);
        let tp_sum: Vec<f32> = (0..8)
            .map(|i| tp.ranks().iter().map(|&q| all[q][i]).sum())
            .collect();
        assert_eq!(tp.all_reduce(&x, ReduceOp::Sum)?.to_vec_f32()?, tp_sum);
        let dp_max: Vec<f32> = (0..8)
            .map(|i| {
                dp.ranks()
                    .iter()
                    .map(|&q| all[q][i])
                    .fold(f32::MIN, f32::max)
            })
            .collect();
        assert_eq!(dp.all_reduce(&x, ReduceOp::Max)?.to_vec_f32()?, dp_max);
        // bf16 data is reduced in f32 and rounded once.
        let h =
            Tensor::from_f32_as_bf16(&[3], &[1.0, 1.0 / 3.0, 256.0])?.to_device(rank.device())?;
        let hs = g.all_reduce(&h, ReduceOp::Sum)?;
        assert_eq!(hs.dtype(), DType::BF16);
        let third = neuron_backend::round_bf16(1.0 / 3.0);
        assert_eq!(
            hs.to_vec_f32()?,
            vec![4.0, neuron_backend::round_bf16(4.0 * third), 1024.0]
        );
        Ok(())
    });
    let errors: Vec<String> = results
        .iter()
        .filter_map(|r| r.as_ref().err().map(ToString::to_string))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn ranks_disagreeing_on_a_collective_get_an_error_naming_both_calls() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let world = World::new(WorldConfig::new(2)).unwrap();
    let results = world.run(|rank| {
        let x = input(rank, 2 + rank.rank());
        rank.world_group().all_reduce(&x, ReduceOp::Sum).map(|_| ())
    });
    for result in results {
        let err = result.unwrap_err();
        assert!(
            matches!(err, BackendError::CollectiveMismatch { .. }),
            "{err}"
        );
        assert!(
            err.to_string().contains("[2, 2]") && err.to_string().contains("[3, 2]"),
            "{err}"
        );
    }
}

#[test]
fn a_rank_that_never_arrives_times_out_every_other_rank_by_name() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut config = WorldConfig::new(3);
    config.timeout = Duration::from_millis(300);
    let world = World::new(config).unwrap();
    let results = world.run(|rank| {
        if rank.rank() == 2 {
            return Ok(()); // stops before the collective
        }
        let x = input(rank, 2);
        rank.world_group().all_reduce(&x, ReduceOp::Sum).map(|_| ())
    });
    assert!(results[2].is_ok());
    for result in &results[..2] {
        let err = result.clone().unwrap_err();
        match &err {
            BackendError::CollectiveTimeout {
                collective,
                missing_ranks,
                group,
                ..
            } => {
                assert_eq!(*collective, "all_reduce");
                assert_eq!(missing_ranks, &[2]);
                assert_eq!(group, "0");
            }
            other => panic!("expected a timeout, got {other}"),
        }
        let text = err.to_string();
        assert!(
            text.contains("all_reduce") && text.contains("[2]"),
            "{text}"
        );
    }
}

#[test]
fn a_slow_rank_shows_as_waiting_on_the_others_and_all_end_together() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut config = WorldConfig::new(4);
    config.numerics = false;
    let world = World::new(config).unwrap();
    let spans = world.run(|rank| {
        let x = rank.device().zeros(&[1024], DType::F32).unwrap();
        let a = rank.device().zeros(&[8192, 8192], DType::BF16).unwrap();
        // Line the host clocks up (a barrier ends at one instant on every rank).
        rank.world_group().barrier().unwrap();
        if rank.rank() == 3 {
            // Three ~7 ms bf16 matmuls on the slow rank only (modeled; numerics off):
            // a margin over the host threads' scheduling on a loaded machine.
            for _ in 0..3 {
                let _ = a.matmul(&a).unwrap();
            }
        }
        let work = rank
            .world_group()
            .all_reduce_async(&x, ReduceOp::Sum)
            .unwrap();
        let end_ns = work.end_ns();
        drop(work.wait());
        let span = rank.device().last_kernel().unwrap();
        (span.start_ns, end_ns)
    });
    let ends: Vec<u64> = spans.iter().map(|s| s.1).collect();
    assert!(ends.iter().all(|&e| e == ends[0]), "{ends:?}");
    let waited: Vec<u64> = spans.iter().map(|(s, e)| e - s).collect();
    // The fast ranks' collective kernels include the wait for rank 3's matmul.
    for fast in &waited[..3] {
        assert!(*fast > waited[3] + 3_000_000, "{waited:?}");
    }
}

#[test]
fn records_carry_nccl_style_args_and_rank_threads_map_to_ranks() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let world = World::new(WorldConfig::new(4)).unwrap();
    runtime_hooks::set_enabled(true);
    let mut scratch = Vec::new();
    runtime_hooks::drain(&mut scratch);
    let corr_ids = world.run(|rank| {
        assert_eq!(dist::current_rank(), Some((rank.rank(), 4)));
        let x = rank.device().ones(&[256], DType::BF16).unwrap();
        let y = rank.world_group().all_gather(&x).unwrap();
        let corr_id = rank.device().last_kernel().unwrap().corr_id;
        assert_eq!(y.to_vec_f32().unwrap(), vec![1.0; 1024]);
        (runtime_hooks::current_thread_id().unwrap(), corr_id)
    });
    runtime_hooks::set_enabled(false);
    let mut records = Vec::new();
    runtime_hooks::drain(&mut records);
    let threads = dist::rank_threads();
    for (rank, (thread_id, corr_id)) in corr_ids.iter().enumerate() {
        let tag = dist::rank_of_thread(*thread_id).unwrap();
        assert_eq!(
            (tag.rank, tag.world_size, tag.device_index),
            (rank, 4, rank)
        );
        assert!(threads.contains(&tag));
        let mine: Vec<_> = records
            .iter()
            .filter(|r| r.thread_id == *thread_id)
            .collect();
        let device = mine
            .iter()
            .find_map(|r| match r.event() {
                Some(Event::Collective(op, p)) if r.phase() == Some(Phase::Complete) => {
                    Some((op, p))
                }
                _ => None,
            })
            .expect("a device collective record");
        let (op, p) = device;
        assert_eq!(op, CollectiveOp::AllGather);
        assert_eq!(p.corr_id, *corr_id);
        assert_eq!(
            runtime_hooks::resolve(p.group_name_id).as_deref(),
            Some("0")
        );
        assert_eq!(
            runtime_hooks::resolve(p.group_ranks_id).as_deref(),
            Some("[0, 1, 2, 3]")
        );
        assert_eq!((p.group_size, p.rank as usize), (4, rank));
        assert_eq!(p.dtype, DType::BF16.scalar_type_code());
        assert_eq!(p.bytes, 512);
        assert_eq!(p.in_nelems(2), 256);
        assert_eq!(p.out_nelems(op, 2), 1024);
        assert_eq!(p.algorithm, CollectiveAlgorithm::Mesh.raw());
        // The host side: an operator with its input signature, and collective begin/end.
        let host_begin = mine.iter().any(|r| {
            matches!(r.event(), Some(Event::Collective(CollectiveOp::AllGather, q)) if q.corr_id == *corr_id)
                && r.phase() == Some(Phase::Begin)
        });
        assert!(host_begin);
        let kernel = mine
            .iter()
            .find_map(|r| match r.event() {
                Some(Event::Kernel(k)) if k.corr_id == *corr_id => Some(k),
                _ => None,
            })
            .unwrap();
        let name = runtime_hooks::resolve(kernel.name_id).unwrap();
        assert_eq!(&*name, "ncclDevKernel_AllGather_bf16_MESH");
        assert_eq!(usize::from(kernel.queue), 1, "the first collective queue");
        let op_sig = mine
            .iter()
            .find_map(|r| match r.event() {
                Some(Event::Operator(o)) if o.corr_id == *corr_id => Some(o.input_sig_id),
                _ => None,
            })
            .unwrap();
        assert_eq!(
            runtime_hooks::resolve(op_sig).as_deref(),
            Some(r#"[[256]]|["c10::BFloat16"]"#)
        );
    }
}

#[test]
fn a_collective_overlaps_compute_but_contends_for_its_dma_engines() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut config = WorldConfig::new(2);
    config.numerics = false;
    let world = World::new(config).unwrap();
    let out = world.run(|rank| {
        let d = rank.device();
        let big = d.zeros(&[64 << 20], DType::F32).unwrap();
        let x = d.zeros(&[4 << 20], DType::F32).unwrap();
        rank.world_group().barrier().unwrap();
        let _ = x.add(&x).unwrap();
        let alone = d.last_kernel().unwrap().dur_ns();
        d.synchronize();
        rank.world_group().barrier().unwrap();
        let work = rank
            .world_group()
            .all_reduce_async(&big, ReduceOp::Sum)
            .unwrap();
        let collective = d.last_kernel().unwrap();
        let _ = x.add(&x).unwrap();
        let during = d.last_kernel().unwrap();
        drop(work.wait());
        (alone, collective, during)
    });
    for (alone, collective, during) in out {
        // The add runs on the compute queue while the collective is in flight ...
        assert_ne!(during.queue, collective.queue);
        assert!(during.start_ns < collective.end_ns);
        // ... but waits for DMA engines the collective holds.
        assert!(during.dur_ns() > alone + alone / 2, "{alone} vs {during:?}");
    }
}

#[test]
fn a_straggler_device_makes_every_rank_wait_for_it() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let run = |straggler: Option<(usize, f64)>| {
        let mut config = WorldConfig::new(2);
        config.numerics = false;
        config.straggler = straggler;
        let world = World::new(config).unwrap();
        world.run(|rank| {
            let d = rank.device();
            let a = d.zeros(&[4096, 4096], DType::BF16).unwrap();
            let x = d.zeros(&[1024], DType::F32).unwrap();
            let g = rank.world_group();
            g.barrier().unwrap();
            let start = runtime_hooks::clock::now_ns();
            let _ = a.matmul(&a).unwrap();
            let matmul = d.last_kernel().unwrap().dur_ns();
            let work = g.all_reduce_async(&x, ReduceOp::Sum).unwrap();
            (work.end_ns() - start, work.end_ns(), matmul)
        })
    };
    let fair = run(None);
    let slow = run(Some((1, 8.0)));
    eprintln!(
        "(matmul + all-reduce from the host's start, all-reduce end, matmul) in ns: \
         {fair:?} fair, {slow:?} with rank 1 8x slower"
    );
    // Rank 0's own device is as fast as before ...
    assert!(
        slow[0].2.abs_diff(fair[0].2) < fair[0].2 / 10,
        "{fair:?} vs {slow:?}"
    );
    assert!(slow[1].2 > 7 * fair[1].2, "{fair:?} vs {slow:?}");
    // ... and it waits for rank 1's whole slow matmul: both ranks leave the barrier at
    // the same instant, and a rank thread's host clock counts only its own CPU time,
    // so a busy machine holding either thread up changes nothing here.
    assert!(slow[0].0 > slow[1].2, "{fair:?} vs {slow:?}");
    assert!(slow[0].0 > 7 * fair[0].0, "{fair:?} vs {slow:?}");
    // The all-reduce ends at the same instant on both ranks.
    assert!(slow[0].1.abs_diff(slow[1].1) < slow[0].0 / 10, "{slow:?}");
}
