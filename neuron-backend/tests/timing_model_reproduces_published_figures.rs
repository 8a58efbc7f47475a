//! The timing model against the published Trainium2 figures (hw.md), with numerics off
//! so the big shapes run fast.

use neuron_backend::{DType, Device, DeviceProfile, Runtime, Tensor};

fn device(profile: DeviceProfile) -> Device {
    let runtime = Runtime::new(profile).unwrap();
    runtime.set_numerics(false);
    runtime.device(0).unwrap()
}

fn matmul_ns(dtype: DType, size: usize) -> (f64, f64) {
    let device = device(DeviceProfile::trn2());
    let a = device.zeros(&[size, size], dtype).unwrap();
    let b = device.zeros(&[size, size], dtype).unwrap();
    a.matmul(&b).unwrap();
    let span = device.last_kernel().unwrap();
    let flops = 2.0 * (size as f64).powi(3);
    let peak = device.profile().tensor_peak_bf16_flops_per_ns();
    (span.dur_ns() as f64, flops / span.dur_ns() as f64 / peak)
}

#[test]
fn large_bf16_matmul_reaches_85_to_99_percent_of_tensor_peak() {
    let (dur_ns, efficiency) = matmul_ns(DType::BF16, 4096);
    eprintln!(
        "bf16 4096³: {dur_ns} ns, {:.1}% of TensorE peak",
        efficiency * 100.0
    );
    assert!((0.85..=0.99).contains(&efficiency), "{efficiency}");
}

#[test]
fn fp32_matmul_is_about_four_times_slower() {
    // At 4096³: a smaller bf16 matmul spends a larger part of its time loading the RHS
    // (8 MiB per physical core at 2048³) before its first output tile runs at full rate.
    let (bf16_ns, _) = matmul_ns(DType::BF16, 4096);
    let (f32_ns, _) = matmul_ns(DType::F32, 4096);
    let ratio = f32_ns / bf16_ns;
    eprintln!("4096³: bf16 {bf16_ns} ns, f32 {f32_ns} ns, ratio {ratio:.2}");
    assert!((3.5..=4.3).contains(&ratio), "{ratio}");
}

#[test]
fn large_elementwise_runs_near_the_cores_hbm_share() {
    for profile in [DeviceProfile::trn2(), DeviceProfile::trn2_lnc1()] {
        let share = profile.hbm_bytes_per_ns_per_core();
        let device = device(profile);
        let n = 32 << 20;
        let a = device.zeros(&[n], DType::F32).unwrap();
        let b = device.zeros(&[n], DType::F32).unwrap();
        a.add(&b).unwrap();
        let span = device.last_kernel().unwrap();
        let bytes_per_ns = (3 * 4 * n) as f64 / span.dur_ns() as f64;
        eprintln!(
            "{}: add of 2×{n} f32: {} ns, {bytes_per_ns:.1} B/ns of {share} B/ns",
            device.profile().name,
            span.dur_ns()
        );
        assert!(
            bytes_per_ns >= 0.85 * share && bytes_per_ns <= share,
            "{bytes_per_ns} vs {share}"
        );
    }
}

#[test]
fn tiny_ops_are_dominated_by_fixed_overheads() {
    let device = device(DeviceProfile::trn2());
    let a = device.zeros(&[4], DType::F32).unwrap();
    let before = device.engine_time();
    a.add(&a).unwrap();
    let span = device.last_kernel().unwrap();
    let after = device.engine_time();
    let compute_ns: u64 = (0..4)
        .map(|e| after.compute_busy_ns[e] - before.compute_busy_ns[e])
        .sum();
    eprintln!(
        "add of 4 f32: {} ns, compute {compute_ns} ns",
        span.dur_ns()
    );
    assert!(
        (1_000..10_000).contains(&span.dur_ns()),
        "{}",
        span.dur_ns()
    );
    assert!(
        compute_ns * 5 < span.dur_ns(),
        "compute {compute_ns} of {}",
        span.dur_ns()
    );
}

#[test]
fn a_host_copy_shows_single_engine_dma_costs() {
    // One physical core, so the whole copy is one transfer on one engine.
    let device = device(DeviceProfile::trn2_lnc1());
    let latency = device.profile().launch_latency_ns;
    for (bytes, low, high) in [
        (32 * 1024, 1_350, 1_500),
        (1024, 1_300, 1_300),
        (64, 1_300, 1_300),
    ] {
        let host = Tensor::from_f32(&[bytes / 4], vec![0.0; bytes / 4]).unwrap();
        host.to_device(&device).unwrap();
        let dur = device.last_kernel().unwrap().dur_ns();
        eprintln!("{bytes} B host→device: {dur} ns");
        assert!((low..=high).contains(&dur), "{bytes} B: {dur} ns");
        assert!(latency > 0);
    }
}

