//! The one throughput figure of each engine and link, as the timing model uses it, with
//! where it comes from: what `neuronprof calibrate` sets beside the model's measured
//! rates, and what `docs/HARDWARE.md` lists.

use super::DeviceProfile;

/// One published (or assumed) figure of a profile.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// What it is the rate of, for example `TensorE BF16`.
    pub what: &'static str,
    /// The rate the model runs at, in `unit`, for one logical core unless `what` says
    /// otherwise.
    pub value: f64,
    /// Unit of `value`, for example `TFLOPS` or `GB/s`.
    pub unit: &'static str,
    /// How the value follows from the profile's fields.
    pub derivation: String,
    /// Where the figure comes from (a section of `docs/HARDWARE.md`).
    pub source: &'static str,
}

impl DeviceProfile {
    /// Every engine's and link's rate for one logical core of this profile, with its
    /// source: TensorE per precision, VectorE and ScalarE per element width, GpSimdE,
    /// DMA, HBM and the host link.
    pub fn figures(&self) -> Vec<Figure> {
        let lnc = f64::from(self.lnc);
        let tensor_bf16 = self.tensor_bf16_tflops * lnc;
        let per_second = |elems_per_cycle: f64, ghz: f64| elems_per_cycle * ghz * lnc;
        let gpsimd_fp32 =
            f64::from(self.gpsimd_processors) * f64::from(self.gpsimd_simd_bits) / 32.0;
        let dma = f64::from(self.dma_engines) * self.dma_engine_bytes_per_ns * lnc;
        vec![
            Figure {
                what: "TensorE BF16",
                value: tensor_bf16,
                unit: "TFLOPS",
                derivation: format!(
                    "{} TFLOPS per physical core × {} cores (128×128 array at {} GHz)",
                    self.tensor_bf16_tflops, self.lnc, self.tensor_clock_ghz
                ),
                source: "HARDWARE.md, TensorE",
            },
            Figure {
                what: "TensorE FP8",
                value: tensor_bf16 * self.tensor_fp8_speedup,
                unit: "TFLOPS",
                derivation: format!("BF16 × {}", self.tensor_fp8_speedup),
                source: "HARDWARE.md, TensorE",
            },
            Figure {
                what: "TensorE FP32",
                value: tensor_bf16 / self.tensor_fp32_slowdown,
                unit: "TFLOPS",
                derivation: format!("BF16 / {}", self.tensor_fp32_slowdown),
                source: "HARDWARE.md, TensorE",
            },
            Figure {
                what: "VectorE BF16",
                value: per_second(
                    f64::from(self.vector_elems_per_cycle_16bit),
                    self.vector_clock_ghz,
                ),
                unit: "G elements/s",
                derivation: format!(
                    "{} elements/cycle × {} GHz × {} cores",
                    self.vector_elems_per_cycle_16bit, self.vector_clock_ghz, self.lnc
                ),
                source: "HARDWARE.md, VectorE",
            },
            Figure {
                what: "VectorE FP32",
                value: per_second(
                    f64::from(self.vector_elems_per_cycle_other),
                    self.vector_clock_ghz,
                ),
                unit: "G elements/s",
                derivation: format!(
                    "{} elements/cycle × {} GHz × {} cores",
                    self.vector_elems_per_cycle_other, self.vector_clock_ghz, self.lnc
                ),
                source: "HARDWARE.md, VectorE",
            },
            Figure {
                what: "ScalarE FP32",
                value: per_second(f64::from(self.scalar_lanes_other), self.scalar_clock_ghz),
                unit: "G elements/s",
                derivation: format!(
                    "{} lanes × {} GHz × {} cores",
                    self.scalar_lanes_other, self.scalar_clock_ghz, self.lnc
                ),
                source: "HARDWARE.md, ScalarE",
            },
            Figure {
                what: "GpSimdE FP32",
                value: per_second(gpsimd_fp32, self.gpsimd_clock_ghz),
                unit: "G elements/s",
                derivation: format!(
                    "{} processors × {} bits / 32 × {} GHz × {} cores",
                    self.gpsimd_processors, self.gpsimd_simd_bits, self.gpsimd_clock_ghz, self.lnc
                ),
                source: "HARDWARE.md, GpSimdE",
            },
            Figure {
                what: "DMA engines",
                value: dma,
                unit: "GB/s",
                derivation: format!(
                    "{} engines × {} B/ns × {} cores",
                    self.dma_engines, self.dma_engine_bytes_per_ns, self.lnc
                ),
                source: "HARDWARE.md, DMA",
            },
            Figure {
                what: "HBM share",
                value: self.hbm_bytes_per_ns_per_core(),
                unit: "GB/s",
                derivation: format!(
                    "{} TB/s per chip / {} banks, a bank per {} logical core(s)",
                    self.hbm_bytes_per_sec / 1e12,
                    self.hbm_banks,
                    self.logical_cores_per_bank()
                ),
                source: "HARDWARE.md, HBM",
            },
        ]
    }

    /// Logical cores that share one HBM bank (1 at LNC=2 on Trn2, 2 at LNC=1).
    pub fn logical_cores_per_bank(&self) -> f64 {
        let per_chip = f64::from(self.physical_cores_per_chip / self.lnc.max(1));
        (per_chip / f64::from(self.hbm_banks.max(1))).max(1.0)
    }
}
