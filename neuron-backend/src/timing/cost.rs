//! Instruction cost rules (docs/HARDWARE.md, "Engines" and "Instruction cost rules"),
//! one function per engine; each engine's throughput figure is named once, in the
//! device profile, and checked by `tests/timing_model_reproduces_published_figures.rs`.
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

/// The factor TensorE instructions in `precision` take against BF16 (FP32 passes
/// `tensor_fp32_slowdown` times slower, FP8 passes `tensor_fp8_speedup` times faster).
fn tensor_factor(profile: &DeviceProfile, precision: Precision) -> f64 {
    match precision {
        Precision::Fp32 => profile.tensor_fp32_slowdown,
        Precision::Bf16 => 1.0,
        Precision::Fp8 => 1.0 / profile.tensor_fp8_speedup,
    }
}

/// TensorE: one moving pass of free size `moving_free` (`max(N, 64)` cycles at the
/// TensorE clock for BF16, scaled by the precision's factor).
pub(crate) fn tensor_pass_ns(
    profile: &DeviceProfile,
    moving_free: u64,
    precision: Precision,
) -> f64 {
    let cycles = moving_free.max(u64::from(profile.tensor_min_pass_cycles)) as f64;
    cycles * tensor_factor(profile, precision) / profile.tensor_clock_ghz
}

/// TensorE: loading a stationary tile of free size `stationary_free` (its output rows):
/// `min(64, M)` cycles, the stationary term of NKI's `nc_matmul` cost
/// `max(min(64, N_stationary), N_moving)`, scaled by the precision's factor as that cost
/// is (FP32 4×; an FP8 double-row load takes a BF16 load's time for twice the depth, so
/// half per 128 rows). Whether it is exposed is the lowering's business: the load runs
/// behind the previous stationary's moving passes (`lower/matmul.rs`).
pub(crate) fn tensor_stationary_ns(
    profile: &DeviceProfile,
    stationary_free: u64,
    precision: Precision,
) -> f64 {
    let cycles = stationary_free.clamp(1, u64::from(profile.tensor_stationary_load_cycles)) as f64;
    cycles * tensor_factor(profile, precision) / profile.tensor_clock_ghz
}

/// VectorE: one instruction over `free` elements per partition reading `inputs` tiles.
///
/// The engine's figure: 512 BF16/FP16 elements per cycle, 256 of other types, at
/// 0.96 GHz (docs/HARDWARE.md, VectorE), spread over the 128 partitions: 4 (or 2)
/// elements per partition per cycle. Each input tile streams through once (the NKI
/// rule "~N cycles for one input, ~2N for two": cost proportional to the inputs read),
/// plus the fixed overhead of a dependent instruction (~100 cycles) and the SBUF/PSUM
/// access (~60 cycles). The NKI guide's "~N cycles" was stated for NeuronCore-v2 at one
/// element per partition per cycle; the v3 figure replaces that rate, not the shape of
/// the rule.
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

/// ScalarE: one activation instruction over `free` elements per partition.
///
/// The engine's figure: 128 lanes (one per partition) at 1.2 GHz, one element per lane
/// per cycle (256 BF16 lanes on NeuronCore-v4), plus the measured latency of a
/// dependent 1-element instruction (~189 ns) as the fixed cost (docs/HARDWARE.md,
/// ScalarE). The page's "1.2 TFLOPS FP32" counts several operations per activated
/// element and is not a rate of elements: it is not used.
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

/// GpSimdE elements per cycle for elements of `elem_bytes`: its processors' SIMD
/// width in elements, all processors together (8 × 512-bit: 128 FP32, 256 BF16).
pub(crate) fn gpsimd_elems_per_cycle(profile: &DeviceProfile, elem_bytes: u64) -> f64 {
    let lanes = f64::from(profile.gpsimd_simd_bits) / (8.0 * elem_bytes.max(1) as f64);
    f64::from(profile.gpsimd_processors) * lanes.max(1.0)
}

