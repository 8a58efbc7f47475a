//! Runs a built-in workload and prints what it did.
//!
//! ```text
//! cargo run --release --example workload -- mlp [ranks]
//! cargo run --release --example workload -- gpt [ranks]
//! cargo run --release --example workload -- gpt-infer [ranks]
//! cargo run --release --example workload -- llama8b [layers]
//! ```

use std::time::Instant;

use neuron_backend::workloads::{run, Workload, WorkloadConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let name = args.first().map_or("mlp", String::as_str);
    let number: Option<usize> = args.get(1).and_then(|a| a.parse().ok());
    let config = if name == "llama8b" {
        WorkloadConfig::llama8b_preset(number.unwrap_or(32))
    } else {
        let workload = Workload::from_name(name).ok_or(format!("unknown workload {name}"))?;
        let mut config = WorkloadConfig::new(workload);
        config.ranks = number.unwrap_or(1);
        if workload == Workload::Gpt {
            config.steps = 20;
        }
        config
    };
    println!(
        "{name}: {} ranks (tp {}), {} steps, numerics {}",
        config.ranks, config.tp, config.steps, config.numerics
    );
    let started = Instant::now();
    let report = run(&config, |step| {
        if step.rank == 0 {
            if let Some(loss) = step.loss {
                println!("step {:>3}  loss {loss:.4}", step.step);
            }
        }
    })?;
    println!("wall time {:.2?}", started.elapsed());
    if let [first, .., last] = report.steps.as_slice() {
        println!(
            "rank 0, steps 1..{}: {:.3} ms on its host clock",
            last.step,
            (last.end_ns - first.end_ns) as f64 * 1e-6
        );
    }
    if let Some(accuracy) = report.accuracy {
        println!("held-out accuracy {:.1} %", accuracy * 100.0);
    }
    if let Some(tps) = report.tokens_per_sec {
        println!("decode {tps:.0} tokens/s (modeled)");
    }
    Ok(())
}
