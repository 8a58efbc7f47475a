//! HTA's timestamp rounding, reproduced bit for bit.
//!
//! HTA reads `ts` and `dur` as Python floats (the nearest `f64` to the decimal text) and,
//! when the `ts` column is floating point, rounds each event
//! (`hta/common/trace_parser.py::round_down_time_stamps`):
//! `end = floor(ts + dur)` (the sum taken in `f64`), `ts = ceil(ts)`, `dur = end - ts`.
//! The `f64` sum matters: `0.1 + 0.2`-style errors move `floor` by one µs on some events,
//! so we rebuild the same `f64`s from the exact nanoseconds the reader gives us.

/// The `f64` Python's `json` would produce for `ns / 1000` µs written with three decimals.
///
/// Python parses a decimal to the nearest `f64` (correct rounding), and IEEE 754 division
/// of two exactly representable numbers is correctly rounded too: for `|ns| ≤ 2^53`
/// (every `ns` is then an exact `f64`; 104 days of nanoseconds) `ns / 1000.0` is that
/// same nearest `f64`, without formatting and parsing text. Beyond, the text is parsed.
pub(crate) fn us_as_python_float(ns: i64) -> f64 {
    if ns.unsigned_abs() <= 1 << 53 {
        return ns as f64 / 1000.0;
    }
    us_as_python_float_by_text(ns)
}

/// [`us_as_python_float`] the long way: the decimal text, parsed.
fn us_as_python_float_by_text(ns: i64) -> f64 {
    let magnitude = ns.unsigned_abs();
    let text = format!(
        "{}{}.{:03}",
        if ns < 0 { "-" } else { "" },
        magnitude / 1000,
        magnitude % 1000
    );
    text.parse().expect("a formatted decimal parses")
}

/// HTA's rounded `(ts, end)` in integer µs for an event at `ts_rel_ns` lasting `dur_ns`.
pub(crate) fn hta_round_us(ts_rel_ns: i64, dur_ns: i64) -> (i64, i64) {
    let ts = us_as_python_float(ts_rel_ns);
    let dur = us_as_python_float(dur_ns);
    (ts.ceil() as i64, (ts + dur).floor() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_like_hta() {
        assert_eq!(hta_round_us(10_200, 500), (11, 10), "dur can become -1");
        assert_eq!(hta_round_us(10_000, 2_000), (10, 12));
        assert_eq!(
            hta_round_us(701_805_074_372_596, 15_863_105),
            (701_805_074_373, 701_805_090_235)
        );
        assert_eq!(us_as_python_float(-1_500), -1.5);
    }

    #[test]
    fn division_gives_the_parsed_decimal() {
        // Every ns up to 2^20 and around the powers of two and ten where rounding
        // changes, both signs, and a pseudo-random spread up to 2^53: `ns / 1000.0`
        // is bit for bit the parsed text.
        let mut values: Vec<i64> = (0..1 << 20).collect();
        for shift in 20..=53 {
            let p = 1i64 << shift;
            values.extend((p - 1000..=p).chain(p - 3..p + 3).filter(|&v| v <= 1 << 53));
        }
        let mut p = 1i64;
        while p <= 1 << 53 {
            values.extend(p.saturating_sub(1000)..=p);
            p = p.saturating_mul(10);
        }
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push((x % (1 << 53)) as i64);
        }
        for ns in values {
            for ns in [ns, -ns] {
                let fast = us_as_python_float(ns);
                let text = us_as_python_float_by_text(ns);
                assert_eq!(fast.to_bits(), text.to_bits(), "{ns} ns");
            }
        }
        // Beyond 2^53 the text path is taken.
        let big = (1i64 << 53) + 1;
        assert_eq!(us_as_python_float(big), us_as_python_float_by_text(big));
    }
}
