//! Profiles a small MLP forward pass on the emulated `neuron:0` and writes the trace.
//!
//! ```text
//! cargo run -p profiler --example profile_emulated_ops -- [OUT_DIR] [STEPS]
//! ```
//!
//! Prints torch's operator table, the window summary, and how long converting and
//! writing took.

use std::time::Instant;

use neuron_backend::{DType, Runtime};
use profiler::{DeviceInfo, Profiler, Schedule, SortBy};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let out_dir = args.next().unwrap_or_else(|| "profiler-example".to_owned());
    let steps: u64 = args.next().map_or(Ok(4), |s| s.parse())?;
    let runtime = Runtime::trn2();
    let device = runtime.device(0)?;
    let profile = device.profile();
    let info = DeviceInfo {
        core_version: "v3".to_owned(),
        lnc: profile.lnc,
        hbm_bytes: device.memory_capacity_bytes(),
        peak_tflops: vec![(
            "bf16".to_owned(),
            profile.tensor_bf16_tflops * f64::from(profile.lnc),
        )],
        ..DeviceInfo::new(0, &profile.name)
    };
    let handler = profiler::tensorboard_trace_handler(&out_dir, None, true);
    let mut prof = Profiler::builder()
        .record_shapes(true)
        .profile_memory(true)
        .with_flops(true)
        .device(info)
        .schedule(Schedule::new(0, 1, 1, steps.saturating_sub(2).max(1), 1))
        .on_trace_ready_handler(handler.clone())
        .start();
    let x = device.randn(&[128, 512], DType::BF16, 1)?;
    let w1 = device.randn(&[512, 1024], DType::BF16, 2)?;
    let w2 = device.randn(&[1024, 512], DType::BF16, 3)?;
    let mut closed = Instant::now();
    for _ in 0..steps {
        let _forward = profiler::record_function("forward");
        let h = x.matmul(&w1)?.gelu()?;
        let y = h.matmul(&w2)?.add(&x)?;
        drop(y.sum_all()?.to_host()?);
        drop(_forward);
        closed = Instant::now();
        prof.step()?;
    }
    let handover = closed.elapsed();
    let result = prof.stop()?.expect("one window");
    println!("{}", result.key_averages().table(SortBy::SelfDevice, 12));
    let summary = result.summary();
    println!(
        "steps {} · mean step {} · device busy {:.1}% · peak HBM {} B · dropped {}",
        summary.steps,
        profiler::format_time(summary.mean_step_ns),
        summary.device_utilization() * 100.0,
        summary.peak_allocated_bytes.unwrap_or(0),
        summary.dropped_records
    );
    let counts = result.activity_counts();
    println!(
        "{} host spans, {} device spans, {} instructions, {} DMA transfers converted and written in {:.1} ms",
        counts.host_spans,
        counts.device_spans,
        counts.instructions,
        counts.dma_transfers,
        handover.as_secs_f64() * 1e3
    );
    for file in handler.files() {
        println!("wrote {}", file.display());
    }
    Ok(())
}
