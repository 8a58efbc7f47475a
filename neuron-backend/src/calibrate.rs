//! Microbenchmarks of the timing model against the published figures: the table
//! `neuronprof calibrate` prints and `docs/HARDWARE.md` shows.
//!
//! Each row runs one kind of work on emulated devices (timing only) and sets the rate
//! the model gives beside the figure it was built from ([`DeviceProfile::figures`],
//! [`Topology`]). A row within ±10 % of its figure needs no words; one outside says why
//! (fixed costs of small work, latency-bound collectives, a link shared with another
//! collective), computed from the same model, so the table explains itself.
//!
//! Rows: matmul BF16, FP32 and FP8 at 5 sizes (TFLOPS of the kernel); each engine's
//! elementwise streaming at 3 sizes (elements per ns of the engine); DMA at 6 sizes and
//! 2 row shapes (GB/s of one transfer spread over a core's engines); host↔device copies
//! (GB/s over the host link); all-reduce at 5 sizes on 3 topologies (nccl-tests' bus
//! bandwidth against the link's per-rank figure); two all-reduces at once on one link.

use runtime_hooks::{DmaDirection, NameId};

use crate::dist::{ReduceOp, Topology, World, WorldConfig};
use crate::timing::{cost, KernelInfo, RecordDetail};
use crate::{BackendError, DType, Device, DeviceProfile, Runtime, Tensor};

/// One microbenchmark and the figure it is held against.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CalibrationRow {
    /// The kind of work: `matmul`, `engine`, `dma`, `host copy`, `all-reduce`,
    /// `concurrent all-reduce`.
    pub group: &'static str,
    /// What exactly ran, for example `bf16 4096³`.
    pub what: String,
    /// The model's rate.
    pub measured: f64,
    /// The figure's rate, in the same unit.
    pub published: f64,
    /// Unit of both.
    pub unit: &'static str,
    /// The figure and where it is from.
    pub figure: String,
    /// `measured / published`.
    pub ratio: f64,
    /// Why the row is outside ±10 % (`None` inside).
    pub explanation: Option<String>,
}

impl CalibrationRow {
    /// Whether the model is within ±10 % of the figure.
    pub fn within_10_percent(&self) -> bool {
        (self.ratio - 1.0).abs() <= 0.10
    }
}

fn row(
    group: &'static str,
    what: String,
    measured: f64,
    published: f64,
    unit: &'static str,
    figure: String,
    explain: impl FnOnce() -> String,
) -> CalibrationRow {
    let ratio = measured / published;
    let explanation = ((ratio - 1.0).abs() > 0.10).then(explain);
    CalibrationRow {
        group,
        what,
        measured,
        published,
        unit,
        figure,
        ratio,
        explanation,
    }
}

fn figure(profile: &DeviceProfile, what: &str) -> f64 {
    profile
        .figures()
        .into_iter()
        .find(|f| f.what == what)
        .map_or(f64::NAN, |f| f.value)
}

fn device(profile: &DeviceProfile) -> Result<Device, BackendError> {
    let runtime = Runtime::new(profile.clone())?;
    runtime.set_numerics(false);
    runtime.set_detail(RecordDetail::Kernels);
    runtime.device(0)
}

/// Every row for `profile` (timing only; about a second in a release build).
pub fn calibrate(profile: &DeviceProfile) -> Result<Vec<CalibrationRow>, BackendError> {
    let mut rows = Vec::new();
    matmuls(profile, &mut rows)?;
    engines(profile, &mut rows)?;
    dmas(profile, &mut rows)?;
    host_copies(profile, &mut rows)?;
    all_reduces(profile, &mut rows)?;
    concurrent_all_reduces(profile, &mut rows)?;
    Ok(rows)
}

