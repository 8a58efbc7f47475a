//! Exact conversion between Kineto's microsecond numbers and integer nanoseconds.
//!
//! Kineto keeps int64 nanoseconds internally and writes `ts`/`dur` as microseconds with
//! exactly three decimals (Kineto's JSON as libkineto's `output_json.cpp` writes it). Going through
//! `f64` would lose the last nanosecond on absolute timestamps (16+ significant digits),
//! so the reader parses the number's decimal text exactly and the writer prints integers.

/// Why a JSON number could not be turned into nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NumberProblem {
    /// The text is not a JSON number at all.
    NotANumber,
    /// The value does not fit in an `i64` of nanoseconds.
    OutOfRange,
}

impl NumberProblem {
    pub(crate) fn describe(self) -> &'static str {
        match self {
            NumberProblem::NotANumber => "not a number",
            NumberProblem::OutOfRange => "out of range for i64 nanoseconds",
        }
    }
}

/// Parses a JSON number of microseconds (`12`, `12.345`, `1.2e3`, `-0.5`) into nanoseconds.
///
/// Digits beyond the nanosecond are rounded half away from zero, so `0.0005` µs → 1 ns.
pub(crate) fn parse_us_to_ns(text: &str) -> Result<i64, NumberProblem> {
    let bytes = text.as_bytes();
    let mut pos = 0;
    let negative = bytes.first() == Some(&b'-');
    if negative {
        pos += 1;
    }
    // Mantissa digits, as an integer, with the decimal exponent they imply.
    let mut mantissa: i128 = 0;
    let mut exp10: i64 = 0;
    let mut digits = 0usize;
    // Once the mantissa holds 36 significant digits, further digits only shift the exponent;
    // remember whether any dropped digit was non-zero for rounding.
    let mut dropped_nonzero = false;
    let mut push_digit = |d: u8, frac: bool, mantissa: &mut i128, exp10: &mut i64| {
        if *mantissa < 10i128.pow(36) {
            *mantissa = *mantissa * 10 + i128::from(d);
            if frac {
                *exp10 -= 1;
            }
        } else {
            dropped_nonzero |= d != 0;
            if !frac {
                *exp10 += 1;
            }
        }
    };
    while pos < bytes.len() && bytes[pos].is_ascii_digit() {
        push_digit(bytes[pos] - b'0', false, &mut mantissa, &mut exp10);
        pos += 1;
        digits += 1;
    }
    if digits == 0 {
        return Err(NumberProblem::NotANumber);
    }
    if pos < bytes.len() && bytes[pos] == b'.' {
        pos += 1;
        let frac_start = pos;
        while pos < bytes.len() && bytes[pos].is_ascii_digit() {
            push_digit(bytes[pos] - b'0', true, &mut mantissa, &mut exp10);
            pos += 1;
        }
        if pos == frac_start {
            return Err(NumberProblem::NotANumber);
        }
    }
    if pos < bytes.len() && (bytes[pos] == b'e' || bytes[pos] == b'E') {
        pos += 1;
        let mut exp_negative = false;
        if pos < bytes.len() && (bytes[pos] == b'+' || bytes[pos] == b'-') {
            exp_negative = bytes[pos] == b'-';
            pos += 1;
        }
        let exp_start = pos;
        let mut e: i64 = 0;
        while pos < bytes.len() && bytes[pos].is_ascii_digit() {
            e = (e * 10 + i64::from(bytes[pos] - b'0')).min(1_000_000);
            pos += 1;
        }
        if pos == exp_start {
            return Err(NumberProblem::NotANumber);
        }
        exp10 += if exp_negative { -e } else { e };
    }
    if pos != bytes.len() {
        return Err(NumberProblem::NotANumber);
    }
    // Microseconds → nanoseconds.
    exp10 += 3;
    let magnitude = scale(mantissa, exp10, dropped_nonzero)?;
    let value = if negative { -magnitude } else { magnitude };
    i64::try_from(value).map_err(|_| NumberProblem::OutOfRange)
}

/// `mantissa * 10^exp10`, rounded half away from zero, for a non-negative mantissa.
fn scale(mantissa: i128, exp10: i64, dropped_nonzero: bool) -> Result<i128, NumberProblem> {
    if mantissa == 0 {
        return Ok(0);
    }
    if exp10 >= 0 {
        let mut value = mantissa;
        for _ in 0..exp10 {
            value = value.checked_mul(10).ok_or(NumberProblem::OutOfRange)?;
            if value > i128::from(i64::MAX) {
                return Err(NumberProblem::OutOfRange);
            }
        }
        return Ok(value);
    }
    let shift = -exp10;
    if shift > 38 {
        return Ok(0);
    }
    let divisor = 10i128.pow(shift as u32);
    let quotient = mantissa / divisor;
    let remainder = mantissa % divisor;
    let half = divisor / 2;
    let round_up = remainder > half || (remainder == half && (divisor % 2 == 0 || dropped_nonzero));
    Ok(if round_up { quotient + 1 } else { quotient })
}

