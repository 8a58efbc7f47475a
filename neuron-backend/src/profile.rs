//! Device profiles: the published Trainium figures the timing model runs on.
//!
//! One table ([`DeviceProfile::builtin`]) holds the profiles `trn2` (LNC=2, the default),
//! `trn2-lnc1` and `trn3` (LNC=2) / `trn3-lnc1`. Every figure carries a comment naming
//! where it comes from: "hw.md" is `shared/reference/hardware.md`, the digest of the AWS
//! Neuron architecture pages, followed by the table or rule it is taken from. Figures
//! marked *assumption* are not published; each says why it has the value it has.
//!
//! A profile can be overridden from a JSON file (see [`DeviceProfile::from_json`]).

mod figures;
mod file;

pub use figures::Figure;

use serde::{Deserialize, Serialize};

/// Bytes in a KiB, MiB and GiB.
const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
const GIB: u64 = 1024 * MIB;

/// The most logical cores a profile may describe; each is a device with its own
/// timeline. The largest system in `shared/reference/hardware.md` is a 144-chip Trn3
/// UltraServer: 1,152 logical cores at LNC=1.
const MAX_LOGICAL_CORES: u64 = 1 << 16;

/// Every figure of one device kind, as the timing model and the allocator use them.
///
/// Per-core figures are for one *physical* NeuronCore; a logical core (`neuron:i`) has
/// [`lnc`](Self::lnc) of them and the model gives it that many of each engine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceProfile {
    /// Profile name, for example `trn2`.
    pub name: String,
    /// Physical NeuronCores per chip.
    pub physical_cores_per_chip: u32,
    /// Physical cores per logical core (LNC setting).
    pub lnc: u32,
    /// Chips the process sees (each gives `physical_cores_per_chip / lnc` logical cores).
    pub chips: u32,

    /// TensorE clock in GHz.
    pub tensor_clock_ghz: f64,
    /// TensorE systolic array rows = columns (stationary tile edge, partitions).
    pub tensor_array_dim: u32,
    /// Largest moving-tile free size of one matmul pass.
    pub tensor_moving_free_max: u32,
    /// Minimum TensorE cycles per moving pass (`max(N, 64)`).
    pub tensor_min_pass_cycles: u32,
    /// How many times slower FP32 matmul passes are than BF16.
    pub tensor_fp32_slowdown: f64,
    /// How many times faster FP8 matmul passes are than BF16.
    pub tensor_fp8_speedup: f64,
    /// Most TensorE cycles a stationary load takes (a tile of free size `M` takes
    /// `min(this, M)`, at the moving passes' precision factor); the load runs behind the
    /// previous stationary's moving passes (`timing/lower/matmul.rs`).
    pub tensor_stationary_load_cycles: u32,
    /// Published dense BF16 TFLOPS of one physical core's TensorE (for checks and reports).
    pub tensor_bf16_tflops: f64,
    /// Idle time after which TensorE is throttled, in ns.
    pub tensor_throttle_idle_ns: u64,
    /// Fraction of full rate TensorE runs at right after throttling.
    pub tensor_throttle_rate: f64,
    /// Time over which a throttled TensorE ramps back to full rate, in ns.
    pub tensor_throttle_ramp_ns: u64,

    /// VectorE clock in GHz.
    pub vector_clock_ghz: f64,
    /// VectorE BF16/FP16 elements per cycle (all partitions together).
    pub vector_elems_per_cycle_16bit: u32,
    /// VectorE elements per cycle for other types.
    pub vector_elems_per_cycle_other: u32,
    /// VectorE fixed overhead cycles per instruction.
    pub vector_fixed_cycles: u32,
    /// Extra cycles per instruction for SBUF/PSUM access.
    pub vector_access_cycles: u32,

    /// ScalarE clock in GHz.
    pub scalar_clock_ghz: f64,
    /// ScalarE lanes for BF16 data (elements per cycle).
    pub scalar_lanes_16bit: u32,
    /// ScalarE lanes for other data.
    pub scalar_lanes_other: u32,
    /// Time of one dependent 1-element ScalarE instruction, in ns (its fixed cost).
    pub scalar_instruction_ns: u64,

    /// GpSimdE clock in GHz.
    pub gpsimd_clock_ghz: f64,
    /// GpSimdE general-purpose vector processors.
    pub gpsimd_processors: u32,
    /// SIMD width of one GpSimdE processor in bits (elements per cycle per processor
    /// = bits / element bits).
    pub gpsimd_simd_bits: u32,

    /// SBUF partitions.
    pub sbuf_partitions: u32,
    /// SBUF bytes of one physical core.
    pub sbuf_bytes: u64,
    /// PSUM bytes of one physical core.
    pub psum_bytes: u64,
    /// PSUM banks (a matmul accumulates one moving pass's columns into one bank).
    pub psum_banks: u32,

    /// DMA engines per physical core.
    pub dma_engines: u32,
    /// Queues per DMA engine.
    pub dma_queues_per_engine: u32,
    /// Bandwidth of one DMA engine in bytes per ns.
    pub dma_engine_bytes_per_ns: f64,
    /// Fixed descriptor, sync and semaphore latency of every DMA transfer, in ns.
    pub dma_fixed_latency_ns: u64,
    /// Hardware descriptor generation per DMA instruction, in ns.
    pub dma_descriptor_ns: u64,
    /// What each contiguous run (row) of a transfer costs an engine beyond its bytes,
    /// as the bytes the engine would move in that time.
    pub dma_row_overhead_bytes: u64,
    /// Bandwidth of the host link of one chip (host↔device copies), bytes per ns.
    pub host_link_bytes_per_ns: f64,

    /// Collective-communication cores per physical core.
    pub cc_cores_per_core: u32,

    /// HBM bytes per chip.
    pub hbm_bytes_per_chip: u64,
    /// HBM banks (stacks) per chip; a logical core at LNC=2 owns one.
    pub hbm_banks: u32,
    /// HBM bandwidth per chip in bytes per second.
    pub hbm_bytes_per_sec: f64,

    /// Compute execution queues per logical core.
    pub compute_queues: u32,
    /// Collective execution queues per logical core.
    pub collective_queues: u32,
    /// Tensor-op execution queues per logical core.
    pub tensor_op_queues: u32,
    /// Operations in flight per execution queue before a submitting host blocks.
    pub max_in_flight: u32,
    /// Time from a kernel launch on the host to the earliest start on the device, in ns.
    pub launch_latency_ns: u64,
}