fn matmuls(profile: &DeviceProfile, rows: &mut Vec<CalibrationRow>) -> Result<(), BackendError> {
    for (dtype, what) in [
        (DType::BF16, "TensorE BF16"),
        (DType::F32, "TensorE FP32"),
        (DType::F8E4M3, "TensorE FP8"),
    ] {
        let peak = figure(profile, what);
        for n in [256usize, 512, 1024, 2048, 4096] {
            let d = device(profile)?;
            let a = d.zeros(&[n, n], dtype)?;
            let before = d.engine_time();
            a.matmul(&a)?;
            let span = d.last_kernel().expect("the matmul ran");
            let after = d.engine_time();
            let busy = (after.compute_busy_ns[0] - before.compute_busy_ns[0]) as f64
                / f64::from(profile.lnc);
            let dur = span.dur_ns() as f64;
            let tflops = 2.0 * (n as f64).powi(3) / dur / 1e3;
            let moved = (after.dma_bytes - before.dma_bytes) as f64 / f64::from(profile.lnc);
            rows.push(row(
                "matmul",
                format!("{dtype} {n}³"),
                tflops,
                peak,
                "TFLOPS",
                format!("{what} {peak} TFLOPS per logical core (HARDWARE.md TensorE)"),
                || {
                    // Moving passes at the figure's rate; the rest of the busy time
                    // loads stationary tiles where no passes hide them (and runs
                    // throttled after idle).
                    let passes = 2.0 * (n as f64).powi(3) / (peak * 1e3);
                    format!(
                        "moving passes at the figure's rate fill {:.0} % of the kernel and \
                         stationary loads no passes hide (and the throttle ramp after \
                         idle) {:.0} %; the rest waits for {:.1} MiB of DMA per physical \
                         core (operands from HBM) and fixed costs",
                        passes / dur * 100.0,
                        (busy - passes).max(0.0) / dur * 100.0,
                        moved / (1 << 20) as f64
                    )
                },
            ));
        }
    }
    Ok(())
}

fn engines(profile: &DeviceProfile, rows: &mut Vec<CalibrationRow>) -> Result<(), BackendError> {
    type Op = fn(&Device, &Tensor, usize) -> Result<(), BackendError>;
    let relu: Op = |_, x, _| x.relu().map(drop);
    let exp: Op = |_, x, _| x.exp().map(drop);
    let randn: Op = |d, _, n| d.randn(&[n], DType::F32, 7).map(drop);
    let cases: [(&str, usize, DType, Op); 4] = [
        ("VectorE BF16", 1, DType::BF16, relu),
        ("VectorE FP32", 1, DType::F32, relu),
        ("ScalarE FP32", 2, DType::F32, exp),
        ("GpSimdE FP32", 3, DType::F32, randn),
    ];
    for (what, engine, dtype, op) in cases {
        let published = figure(profile, what) / f64::from(profile.lnc);
        for n in [64usize << 10, 4 << 20, 64 << 20] {
            let d = device(profile)?;
            let x = d.zeros(&[n], dtype)?;
            let before = d.engine_time().compute_busy_ns[engine];
            op(&d, &x, n)?;
            let busy = (d.engine_time().compute_busy_ns[engine] - before) as f64;
            let rate = n as f64 / busy;
            let fixed_ns = match engine {
                2 => profile.scalar_instruction_ns as f64,
                1 => {
                    f64::from(profile.vector_fixed_cycles + profile.vector_access_cycles)
                        / profile.vector_clock_ghz
                }
                _ => {
                    f64::from(profile.vector_fixed_cycles + profile.vector_access_cycles)
                        / profile.gpsimd_clock_ghz
                }
            };
            let partitions = (n as u64)
                .div_ceil(crate::timing::lower::FLAT_FREE)
                .min(128);
            rows.push(row(
                "engine",
                format!("{what} over {}", elements(n)),
                rate,
                published,
                "elements/ns per core",
                format!(
                    "{what} {published:.1} elements/ns (HARDWARE.md {})",
                    &what[..7]
                ),
                || {
                    let lanes = if partitions < 128 && engine != 3 {
                        format!(
                            "its tiles fill {partitions} of the 128 partitions (rows of \
                             2,048 elements), and "
                        )
                    } else {
                        String::new()
                    };
                    format!(
                        "{lanes}each instruction pays a fixed {fixed_ns:.0} ns beside its \
                         tile of 2,048 elements per partition"
                    )
                },
            ));
        }
    }
    Ok(())
}

fn elements(n: usize) -> String {
    if n >= 1 << 20 {
        format!("{}M elements", n >> 20)
    } else {
        format!("{}K elements", n >> 10)
    }
}

fn bytes_text(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} B")
    }
}

