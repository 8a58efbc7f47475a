//! Recording overhead on the `gpt` workload: host time per step with profiling off and
//! on (kernels only, and kernels plus instructions), the issue's ≤ 3 % criterion.
//!
//! ```text
//! cargo run --release -p profiler --example overhead_gpt -- [STEPS] [ROUNDS]
//! ```
//!
//! Host time per step is the host clock between step ends (`StepReport::end_ns`,
//! emulation time excluded, as the traces show it), mean over the steps after the
//! first two, median over rounds run in alternation. Wall time per step (which also
//! pays for the emulator and, with profiling, for converting and writing the traces)
//! is printed beside it for scale.

use std::time::Instant;

use neuron_backend::dist::rank_of_thread;
use neuron_backend::workloads::{run, RunReport, Workload, WorkloadConfig};
use neuron_backend::RecordDetail;
use profiler::{DeviceDetail, RankOf, RunOptions};

fn host_step_ns(report: &RunReport) -> f64 {
    let ends: Vec<u64> = report.steps.iter().map(|s| s.end_ns).collect();
    let steps: Vec<u64> = ends.windows(2).skip(1).map(|w| w[1] - w[0]).collect();
    steps.iter().sum::<u64>() as f64 / steps.len().max(1) as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let steps: usize = args.next().map_or(Ok(20), |s| s.parse())?;
    let rounds: usize = args.next().map_or(Ok(5), |s| s.parse())?;
    let out = std::env::temp_dir().join(format!("overhead-gpt-{}", std::process::id()));
    let modes = [
        ("off", None),
        ("kernels", Some(DeviceDetail::Kernels)),
        ("instructions", Some(DeviceDetail::Instructions)),
    ];
    let mut host: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
    let mut wall: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
    for _ in 0..rounds {
        for (i, (_, mode)) in modes.iter().enumerate() {
            let mut config = WorkloadConfig::new(Workload::Gpt);
            config.steps = steps;
            config.detail = match mode {
                Some(DeviceDetail::Instructions) => RecordDetail::Instructions,
                _ => RecordDetail::Kernels,
            };
            let started = Instant::now();
            let report = match mode {
                None => run(&config, |_| {})?,
                Some(detail) => {
                    let mut options = RunOptions::new(&out, 1);
                    options.steps = Some(steps as u64);
                    options.config.device_detail = *detail;
                    let rank_of = |t: u32| {
                        rank_of_thread(t).map(|t| RankOf {
                            rank: t.rank as u32,
                            world_size: 1,
                        })
                    };
                    profiler::run_profiled(&options, rank_of, |prof| run(&config, |_| prof.step()))?
                        .output?
                }
            };
            wall[i].push(started.elapsed().as_nanos() as f64 / steps as f64);
            host[i].push(host_step_ns(&report));
        }
    }
    let base = median(host[0].clone());
    println!("gpt (tiny), 1 rank, {steps} steps, median of {rounds} rounds");
    println!(
        "{:<14} {:>16} {:>10} {:>16}",
        "profiling", "host us/step", "vs off", "wall us/step"
    );
    for (i, (name, _)) in modes.iter().enumerate() {
        let h = median(host[i].clone());
        println!(
            "{name:<14} {:>16.2} {:>+9.2}% {:>16.1}",
            h / 1e3,
            (h / base - 1.0) * 100.0,
            median(wall[i].clone()) / 1e3
        );
    }
    let _ = std::fs::remove_dir_all(&out);
    Ok(())
}
