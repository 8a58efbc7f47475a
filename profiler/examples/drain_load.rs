//! Whether the profiler's collection keeps up with a fast recorder: the demo's GPT on
//! 4 ranks, timing only, with AdamW and engine instructions recorded — the load under
//! which the drainer once fell behind (about 15,000 records dropped on two ranks of a
//! release build, a step lost).
//!
//! ```text
//! cargo run --release --workspace --example drain_load -- [STEPS] [ROUNDS]
//! ```
//!
//! Per round: the records each rank attempted and dropped, and the wall time; the
//! command fails if a round dropped any record.

use std::time::Instant;

use neuron_backend::dist::rank_of_thread;
use neuron_backend::workloads::{
    run_with_hooks, FnHooks, GptShape, Optimizer, StepReport, Workload, WorkloadConfig,
};
use neuron_backend::RecordDetail;
use profiler::{DeviceDetail, RankOf, RunOptions, Schedule};

const RANKS: usize = 4;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let steps: usize = args.next().map_or(Ok(8), |s| s.parse())?;
    let rounds: usize = args.next().map_or(Ok(3), |s| s.parse())?;
    let out = std::env::temp_dir().join(format!("drain-load-{}", std::process::id()));
    let mut lost = 0;
    println!("gpt (demo shape), {RANKS} ranks, timing only, AdamW, instructions, {steps} steps");
    for round in 0..rounds {
        let mut config = WorkloadConfig::new(Workload::Gpt);
        config.ranks = RANKS;
        config.batch = config.batch.div_ceil(RANKS) * RANKS;
        config.steps = steps;
        config.gpt = GptShape::DEMO;
        config.numerics = false;
        config.optimizer = Some(Optimizer::AdamW);
        config.detail = RecordDetail::Instructions;
        config.straggler = Some((2, 2.0));
        let mut options = RunOptions::new(&out, RANKS);
        options.steps = Some(steps as u64);
        // `neuronprof run`'s default: skip one step, warm up one, record the rest.
        options.schedule = Some(Schedule::new(1, 0, 1, steps.saturating_sub(2) as u64, 1));
        options.config.device_detail = DeviceDetail::Instructions;
        let rank_of = |t: u32| {
            rank_of_thread(t).map(|t| RankOf {
                rank: t.rank as u32,
                world_size: RANKS as u32,
            })
        };
        let started = Instant::now();
        let profiled = profiler::run_profiled(&options, rank_of, |prof| {
            let hooks = FnHooks {
                on_start: |_rank| prof.begin_rank(),
                on_step: |_step: &StepReport| prof.step(),
            };
            run_with_hooks(&config, &hooks)
        })?;
        profiled.output?;
        let wall_s = started.elapsed().as_secs_f64();
        let mut line = format!("round {round}: {wall_s:.1} s;");
        for result in &profiled.results {
            let summary = result.summary();
            lost += summary.dropped_records;
            line.push_str(&format!(
                " rank {}: {} dropped, {} steps;",
                result.rank().unwrap_or(0),
                summary.dropped_records,
                summary.steps,
            ));
        }
        println!("{line}");
        let _ = std::fs::remove_dir_all(&out);
    }
    if lost > 0 {
        return Err(format!("{lost} records dropped").into());
    }
    Ok(())
}
