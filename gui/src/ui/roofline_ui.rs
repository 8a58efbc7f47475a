//! The roofline of the selected operator, in the selection panel: its row of the rank's
//! roofline table (worded as `neuronprof analyze` words it) with this call's own rates,
//! or the reason the model does not cover it.

use eframe::egui;

use crate::load::Analyses;
use crate::model::{SliceRef, Timeline};
use crate::roofline::{
    call_tb_per_sec, call_tflops_per_sec, rank_table, selected_roofline, OpRoofline,
    SelectedRoofline,
};
use crate::ui::panels_ui::{pct, us};

/// Kernels of the row listed by name.
const SHOWN_KERNELS: usize = 3;

/// Formats a rate or ratio with 4 significant digits (`0.07400`, `28.97`, `1235`), so
/// tests can find the numbers.
pub fn sig(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let decimals = (3 - v.abs().log10().floor() as i32).clamp(0, 12) as usize;
    format!("{v:.decimals$}")
}

/// Formats a byte count per call (whole bytes).
pub fn bytes_per_call(v: f64) -> String {
    format!("{v:.0}")
}

/// Draws the roofline section of the selected `slice` (nothing when it is not a host
/// operator), looking its row up once per selection into `cache`.
pub fn roofline_ui(
    ui: &mut egui::Ui,
    timeline: &Timeline,
    analyses: &Option<Result<Box<Analyses>, String>>,
    cache: &mut Option<SelectedRoofline>,
    slice: SliceRef,
) {
    let category = timeline
        .names
        .get(timeline.row(slice).category[slice.index as usize]);
    if !crate::roofline::is_host_operator(category) {
        return;
    }
    ui.separator();
    ui.strong("roofline");
    let analyses = match analyses {
        None => {
            ui.horizontal(|ui| {
                ui.spinner();
                ui.label("computing the analyses…");
            });
            return;
        }
        Some(Err(e)) => {
            ui.weak(format!("no roofline: the analyses failed: {e}"));
            return;
        }
        Some(Ok(a)) => a,
    };
    if cache.as_ref().is_none_or(|c| c.slice != slice) {
        *cache = selected_roofline(timeline, analyses, slice);
    }
    let Some(selected) = cache.as_ref() else {
        return;
    };
    let table = selected.rank.and_then(|r| rank_table(analyses, r).ok());
    let rank = selected.rank.map_or("?".to_owned(), |r| r.to_string());
    match (&selected.found, table) {
        (OpRoofline::Row(at), Some(table)) => {
            row_ui(ui, table, &table.ops[*at], selected, &rank);
        }
        (OpRoofline::Uncovered(at), Some(table)) => {
            let u = &table.uncovered[*at];
            ui.label(format!(
                "not covered by the performance model: {}",
                u.reason
            ));
            ui.weak(format!(
                "rank {rank}: {} call{} of {} launched kernels, {} µs of kernel time \
                 (category {})",
                u.count,
                if u.count == 1 { "" } else { "s" },
                u.name,
                us(u.kernel_time_us),
                u.category.label()
            ));
        }
        (OpRoofline::NoTable(why), _) => {
            ui.weak(format!("no roofline table: {why}"));
        }
        _ if selected.call.kernels == 0 => {
            ui.weak("no roofline row: this call launched no device work");
        }
        _ => {
            ui.weak(format!(
                "no roofline row of its own: its {} kernel{} count under an operator it \
                 calls or that calls it (see its parent and children)",
                selected.call.kernels,
                if selected.call.kernels == 1 { "" } else { "s" },
            ));
        }
    }
}

/// A grid line: a key, then the value's pieces (numbers as labels of their own).
fn line(ui: &mut egui::Ui, key: &str, pieces: &[String], note: Option<String>) {
    ui.strong(key);
    ui.horizontal(|ui| {
        for piece in pieces {
            ui.label(piece);
        }
        if let Some(note) = note {
            ui.weak(note);
        }
    });
    ui.end_row();
}

