//! The performance targets: host dispatch overhead of a small elementwise op
//! (numerics off), timing-only simulation speed, and 512³ f32 matmul numerics against
//! the gemm crate called directly (single-threaded).

use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion};
use neuron_backend::{DType, Runtime};

fn dispatch(c: &mut Criterion) {
    let runtime = Runtime::trn2();
    runtime.set_numerics(false);
    let device = runtime.device(0).unwrap();
    let a = device.zeros(&[4], DType::F32).unwrap();
    c.bench_function("dispatch: add of 4 f32, numerics off", |b| {
        b.iter(|| a.add(&a).unwrap());
    });
    // Recording kernels only (instructions would fill the ring at once); the records
    // are drained between batches so the ring never drops.
    device.set_detail(neuron_backend::RecordDetail::Kernels);
    runtime_hooks::register_thread();
    runtime_hooks::set_enabled(true);
    let mut sink = Vec::new();
    c.bench_function("dispatch: add of 4 f32, numerics off, recording on", |b| {
        b.iter_batched(
            || {
                sink.clear();
                runtime_hooks::drain(&mut sink);
            },
            |()| a.add(&a).unwrap(),
            criterion::BatchSize::SmallInput,
        );
    });
    runtime_hooks::set_enabled(false);
}

fn simulation(c: &mut Criterion) {
    let runtime = Runtime::trn2();
    runtime.set_numerics(false);
    let device = runtime.device(0).unwrap();
    let a = device.zeros(&[2048, 2048], DType::BF16).unwrap();
    let before = device.engine_time().instructions;
    let started = Instant::now();
    a.matmul(&a).unwrap();
    let per_kernel = device.engine_time().instructions - before;
    eprintln!(
        "simulation: {per_kernel} instructions per 2048³ matmul, {:.2} M instructions/s (one run)",
        per_kernel as f64 / started.elapsed().as_secs_f64() / 1e6
    );
    c.bench_function("simulate: 2048³ bf16 matmul, numerics off", |b| {
        b.iter(|| a.matmul(&a).unwrap());
    });
}

fn numerics(c: &mut Criterion) {
    let device = Runtime::trn2().device(0).unwrap();
    let a = device.randn(&[512, 512], DType::F32, 1).unwrap();
    let mut group = c.benchmark_group("matmul 512³ f32");
    group.sample_size(20);
    group.bench_function("backend op, numerics on", |b| {
        b.iter(|| a.matmul(&a).unwrap())
    });
    let x = vec![0.5f32; 512 * 512];
    let mut y = vec![0.0f32; 512 * 512];
    group.bench_function("matrixmultiply::sgemm directly", |b| {
        b.iter(|| {
            // SAFETY: x holds 512×512 elements read row-major with strides (512, 1), and y
            // has room for 512×512 written the same way; x and y do not overlap.
            unsafe {
                matrixmultiply::sgemm(
                    512,
                    512,
                    512,
                    1.0,
                    x.as_ptr(),
                    512,
                    1,
                    x.as_ptr(),
                    512,
                    1,
                    0.0,
                    y.as_mut_ptr(),
                    512,
                    1,
                );
            }
        })
    });
    group.finish();
}

criterion_group!(benches, dispatch, simulation, numerics);
criterion_main!(benches);
