//! The roofline section of the text report: the top opportunities (rows by the time
//! reaching the roofline would win), the ops the model does not cover, and the kernel
//! time per category; and `diff`'s per-operator efficiency before and after.

use std::fmt::Write as _;

use super::Table;
use crate::analyses::roofline::diff::RooflineDiff;
use crate::analyses::roofline::{RankRoofline, RooflineOp};

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
    let shown: Vec<_> = table
        .ops
        .iter()
        .filter(|op| op.nested_calls < op.count)
        .take(top)
        .collect();
    for op in &shown {
        // Rows that differ only in what the parameters do not show (a scalar argument:
        // Adam's `mul_` by β1 and by β2; a tensor or a scalar operand) say what tells
        // them apart: the first of the recorded arrays that differs.
        let mine = arrays(op);
        let apart = shown
            .iter()
            .filter(|o| !std::ptr::eq(**o, *op) && o.name == op.name && o.params == op.params)
            .find_map(|o| {
                let theirs = arrays(o);
                (0..4).find(|&i| theirs[i] != mine[i])
            });
        let args = match apart {
            Some(i) => format!("{} {}", op.params, mine[i]),
            None => op.params.clone(),
        };
        t.row(vec![
            op.name.clone(),
            short(&args, 48),
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
    render_engines(out, table, top);
    render_graph_passes(out, table, top);
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

/// A row's recorded argument arrays: `Input Dims`, `Input type`, `Input Strides`,
/// `Concrete Inputs`.
fn arrays(o: &RooflineOp) -> [&str; 4] {
    [
        &o.input_dims,
        &o.input_types,
        &o.input_strides,
        &o.concrete_inputs,
    ]
}

/// Renders `diff`'s `top` rows with the largest change of kernel time: per operator and
/// unique arguments, calls, kernel time per call and percent of the roofline before and
/// after.
pub fn render_roofline_diff(out: &mut String, diff: &RooflineDiff, top: usize) {
    if diff.changes.is_empty() && diff.only_before.is_empty() && diff.only_after.is_empty() {
        return;
    }
    let device = |d: &Option<String>| d.clone().unwrap_or_else(|| "no device".to_owned());
    let _ = writeln!(
        out,
        "\nRoofline, control ({}) → test ({}): {} op rows in both, {} only in control, {} \
         only in test",
        device(&diff.devices.0),
        device(&diff.devices.1),
        diff.changes.len(),
        diff.only_before.len(),
        diff.only_after.len(),
    );
    let pct = |p: Option<f64>| p.map_or("-".to_owned(), |p| format!("{p:.1}%"));
    let mut t = Table::new(&[
        "op",
        "args",
        "calls",
        "us/call control",
        "us/call test",
        "% roofline control",
        "% roofline test",
        "diff ms",
    ]);
    for c in diff.changes.iter().take(top) {
        t.row(vec![
            c.name.clone(),
            short(&c.params, 48),
            if c.count.0 == c.count.1 {
                c.count.0.to_string()
            } else {
                format!("{} → {}", c.count.0, c.count.1)
            },
            format!("{:.1}", c.kernel_time_per_call_us.0),
            format!("{:.1}", c.kernel_time_per_call_us.1),
            pct(c.roofline_pct.0),
            pct(c.roofline_pct.1),
            format!("{:+.3}", c.kernel_time_delta_us / 1e3),
        ]);
    }
    if !t.is_empty() {
        out.push_str(&t.render());
    }
}

/// Passes shown per compiled graph (the JSON has them all).
const TOP_GRAPH_PASSES: usize = 8;

/// For each compiled graph among the top rows, its passes with their share of the
/// graph's time and their roofline, per call of the graph.
fn render_graph_passes(out: &mut String, table: &RankRoofline, top: usize) {
    for op in table.ops.iter().take(top) {
        let Some(passes) = &op.passes else { continue };
        let _ = writeln!(
            out,
            "{}: {} calls, {:.1} us per call; its passes per call, most time first",
            op.name, op.count, op.kernel_time_per_call_us.mean
        );
        let mut t = Table::new(&[
            "pass (aten ops)",
            "n",
            "us",
            "% of graph",
            "GFLOP",
            "MiB",
            "roofline us",
            "% roofline",
            "bound",
            "units",
        ]);
        for p in passes.iter().take(TOP_GRAPH_PASSES) {
            t.row(vec![
                short(&p.pass, 40),
                p.count.to_string(),
                format!("{:.2}", p.time_us),
                format!("{:.1}%", p.share_pct),
                format!("{:.4}", p.gflops),
                format!("{:.2}", p.data_moved_bytes / 1048576.0),
                p.roofline_time_us
                    .map_or("-".to_owned(), |r| format!("{r:.2}")),
                p.roofline_pct
                    .map_or("-".to_owned(), |r| format!("{r:.1}%")),
                p.bound
                    .map_or("-".to_owned(), |b| format!("{b:?}").to_lowercase()),
                p.compute_spec.clone(),
            ]);
        }
        if passes.len() > TOP_GRAPH_PASSES {
            let rest = &passes[TOP_GRAPH_PASSES..];
            t.row(vec![
                format!("({} other passes)", rest.len()),
                rest.iter().map(|p| p.count).sum::<u64>().to_string(),
                format!("{:.2}", rest.iter().map(|p| p.time_us).sum::<f64>()),
                format!("{:.1}%", rest.iter().map(|p| p.share_pct).sum::<f64>()),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
            ]);
        }
        out.push_str(&t.render());
    }
}

/// The engine split of the top rows, when the trace states engine busy times.
fn render_engines(out: &mut String, table: &RankRoofline, top: usize) {
    let rows: Vec<_> = table
        .ops
        .iter()
        .filter(|op| op.nested_calls < op.count)
        .take(top)
        .filter_map(|op| op.engines.as_ref().map(|e| (op, e)))
        .collect();
    if rows.is_empty() {
        return;
    }
    let mut t = Table::new(&[
        "op",
        "args",
        "should bind",
        "busiest",
        "engine busy, % of kernel time",
    ]);
    for (op, split) in rows {
        let shares: Vec<String> = split
            .engines
            .iter()
            .map(|e| format!("{} {:.0}%", e.engine, e.share_pct))
            .collect();
        t.row(vec![
            op.name.clone(),
            short(&op.params, 48),
            split.should_bind.clone().unwrap_or_else(|| "-".to_owned()),
            split.busiest.clone(),
            shares.join(", "),
        ]);
    }
    out.push_str(&t.render());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyses::roofline::{roofline_table, RooflineOptions};

    /// Two rows that print the same parameters say what tells them apart; a row alone
    /// prints its parameters only.
    #[test]
    fn rows_that_print_alike_show_the_argument_that_differs() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/compiled-block/rank0.pt.trace.json.gz");
        let set = crate::load_paths(&[&path], &crate::LoadOptions::default()).unwrap();
        let mut table = roofline_table(&set.ranks[0], &RooflineOptions::default()).unwrap();
        let first = table
            .ops
            .iter()
            .position(|o| o.name == "aten::add_")
            .expect("an add_ row");
        let mut alone = String::new();
        render_roofline(&mut alone, &table, table.ops.len());
        let line = |text: &str, args: &str| {
            text.lines()
                .any(|l| l.starts_with("aten::add_") && l.contains(args))
        };
        let params = table.ops[first].params.clone();
        let concrete = table.ops[first].concrete_inputs.clone();
        assert!(line(&alone, &params) && !line(&alone, &concrete), "{alone}");
        let mut twin = table.ops[first].clone();
        twin.concrete_inputs = r#"["", "0.5"]"#.to_owned();
        table.ops.insert(first + 1, twin);
        let mut text = String::new();
        render_roofline(&mut text, &table, table.ops.len());
        assert!(line(&text, &format!("{params} {concrete}")), "{text}");
        assert!(line(&text, &format!(r#"{params} ["", "0.5"]"#)), "{text}");
    }
}
