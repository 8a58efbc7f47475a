//! Instruction cost rules (hw.md "Instruction cost rules"), one function per engine.
//!
//! All results are nanoseconds as `f64`; the scheduler rounds when it places them.

use crate::DeviceProfile;

/// The number format a TensorE pass runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Precision {
    Fp32,
    Bf16,
    Fp8,
}

impl Precision {
    pub(crate) fn of(dtype: crate::DType) -> Self {
        match dtype {
            crate::DType::F32 | crate::DType::I64 => Precision::Fp32,
            crate::DType::BF16 => Precision::Bf16,
            crate::DType::F8E4M3 => Precision::Fp8,
        }
    }
}

/// TensorE: one moving pass of free size `moving_free` (`max(N, 64)` cycles at the
/// TensorE clock for BF16; FP32 passes `tensor_fp32_slowdown` times slower, FP8 passes
/// `tensor_fp8_speedup` times faster).
pub(crate) fn tensor_pass_ns(
    profile: &DeviceProfile,
    moving_free: u64,
    precision: Precision,
) -> f64 {
    let cycles = moving_free.max(u64::from(profile.tensor_min_pass_cycles)) as f64;
    let factor = match precision {
        Precision::Fp32 => profile.tensor_fp32_slowdown,
        Precision::Bf16 => 1.0,
        Precision::Fp8 => 1.0 / profile.tensor_fp8_speedup,
    };
    cycles * factor / profile.tensor_clock_ghz
}

/// TensorE: loading a stationary tile.
pub(crate) fn tensor_stationary_ns(profile: &DeviceProfile) -> f64 {
    f64::from(profile.tensor_stationary_load_cycles) / profile.tensor_clock_ghz
}

/// VectorE: one instruction over `free` elements per partition reading `inputs` tiles.
///
/// The published throughput (512 BF16/FP16 elements per cycle, 256 for other types)
/// spread over the partitions gives the elements per partition per cycle; each input
/// tile is streamed once (hw.md: ~N cycles for one input, ~2N for two), plus the fixed
/// overhead (~100 cycles) and the SBUF/PSUM access (~60 cycles).
pub(crate) fn vector_ns(profile: &DeviceProfile, free: u64, inputs: u32, sixteen_bit: bool) -> f64 {
    let per_cycle = if sixteen_bit {
        profile.vector_elems_per_cycle_16bit
    } else {
        profile.vector_elems_per_cycle_other
    };
    let per_partition = f64::from(per_cycle) / f64::from(profile.sbuf_partitions);
    let streamed = (free as f64 * f64::from(inputs.max(1)) / per_partition).ceil();
    let fixed = f64::from(profile.vector_fixed_cycles + profile.vector_access_cycles);
    (streamed + fixed) / profile.vector_clock_ghz
}

/// ScalarE: one activation instruction over `free` elements per partition: the measured
/// cost of a dependent 1-element instruction (~189 ns) plus one element per lane per
/// cycle beyond the first.
pub(crate) fn scalar_ns(profile: &DeviceProfile, free: u64, sixteen_bit: bool) -> f64 {
    let lanes = if sixteen_bit {
        profile.scalar_lanes_16bit
    } else {
        profile.scalar_lanes_other
    };
    let per_partition = f64::from(lanes) / f64::from(profile.sbuf_partitions);
    let cycles = (free.saturating_sub(1) as f64 / per_partition).ceil();
    profile.scalar_instruction_ns as f64 + cycles / profile.scalar_clock_ghz
}

/// GpSimdE: `elements` in total over its processors, one element per processor per
/// cycle. hw.md gives no GpSimd overhead; the VectorE fixed and access cycles are used.
pub(crate) fn gpsimd_ns(profile: &DeviceProfile, elements: u64) -> f64 {
    let cycles = (elements as f64 / f64::from(profile.gpsimd_processors)).ceil();
    let fixed = f64::from(profile.vector_fixed_cycles + profile.vector_access_cycles);
    (cycles + fixed) / profile.gpsimd_clock_ghz
}

/// One DMA engine's effective bandwidth in bytes per ns: its own figure, capped by the
/// logical core's share of HBM bandwidth spread over all its DMA engines.
pub(crate) fn dma_bytes_per_ns(profile: &DeviceProfile) -> f64 {
    let engines = f64::from(profile.dma_engines * profile.lnc);
    profile
        .dma_engine_bytes_per_ns
        .min(profile.hbm_bytes_per_ns_per_core() / engines)
}

/// A DMA transfer of `bytes` on one engine: `(duration, engine occupancy)` in ns.
///
/// The transfer completes after the fixed descriptor/sync/semaphore latency or the time
/// its bytes take, whichever is longer: this reproduces both "small DMAs are
/// overhead-bound" and the measured 32 KiB transfer in 1,416 ns (32 KiB at 23 B/ns is
/// 1,425 ns, just above the 1.3 µs floor). The engine is occupied for the descriptor
/// generation (~600 ns) or the bytes' time, whichever is longer, so latencies of
/// back-to-back transfers overlap while bandwidth is shared.
pub(crate) fn dma_ns(profile: &DeviceProfile, bytes: u64) -> (f64, f64) {
    let moving = bytes as f64 / dma_bytes_per_ns(profile);
    let duration = moving.max(profile.dma_fixed_latency_ns as f64);
    let occupancy = moving.max(profile.dma_descriptor_ns as f64);
    (duration, occupancy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_32_kib_dma_takes_about_1_4_us() {
        let p = DeviceProfile::trn2();
        let (duration, _) = dma_ns(&p, 32 * 1024);
        assert!((1_350.0..1_500.0).contains(&duration), "{duration}");
        let (small, occupancy) = dma_ns(&p, 512);
        assert_eq!(small, 1_300.0, "overhead-bound");
        assert_eq!(occupancy, 600.0);
    }

    #[test]
    fn a_full_bf16_pass_reaches_the_published_rate() {
        let p = DeviceProfile::trn2();
        let ns = tensor_pass_ns(&p, 512, Precision::Bf16);
        let tflops = 2.0 * 128.0 * 128.0 * 512.0 / ns / 1e3;
        assert!((tflops - 79.0).abs() < 1.0, "{tflops}");
        assert_eq!(tensor_pass_ns(&p, 512, Precision::Fp32), 4.0 * ns);
        assert_eq!(tensor_pass_ns(&p, 512, Precision::Fp8), ns / 2.0);
        assert_eq!(
            tensor_pass_ns(&p, 8, Precision::Bf16),
            tensor_pass_ns(&p, 64, Precision::Bf16)
        );
    }

    #[test]
    fn engine_costs_have_their_fixed_overheads() {
        let p = DeviceProfile::trn2();
        assert!((vector_ns(&p, 1, 1, false) - 161.0 / 0.96).abs() < 1e-9);
        assert_eq!(scalar_ns(&p, 1, false), 189.0);
        assert!(gpsimd_ns(&p, 8) > 100.0);
    }
}
