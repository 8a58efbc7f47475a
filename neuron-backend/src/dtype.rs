//! Element types and the BF16 conversion (round to nearest, ties to even).

use std::fmt;

/// Element type of a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// IEEE 754 single precision.
    F32,
    /// bfloat16, stored as the upper 16 bits of an `f32` after round-to-nearest-even.
    BF16,
    /// 64-bit signed integers (indices).
    I64,
}

impl DType {
    /// Bytes per element.
    pub fn size_bytes(self) -> u64 {
        match self {
            DType::F32 => 4,
            DType::BF16 => 2,
            DType::I64 => 8,
        }
    }

    /// Whether it is a floating-point type.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::BF16)
    }

    /// The `c10::ScalarType` number (as Kineto and collective payloads use it).
    pub fn scalar_type_code(self) -> u16 {
        match self {
            DType::F32 => 6,
            DType::BF16 => 15,
            DType::I64 => 4,
        }
    }

    /// The name PyTorch prints in `Input type` (`float`, `c10::BFloat16`, `long int`).
    pub fn torch_name(self) -> &'static str {
        match self {
            DType::F32 => "float",
            DType::BF16 => "c10::BFloat16",
            DType::I64 => "long int",
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DType::F32 => "f32",
            DType::BF16 => "bf16",
            DType::I64 => "i64",
        })
    }
}

/// Converts an `f32` to bfloat16 bits, rounding to nearest with ties to even. NaN stays
/// a (quiet) NaN.
#[inline]
pub fn f32_to_bf16(value: f32) -> u16 {
    let bits = value.to_bits();
    if value.is_nan() {
        return ((bits >> 16) as u16) | 0x0040;
    }
    let lsb = (bits >> 16) & 1;
    let rounded = bits.wrapping_add(0x7fff + lsb);
    (rounded >> 16) as u16
}

/// Widens bfloat16 bits to the `f32` they stand for (exact).
#[inline]
pub fn bf16_to_f32(bits: u16) -> f32 {
    f32::from_bits(u32::from(bits) << 16)
}

/// Rounds an `f32` to the nearest bfloat16 value, returned as `f32`.
#[inline]
pub fn round_bf16(value: f32) -> f32 {
    bf16_to_f32(f32_to_bf16(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bf16_round_trips_exact_values() {
        for value in [
            0.0f32,
            -0.0,
            1.0,
            -2.5,
            65280.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
        ] {
            assert_eq!(bf16_to_f32(f32_to_bf16(value)).to_bits(), value.to_bits());
        }
        assert!(bf16_to_f32(f32_to_bf16(f32::NAN)).is_nan());
    }

    #[test]
    fn bf16_rounds_to_nearest_even() {
        // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1).
        assert_eq!(round_bf16(1.0 + 1.0 / 256.0), 1.0);
        // 1 + 3·2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: even is 1 + 2^-6.
        assert_eq!(round_bf16(1.0 + 3.0 / 256.0), 1.0 + 1.0 / 64.0);
        // Just above halfway rounds up.
        assert_eq!(round_bf16(1.0 + 1.0 / 256.0 + 1e-6), 1.0 + 1.0 / 128.0);
        // Overflow past the largest finite bf16 goes to infinity.
        assert_eq!(round_bf16(f32::MAX), f32::INFINITY);
    }

    #[test]
    fn relative_error_is_at_most_half_an_ulp() {
        let mut value = 1.0e-3f32;
        while value < 1.0e6 {
            let err = ((round_bf16(value) - value) / value).abs();
            assert!(err <= 1.0 / 256.0, "{value}: {err}");
            value *= 1.37;
        }
    }
}
