//! `neuronprof calibrate`: the timing model's microbenchmarks beside the published
//! figures they were built from (`neuron_backend::calibrate`, docs/HARDWARE.md).

use std::fmt::Write as _;

use neuron_backend::calibrate::CalibrationRow;

/// The table as text: one line per row, grouped, each with its ratio to the figure and,
/// outside ±10 %, why.
pub fn render(profile_name: &str, rows: &[CalibrationRow]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "timing model of {profile_name} against its published figures (timing only; \
         docs/HARDWARE.md)"
    );
    let (mut group, mut figure) = ("", "");
    let mut outside = 0;
    for r in rows {
        if r.group != group || r.figure != figure {
            (group, figure) = (r.group, &r.figure);
            let _ = writeln!(out, "\n{group}: {figure}");
            let _ = writeln!(
                out,
                "  {:<58} {:>10} {:>10}  {:>6}",
                "run", "model", "figure", "ratio"
            );
        }
        let _ = writeln!(
            out,
            "  {:<58} {:>10.1} {:>10.1}  {:>6.2}  {}",
            r.what, r.measured, r.published, r.ratio, r.unit
        );
        if let Some(why) = &r.explanation {
            outside += 1;
            let _ = writeln!(out, "      outside ±10 %: {why}");
        }
    }
    let _ = writeln!(
        out,
        "\n{} rows: {} within ±10 % of their figure, {outside} outside with the reason",
        rows.len(),
        rows.len() - outside
    );
    out
}
