//! Creating device tensors: fill, zeros, ones, seeded random normals.

use crate::dispatch::{self, Lowering, OpCall};
use crate::tensor::{checked_numel, Values};
use crate::timing::lower::{RowPlan, Stage};
use crate::timing::Engine;
use crate::{BackendError, DType, Device, Tensor};

/// A counter-based generator: the `index`-th 64-bit value of stream `seed` (SplitMix64
/// finalizer over seed and index), so results do not depend on how work is split.
pub(crate) fn random_u64(seed: u64, index: u64) -> u64 {
    let mut z = seed
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add(index.wrapping_mul(0xbf58_476d_1ce4_e5b9))
        .wrapping_add(0x94d0_49bb_1331_11eb);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A uniform value in `[0, 1)` from 53 random bits.
pub(crate) fn random_unit(seed: u64, index: u64) -> f64 {
    (random_u64(seed, index) >> 11) as f64 / (1u64 << 53) as f64
}

/// The `index`-th standard normal value of stream `seed` (Box–Muller).
pub(crate) fn random_normal(seed: u64, index: u64) -> f64 {
    let u1 = 1.0 - random_unit(seed, 2 * index);
    let u2 = random_unit(seed, 2 * index + 1);
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

impl Device {
    /// A tensor of `shape` filled with `value` (`aten::fill_`, VectorE memset).
    pub fn full(&self, shape: &[usize], value: f64, dtype: DType) -> Result<Tensor, BackendError> {
        let numel = checked_numel("aten::fill_", shape)?;
        let stage = Stage::new(Engine::Vector, 1, runtime_hooks::name!("memset"));
        let plan = RowPlan::flat(numel as u64, vec![stage], dtype == DType::BF16)
            .store(dtype.size_bytes());
        let values = move || match dtype {
            DType::I64 => Values::I64(vec![value as i64; numel]),
            _ => Values::F32(vec![value as f32; numel]),
        };
        self.create("aten::fill_", "fill", shape, dtype, plan, values)
    }

    /// Zeros.
    pub fn zeros(&self, shape: &[usize], dtype: DType) -> Result<Tensor, BackendError> {
        self.full(shape, 0.0, dtype)
    }

    /// Ones.
    pub fn ones(&self, shape: &[usize], dtype: DType) -> Result<Tensor, BackendError> {
        self.full(shape, 1.0, dtype)
    }

    /// Standard normal values from `seed` (`aten::randn`, GpSimdE); the same seed gives
    /// the same values on any device and with any tiling.
    pub fn randn(&self, shape: &[usize], dtype: DType, seed: u64) -> Result<Tensor, BackendError> {
        if !dtype.is_float() {
            return Err(BackendError::DTypeMismatch {
                op: "aten::randn",
                dtypes: vec![dtype],
                expected: "f32 or bf16".into(),
            });
        }
        let numel = checked_numel("aten::randn", shape)?;
        let stage = Stage {
            flops_per_elem: 0,
            ..Stage::new(Engine::GpSimd, 1, runtime_hooks::name!("random_normal"))
        };
        let plan = RowPlan::flat(numel as u64, vec![stage], dtype == DType::BF16)
            .store(dtype.size_bytes());
        let values = move || {
            Values::F32(
                (0..numel as u64)
                    .map(|i| random_normal(seed, i) as f32)
                    .collect(),
            )
        };
        self.create("aten::randn", "randn", shape, dtype, plan, values)
    }

    fn create(
        &self,
        op: &'static str,
        kernel: &'static str,
        shape: &[usize],
        dtype: DType,
        plan: RowPlan,
        values: impl FnOnce() -> Values,
    ) -> Result<Tensor, BackendError> {
        let call = OpCall {
            op,
            kernel,
            inputs: &[],
            outputs: vec![(shape.to_vec(), dtype)],
            flops: 0,
            lowering: Lowering::Rows(plan),
        };
        let out = dispatch::dispatch(self, call, |_| vec![values()])?;
        Ok(out.into_iter().next().expect("one output"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normals_have_unit_moments() {
        let n = 20_000u64;
        let values: Vec<f64> = (0..n).map(|i| random_normal(7, i)).collect();
        let mean = values.iter().sum::<f64>() / n as f64;
        let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(mean.abs() < 0.03, "{mean}");
        assert!((var - 1.0).abs() < 0.05, "{var}");
        assert_ne!(random_u64(1, 0), random_u64(2, 0));
    }
}
