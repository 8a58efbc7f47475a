//! The roofline section of the text report: the top opportunities (rows by the time
//! reaching the roofline would win), the ops the model does not cover, and the kernel
//! time per category.

use std::fmt::Write as _;

use super::Table;
use crate::analyses::roofline::RankRoofline;

/// Rows shown per rank in the text report (the JSON has them all).
pub const TOP_ROOFLINE_OPS: usize = 10;

fn ms(us: f64) -> String {
    format!("{:.3}", us / 1e3)
}

fn short(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let cut: String = text.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

/// Renders `table`'s top `top` rows, its uncovered ops and categories.
pub fn render_roofline(out: &mut String, table: &RankRoofline, top: usize) {
    if table.kernel_time_us <= 0.0 && table.ops.is_empty() {
        return;
    }
    let device = match &table.device {
        Some(d) => format!("{d}, from {}", table.device_source),
        None => format!("no device: {}", table.device_source),
    };
    let uncovered_us: f64 = table.uncovered.iter().map(|u| u.kernel_time_us).sum();
    let _ = writeln!(
        out,
        "\nRoofline, rank {} ({device}): {} of {} ms of kernel time in {} modeled op rows; \
         not covered {} ms in {} ops{}",
        table.rank,
        ms(table.modeled_kernel_time_us),
        ms(table.kernel_time_us),
        table.ops.len(),
        ms(uncovered_us),
        table.uncovered.len(),
        if table.unattributed.count > 0 {
            format!(
                "; {} device rows ({} ms) launched by no operator in the trace",
                table.unattributed.count,
                ms(table.unattributed.kernel_time_us)
            )
        } else {
            String::new()
        },
    );
    let mut t = Table::new(&[
        "op",
        "args",
        "calls",
        "kernel ms",
        "GFLOP",
        "MiB",
        "FLOP/B",
        "TFLOP/s",
        "TB/s",
        "roofline us",
        "% roofline",
        "bound",
        "win ms",
        "category",
    ]);
    // Rows whose every call ran inside another costed call are in the JSON only.
    for op in table
        .ops
        .iter()
        .filter(|op| op.nested_calls < op.count)
        .take(top)
    {
        t.row(vec![
            op.name.clone(),
            short(&op.params, 48),
            op.count.to_string(),
            ms(op.kernel_time_us),
            format!("{:.3}", op.gflops),
            format!("{:.2}", op.data_moved_bytes / 1048576.0),
            format!("{:.1}", op.flops_per_byte),
            format!("{:.2}", op.tflops_per_sec.mean),
            format!("{:.3}", op.tb_per_sec.mean),
            op.roofline_time_us
                .map_or("-".to_owned(), |r| format!("{r:.1}")),
            op.roofline_pct
                .map_or("-".to_owned(), |p| format!("{p:.1}%")),
            op.bound
                .map_or("-".to_owned(), |b| format!("{b:?}").to_lowercase()),
            ms(op.win_us),
            op.category.label().to_owned(),
        ]);
    }
    if !t.is_empty() {
        out.push_str(&t.render());
    }
    if !table.uncovered.is_empty() {
        let mut t = Table::new(&["not covered", "calls", "kernel ms", "why"]);
        for u in table.uncovered.iter().take(top) {
            t.row(vec![
                u.name.clone(),
                u.count.to_string(),
                ms(u.kernel_time_us),
                short(&u.reason, 90),
            ]);
        }
        out.push_str(&t.render());
    }
    let cells: Vec<String> = table
        .categories
        .iter()
        .map(|c| {
            format!(
                "{} {} ms ({} calls)",
                c.category.label(),
                ms(c.kernel_time_us),
                c.count
            )
        })
        .collect();
    let _ = writeln!(out, "by category: {}", cells.join(", "));
}