/// GpSimdE: `elements` of `elem_bytes` in total over its processors, one SIMD
/// operation per processor per cycle (docs/HARDWARE.md, GpSimdE: eight 512-bit vector
/// processors at 1.2 GHz). No GpSimd overhead is published; the VectorE fixed and
/// access cycles are used (an assumption).
pub(crate) fn gpsimd_ns(profile: &DeviceProfile, elements: u64, elem_bytes: u64) -> f64 {
    let cycles = (elements as f64 / gpsimd_elems_per_cycle(profile, elem_bytes)).ceil();
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

/// The shape of one DMA transfer: `rows` contiguous runs of `row_bytes` each (a tile
/// moves one row per SBUF partition; a contiguous copy is one row).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Transfer {
    pub(crate) rows: u64,
    pub(crate) row_bytes: u64,
}

impl Transfer {
    /// `rows` runs of `row_bytes`.
    pub(crate) fn rows(rows: u64, row_bytes: u64) -> Self {
        Transfer {
            rows: rows.max(1),
            row_bytes,
        }
    }

    /// One contiguous run of `bytes`.
    pub(crate) fn contiguous(bytes: u64) -> Self {
        Transfer {
            rows: 1,
            row_bytes: bytes,
        }
    }

    /// Bytes moved.
    pub(crate) fn bytes(&self) -> u64 {
        self.rows * self.row_bytes
    }

    /// Splits the transfer into `pieces` of about equal size for that many engines:
    /// whole rows when there are enough of them, else each row cut into pieces.
    pub(crate) fn split(&self, pieces: u64) -> Vec<Transfer> {
        let pieces = pieces.max(1);
        if self.rows >= pieces {
            (0..pieces)
                .map(|p| {
                    Transfer::rows(
                        self.rows / pieces + u64::from(p < self.rows % pieces),
                        self.row_bytes,
                    )
                })
                .collect()
        } else {
            let per_row = pieces.div_ceil(self.rows);
            let cut = self.row_bytes.div_ceil(per_row).max(1);
            let mut out = Vec::new();
            for _ in 0..self.rows {
                let mut left = self.row_bytes;
                while left > 0 {
                    let take = left.min(cut);
                    out.push(Transfer::contiguous(take));
                    left -= take;
                }
            }
            out
        }
    }
}

/// How many engines a transfer is spread over: one piece per 32 KiB moved (where a
/// transfer stops being latency-bound), counting each row's overhead as the bytes the
/// engine could have moved meanwhile (a tile of short rows is as long as a longer
/// contiguous run), at least one and at most every engine.
pub(crate) fn spread_pieces(profile: &DeviceProfile, transfer: Transfer) -> u64 {
    let effective = transfer.bytes() + transfer.rows * profile.dma_row_overhead_bytes;
    (effective / (32 * 1024)).clamp(1, u64::from(profile.dma_engines))
}

/// A DMA transfer on one engine: `(duration, engine occupancy)` in ns.
///
/// Moving it takes its bytes at the engine's effective rate plus, per row, the time
/// the engine would take to move `dma_row_overhead_bytes` (256 B: the per-row cost that
/// makes rows under 256 B per partition overhead-bound and 4 KiB rows run at 94 % of
/// the rate, docs/HARDWARE.md DMA). The transfer completes after the fixed descriptor/
/// sync/semaphore latency (~1.3 µs) or its moving time, whichever is longer: small
/// transfers are latency-bound, and 32 KiB in one run takes 1,436 ns (measured on the
/// hardware: 1,416 ns). The engine is occupied for the descriptor generation (~600 ns)
/// or the moving time, whichever is longer, so latencies of back-to-back transfers
/// overlap while bandwidth is shared.
#[cfg(test)]
pub(crate) fn dma_ns(profile: &DeviceProfile, transfer: Transfer) -> (f64, f64) {
    dma_ns_at(profile, transfer, dma_bytes_per_ns(profile))
}

/// [`dma_ns`] with the bytes moving at `bytes_per_ns` (a slower link behind the engine,
/// the host link): the transfer lasts its moving time at that rate, but occupies the
/// engine only for what the engine itself moves at its own rate — while a transfer waits
/// on the link, the engine serves its other queues (compute kernels' loads and stores).
pub(crate) fn dma_ns_at(
    profile: &DeviceProfile,
    transfer: Transfer,
    bytes_per_ns: f64,
) -> (f64, f64) {
    let (moving, engine_busy) = dma_moving_ns(profile, transfer, bytes_per_ns);
    let duration = moving.max(profile.dma_fixed_latency_ns as f64);
    let occupancy = engine_busy.max(profile.dma_descriptor_ns as f64);
    (duration, occupancy)
}