fn dmas(profile: &DeviceProfile, rows: &mut Vec<CalibrationRow>) -> Result<(), BackendError> {
    // One physical core's engines, capped by its HBM share.
    let per_core = {
        let p = DeviceProfile {
            lnc: 1,
            ..profile.clone()
        };
        cost::dma_bytes_per_ns(&p) * f64::from(p.dma_engines)
    };
    for (shape, row_bytes) in [("4 KiB rows", 4096u64), ("256 B rows", 256)] {
        for bytes in [
            4u64 << 10,
            32 << 10,
            256 << 10,
            2 << 20,
            16 << 20,
            128 << 20,
        ] {
            let d = device(profile)?;
            let transfer = cost::Transfer::rows(bytes / row_bytes, row_bytes);
            let (start, end) = d.timeline().run_kernel(
                0,
                0,
                KernelInfo {
                    name_id: NameId::NONE,
                    corr_id: 0,
                    flops: 0,
                    bytes,
                },
                RecordDetail::Kernels,
                |run| {
                    run.dma_spread(0, transfer, DmaDirection::DeviceToDevice, run.start_ns);
                },
            );
            let rate = bytes as f64 / (end - start) as f64;
            rows.push(row(
                "dma",
                format!("{} in {shape}", bytes_text(bytes)),
                rate,
                per_core,
                "GB/s",
                format!(
                    "{} engines × {} B/ns, HBM-capped: {per_core:.0} GB/s (HARDWARE.md DMA)",
                    profile.dma_engines, profile.dma_engine_bytes_per_ns
                ),
                || {
                    let latency = bytes as f64 / profile.dma_fixed_latency_ns as f64;
                    if latency < per_core * 0.9 {
                        format!(
                            "latency-bound: every transfer pays {} ns of descriptor and \
                             semaphore latency",
                            profile.dma_fixed_latency_ns
                        )
                    } else {
                        format!(
                            "each {row_bytes}-byte row costs the time of {} B \
                             (overhead-bound under 256 B per partition)",
                            profile.dma_row_overhead_bytes
                        )
                    }
                },
            ));
        }
    }
    Ok(())
}

fn host_copies(
    profile: &DeviceProfile,
    rows: &mut Vec<CalibrationRow>,
) -> Result<(), BackendError> {
    let link = profile.host_link_bytes_per_ns;
    for bytes in [64usize << 10, 1 << 20, 16 << 20, 256 << 20] {
        let d = device(profile)?;
        let host = Tensor::from_f32(&[bytes / 4], vec![0.0; bytes / 4])?;
        let on_device = host.to_device(&d)?;
        let up = d.last_kernel().expect("the copy ran").dur_ns() as f64;
        on_device.to_host()?;
        let down = d.last_kernel().expect("the copy ran").dur_ns() as f64;
        for (direction, ns) in [("host→device", up), ("device→host", down)] {
            rows.push(row(
                "host copy",
                format!("{} {direction}", bytes_text(bytes as u64)),
                bytes as f64 / ns,
                link,
                "GB/s",
                format!("host link {link} GB/s (assumption: PCIe 5.0 ×16, HARDWARE.md Host link)"),
                || {
                    format!(
                        "latency-bound: the copy pays the DMA's {} ns fixed latency",
                        profile.dma_fixed_latency_ns
                    )
                },
            ));
        }
    }
    Ok(())
}

/// The modeled time of one all-reduce of `bytes` per rank over `world`'s group `group`
/// (every rank of the world calls it when `all` is set, else only that group's ranks)
/// from the last rank's readiness to its end, per group.
fn all_reduce_spans(
    world: &World,
    bytes: usize,
    groups: &[&str],
) -> Result<Vec<(String, u64)>, BackendError> {
    let results = world.run(|rank| -> Result<Option<(String, u64, u64)>, BackendError> {
        let x = rank.device().zeros(&[bytes / 4], DType::F32)?;
        rank.world_group().barrier()?;
        for name in groups {
            if let Ok(group) = rank.group(name) {
                let work = group.all_reduce_async(&x, ReduceOp::Sum)?;
                let start = rank.device().last_kernel().map_or(0, |k| k.start_ns);
                let end = work.end_ns();
                drop(work.wait());
                return Ok(Some((name.to_string(), start, end)));
            }
        }
        Ok(None)
    });
    let mut spans: Vec<(String, u64, u64)> = Vec::new();
    for result in results {
        if let Some((name, start, end)) = result? {
            match spans.iter_mut().find(|(n, _, _)| *n == name) {
                Some(span) => {
                    span.1 = span.1.max(start);
                    span.2 = span.2.max(end);
                }
                None => spans.push((name, start, end)),
            }
        }
    }
    Ok(spans
        .into_iter()
        .map(|(name, start, end)| (name, end - start))
        .collect())
}

fn bus_bandwidth(bytes: usize, ranks: usize, ns: u64) -> f64 {
    let r = ranks as f64;
    bytes as f64 * 2.0 * (r - 1.0) / r / ns as f64
}