#[test]
fn trn3_moves_more_bytes_per_core_than_trn2() {
    // Trn3's per-core HBM share (4.9 TB/s / 4 = 1225 B/ns) exceeds its DMA engines'
    // 2 × 16 × 33 = 1056 B/ns, so large elementwise ops run at the DMA figure.
    let profile = DeviceProfile::trn3();
    let dma = f64::from(profile.lnc * profile.dma_engines) * profile.dma_engine_bytes_per_ns;
    let limit = dma.min(profile.hbm_bytes_per_ns_per_core());
    let device = device(profile);
    let n = 16 << 20;
    let a = device.zeros(&[n], DType::BF16).unwrap();
    a.add(&a).unwrap();
    let bytes_per_ns = (3 * 2 * n) as f64 / device.last_kernel().unwrap().dur_ns() as f64;
    eprintln!("trn3: add of 2×{n} bf16 at {bytes_per_ns:.1} B/ns, limit {limit:.1} B/ns");
    assert!(
        bytes_per_ns >= 0.85 * limit && bytes_per_ns <= limit * 1.0001,
        "{bytes_per_ns}"
    );
    assert!(bytes_per_ns > DeviceProfile::trn2().hbm_bytes_per_ns_per_core());
}

#[test]
fn fp8_matmul_runs_at_the_fp8_rate() {
    let (bf16_ns, _) = matmul_ns(DType::BF16, 2048);
    let device = device(DeviceProfile::trn2());
    let a = device.zeros(&[2048, 2048], DType::F8E4M3).unwrap();
    let c = a.matmul(&a).unwrap();
    assert_eq!(c.dtype(), DType::BF16);
    let fp8_ns = device.last_kernel().unwrap().dur_ns() as f64;
    let speedup = bf16_ns / fp8_ns;
    eprintln!("2048³: bf16 {bf16_ns} ns, fp8 {fp8_ns} ns, speedup {speedup:.2}");
    // hw.md: 158 FP8 vs 79 BF16 TFLOPS; fixed costs keep it a little under 2×.
    assert!((1.6..=2.0).contains(&speedup), "{speedup}");
}

/// Busy time of `engine` on `device` while `op` runs, ns.
fn busy_ns(device: &Device, engine: usize, op: impl FnOnce()) -> f64 {
    let before = device.engine_time().compute_busy_ns[engine];
    op();
    (device.engine_time().compute_busy_ns[engine] - before) as f64
}

/// Elements per ns of one physical core's `engine` streaming `op` over `n` elements
/// (its input made by `input`, outside the measurement), once the fixed cost of each
/// of its instructions — one per tile of 128 × 2,048 elements, measured as the busy
/// time of the same op on one element — is taken out.
fn streaming_rate(
    engine: usize,
    n: usize,
    input: impl Fn(&Device, usize) -> Option<Tensor>,
    op: impl Fn(&Device, usize, Option<Tensor>),
) -> f64 {
    let device = device(DeviceProfile::trn2_lnc1());
    let (one, x) = (input(&device, 1), input(&device, n));
    let fixed = busy_ns(&device, engine, || op(&device, 1, one));
    let busy = busy_ns(&device, engine, || op(&device, n, x));
    let tiles = n.div_ceil(128 * 2048) as f64;
    n as f64 / (busy - tiles * fixed)
}

#[test]
fn each_engine_streams_at_its_figure() {
    let p = DeviceProfile::trn2_lnc1();
    let figure = |what: &str| {
        p.figures()
            .into_iter()
            .find(|f| f.what == what)
            .unwrap_or_else(|| panic!("no figure {what}"))
            .value
    };
    let n = 8 << 20;
    let zeros = |dtype| move |d: &Device, n: usize| Some(d.zeros(&[n], dtype).unwrap());
    let relu = |_: &Device, _: usize, x: Option<Tensor>| {
        x.unwrap().relu().unwrap();
    };
    let rates = [
        (
            "VectorE BF16",
            streaming_rate(1, n, zeros(DType::BF16), relu),
        ),
        (
            "VectorE FP32",
            streaming_rate(1, n, zeros(DType::F32), relu),
        ),
        (
            "ScalarE FP32",
            streaming_rate(2, n, zeros(DType::F32), |_, _, x| {
                x.unwrap().exp().unwrap();
            }),
        ),
        (
            "GpSimdE FP32",
            streaming_rate(
                3,
                n,
                |_, _| None,
                |d, n, _| {
                    d.randn(&[n], DType::F32, 7).unwrap();
                },
            ),
        ),
    ];
    for (what, rate) in rates {
        // G elements/s is elements per ns.
        let published = figure(what);
        eprintln!("{what}: {rate:.1} elements/ns, figure {published:.1}");
        assert!(
            (rate / published - 1.0).abs() < 0.02,
            "{what}: {rate} vs {published}"
        );
    }
    // TensorE: a large bf16 matmul keeps the array busy at its figure (stationary loads
    // take the rest).
    let device = device(DeviceProfile::trn2_lnc1());
    let a = device.zeros(&[4096, 4096], DType::BF16).unwrap();
    let busy = busy_ns(&device, 0, || {
        a.matmul(&a).unwrap();
    });
    let tflops = 2.0 * 4096f64.powi(3) / busy / 1e3;
    eprintln!(
        "TensorE BF16: {tflops:.1} TFLOPS while busy, figure {}",
        figure("TensorE BF16")
    );
    assert!(
        (0.9..=1.0).contains(&(tflops / figure("TensorE BF16"))),
        "{tflops}"
    );
}

