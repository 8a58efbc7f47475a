//! HTA's timestamp rounding, reproduced bit for bit.
//!
//! HTA reads `ts` and `dur` as Python floats (the nearest `f64` to the decimal text) and,
//! when the `ts` column is floating point, rounds each event
//! (`hta/common/trace_parser.py::round_down_time_stamps`):
//! `end = floor(ts + dur)` (the sum taken in `f64`), `ts = ceil(ts)`, `dur = end - ts`.
//! The `f64` sum matters: `0.1 + 0.2`-style errors move `floor` by one µs on some events,
//! so we rebuild the same `f64`s from the exact nanoseconds the reader gives us.

/// The `f64` Python's `json` would produce for `ns / 1000` µs written with three decimals.
pub(crate) fn us_as_python_float(ns: i64) -> f64 {
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
}
