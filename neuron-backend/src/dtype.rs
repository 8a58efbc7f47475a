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
    /// 8-bit float e4m3fn (bias 7, no infinities, max 448), for matmul inputs only.
    F8E4M3,
}

impl DType {
    /// Bytes per element.
    pub fn size_bytes(self) -> u64 {
        match self {
            DType::F32 => 4,
            DType::BF16 => 2,
            DType::I64 => 8,
            DType::F8E4M3 => 1,
        }
    }

    /// Whether it is a floating-point type that general ops compute in (f32, bf16;
    /// fp8 is only a matmul input format).
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::BF16)
    }

    /// The `c10::ScalarType` number (as Kineto and collective payloads use it).
    pub fn scalar_type_code(self) -> u16 {
        match self {
            DType::F32 => 6,
            DType::BF16 => 15,
            DType::I64 => 4,
            DType::F8E4M3 => 24,
        }
    }

    /// The name PyTorch prints in `Input type` (`float`, `c10::BFloat16`, `long int`).
    pub fn torch_name(self) -> &'static str {
        match self {
            DType::F32 => "float",
            DType::BF16 => "c10::BFloat16",
            DType::I64 => "long int",
            DType::F8E4M3 => "c10::Float8_e4m3fn",
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DType::F32 => "f32",
            DType::BF16 => "bf16",
            DType::I64 => "i64",
            DType::F8E4M3 => "f8e4m3",
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

/// The e4m3fn NaN code (sign bit clear).
const F8_NAN: u8 = 0x7f;

/// Converts an `f32` to fp8 e4m3fn bits, rounding to nearest with ties to even;
/// magnitudes that round past 448 (the largest finite value) and NaN become NaN, as
/// the format has no infinities.
pub fn f32_to_f8e4m3(value: f32) -> u8 {
    if value.is_nan() {
        return F8_NAN;
    }
    let sign = if value.is_sign_negative() { 0x80u8 } else { 0 };
    let a = f64::from(value.abs());
    let min_normal = 2f64.powi(-6);
    if a < min_normal {
        // Subnormals are multiples of 2^-9; 8 of them is the smallest normal (code 8).
        let q = round_half_even(a / 2f64.powi(-9)) as u8;
        return sign | q;
    }
    let mut exp = a.log2().floor() as i32;
    if 2f64.powi(exp) > a {
        exp -= 1;
    }
    let mut q = round_half_even((a / 2f64.powi(exp) - 1.0) * 8.0) as i32;
    if q == 8 {
        exp += 1;
        q = 0;
    }
    let biased = exp + 7;
    if biased > 15 || (biased == 15 && q == 7) {
        return sign | F8_NAN;
    }
    sign | ((biased as u8) << 3) | q as u8
}

/// Widens fp8 e4m3fn bits to the `f32` they stand for (exact).
pub fn f8e4m3_to_f32(bits: u8) -> f32 {
    let sign = if bits & 0x80 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((bits >> 3) & 0x0f);
    let mantissa = f64::from(bits & 0x07);
    let magnitude = match exp {
        15 if mantissa == 7.0 => return f32::NAN,
        0 => mantissa * 2f64.powi(-9),
        _ => (1.0 + mantissa / 8.0) * 2f64.powi(exp - 7),
    };
    (sign * magnitude) as f32
}

fn round_half_even(x: f64) -> f64 {
    let floor = x.floor();
    match x - floor {
        d if d > 0.5 => floor + 1.0,
        d if d < 0.5 => floor,
        _ if floor % 2.0 == 0.0 => floor,
        _ => floor + 1.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fp8_codes_round_trip_and_round_to_nearest_even() {
        for code in 0..=255u8 {
            let value = f8e4m3_to_f32(code);
            if value.is_nan() {
                assert_eq!(code & 0x7f, 0x7f);
                continue;
            }
            if value == 0.0 {
                continue;
            }
            assert_eq!(f32_to_f8e4m3(value), code, "{value}");
        }
        assert_eq!(f8e4m3_to_f32(0x7e), 448.0);
        assert_eq!(f8e4m3_to_f32(0x01), 2f32.powi(-9));
        // 1.0625 is halfway between 1 and 1.125: ties go to the even mantissa (1.0).
        assert_eq!(f8e4m3_to_f32(f32_to_f8e4m3(1.0625)), 1.0);
        assert_eq!(f8e4m3_to_f32(f32_to_f8e4m3(1.1875)), 1.25);
        assert_eq!(f8e4m3_to_f32(f32_to_f8e4m3(460.0)), 448.0);
        assert!(f8e4m3_to_f32(f32_to_f8e4m3(500.0)).is_nan());
        assert_eq!(f8e4m3_to_f32(f32_to_f8e4m3(-0.3)), -0.3125);
    }

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