impl DeviceProfile {
    /// The names of the built-in profiles.
    pub const BUILTIN: &'static [&'static str] = &["trn2", "trn2-lnc1", "trn3", "trn3-lnc1"];

    /// Trainium2 at LNC=2 (the default): 4 logical cores per chip.
    pub fn trn2() -> Self {
        DeviceProfile {
            name: "trn2".into(),
            physical_cores_per_chip: 8, // hw.md Chips: 8 × NeuronCore-v3
            lnc: 2,                     // hw.md LNC: Trn2 defaults to LNC=2
            chips: 1,
            tensor_clock_ghz: 2.4, // hw.md One NeuronCore: TensorE 2.4 GHz
            tensor_array_dim: 128, // hw.md: 128×128 systolic array; stationary ≤128×128
            tensor_moving_free_max: 512, // hw.md cost rules: moving tile up to 128×512
            tensor_min_pass_cycles: 64, // hw.md cost rules: a pass issues every max(N, 64) cycles
            tensor_fp32_slowdown: 4.0, // hw.md cost rules: FP32 about 4× slower (79 vs 20 TFLOPS)
            tensor_fp8_speedup: 2.0, // hw.md One NeuronCore: 158 FP8 vs 79 BF16 TFLOPS
            // NKI `nc_matmul` cost: max(min(64, N_stationary), N_moving) cycles, the
            // stationary load running in the background of the previous moving passes
            // ("background" and "fast LoadStationary", NKI architecture guide).
            tensor_stationary_load_cycles: 64,
            tensor_bf16_tflops: 79.0, // hw.md One NeuronCore: 79 BF16 TFLOPS dense
            tensor_throttle_idle_ns: 3_000, // hw.md: after ≥3 µs idle ...
            tensor_throttle_rate: 0.5, // hw.md: ... the array runs at ~50% ...
            tensor_throttle_ramp_ns: 3_000, // hw.md: ... and ramps to full over ~3 µs
            vector_clock_ghz: 0.96,   // hw.md One NeuronCore: VectorE 0.96 GHz
            vector_elems_per_cycle_16bit: 512, // hw.md: 512 BF16/FP16 elements per cycle
            vector_elems_per_cycle_other: 256, // hw.md: (256 others)
            vector_fixed_cycles: 100, // hw.md cost rules: ~100 cycles fixed overhead
            vector_access_cycles: 60, // hw.md cost rules: SBUF/PSUM access adds ~60 cycles
            scalar_clock_ghz: 1.2,    // hw.md One NeuronCore: ScalarE 1.2 GHz
            scalar_lanes_16bit: 128,  // hw.md: 128 lanes
            scalar_lanes_other: 128,  // hw.md: 128 lanes
            scalar_instruction_ns: 189, // hw.md cost rules: dependent 1-element chain ~189 ns
            gpsimd_clock_ghz: 1.2,    // hw.md One NeuronCore: GpSimdE 1.2 GHz
            gpsimd_processors: 8,     // HARDWARE.md GpSimdE: eight vector processors ...
            gpsimd_simd_bits: 512,    // ... each 512 bits wide (NeuronCore-v3 page)
            sbuf_partitions: 128,     // hw.md: SBUF 128 partitions × 224 KiB
            sbuf_bytes: 28 * MIB,     // hw.md: SBUF 28 MiB
            psum_bytes: 2 * MIB,      // HARDWARE.md PSUM: 2 MiB (128 × 16 KiB) ...
            psum_banks: 8,            // ... in 8 banks of 512 FP32 per partition
            dma_engines: 16,          // hw.md: DMA 16 engines × 16 queues
            dma_queues_per_engine: 16, // hw.md: 16 queues per engine
            dma_engine_bytes_per_ns: 23.0, // hw.md: 23 B/ns each (368 GB/s per core)
            dma_fixed_latency_ns: 1_300, // hw.md DMA: ~1.3 µs descriptor, sync, semaphore latency
            dma_descriptor_ns: 600,   // hw.md DMA: descriptor generation ~600 ns per instruction
            // Derived (HARDWARE.md DMA): a row costs what moving 256 B does, so rows
            // under 256 B per partition are overhead-bound, 2 KiB rows run at 89 % and
            // 4 KiB rows at 94 % of the engine rate ("≥ 4 KiB saturates").
            dma_row_overhead_bytes: 256,
            // Assumption (HARDWARE.md Host link): no host-link figure is published; a
            // PCIe 5.0 ×16 link per chip, 32 GT/s × 16 lanes at 128b/130b = 63 GB/s
            // per direction.
            host_link_bytes_per_ns: 63.0,
            cc_cores_per_core: 2, // hw.md Chips: 16 CC-cores, 2 per physical core
            hbm_bytes_per_chip: 96 * GIB, // hw.md Chips: 96 GiB in 4 banks of 24 GiB
            hbm_banks: 4,         // hw.md Chips: 4 banks, each shared by 2 physical cores
            hbm_bytes_per_sec: 2.9e12, // hw.md Chips: 2.9 TB/s (the 3 TB/s page not used)
            compute_queues: 1,    // hw.md runtime: 1 compute queue per logical core
            collective_queues: 3, // hw.md runtime: 3 collective queues
            tensor_op_queues: 2,  // hw.md runtime: 2 tensor-op queues
            max_in_flight: 8,     // hw.md runtime: at most 8 operations in flight
            // Assumption: no launch latency is published; the runtime starts a kernel
            // through the same descriptor/semaphore path as a DMA, so one DMA fixed
            // latency (hw.md DMA, ~1.3 µs) is used.
            launch_latency_ns: 1_300,
        }
    }

    /// Trainium2 at LNC=1: 8 logical cores per chip, each one physical core.
    pub fn trn2_lnc1() -> Self {
        DeviceProfile {
            name: "trn2-lnc1".into(),
            lnc: 1, // hw.md LNC: LNC=1 gives 8 per chip
            ..Self::trn2()
        }
    }

    /// Trainium3 at LNC=2 (assumed default, as on Trainium2: hw.md states the default
    /// only for Trn2).
    pub fn trn3() -> Self {
        DeviceProfile {
            name: "trn3".into(),
            physical_cores_per_chip: 8, // hw.md Chips: 8 × NeuronCore-v4
            tensor_clock_ghz: 2.4,      // hw.md One NeuronCore: TensorE 2.4 GHz
            tensor_bf16_tflops: 79.0,   // hw.md One NeuronCore: 79 BF16 TFLOPS
            tensor_fp8_speedup: 4.0,    // hw.md One NeuronCore: 315 MXFP8 vs 79 BF16 TFLOPS (3.99×)
            vector_clock_ghz: 1.2,      // hw.md One NeuronCore: VectorE 1.2 GHz (v4)
            scalar_clock_ghz: 1.2,      // hw.md One NeuronCore: ScalarE 1.2 GHz
            scalar_lanes_16bit: 256,    // hw.md: ScalarE 256 BF16 lanes (v4)
            gpsimd_clock_ghz: 1.2,      // hw.md: GpSimdE 1.2 GHz
            sbuf_bytes: 32 * MIB,       // hw.md: SBUF 32 MiB (v4)
            psum_bytes: 2 * MIB,        // HARDWARE.md PSUM: 2 MiB (as NeuronCore-v3)
            dma_engines: 16,            // hw.md: 16 engines
            dma_engine_bytes_per_ns: 33.0, // hw.md: 33 B/ns each (528 GB/s)
            hbm_bytes_per_chip: 144 * GIB, // hw.md Chips: 144 GiB
            hbm_banks: 4,               // hw.md Chips: 4 stacks
            hbm_bytes_per_sec: 4.9e12,  // hw.md Chips: 4.9 TB/s (the 4.7 TB/s page not used)
            ..Self::trn2()
        }
    }

    /// Trainium3 at LNC=1.
    pub fn trn3_lnc1() -> Self {
        DeviceProfile {
            name: "trn3-lnc1".into(),
            lnc: 1,
            ..Self::trn3()
        }
    }

    /// A built-in profile by name (`trn2`, `trn2-lnc1`, `trn3`, `trn3-lnc1`).
    pub fn builtin(name: &str) -> Option<Self> {
        match name {
            "trn2" => Some(Self::trn2()),
            "trn2-lnc1" => Some(Self::trn2_lnc1()),
            "trn3" => Some(Self::trn3()),
            "trn3-lnc1" => Some(Self::trn3_lnc1()),
            _ => None,
        }
    }

    /// Logical cores (`neuron:0..n`) the process sees.
    pub fn logical_cores(&self) -> u32 {
        self.chips * (self.physical_cores_per_chip / self.lnc.max(1))
    }

    /// HBM bytes one logical core may use: its chip's HBM divided among logical cores.
    pub fn hbm_bytes_per_core(&self) -> u64 {
        self.hbm_bytes_per_chip / u64::from(self.physical_cores_per_chip / self.lnc.max(1))
    }

    /// HBM bandwidth of one logical core in bytes per ns: one bank's bandwidth (the
    /// chip's over its banks) shared by the logical cores on that bank (one at LNC=2 on
    /// Trn2, two at LNC=1: HARDWARE.md HBM and LNC).
    pub fn hbm_bytes_per_ns_per_core(&self) -> f64 {
        self.hbm_bytes_per_sec
            / 1e9
            / f64::from(self.hbm_banks.max(1))
            / self.logical_cores_per_bank()
    }

    /// PSUM bytes of one bank of one partition (2 KiB: 512 FP32 accumulators).
    pub fn psum_bank_bytes_per_partition(&self) -> u64 {
        self.psum_bytes / u64::from(self.sbuf_partitions.max(1)) / u64::from(self.psum_banks.max(1))
    }

    /// SBUF bytes of one partition of one physical core (224 KiB on NeuronCore-v3).
    pub fn sbuf_bytes_per_partition(&self) -> u64 {
        self.sbuf_bytes / u64::from(self.sbuf_partitions.max(1))
    }

    /// Execution queues per logical core (compute, then collective, then tensor-op).
    pub fn queues_per_core(&self) -> u32 {
        self.compute_queues + self.collective_queues + self.tensor_op_queues
    }

    /// The NeuronCore version a trace or a monitor names: `v3` on Trainium2, `v4` on
    /// Trainium3 (neuron-monitor's `neuroncore_version` without the LNC suffix).
    pub fn core_version(&self) -> &'static str {
        if self.name.starts_with("trn3") {
            "v4"
        } else {
            "v3"
        }
    }

    /// Dense TensorE peak of one logical core in TFLOPS per dtype, as traces state it
    /// (`deviceProperties`): `bf16`, `fp8` and `fp32`.
    pub fn peak_tflops_per_core(&self) -> [(&'static str, f64); 3] {
        let bf16 = self.tensor_bf16_tflops * f64::from(self.lnc);
        [
            ("bf16", bf16),
            ("fp8", bf16 * self.tensor_fp8_speedup),
            ("fp32", bf16 / self.tensor_fp32_slowdown),
        ]
    }

    /// Dense BF16 TensorE peak of one logical core in FLOP per ns (all its physical cores).
    pub fn tensor_peak_bf16_flops_per_ns(&self) -> f64 {
        self.tensor_bf16_tflops * 1e3 * f64::from(self.lnc)
    }

    /// Checks that every figure is usable (positive where the model divides by it).
    pub fn validate(&self) -> Result<(), String> {
        let positive = [
            (
                "physical_cores_per_chip",
                f64::from(self.physical_cores_per_chip),
            ),
            ("lnc", f64::from(self.lnc)),
            ("chips", f64::from(self.chips)),
            ("tensor_clock_ghz", self.tensor_clock_ghz),
            ("tensor_array_dim", f64::from(self.tensor_array_dim)),
            (
                "tensor_moving_free_max",
                f64::from(self.tensor_moving_free_max),
            ),
            ("tensor_fp32_slowdown", self.tensor_fp32_slowdown),
            ("tensor_fp8_speedup", self.tensor_fp8_speedup),
            ("tensor_throttle_rate", self.tensor_throttle_rate),
            ("vector_clock_ghz", self.vector_clock_ghz),
            (
                "vector_elems_per_cycle_16bit",
                f64::from(self.vector_elems_per_cycle_16bit),
            ),
            (
                "vector_elems_per_cycle_other",
                f64::from(self.vector_elems_per_cycle_other),
            ),
            ("scalar_clock_ghz", self.scalar_clock_ghz),
            ("scalar_lanes_16bit", f64::from(self.scalar_lanes_16bit)),
            ("scalar_lanes_other", f64::from(self.scalar_lanes_other)),
            ("gpsimd_clock_ghz", self.gpsimd_clock_ghz),
            ("gpsimd_processors", f64::from(self.gpsimd_processors)),
            ("gpsimd_simd_bits", f64::from(self.gpsimd_simd_bits)),
            ("sbuf_partitions", f64::from(self.sbuf_partitions)),
            ("sbuf_bytes", self.sbuf_bytes as f64),
            ("dma_engines", f64::from(self.dma_engines)),
            (
                "dma_queues_per_engine",
                f64::from(self.dma_queues_per_engine),
            ),
            ("dma_engine_bytes_per_ns", self.dma_engine_bytes_per_ns),
            ("host_link_bytes_per_ns", self.host_link_bytes_per_ns),
            ("psum_bytes", self.psum_bytes as f64),
            ("psum_banks", f64::from(self.psum_banks)),
            ("hbm_banks", f64::from(self.hbm_banks)),
            ("hbm_bytes_per_chip", self.hbm_bytes_per_chip as f64),
            ("hbm_bytes_per_sec", self.hbm_bytes_per_sec),
            ("compute_queues", f64::from(self.compute_queues)),
            ("max_in_flight", f64::from(self.max_in_flight)),
        ];
        for (field, value) in positive {
            if !(value > 0.0 && value.is_finite()) {
                return Err(format!("{field} must be positive, got {value}"));
            }
        }
        if self.lnc > self.physical_cores_per_chip
            || !self.physical_cores_per_chip.is_multiple_of(self.lnc)
        {
            return Err(format!(
                "lnc {} must divide physical_cores_per_chip {}",
                self.lnc, self.physical_cores_per_chip
            ));
        }
        if self.tensor_throttle_rate > 1.0 {
            return Err(format!(
                "tensor_throttle_rate must be at most 1, got {}",
                self.tensor_throttle_rate
            ));
        }
        // Products and sums of the figures are taken in u64: in u32 they wrap in a
        // release build, and a wrapped product passes a limit (65536 × 65536 DMA
        // queues is 0). Each bounds what the emulator allocates per core or queue.
        let dma_queues = u64::from(self.dma_engines) * u64::from(self.dma_queues_per_engine);
        if self.lnc > 255 || dma_queues > 256 {
            return Err(format!(
                "at most 255 physical cores per logical core and 256 DMA queues \
                 (dma_engines × dma_queues_per_engine), got lnc {} and {dma_queues} queues",
                self.lnc
            ));
        }
        let logical_cores =
            u64::from(self.chips) * u64::from(self.physical_cores_per_chip / self.lnc);
        if logical_cores > MAX_LOGICAL_CORES {
            return Err(format!(
                "at most {MAX_LOGICAL_CORES} logical cores (chips × physical_cores_per_chip / \
                 lnc), got {logical_cores}"
            ));
        }
        let cc_cores = u64::from(self.cc_cores_per_core) * u64::from(self.lnc);
        let queues = u64::from(self.compute_queues)
            + u64::from(self.collective_queues)
            + u64::from(self.tensor_op_queues);
        if cc_cores > 256 || queues > 256 {
            return Err(format!(
                "at most 256 CC-cores per logical core (cc_cores_per_core × lnc) and 256 \
                 queues (compute_queues + collective_queues + tensor_op_queues), got \
                 {cc_cores} and {queues}"
            ));
        }
        Ok(())
    }
}

