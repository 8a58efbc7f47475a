//! pandas' `describe()`, numpy's rounding and numpy's argsort, reproduced.
//!
//! numpy's `argsort(kind="quicksort")` (what pandas' `sort_values` calls) orders equal keys
//! differently depending on the kernel numpy picks at run time, so each is reproduced:
//! [`numpy_argsort_avx512`] (x86-simd-sort's AVX-512 kernel: numpy 2.x on x86-64 CPUs with
//! AVX-512 SKX, target `X86_V4` from numpy 2.4), [`numpy_argsort_avx2`] (its AVX2 kernel:
//! numpy 2.x on x86-64 CPUs with AVX2 and no AVX-512, target `X86_V3`) and
//! [`numpy_argsort_scalar`] (numpy's own introsort: x86-64 without AVX2, other
//! architectures, numpy before 1.25). All three are checked permutation for permutation
//! against numpy 2.4.6 (`tests/argsort_matches_numpy.rs`); numpy 1.25–2.3 vendored older
//! x86-simd-sort, whose tie order differs (`src/stats/x86_simd_argsort.rs`; the scalar
//! introsort also matches numpy 2.2.6 and 1.26.4). HTA-compat mode uses the AVX-512 order:
//! HTA's reference outputs (`tests/data/traces/hta-reference/`) were printed on such a machine,
//! and numpy 2.4 on an AVX-512 CPU reproduces them where the other orders do not (nccl1's
//! queue length). HTA 0.5 run live (`tests/analyses_match_hta_run_here.rs`) agrees the
//! same way: with numpy's AVX-512 kernel it equals compat mode on all 110 checks; forced
//! onto the AVX2 or the scalar kernel (`NPY_DISABLE_CPU_FEATURES`), two queue-length
//! checks (memory_events, resnet50_2021) differ, and compat mode sorting with the
//! matching emulation instead equals it on all 110 again.

mod numpy_sort;
mod x86_simd_argsort;

use serde::Serialize;

pub use numpy_sort::numpy_argsort_scalar;
pub use x86_simd_argsort::{numpy_argsort_avx2, numpy_argsort_avx512};

/// Which numpy argsort kernel's order of equal keys HTA-compat mode reproduces: the one
/// the numpy under the HTA being compared with dispatches to (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NumpySort {
    /// x86-simd-sort's AVX-512 kernel (numpy 2.4 on x86-64 with AVX-512; HTA's
    /// published references).
    #[default]
    Avx512,
    /// x86-simd-sort's AVX2 kernel (numpy 2.4 on x86-64 with AVX2 but no AVX-512).
    Avx2,
    /// numpy's own introsort (no AVX2, other architectures, numpy before 1.25).
    Scalar,
}

impl NumpySort {
    /// The indices that sort `keys` in this kernel's order.
    pub fn argsort(self, keys: &[i64]) -> Vec<usize> {
        match self {
            NumpySort::Avx512 => numpy_argsort_avx512(keys),
            NumpySort::Avx2 => numpy_argsort_avx2(keys),
            NumpySort::Scalar => numpy_argsort_scalar(keys),
        }
    }
}

impl std::str::FromStr for NumpySort {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "avx512" | "avx-512" => Ok(NumpySort::Avx512),
            "avx2" => Ok(NumpySort::Avx2),
            "scalar" => Ok(NumpySort::Scalar),
            other => Err(format!(
                "unknown numpy sort kernel {other:?}: expected avx512, avx2 or scalar"
            )),
        }
    }
}

/// `Series.describe()`: count, mean, sample standard deviation (ddof = 1), min, the
/// quartiles by linear interpolation, max. `None` where pandas prints `NaN`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Describe {
    /// Number of values.
    pub count: u64,
    /// Mean.
    pub mean: Option<f64>,
    /// Sample standard deviation (ddof = 1); `None` below two values.
    pub std: Option<f64>,
    /// Minimum.
    pub min: Option<f64>,
    /// 25th percentile.
    pub p25: Option<f64>,
    /// Median.
    pub p50: Option<f64>,
    /// 75th percentile.
    pub p75: Option<f64>,
    /// Maximum.
    pub max: Option<f64>,
}

impl Describe {
    /// Describes `values` (order irrelevant).
    pub fn of(values: &[f64]) -> Self {
        let n = values.len();
        if n == 0 {
            return Describe::default();
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let mean = values.iter().sum::<f64>() / n as f64;
        let std = (n > 1).then(|| {
            let ss: f64 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
            (ss / (n - 1) as f64).sqrt()
        });
        Describe {
            count: n as u64,
            mean: Some(mean),
            std,
            min: Some(sorted[0]),
            p25: Some(quantile_sorted(&sorted, 0.25)),
            p50: Some(quantile_sorted(&sorted, 0.5)),
            p75: Some(quantile_sorted(&sorted, 0.75)),
            max: Some(sorted[n - 1]),
        }
    }

    /// The eight values in pandas' column order (count first).
    pub fn values(&self) -> [Option<f64>; 8] {
        [
            Some(self.count as f64),
            self.mean,
            self.std,
            self.min,
            self.p25,
            self.p50,
            self.p75,
            self.max,
        ]
    }
}

/// The total length of the union of half-open intervals `(start, end)` (overlaps
/// counted once, touching ones joined; an interval with `end <= start` adds nothing).
pub fn union_length(mut spans: Vec<(i64, i64)>) -> i64 {
    spans.sort_unstable();
    let (mut total, mut end) = (0i64, i64::MIN);
    for (s, e) in spans {
        if e <= end {
            continue;
        }
        total += e - s.max(end);
        end = e;
    }
    total
}

/// numpy's `quantile(method="linear")` of sorted, non-empty values.
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    let pos = (sorted.len() - 1) as f64 * q;
    let lo = pos.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    let t = pos - lo as f64;
    let (a, b) = (sorted[lo], sorted[hi]);
    // numpy's `_lerp`: a + (b - a) * t, computed from the nearer end.
    let diff = b - a;
    if t >= 0.5 {
        b - diff * (1.0 - t)
    } else {
        a + diff * t
    }
}

/// numpy's `round(x, decimals)`: scale, round half to even, unscale.
pub fn np_round(x: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (x * scale).round_ties_even() / scale
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describe_matches_pandas() {
        let d = Describe::of(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(d.count, 4);
        assert_eq!(d.mean, Some(2.5));
        assert_eq!(d.p25, Some(1.75));
        assert_eq!(d.p75, Some(3.25));
        assert!((d.std.unwrap() - 1.2909944487358056).abs() < 1e-15);
        assert_eq!(Describe::of(&[5.0]).std, None);
        assert_eq!(np_round(0.125, 2), 0.12);
        assert_eq!(np_round(53.555, 2), 53.56);
    }
}
