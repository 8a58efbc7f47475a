//! Element storage and its widened views.

use crate::{bf16_to_f32, f32_to_bf16, f32_to_f8e4m3, f8e4m3_to_f32, DType};

/// The elements of a storage; `Absent` when numerics are off.
#[derive(Debug, Clone)]
pub(crate) enum Data {
    F32(Vec<f32>),
    Bf16(Vec<u16>),
    I64(Vec<i64>),
    F8(Vec<u8>),
    Absent,
}

/// Elements widened for computing: floats as `f32`, indices as `i64`.
#[derive(Debug, Clone)]
pub(crate) enum Values {
    F32(Vec<f32>),
    I64(Vec<i64>),
}

impl Values {
    /// The float values (indices converted).
    pub(crate) fn f32(&self) -> std::borrow::Cow<'_, [f32]> {
        match self {
            Values::F32(values) => std::borrow::Cow::Borrowed(values),
            Values::I64(values) => values.iter().map(|&v| v as f32).collect(),
        }
    }

    /// The index values (floats truncated).
    pub(crate) fn i64(&self) -> std::borrow::Cow<'_, [i64]> {
        match self {
            Values::I64(values) => std::borrow::Cow::Borrowed(values),
            Values::F32(values) => values.iter().map(|&v| v as i64).collect(),
        }
    }
}

impl Values {
    /// Copies `(part, start, len)` ranges of `parts`, in order, into one value list of
    /// the first part's kind (so indices stay exact).
    pub(crate) fn gather_ranges(
        parts: &[Values],
        ranges: impl Iterator<Item = (usize, usize, usize)>,
    ) -> Values {
        match parts.first() {
            Some(Values::I64(_)) => {
                let parts: Vec<_> = parts.iter().map(|p| p.i64()).collect();
                Values::I64(
                    ranges
                        .flat_map(|(p, s, l)| parts[p][s..s + l].to_vec())
                        .collect(),
                )
            }
            _ => {
                let parts: Vec<_> = parts.iter().map(|p| p.f32()).collect();
                Values::F32(
                    ranges
                        .flat_map(|(p, s, l)| parts[p][s..s + l].to_vec())
                        .collect(),
                )
            }
        }
    }

    /// The elements at `indices`, in order.
    pub(crate) fn pick(&self, indices: impl Iterator<Item = usize>) -> Values {
        match self {
            Values::F32(v) => Values::F32(indices.map(|i| v[i]).collect()),
            Values::I64(v) => Values::I64(indices.map(|i| v[i]).collect()),
        }
    }
}

impl Data {
    pub(crate) fn len(&self) -> usize {
        match self {
            Data::F32(v) => v.len(),
            Data::Bf16(v) => v.len(),
            Data::I64(v) => v.len(),
            Data::F8(v) => v.len(),
            Data::Absent => 0,
        }
    }

    /// Elements `offset..offset + len`, widened; `None` when absent.
    pub(crate) fn values(&self, offset: usize, len: usize) -> Option<Values> {
        let range = offset..offset + len;
        Some(match self {
            Data::F32(v) => Values::F32(v[range].to_vec()),
            Data::Bf16(v) => Values::F32(v[range].iter().map(|&b| bf16_to_f32(b)).collect()),
            Data::I64(v) => Values::I64(v[range].to_vec()),
            Data::F8(v) => Values::F32(v[range].iter().map(|&b| f8e4m3_to_f32(b)).collect()),
            Data::Absent => return None,
        })
    }

    /// Stores computed values as `dtype` (BF16 rounds to nearest even).
    pub(crate) fn from_values(dtype: DType, values: Values) -> Data {
        match (dtype, values) {
            (DType::F32, Values::F32(v)) => Data::F32(v),
            (DType::F32, Values::I64(v)) => Data::F32(v.into_iter().map(|x| x as f32).collect()),
            (DType::BF16, values) => {
                Data::Bf16(values.f32().iter().map(|&x| f32_to_bf16(x)).collect())
            }
            (DType::I64, values) => Data::I64(values.i64().into_owned()),
            (DType::F8E4M3, values) => {
                Data::F8(values.f32().iter().map(|&x| f32_to_f8e4m3(x)).collect())
            }
        }
    }
}
