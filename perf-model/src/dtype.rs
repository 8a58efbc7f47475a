//! Element types as `record_shapes` writes them (`Input type`), with their sizes.

use serde::Serialize;

/// An element type of a tensor argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    /// `double`.
    F64,
    /// `float`.
    F32,
    /// `c10::BFloat16`.
    Bf16,
    /// `c10::Half`.
    F16,
    /// The 8-bit floats (`c10::Float8_e4m3fn`, `…e5m2`, the `fnuz` forms).
    Fp8,
    /// 64-bit integers (`long int`, `long`, `int64_t`).
    I64,
    /// 32-bit integers (`int`).
    I32,
    /// 16-bit integers (`short int`).
    I16,
    /// 8-bit integers (`signed char`, `unsigned char`).
    I8,
    /// `bool`.
    Bool,
    /// `c10::complex<float>`.
    C64,
    /// `c10::complex<double>`.
    C128,
}

impl DType {
    /// The type of an `Input type` entry; `None` for non-tensor entries (`Scalar`,
    /// `ScalarList`, `TensorList`, `""`, …) and types we do not know.
    pub fn parse(text: &str) -> Option<DType> {
        Some(match text {
            "double" => DType::F64,
            "float" => DType::F32,
            "c10::BFloat16" => DType::Bf16,
            "c10::Half" => DType::F16,
            "c10::Float8_e4m3fn"
            | "c10::Float8_e5m2"
            | "c10::Float8_e4m3fnuz"
            | "c10::Float8_e5m2fnuz"
            | "c10::Float8_e8m0fnu" => DType::Fp8,
            "long int" | "long" | "int64_t" | "long long" => DType::I64,
            "int" | "int32_t" => DType::I32,
            "short int" | "short" => DType::I16,
            "signed char" | "unsigned char" | "int8_t" | "uint8_t" => DType::I8,
            "bool" => DType::Bool,
            "c10::complex<float>" => DType::C64,
            "c10::complex<double>" => DType::C128,
            _ => return None,
        })
    }

    /// A `ScalarType` code as `Concrete Inputs` writes an `out_dtype`/`dtype` argument
    /// (c10's `ScalarType` enum order).
    pub fn from_scalar_type_code(code: i64) -> Option<DType> {
        Some(match code {
            0 | 1 => DType::I8,
            2 => DType::I16,
            3 => DType::I32,
            4 => DType::I64,
            5 => DType::F16,
            6 => DType::F32,
            7 => DType::F64,
            9 => DType::C64,
            10 => DType::C128,
            11 => DType::Bool,
            15 => DType::Bf16,
            23..=26 => DType::Fp8,
            _ => return None,
        })
    }

    /// Bytes per element.
    pub fn bytes(self) -> u64 {
        match self {
            DType::F64 | DType::I64 | DType::C64 => 8,
            DType::C128 => 16,
            DType::F32 | DType::I32 => 4,
            DType::Bf16 | DType::F16 | DType::I16 => 2,
            DType::Fp8 | DType::I8 | DType::Bool => 1,
        }
    }

    /// The short name used in compute specs and device tables (`bf16`, `fp32`, …).
    pub fn short_name(self) -> &'static str {
        match self {
            DType::F64 => "fp64",
            DType::F32 => "fp32",
            DType::Bf16 => "bf16",
            DType::F16 => "fp16",
            DType::Fp8 => "fp8",
            DType::I64 => "int64",
            DType::I32 => "int32",
            DType::I16 => "int16",
            DType::I8 => "int8",
            DType::Bool => "bool",
            DType::C64 => "complex64",
            DType::C128 => "complex128",
        }
    }
}

impl DType {
    /// The type a [`short_name`](Self::short_name) names.
    pub fn from_short_name(name: &str) -> Option<DType> {
        const ALL: [DType; 12] = [
            DType::F64,
            DType::F32,
            DType::Bf16,
            DType::F16,
            DType::Fp8,
            DType::I64,
            DType::I32,
            DType::I16,
            DType::I8,
            DType::Bool,
            DType::C64,
            DType::C128,
        ];
        ALL.into_iter().find(|d| d.short_name() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_shapes_type_names_have_their_sizes() {
        assert_eq!(DType::parse("c10::BFloat16").map(DType::bytes), Some(2));
        assert_eq!(DType::parse("long int").map(DType::bytes), Some(8));
        assert_eq!(DType::parse("Scalar"), None);
        assert_eq!(DType::from_scalar_type_code(15), Some(DType::Bf16));
        assert_eq!(DType::from_short_name("fp32"), Some(DType::F32));
        assert_eq!(DType::from_short_name("float"), None);
    }
}
