//! `torch.compile`'s section: graph kernel time by pass, graph breaks and recompiles.

use std::fmt::Write as _;

use super::{num, opt, section, shorten, Table};

/// Passes listed per rank in the graph-time table (the rest summed on one line).
const TOP_PASSES: usize = 10;

/// `torch.compile`: one row per rank, each rank's graph kernel time by pass (the aten
/// ops each ran), then its graph-break and recompile reasons (Dynamo's counts are since
/// the process started; the rest is the window's).
pub(super) fn render_compile(out: &mut String, ranks: &[crate::analyses::compile::RankCompile]) {
    if ranks.is_empty() {
        return;
    }
    let mut t = Table::new(&[
        "rank",
        "regions",
        "region calls",
        "graph kernels",
        "graph kernel us",
        "% of device",
        "compiles (us)",
        "graph breaks*",
        "recompiles*",
        "cache hit/miss*",
        "eager fallbacks*",
    ]);
    for r in ranks {
        let (regions, calls) = match &r.regions {
            Some(regions) => (
                regions.len().to_string(),
                regions.iter().map(|g| g.calls).sum::<u64>().to_string(),
            ),
            None => ("-".to_owned(), "-".to_owned()),
        };
        let share =
            (r.device_kernel_us > 0.0).then(|| 100.0 * r.graph_kernel_us / r.device_kernel_us);
        let counted = |f: &dyn Fn(&crate::analyses::compile::CompileCounts) -> String| {
            r.counts.as_ref().map_or_else(|| "-".to_owned(), f)
        };
        t.row(vec![
            r.rank.to_string(),
            regions,
            calls,
            r.graph_kernels.to_string(),
            num(r.graph_kernel_us),
            opt(share),
            format!("{} ({})", r.compile_ranges, num(r.compile_range_us)),
            counted(&|c| c.graph_break_count().to_string()),
            counted(&|c| c.recompiles.to_string()),
            counted(&|c| format!("{}/{}", c.cache_hits, c.cache_misses)),
            counted(&|c| c.eager_fallback_ops.values().sum::<u64>().to_string()),
        ]);
    }
    section(out, "torch.compile", &t);
    let _ = writeln!(
        out,
        "* Dynamo's and the neuron backend's counts since the process started (the \
         trace's neuron_compile member); the other columns are the window's"
    );
    for r in ranks.iter().filter(|r| !r.passes.is_empty()) {
        let total: f64 = r.passes.iter().map(|p| p.device_us).sum::<f64>() + r.between_passes_us;
        let mut t = Table::new(&["pass (aten ops)", "calls", "device us", "% of graphs"]);
        let share = |us: f64| opt((total > 0.0).then(|| 100.0 * us / total));
        for p in r.passes.iter().take(TOP_PASSES) {
            t.row(vec![
                p.pass.clone(),
                p.calls.to_string(),
                num(p.device_us),
                share(p.device_us),
            ]);
        }
        let rest = &r.passes[r.passes.len().min(TOP_PASSES)..];
        if !rest.is_empty() {
            let us: f64 = rest.iter().map(|p| p.device_us).sum();
            t.row(vec![
                format!("({} other passes)", rest.len()),
                rest.iter().map(|p| p.calls).sum::<u64>().to_string(),
                num(us),
                share(us),
            ]);
        }
        if r.between_passes_us > 0.0 {
            t.row(vec![
                "(no pass running)".to_owned(),
                "-".to_owned(),
                num(r.between_passes_us),
                share(r.between_passes_us),
            ]);
        }
        section(
            out,
            &format!("rank {}: graph kernel time by pass", r.rank),
            &t,
        );
    }
    for r in ranks {
        let Some(c) = &r.counts else { continue };
        for b in &c.graph_breaks {
            let _ = writeln!(
                out,
                "rank {} graph break x{}: {}",
                r.rank,
                b.count,
                shorten(b.reason.lines().next().unwrap_or(""), 160)
            );
        }
        for re in &c.recompile_reasons {
            let _ = writeln!(
                out,
                "rank {} recompile {} of {}: {}",
                r.rank,
                re.compile_id,
                re.function,
                shorten(re.reason.lines().next().unwrap_or(""), 160)
            );
        }
        if c.compiles_kept_limit == Some(c.compiles_kept) && c.compiles_kept > 0 {
            let _ = writeln!(
                out,
                "rank {}: recompiles are counted among the last {} compiles, all Dynamo keeps",
                r.rank, c.compiles_kept
            );
        }
    }
}