fn row_ui(
    ui: &mut egui::Ui,
    table: &analysis::analyses::roofline::RankRoofline,
    op: &analysis::analyses::roofline::RooflineOp,
    selected: &SelectedRoofline,
    rank: &str,
) {
    let call = selected.call;
    let call_time = (call.kernels > 0 && call.time_ns > 0).then_some(call.time_ns);
    let spread = |s: &analysis::analyses::roofline::Spread| {
        format!(
            "row: mean {} · median {} · min {} · max {}",
            sig(s.mean),
            sig(s.median),
            sig(s.min),
            sig(s.max)
        )
    };
    egui::Grid::new("slice roofline")
        .striped(true)
        .show(ui, |ui| {
            let nested = if op.nested_calls > 0 {
                format!(", {} inside another costed call", op.nested_calls)
            } else {
                String::new()
            };
            line(
                ui,
                "calls with these shapes",
                &[op.count.to_string()],
                Some(format!("on rank {rank}{nested}")),
            );
            line(
                ui,
                "model",
                &[op.category.label().to_owned(), op.params.clone()],
                None,
            );
            line(ui, "GFLOP per call", &[sig(op.gflops)], None);
            line(
                ui,
                "bytes moved per call",
                &[bytes_per_call(op.data_moved_bytes)],
                Some(format!("({:.3} MiB)", op.data_moved_bytes / 1048576.0)),
            );
            line(ui, "FLOPs/byte", &[sig(op.flops_per_byte)], None);
            match call_time {
                Some(ns) => {
                    line(
                        ui,
                        "kernel time of this call",
                        &[us(ns as f64 / 1e3), "µs".to_owned()],
                        Some(format!(
                            "union of its {} kernel{}; row mean {} µs",
                            call.kernels,
                            if call.kernels == 1 { "" } else { "s" },
                            us(op.kernel_time_per_call_us.mean)
                        )),
                    );
                    line(
                        ui,
                        "TFLOP/s of this call",
                        &[sig(call_tflops_per_sec(op, ns))],
                        Some(spread(&op.tflops_per_sec)),
                    );
                    line(
                        ui,
                        "TB/s of this call",
                        &[sig(call_tb_per_sec(op, ns))],
                        Some(spread(&op.tb_per_sec)),
                    );
                }
                None => {
                    line(
                        ui,
                        "kernel time per call",
                        &[us(op.kernel_time_per_call_us.mean), "µs".to_owned()],
                        Some(
                            "the row's mean: this call's kernels were not found (no launch \
                             flows from it)"
                                .to_owned(),
                        ),
                    );
                    line(
                        ui,
                        "TFLOP/s (row mean)",
                        &[sig(op.tflops_per_sec.mean)],
                        Some(spread(&op.tflops_per_sec)),
                    );
                    line(
                        ui,
                        "TB/s (row mean)",
                        &[sig(op.tb_per_sec.mean)],
                        Some(spread(&op.tb_per_sec)),
                    );
                }
            }
            match (op.roofline_pct, op.roofline_time_us) {
                (Some(p), Some(r)) => line(
                    ui,
                    "% of roofline",
                    &[pct(p), "%".to_owned()],
                    Some(format!(
                        "of the row: roofline {} µs per call / mean kernel time {} µs{}",
                        us(r),
                        us(op.kernel_time_per_call_us.mean),
                        call_time.map_or(String::new(), |ns| format!(
                            "; this call {} %",
                            pct(r / (ns as f64 / 1e3) * 100.0)
                        ))
                    )),
                ),
                _ => line(ui, "% of roofline", &["-".to_owned()], None),
            }
            let bound = op
                .bound
                .map_or("-".to_owned(), |b| format!("{b:?}").to_lowercase());
            line(ui, "bound", &[bound], None);
            match &table.device {
                Some(d) => line(
                    ui,
                    "device",
                    std::slice::from_ref(d),
                    Some(format!("from {}", table.device_source)),
                ),
                None => line(
                    ui,
                    "device",
                    &["none".to_owned()],
                    Some(table.device_source.clone()),
                ),
            }
            match &op.peak {
                Some((spec, tflops)) => line(
                    ui,
                    "peak used",
                    &[spec.clone(), sig(*tflops), "TFLOP/s".to_owned()],
                    None,
                ),
                None => line(
                    ui,
                    "peak used",
                    &["-".to_owned()],
                    Some(format!("no {} peak on this device", op.compute_spec)),
                ),
            }
            line(
                ui,
                "time to win",
                &[us(op.win_us), "µs".to_owned()],
                Some("over the row's calls, at the roofline".to_owned()),
            );
            if let Some(flops) = op.device_flops_per_call {
                line(
                    ui,
                    "GFLOP per call, as the kernels state",
                    &[sig(flops / 1e9)],
                    None,
                );
            }
            if let Some(split) = &op.engines {
                let shares: Vec<String> = split
                    .engines
                    .iter()
                    .map(|e| format!("{} {} %", e.engine, pct(e.share_pct)))
                    .collect();
                line(
                    ui,
                    "engines",
                    &[shares.join(" · ")],
                    Some(format!(
                        "should bind {}, busiest {}",
                        split.should_bind.as_deref().unwrap_or("-"),
                        split.busiest
                    )),
                );
            }
            for k in op.kernels.iter().take(SHOWN_KERNELS) {
                let name: String = k.name.chars().take(60).collect();
                line(
                    ui,
                    "kernel",
                    &[name],
                    Some(format!("×{} · {} µs", k.count, us(k.total_us))),
                );
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_significant_digits_whatever_the_size() {
        assert_eq!(sig(0.074), "0.07400");
        assert_eq!(sig(28.973707), "28.97");
        assert_eq!(sig(1234.4), "1234");
        assert_eq!(sig(98765.4), "98765");
        assert_eq!(sig(0.0), "0");
        assert_eq!(sig(-2.5), "-2.500");
        assert_eq!(sig(f64::NAN), "NaN");
    }
}
