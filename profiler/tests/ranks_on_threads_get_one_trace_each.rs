//! Ranks running on threads of one process, each driving its own logical core, share
//! one session: every saved window becomes one trace per rank with that rank's
//! `distributedInfo`, device and steps.

mod common;

use neuron_backend::{DType, Runtime};
use profiler::{Profiler, RankOf, Schedule, SharedProfiler};

const RANKS: usize = 3;

fn rank_of(thread_id: u32) -> Option<RankOf> {
    let stats = runtime_hooks::thread_stats();
    let name = stats
        .iter()
        .find(|t| t.thread_id == thread_id)?
        .thread_name
        .clone()?;
    let rank = name.strip_prefix("test-rank-")?.parse().ok()?;
    Some(RankOf {
        rank,
        world_size: RANKS as u32,
    })
}

#[test]
fn ranks_on_threads_get_one_trace_each() {
    let _serial = common::serial();
    let runtime = Runtime::trn2();
    let dir = common::temp_dir("ranks");
    let files = profiler::tensorboard_trace_handler(&dir, Some("rank{rank}"), false);
    let mut builder = Profiler::builder()
        .schedule(Schedule::new(1, 0, 1, 2, 1))
        .split_by_rank(rank_of)
        .on_trace_ready_handler(files.clone());
    for r in 0..RANKS {
        builder = builder.device(common::device_info(&runtime.device(r).unwrap()));
    }
    let shared = SharedProfiler::new(builder.start(), RANKS);
    std::thread::scope(|scope| {
        for r in 0..RANKS {
            let device = runtime.device(r).unwrap();
            let shared = shared.clone();
            std::thread::Builder::new()
                .name(format!("test-rank-{r}"))
                .spawn_scoped(scope, move || {
                    runtime_hooks::register_thread();
                    let x = device.ones(&[8, 8 * (r + 1)], DType::F32).unwrap();
                    let mut steps = shared.rank_steps();
                    for _ in 0..5 {
                        let y = x.mul(&x).unwrap();
                        device.synchronize();
                        drop(y);
                        steps.step();
                    }
                })
                .unwrap();
        }
    });
    let results = shared.stop().unwrap();
    assert_eq!(results.len(), RANKS);
    for (r, result) in results.iter().enumerate() {
        assert_eq!(result.rank(), Some(r as u32));
        assert_eq!(result.steps(), vec![2, 3]);
    }
    let mut paths = files.files();
    paths.sort();
    assert_eq!(paths.len(), RANKS);
    for (r, path) in paths.iter().enumerate() {
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        assert!(name.starts_with(&format!("rank{r}.")), "{name}");
        let trace = common::read_back(path);
        assert_eq!(trace.meta.rank(), Some(r as i64));
        assert_eq!(trace.meta.world_size(), Some(RANKS as i64));
        let info = trace.meta.distributed_info().unwrap();
        assert_eq!(info.pg_config[0].ranks, vec![0, 1, 2]);
        let devices: Vec<_> = trace
            .meta
            .device_properties()
            .iter()
            .map(|d| d.device_id)
            .collect();
        assert_eq!(devices, vec![Some(r as i64)]);
        let kernels: Vec<_> = trace
            .events
            .iter()
            .filter(|e| e.category.as_ref().is_some_and(|c| c.as_str() == "kernel"))
            .collect();
        assert_eq!(kernels.len(), 2, "one mul per recorded step");
        assert!(kernels
            .iter()
            .all(|k| k.pid.as_ref().and_then(|p| p.as_i64()) == Some(r as i64)));
        let steps: Vec<&str> = trace
            .events
            .iter()
            .filter(|e| e.name().starts_with("ProfilerStep#"))
            .map(|e| e.name())
            .collect();
        assert_eq!(steps, ["ProfilerStep#2", "ProfilerStep#3"]);
        common::assert_tracks_nest(&trace.events);
    }
}

#[test]
fn run_profiled_goes_on_when_a_rank_stops_early() {
    let _serial = common::serial();
    let runtime = Runtime::trn2();
    let dir = common::temp_dir("run-profiled");
    let mut options = profiler::RunOptions::new(&dir, 2);
    options.schedule = Some(Schedule::new(0, 2, 0, 2, 1));
    let run = profiler::run_profiled(&options, rank_of_two, |prof| {
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..2)
                .map(|r| {
                    let device = runtime.device(r).unwrap();
                    let prof = prof.clone();
                    std::thread::Builder::new()
                        .name(format!("test-rank-{r}"))
                        .spawn_scoped(scope, move || {
                            runtime_hooks::register_thread();
                            let x = device.ones(&[4, 4], DType::F32).unwrap();
                            let mut steps = prof.rank_steps();
                            // Rank 1 fails after its first step; rank 0 goes on.
                            let last_step = if r == 1 { 1 } else { 5 };
                            for _ in 0..last_step {
                                drop(x.add(&x).unwrap());
                                steps.step();
                            }
                            steps.step_num()
                        })
                        .unwrap()
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap())
                .collect::<Vec<u64>>()
        })
    })
    .unwrap();
    assert_eq!(run.output, vec![5, 1]);
    // Rank 0 records the window's steps. Rank 1 left before the window, but its thread's
    // last records (freeing its tensor as the thread ends, closing its step) may land
    // after rank 0 opened the window, depending on thread scheduling: then it has a
    // trace of its own, without the window's steps.
    assert_eq!(run.results[0].rank(), Some(0));
    assert_eq!(run.results[0].steps(), vec![2, 3]);
    for other in &run.results[1..] {
        assert_eq!(other.rank(), Some(1));
        assert!(
            other.steps().is_empty(),
            "rank 1 recorded no step of the window"
        );
    }
    assert!(run.results.len() <= 2);
    assert_eq!(run.files.len(), run.results.len());
    let name = run.files[0].file_name().unwrap().to_str().unwrap();
    assert!(name.starts_with("rank0.") && name.ends_with(".pt.trace.json.gz"));
}

fn rank_of_two(thread_id: u32) -> Option<RankOf> {
    rank_of(thread_id).map(|r| RankOf { world_size: 2, ..r })
}