#[test]
fn psum_and_sbuf_capacity_shape_a_large_matmul() {
    // [512, 4096] × [4096, 14336] bf16 (a Llama MLP): each physical core keeps the
    // RHS in 2,048-column blocks (32 k-tiles × 2,048 × 2 B = 128 KiB of its 224 KiB
    // partition) and reloads its LHS panels for each of the 7 blocks.
    let (m, k, n) = (512u64, 4096u64, 14336u64);
    let traffic = |profile: DeviceProfile| {
        let device = device(profile);
        let a = device
            .zeros(&[m as usize, k as usize], DType::BF16)
            .unwrap();
        let b = device
            .zeros(&[k as usize, n as usize], DType::BF16)
            .unwrap();
        let before = device.engine_time().dma_bytes;
        a.matmul(&b).unwrap();
        device.engine_time().dma_bytes - before
    };
    let (lhs, rhs, out) = (m * k * 2, k * n * 2, m * n * 2);
    // Two physical cores: each loads the whole RHS, and its half of the LHS per block.
    assert_eq!(traffic(DeviceProfile::trn2()), 7 * lhs + 2 * rhs + out);
    // With a (hypothetical) SBUF large enough for the whole RHS, one block.
    let roomy = DeviceProfile {
        sbuf_bytes: 512 << 20,
        ..DeviceProfile::trn2()
    };
    assert_eq!(traffic(roomy), lhs + 2 * rhs + out);
}

#[test]
fn a_row_longer_than_a_partition_spills_between_passes() {
    // Softmax over a 128,256-element f32 row (1 MiB in and out per row): it does not
    // fit a 224 KiB partition, so each of its 3 stages is a pass over chunks, the
    // intermediate spilled and reloaded.
    let device = device(DeviceProfile::trn2_lnc1());
    let x = device.zeros(&[128, 128_256], DType::F32).unwrap();
    let before = device.engine_time().dma_bytes;
    x.softmax().unwrap();
    let moved = device.engine_time().dma_bytes - before;
    let size = x.size_bytes();
    eprintln!("softmax of {size} B moved {moved} B");
    // Input 3 times, intermediate spilled twice and reloaded twice, output once.
    assert!(moved >= 8 * size, "{moved} vs {size}");
    // A row that fits moves its input and output once.
    let y = device.zeros(&[128, 16_384], DType::F32).unwrap();
    let before = device.engine_time().dma_bytes;
    y.softmax().unwrap();
    assert_eq!(device.engine_time().dma_bytes - before, 2 * y.size_bytes());
}

#[test]
fn a_sum_of_all_elements_is_spread_over_the_partitions() {
    // The same 1 MiB of f32 reduced to one value, and to one value per 128-element row
    // (8,192 rows fill the partitions): a compiler cuts the single long row over the
    // partitions and reduces the partial results in a second pass, so the full sum
    // reads its input about as fast: 8,495 ns against 6,729 ns. (The row was cut only
    // as far as SBUF needed, over 6 partitions: 33,424 ns, and the demo's insight
    // named `aten::sum` the op with most to win.)
    let device = device(DeviceProfile::trn2());
    let x = device.zeros(&[2, 8, 128, 128], DType::F32).unwrap();
    x.sum(3, false).unwrap();
    let by_rows = device.last_kernel().unwrap().dur_ns();
    x.sum_all().unwrap();
    let all = device.last_kernel().unwrap().dur_ns();
    // Over the batch of attention scores: 16 Ki results, each of 8 elements 64 KiB
    // apart, accumulated in contiguous runs: 3,685 ns (one result a partition row: 40,519).
    let scores = device.zeros(&[8, 128, 128], DType::F32).unwrap();
    scores.sum(0, false).unwrap();
    let over_batch = device.last_kernel().unwrap().dur_ns();
    eprintln!(
        "sum of 1 MiB f32: {all} ns to one value, {by_rows} ns to 8,192 row sums; \
         sum of 512 KiB over its first dimension: {over_batch} ns"
    );
    assert!(all < 2 * by_rows, "{all} ns vs {by_rows} ns");
    assert!(over_batch < by_rows, "{over_batch} ns vs {by_rows} ns");
}

#[test]
fn host_copies_run_at_the_host_link_rate() {
    let device = device(DeviceProfile::trn2());
    let link = device.profile().host_link_bytes_per_ns;
    let n = 16 << 20;
    let host = Tensor::from_f32(&[n], vec![0.0; n]).unwrap();
    let on_device = host.to_device(&device).unwrap();
    let up = device.last_kernel().unwrap().dur_ns() as f64;
    let rate = (4 * n) as f64 / up;
    eprintln!("64 MiB host→device at {rate:.1} B/ns (link {link} B/ns)");
    assert!((0.95..=1.0).contains(&(rate / link)), "{rate}");
    on_device.to_host().unwrap();
    let down = device.last_kernel().unwrap().dur_ns() as f64;
    assert!(((4 * n) as f64 / down / link - 1.0).abs() < 0.05, "{down}");
}
