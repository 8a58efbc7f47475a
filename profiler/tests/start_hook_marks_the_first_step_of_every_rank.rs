//! With `workloads::run_with_hooks`' start hook calling [`SharedProfiler::begin_rank`],
//! every recorded step of every rank has its `ProfilerStep#N` range, step 0 included;
//! with `run`'s per-step callback alone the first step has none.

mod common;

use neuron_backend::dist::rank_of_thread;
use neuron_backend::workloads::{run, run_with_hooks, FnHooks, Workload, WorkloadConfig};
use profiler::{RankOf, RunOptions};

fn rank_of(thread: u32) -> Option<RankOf> {
    rank_of_thread(thread).map(|t| RankOf {
        rank: t.rank as u32,
        world_size: t.world_size as u32,
    })
}

fn config() -> WorkloadConfig {
    let mut config = WorkloadConfig::new(Workload::Mlp);
    config.ranks = 2;
    config.steps = 3;
    config
}

fn options(test: &str, config: &WorkloadConfig) -> RunOptions {
    let mut options = RunOptions::new(common::temp_dir(test), config.ranks);
    options.steps = Some(config.steps as u64);
    options
}

#[test]
fn start_hook_marks_the_first_step_of_every_rank() {
    let _serial = common::serial();
    let config = config();
    let options = options("start-hook", &config);
    let run = profiler::run_profiled(&options, rank_of, |prof| {
        let hooks = FnHooks {
            on_start: |_rank| prof.begin_rank(),
            on_step: |_step: &_| prof.step(),
        };
        run_with_hooks(&config, &hooks)
    })
    .unwrap();
    run.output.unwrap();
    assert_eq!(run.results.len(), 2);
    for (r, (path, result)) in run.files.iter().zip(&run.results).enumerate() {
        assert_eq!(result.rank(), Some(r as u32));
        assert_eq!(result.steps(), vec![0, 1, 2], "rank {r}");
        let trace = common::read_back(path);
        let step_ranges: Vec<&str> = trace
            .events
            .iter()
            .filter(|e| {
                e.category
                    .as_ref()
                    .is_some_and(|c| c.as_str() == "user_annotation")
            })
            .filter_map(|e| e.name.as_deref())
            .filter(|n| n.starts_with("ProfilerStep#"))
            .collect();
        assert_eq!(
            step_ranges,
            ["ProfilerStep#0", "ProfilerStep#1", "ProfilerStep#2"],
            "rank {r}: one range per step, in order, on the rank's thread"
        );
        common::assert_tracks_nest(&trace.events);
    }
}

#[test]
fn without_a_start_hook_the_first_step_has_no_range() {
    let _serial = common::serial();
    let config = config();
    let options = options("no-start-hook", &config);
    let run = profiler::run_profiled(&options, rank_of, |prof| run(&config, |_step| prof.step()))
        .unwrap();
    run.output.unwrap();
    for result in &run.results {
        assert_eq!(result.steps(), vec![1, 2]);
    }
}