/// Appends `ns` as microseconds with exactly three decimals (`-1.005`, `12.000`).
/// Takes `i128` so that `ts_ns - baseTimeNanoseconds` can never overflow.
pub(crate) fn write_ns_as_us(out: &mut Vec<u8>, ns: i128) {
    let magnitude = ns.unsigned_abs();
    if ns < 0 {
        out.push(b'-');
    }
    let whole = magnitude / 1000;
    let frac = (magnitude % 1000) as u16;
    let mut digits = [0u8; 40];
    let mut len = 0;
    let mut rest = whole;
    loop {
        digits[len] = b'0' + (rest % 10) as u8;
        len += 1;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    out.extend(digits[..len].iter().rev());
    out.push(b'.');
    out.push(b'0' + (frac / 100) as u8);
    out.push(b'0' + (frac / 10 % 10) as u8);
    out.push(b'0' + (frac % 10) as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kineto_spellings_exactly() {
        assert_eq!(
            parse_us_to_ns("5117290934333.719"),
            Ok(5_117_290_934_333_719)
        );
        assert_eq!(
            parse_us_to_ns("1661938466265032"),
            Ok(1_661_938_466_265_032_000)
        );
        assert_eq!(parse_us_to_ns("68.0"), Ok(68_000));
        assert_eq!(parse_us_to_ns("0"), Ok(0));
        assert_eq!(parse_us_to_ns("-1.5"), Ok(-1_500));
        assert_eq!(parse_us_to_ns("1.5e3"), Ok(1_500_000));
        assert_eq!(parse_us_to_ns("1E-3"), Ok(1));
        assert_eq!(parse_us_to_ns("0.0005"), Ok(1));
        assert_eq!(parse_us_to_ns("0.0004999"), Ok(0));
        assert_eq!(parse_us_to_ns("-0.0005"), Ok(-1));
        assert_eq!(parse_us_to_ns("1e-400"), Ok(0));
    }

    #[test]
    fn rejects_out_of_range_and_garbage() {
        assert_eq!(parse_us_to_ns("1e400"), Err(NumberProblem::OutOfRange));
        assert_eq!(
            parse_us_to_ns("99999999999999999999"),
            Err(NumberProblem::OutOfRange)
        );
        assert_eq!(
            parse_us_to_ns("9223372036854775.808"),
            Err(NumberProblem::OutOfRange)
        );
        assert_eq!(parse_us_to_ns("9223372036854775.807"), Ok(i64::MAX));
        assert_eq!(parse_us_to_ns("-9223372036854775.808"), Ok(i64::MIN));
        assert_eq!(
            parse_us_to_ns("-9223372036854775.809"),
            Err(NumberProblem::OutOfRange)
        );
        for bad in ["", "-", "1.", ".5", "1e", "abc", "1x", "\"1\"", "NaN"] {
            assert_eq!(parse_us_to_ns(bad), Err(NumberProblem::NotANumber), "{bad}");
        }
    }

    #[test]
    fn many_digits_round_correctly() {
        let text = format!("1.{}", "4".repeat(60));
        assert_eq!(parse_us_to_ns(&text), Ok(1_444));
        let text = format!("{}.5", "1".repeat(10));
        assert_eq!(parse_us_to_ns(&text), Ok(1_111_111_111_500));
    }

    #[test]
    fn writes_three_decimals_and_round_trips() {
        for ns in [
            0i64,
            1,
            999,
            1000,
            -1,
            -1005,
            5_117_290_934_333_719,
            i64::MAX,
            i64::MIN + 1,
        ] {
            let mut out = Vec::new();
            write_ns_as_us(&mut out, ns.into());
            let text = String::from_utf8(out).unwrap();
            assert_eq!(text.split('.').nth(1).map(str::len), Some(3), "{text}");
            assert_eq!(parse_us_to_ns(&text), Ok(ns), "{text}");
        }
        let mut out = Vec::new();
        write_ns_as_us(&mut out, -1005);
        let mut out2 = Vec::new();
        write_ns_as_us(&mut out2, i128::from(i64::MIN) - i128::from(i64::MAX));
        assert!(out2.starts_with(b"-18446744073709551.615"));
        assert_eq!(out, b"-1.005");
    }
}
