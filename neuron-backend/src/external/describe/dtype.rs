//! Element types of an external program's tensors (PyTorch's `c10::ScalarType` codes),
//! and what the timing model does with each.

/// A tensor element type by its `c10::ScalarType` code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ScalarType(pub u16);

/// How the engines treat a type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeClass {
    /// 32-bit float.
    Float32,
    /// bf16 or f16: the 16-bit rates of VectorE/ScalarE and TensorE's BF16/FP16 rate.
    Float16,
    /// An 8-bit float (e4m3, e5m2): TensorE's FP8 rate.
    Float8,
    /// 64-bit float: no engine computes it natively; costed as 32-bit (stated in the
    /// kernel's `lowering` arg).
    Float64,
    /// Integers and bool: TensorE has no integer mode, matmuls are costed at the FP32
    /// rate (never the FP8 rate, whatever their size).
    Integer,
    /// Complex types: costed as two floats of their component type per element.
    Complex,
}

impl ScalarType {
    /// Bytes per element (0 for codes this table does not know).
    pub fn size_bytes(self) -> u64 {
        match self.0 {
            // u8, i8, bool, qint8, quint8, quint4x2, quint2x4, bits1x8/2x4/4x2/8, fp8s
            0 | 1 | 11 | 12 | 13 | 16..=21 | 23..=26 => 1,
            // i16, f16, bf16, bits16, u16
            2 | 5 | 15 | 22 | 27 => 2,
            // i32, complex<f16>, f32, qint32, u32
            3 | 8 | 6 | 14 | 28 => 4,
            // i64, f64, complex<f32>, u64
            4 | 7 | 9 | 29 => 8,
            // complex<f64>
            10 => 16,
            _ => 0,
        }
    }

    /// How the engines treat it.
    pub fn class(self) -> TypeClass {
        match self.0 {
            6 => TypeClass::Float32,
            5 | 15 => TypeClass::Float16,
            23..=26 => TypeClass::Float8,
            7 => TypeClass::Float64,
            8..=10 => TypeClass::Complex,
            _ => TypeClass::Integer,
        }
    }

    /// The short name used in kernel names (`addmm_bf16`).
    pub fn tag(self) -> &'static str {
        match self.0 {
            0 => "u8",
            1 => "i8",
            2 => "i16",
            3 => "i32",
            4 => "i64",
            5 => "f16",
            6 => "f32",
            7 => "f64",
            8 => "c32",
            9 => "c64",
            10 => "c128",
            11 => "bool",
            15 => "bf16",
            23 => "f8e5m2",
            24 => "f8e4m3",
            25 => "f8e5m2fnuz",
            26 => "f8e4m3fnuz",
            27 => "u16",
            28 => "u32",
            29 => "u64",
            _ => "other",
        }
    }

    /// Whether VectorE and ScalarE run it at their 16-bit rate.
    pub fn sixteen_bit(self) -> bool {
        self.class() == TypeClass::Float16
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_classes_follow_c10() {
        let f32 = ScalarType(6);
        assert_eq!(
            (f32.size_bytes(), f32.class(), f32.tag()),
            (4, TypeClass::Float32, "f32")
        );
        let bf16 = ScalarType(15);
        assert_eq!((bf16.size_bytes(), bf16.class()), (2, TypeClass::Float16));
        assert!(bf16.sixteen_bit());
        // One-byte integers and bool are integers, not FP8.
        for code in [0, 1, 11] {
            assert_eq!(ScalarType(code).class(), TypeClass::Integer);
            assert_eq!(ScalarType(code).size_bytes(), 1);
        }
        assert_eq!(ScalarType(24).class(), TypeClass::Float8);
        assert_eq!(ScalarType(7).class(), TypeClass::Float64);
        assert_eq!(ScalarType(4).size_bytes(), 8);
        assert_eq!(ScalarType(29).size_bytes(), 8);
        assert_eq!(ScalarType(10).size_bytes(), 16);
    }
}