fn all_reduces(
    profile: &DeviceProfile,
    rows: &mut Vec<CalibrationRow>,
) -> Result<(), BackendError> {
    let base = Topology::for_profile(profile);
    let instance = Topology::trn2_48xlarge(profile);
    let per_chip = instance.cores_per_chip as usize;
    let topologies = [
        (
            format!("{per_chip} ranks on one chip"),
            per_chip,
            base.clone(),
        ),
        (
            format!("{} ranks on 2 chips", 2 * per_chip),
            2 * per_chip,
            instance.clone(),
        ),
        (
            "2 ranks on 2 instances (EFA)".to_string(),
            2,
            Topology {
                cores_per_chip: 1,
                chips_per_instance: 1,
                ..instance.clone()
            },
        ),
    ];
    for (name, ranks, topology) in topologies {
        let all: Vec<usize> = (0..ranks).collect();
        let (link, hop) = topology.link(&all);
        for bytes in [64usize << 10, 1 << 20, 16 << 20, 64 << 20, 256 << 20] {
            let mut config = WorldConfig::new(ranks);
            config.profile = profile.clone();
            config.numerics = false;
            config.detail = RecordDetail::Kernels;
            config.topology = Some(topology.clone());
            let world = World::new(config)?;
            let ns = all_reduce_spans(&world, bytes, &["0"])?[0].1;
            let bw = bus_bandwidth(bytes, ranks, ns);
            let cost = topology.cost(runtime_hooks::CollectiveOp::AllReduce, bytes as u64, &all);
            rows.push(row(
                "all-reduce",
                format!("{} on {name}", bytes_text(bytes as u64)),
                bw,
                link,
                "GB/s bus",
                format!("{link:.1} GB/s per rank, {hop} ns per hop (HARDWARE.md Instances)"),
                || {
                    format!(
                        "latency-bound: {} steps of {hop} ns ({:?}) take {:.0} % of it",
                        cost.steps,
                        cost.algorithm,
                        cost.latency_ns as f64 / ns as f64 * 100.0
                    )
                },
            ));
        }
    }
    Ok(())
}

fn concurrent_all_reduces(
    profile: &DeviceProfile,
    rows: &mut Vec<CalibrationRow>,
) -> Result<(), BackendError> {
    // Two groups of 4 ranks, each with 2 ranks on each of 2 chips: each alone uses 2 ×
    // 362.5 B/ns of every chip's 1,024 B/ns NeuronLink; together they want 1,450.
    let topology = Topology::trn2_48xlarge(profile);
    let per_chip = topology.cores_per_chip as usize;
    if per_chip < 4 {
        return Ok(());
    }
    let half = per_chip / 2;
    let first: Vec<usize> = (0..half).chain(per_chip..per_chip + half).collect();
    let second: Vec<usize> = (half..per_chip)
        .chain(per_chip + half..2 * per_chip)
        .collect();
    let bytes = 64usize << 20;
    let run = |both: bool| -> Result<Vec<(String, u64)>, BackendError> {
        let mut config = WorldConfig::new(2 * per_chip);
        config.profile = profile.clone();
        config.numerics = false;
        config.detail = RecordDetail::Kernels;
        config.topology = Some(topology.clone());
        let world = World::new(config)?;
        world.new_group("a", &first)?;
        world.new_group("b", &second)?;
        all_reduce_spans(&world, bytes, if both { &["a", "b"] } else { &["a"] })
    };
    let alone = run(false)?[0].1;
    let together = run(true)?;
    let (link, _) = topology.link(&first);
    let chip_link = topology.chip_link_bytes_per_ns;
    let ranks = first.len();
    let demand = link * half as f64;
    let rates: Vec<f64> = together
        .iter()
        .map(|(_, ns)| bus_bandwidth(bytes, ranks, *ns))
        .collect();
    rows.push(row(
        "concurrent all-reduce",
        format!("64 MiB, one group of {ranks} alone"),
        bus_bandwidth(bytes, ranks, alone),
        link,
        "GB/s bus",
        format!("{link:.1} GB/s per rank (HARDWARE.md Instances)"),
        String::new,
    ));
    let combined: f64 = rates.iter().map(|r| r * half as f64).sum();
    rows.push(row(
        "concurrent all-reduce",
        "64 MiB, two groups at once: their use of one chip's link".to_string(),
        combined,
        chip_link,
        "GB/s",
        format!("NeuronLink {chip_link} GB/s per chip, shared (HARDWARE.md Instances)"),
        || {
            format!(
                "the first placed keeps the {demand:.0} GB/s it needs; the second is \
                 granted a fair half of the link beside it, so the overlap oversubscribes \
                 it (group rates {:.0} and {:.0} GB/s per rank)",
                rates[0],
                rates.get(1).copied().unwrap_or(0.0)
            )
        },
    ));
    Ok(())
}
