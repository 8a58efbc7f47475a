//! The `gpt` workload on two data-parallel ranks under `run_profiled`, the way
//! `neuronprof run gpt --ranks 2` drives it: one trace per rank with its steps, DDP
//! all-reduces as NCCL-style kernels, autograd flows, and summaries that agree.

mod common;

use neuron_backend::dist::rank_of_thread;
use neuron_backend::workloads::{run, Workload, WorkloadConfig};
use profiler::{RankOf, RunOptions, Schedule};

#[test]
fn gpt_workload_profiles_into_one_trace_per_rank() {
    let _serial = common::serial();
    let mut config = WorkloadConfig::new(Workload::Gpt);
    config.ranks = 2;
    config.steps = 5;
    let dir = common::temp_dir("gpt");
    let mut options = RunOptions::new(&dir, config.ranks);
    options.steps = Some(config.steps as u64);
    options.schedule = Some(Schedule::new(1, 0, 1, 2, 1));
    options.config.profile_memory = true;
    let rank_of = |thread: u32| {
        rank_of_thread(thread).map(|t| RankOf {
            rank: t.rank as u32,
            world_size: t.world_size as u32,
        })
    };
    let run = profiler::run_profiled(&options, rank_of, |prof| run(&config, |_step| prof.step()))
        .unwrap();
    let report = run.output.unwrap();
    assert_eq!(report.steps.len(), 5);
    assert_eq!(run.files.len(), 2);
    assert_eq!(run.results.len(), 2);
    for (r, (path, result)) in run.files.iter().zip(&run.results).enumerate() {
        assert_eq!(result.rank(), Some(r as u32));
        // Steps 0 skipped, 1 warm-up, 2 and 3 recorded; the first step has no range
        // (the per-step callback starts marking after it).
        assert_eq!(result.steps(), vec![2, 3]);
        let summary = result.summary();
        assert_eq!(summary.steps, 2);
        assert!(summary.device_utilization() > 0.0);
        assert!(summary.collective_ns > 0, "DDP all-reduces ran");
        assert!(summary.peak_allocated_bytes.unwrap() > 0);
        assert_eq!(summary.dropped_records, 0);

        let trace = common::read_back(path);
        assert_eq!(trace.meta.rank(), Some(r as i64));
        let events = &trace.events;
        let cat = |name: &str| {
            events
                .iter()
                .filter(|e| e.category.as_ref().is_some_and(|c| c.as_str() == name))
                .count()
        };
        assert!(cat("fwdbwd") >= 2, "autograd links forward and backward");
        let collectives = events
            .iter()
            .filter(|e| e.arg("Collective name").is_some() && e.arg("stream").is_some())
            .count();
        assert!(collectives >= 2, "bucketed all-reduces in both steps");
        assert!(cat("kernel") > collectives);
        assert_eq!(cat("ac2g") % 2, 0);
        common::assert_tracks_nest(events);
    }
}
