//! Runs one transformer block forward on an emulated `trn2` core and prints the modeled
//! device time per engine.
//!
//! ```text
//! cargo run --release -p neuron-backend --example engine_time            # numerics on
//! cargo run --release -p neuron-backend --example engine_time -- --timing-only
//! ```

use neuron_backend::{BackendError, DType, Device, Engine, EngineTime, Runtime, Tensor};

/// The parameters of one block.
struct Weights {
    gamma: Tensor,
    beta: Tensor,
    /// q, k, v, out, up, down.
    w: Vec<Tensor>,
}

impl Weights {
    fn new(device: &Device, dim: usize, dt: DType, seed: u64) -> Result<Self, BackendError> {
        let shapes = [
            [dim, dim],
            [dim, dim],
            [dim, dim],
            [dim, dim],
            [4 * dim, dim],
            [dim, 4 * dim],
        ];
        let w = shapes
            .iter()
            .enumerate()
            .map(|(i, shape)| device.randn(shape, dt, seed + i as u64)?.mul_scalar(0.02))
            .collect::<Result<_, BackendError>>()?;
        Ok(Weights {
            gamma: device.ones(&[dim], dt)?,
            beta: device.zeros(&[dim], dt)?,
            w,
        })
    }
}

/// One pre-norm block: attention (single head, for brevity) and a GELU MLP.
fn block(x: &Tensor, p: &Weights, dim: usize, seed: u64) -> Result<Tensor, BackendError> {
    let (gamma, beta) = (&p.gamma, &p.beta);
    let seq = x.shape()[0];

    let h = x.layer_norm(gamma, beta, 1e-5)?;
    let q = h.linear(&p.w[0], None)?;
    let k = h.linear(&p.w[1], None)?;
    let v = h.linear(&p.w[2], None)?;
    let scores = q
        .matmul(&k.transpose(0, 1)?)?
        .mul_scalar(1.0 / (dim as f64).sqrt())?;
    let attn = scores.softmax()?.matmul(&v)?;
    let x = x.add(&attn.linear(&p.w[3], None)?)?;

    let h = x.layer_norm(gamma, beta, 1e-5)?;
    let up = h.linear(&p.w[4], None)?.gelu()?;
    let down = up.linear(&p.w[5], None)?;
    let (out, _mask) = x.add(&down)?.dropout(0.1, seed)?;
    assert_eq!(out.shape(), &[seq, dim]);
    Ok(out)
}

fn print(name: &str, before: &EngineTime, after: &EngineTime, span_ns: u64, device: &Device) {
    let cores = device.profile().lnc as f64;
    println!(
        "{name}: {} kernels, {} instructions, device span {:.1} µs",
        after.kernels - before.kernels,
        after.instructions - before.instructions,
        span_ns as f64 / 1e3
    );
    for engine in Engine::ALL {
        let busy = after.compute_busy_ns[engine as usize] - before.compute_busy_ns[engine as usize];
        let share = busy as f64 / cores / span_ns.max(1) as f64 * 100.0;
        println!(
            "  {:<8} busy {:>10.1} µs  ({share:5.1}% of the span per physical core)",
            engine.name(),
            busy as f64 / 1e3
        );
    }
    let dma_bytes = after.dma_bytes - before.dma_bytes;
    println!(
        "  DMA      {:>10.1} MiB moved, {:.1} GB/s over the span",
        dma_bytes as f64 / (1 << 20) as f64,
        dma_bytes as f64 / span_ns.max(1) as f64
    );
}

fn main() -> Result<(), BackendError> {
    let timing_only = std::env::args().any(|a| a == "--timing-only");
    let runtime = Runtime::trn2();
    runtime.set_numerics(!timing_only);
    let device = runtime.device(0)?;
    let (seq, dim) = if timing_only {
        (4096, 4096)
    } else {
        (256, 512)
    };
    println!(
        "profile {} (LNC={}), block seq={seq} dim={dim} bf16, numerics {}",
        device.profile().name,
        device.profile().lnc,
        if timing_only { "off" } else { "on" }
    );

    let x = device.randn(&[seq, dim], DType::BF16, 7)?;
    let weights = Weights::new(&device, dim, DType::BF16, 11)?;
    device.synchronize();
    let before = device.engine_time();
    let start_ns = device.last_kernel().map_or(0, |k| k.end_ns);
    let out = block(&x, &weights, dim, 11)?;
    let end_ns = device.synchronize();
    let after = device.engine_time();
    print(
        "transformer block",
        &before,
        &after,
        after.last_end_ns.saturating_sub(start_ns),
        &device,
    );
    let _ = end_ns;
    if !timing_only {
        let values = out.to_vec_f32()?;
        let mean = values.iter().map(|&v| f64::from(v)).sum::<f64>() / values.len() as f64;
        println!("output mean {mean:.4}");
    }
    let stats = device.memory_stats();
    println!(
        "memory: peak allocated {:.1} MiB, reserved {:.1} MiB",
        stats.peak_allocated_bytes as f64 / (1 << 20) as f64,
        stats.reserved_bytes as f64 / (1 << 20) as f64
    );
    Ok(())
}