/// The moving time of `transfer` at `bytes_per_ns` (at most the engine's rate) with its
/// rows' overhead, and the part of it the engine itself is busy, at its own rate; ns.
pub(crate) fn dma_moving_ns(
    profile: &DeviceProfile,
    transfer: Transfer,
    bytes_per_ns: f64,
) -> (f64, f64) {
    let engine_rate = dma_bytes_per_ns(profile);
    let rows = transfer.rows as f64 * profile.dma_row_overhead_bytes as f64
        / profile.dma_engine_bytes_per_ns;
    let bytes = transfer.bytes() as f64;
    (
        bytes / bytes_per_ns.min(engine_rate) + rows,
        bytes / engine_rate + rows,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_32_kib_dma_takes_about_1_4_us() {
        let p = DeviceProfile::trn2();
        let (duration, _) = dma_ns(&p, Transfer::contiguous(32 * 1024));
        assert!(
            (1_416.0 * 0.95..1_416.0 * 1.05).contains(&duration),
            "{duration}"
        );
        let (small, occupancy) = dma_ns(&p, Transfer::contiguous(512));
        assert_eq!(small, 1_300.0, "overhead-bound");
        assert_eq!(occupancy, 600.0);
    }

    #[test]
    fn short_rows_cost_per_row() {
        let p = DeviceProfile::trn2();
        let rate = |row_bytes: u64| {
            let t = Transfer::rows(1024, row_bytes);
            t.bytes() as f64 / dma_ns(&p, t).1 / dma_bytes_per_ns(&p)
        };
        assert!(rate(64) < 0.25, "{}", rate(64));
        assert!((0.45..0.55).contains(&rate(256)), "{}", rate(256));
        assert!((0.88..0.90).contains(&rate(2048)), "{}", rate(2048));
        assert!(rate(4096) > 0.93, "{}", rate(4096));
    }

    #[test]
    fn transfers_split_by_rows_then_within_rows() {
        let t = Transfer::rows(128, 1024);
        let parts = t.split(16);
        assert_eq!(parts.len(), 16);
        assert!(parts.iter().all(|p| *p == Transfer::rows(8, 1024)));
        let big = Transfer::contiguous(1 << 20).split(16);
        assert_eq!(big.len(), 16);
        assert_eq!(big.iter().map(Transfer::bytes).sum::<u64>(), 1 << 20);
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
    fn a_stationary_load_costs_the_nc_matmul_rules_stationary_term() {
        let p = DeviceProfile::trn2();
        let cycle = 1.0 / p.tensor_clock_ghz;
        // min(64, N_stationary) cycles: a full 128-row tile 64, a 16-row tile 16.
        assert!((tensor_stationary_ns(&p, 128, Precision::Bf16) - 64.0 * cycle).abs() < 1e-9);
        assert!((tensor_stationary_ns(&p, 16, Precision::Bf16) - 16.0 * cycle).abs() < 1e-9);
        assert_eq!(
            tensor_stationary_ns(&p, 128, Precision::Fp32),
            4.0 * tensor_stationary_ns(&p, 128, Precision::Bf16)
        );
        // Behind a full moving pass (512 columns) it hides eight times over.
        assert!(
            8.0 * tensor_stationary_ns(&p, 128, Precision::Bf16)
                <= tensor_pass_ns(&p, 512, Precision::Bf16)
        );
    }

    #[test]
    fn engine_costs_have_their_fixed_overheads() {
        let p = DeviceProfile::trn2();
        assert!((vector_ns(&p, 1, 1, false) - 161.0 / 0.96).abs() < 1e-9);
        assert_eq!(scalar_ns(&p, 1, false), 189.0);
        assert!(gpsimd_ns(&p, 8, 4) > 100.0);
        assert_eq!(gpsimd_elems_per_cycle(&p, 4), 128.0);
        assert_eq!(gpsimd_elems_per_cycle(&p, 2), 256.0);
    }
}
