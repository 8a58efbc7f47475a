//! Recording overhead on the `gpt` workload: the host's own time per step with
//! profiling off and on (kernels only, and kernels plus instructions), the issue's
//! ≤ 3 % criterion.
//!
//! ```text
//! cargo run --release -p profiler --example overhead_gpt -- [STEPS] [ROUNDS]
//! ```
//!
//! Per step, on the rank's host clock (emulation time excluded, as the traces show
//! it), between step ends (`StepReport::end_ns`):
//! - **host time**: everything, including waiting for the device;
//! - **wait**: the part spent waiting for the device (`neuron_backend::host_wait_ns`:
//!   queue back-pressure, synchronizations, copies to the host);
//! - **host busy** = host time − wait: the time the host spends dispatching operators
//!   and, with profiling on, recording them. This is the figure the criterion is
//!   about: the tiny model keeps the device ~97 % busy, so host time alone is mostly
//!   waiting and would hide any recording cost that fits in the wait.
//!
//! Each is the mean over the steps after the first two, then the median over rounds
//! run in alternation (off, kernels, instructions, off, …). Wall time per step (which
//! also pays for the emulator and, with profiling, for converting and writing the
//! trace) is printed for scale.

use std::sync::Mutex;
use std::time::Instant;

use neuron_backend::dist::rank_of_thread;
use neuron_backend::workloads::{run_with_hooks, FnHooks, StepReport, Workload, WorkloadConfig};
use neuron_backend::RecordDetail;
use profiler::{DeviceDetail, RankOf, RunOptions};

/// Host clock and cumulative wait at each step end of rank 0.
#[derive(Default)]
struct Marks(Mutex<Vec<(u64, u64)>>);

impl Marks {
    fn mark(&self, step: &StepReport) {
        if step.rank == 0 {
            let wait_ns = neuron_backend::host_wait_ns();
            self.0.lock().unwrap().push((step.end_ns, wait_ns));
        }
    }

    /// Mean (host time, wait) per step over the steps after the first two.
    fn per_step_ns(&self) -> (f64, f64) {
        let marks = self.0.lock().unwrap();
        let steps: Vec<(u64, u64)> = marks
            .windows(2)
            .skip(1)
            .map(|w| (w[1].0 - w[0].0, w[1].1 - w[0].1))
            .collect();
        let n = steps.len().max(1) as f64;
        (
            steps.iter().map(|s| s.0).sum::<u64>() as f64 / n,
            steps.iter().map(|s| s.1).sum::<u64>() as f64 / n,
        )
    }
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
    // Per mode: host, wait, wall (ns per step), device utilization.
    let mut host: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
    let mut wait: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
    let mut wall: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
    let mut busy: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
    for _ in 0..rounds {
        for (i, (_, mode)) in modes.iter().enumerate() {
            let mut config = WorkloadConfig::new(Workload::Gpt);
            config.steps = steps;
            config.detail = match mode {
                Some(DeviceDetail::Instructions) => RecordDetail::Instructions,
                _ => RecordDetail::Kernels,
            };
            let marks = Marks::default();
            let started = Instant::now();
            match mode {
                None => {
                    let hooks = FnHooks {
                        on_start: |_rank| {},
                        on_step: |step: &StepReport| marks.mark(step),
                    };
                    run_with_hooks(&config, &hooks)?;
                }
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
                    let profiled = profiler::run_profiled(&options, rank_of, |prof| {
                        let hooks = FnHooks {
                            on_start: |_rank| prof.begin_rank(),
                            on_step: |step: &StepReport| {
                                marks.mark(step);
                                prof.step();
                            },
                        };
                        run_with_hooks(&config, &hooks)
                    })?;
                    profiled.output?;
                    if let Some(result) = profiled.results.first() {
                        busy[i].push(result.summary().device_utilization());
                        // A measurement on a window that lost records would be
                        // cheaper than the real thing.
                        assert_eq!(result.summary().dropped_records, 0, "records dropped");
                    }
                }
            }
            wall[i].push(started.elapsed().as_nanos() as f64 / steps as f64);
            let (h, w) = marks.per_step_ns();
            host[i].push(h);
            wait[i].push(w);
        }
    }
    println!("gpt (tiny), 1 rank, {steps} steps, median of {rounds} rounds");
    println!(
        "{:<13} {:>10} {:>10} {:>10} {:>8} {:>10} {:>8}",
        "profiling", "host us", "wait us", "busy us", "vs off", "wall us", "device"
    );
    let host_busy =
        |i: usize| -> Vec<f64> { host[i].iter().zip(&wait[i]).map(|(h, w)| h - w).collect() };
    let base = median(host_busy(0));
    for (i, (name, _)) in modes.iter().enumerate() {
        let b = median(host_busy(i));
        let device = if busy[i].is_empty() {
            "-".to_owned()
        } else {
            format!("{:.1}%", median(busy[i].clone()) * 100.0)
        };
        println!(
            "{name:<13} {:>10.2} {:>10.2} {:>10.2} {:>+7.2}% {:>10.1} {device:>8}",
            median(host[i].clone()) / 1e3,
            median(wait[i].clone()) / 1e3,
            b / 1e3,
            (b / base - 1.0) * 100.0,
            median(wall[i].clone()) / 1e3,
        );
    }
    let _ = std::fs::remove_dir_all(&out);
    Ok(())
}