impl Default for DeviceProfile {
    fn default() -> Self {
        Self::trn2()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_profiles_are_valid_and_named() {
        for name in DeviceProfile::BUILTIN {
            let profile = DeviceProfile::builtin(name).unwrap();
            assert_eq!(profile.name, *name);
            profile.validate().unwrap();
        }
        assert!(DeviceProfile::builtin("trn9").is_none());
    }

    #[test]
    fn trn2_logical_cores_follow_lnc() {
        let lnc2 = DeviceProfile::trn2();
        assert_eq!(lnc2.logical_cores(), 4);
        assert_eq!(lnc2.hbm_bytes_per_core(), 24 * GIB);
        assert!((lnc2.hbm_bytes_per_ns_per_core() - 725.0).abs() < 1e-9);
        assert_eq!(DeviceProfile::trn2_lnc1().logical_cores(), 8);
        assert_eq!(lnc2.queues_per_core(), 6);
    }

    #[test]
    fn derived_tensor_peak_matches_the_published_figure() {
        // 128×128 array, 2 FLOP per cell per cycle at 2.4 GHz: 78.6 TFLOPS ≈ 79.
        let p = DeviceProfile::trn2();
        let derived = 2.0 * 128.0 * 128.0 * p.tensor_clock_ghz / 1e3;
        assert!((derived - p.tensor_bf16_tflops).abs() / p.tensor_bf16_tflops < 0.01);
        // FP32: 79 / 4 ≈ 20 TFLOPS (hw.md).
        assert!((p.tensor_bf16_tflops / p.tensor_fp32_slowdown - 20.0).abs() < 0.5);
    }
}
