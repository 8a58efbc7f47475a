//! Text rendering of an [`InspectReport`] for a terminal.

use std::io::{self, Write};

use super::report::{FileReport, InspectReport};

/// Formats a duration in ns with a unit a person reads at a glance.
pub fn human_duration(ns: i64) -> String {
    let abs = ns.unsigned_abs() as f64;
    let sign = if ns < 0 { "-" } else { "" };
    if abs >= 1e9 {
        format!("{sign}{:.3} s", abs / 1e9)
    } else if abs >= 1e6 {
        format!("{sign}{:.3} ms", abs / 1e6)
    } else if abs >= 1e3 {
        format!("{sign}{:.3} us", abs / 1e3)
    } else {
        format!("{sign}{abs} ns")
    }
}

/// Writes the report as text.
pub fn render_text(report: &InspectReport, out: &mut dyn Write) -> io::Result<()> {
    let ranks = if report.ranks.is_empty() {
        "none stated".to_owned()
    } else {
        report
            .ranks
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let world = report
        .world_size
        .map_or("not stated".to_owned(), |w| w.to_string());
    writeln!(
        out,
        "{} trace file(s), {} events; ranks: {ranks}; world size: {world}",
        report.files.len(),
        report.total_events
    )?;
    for warning in &report.warnings {
        writeln!(out, "warning: {warning}")?;
    }
    for file in &report.files {
        writeln!(out)?;
        render_file(file, out)?;
    }
    if report.damaged_files() > 0 {
        writeln!(
            out,
            "\n{} file(s) damaged; the counts above stop at the damage",
            report.damaged_files()
        )?;
    }
    Ok(())
}

fn render_file(file: &FileReport, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "== {}", file.path.display())?;
    let rank = file.rank.map_or("-".to_owned(), |r| r.to_string());
    let world = file.world_size.map_or("-".to_owned(), |w| w.to_string());
    let backend = file.backend.as_deref().unwrap_or("-");
    writeln!(out, "rank {rank} of world size {world} (backend {backend})")?;
    if file.devices.is_empty() {
        writeln!(out, "devices: none")?;
    } else {
        writeln!(out, "devices:")?;
        for d in &file.devices {
            writeln!(
                out,
                "  {:>3}  {:<32} {} device events",
                d.device_index,
                d.name.as_deref().unwrap_or("(no deviceProperties entry)"),
                d.device_events
            )?;
        }
    }
    match (file.first_ts_ns, file.last_end_ns, file.span_ns()) {
        (Some(first), Some(last), Some(span)) => writeln!(
            out,
            "time span: {} (from {first} ns to {last} ns{})",
            human_duration(span),
            file.base_time_ns
                .map_or(String::new(), |b| format!("; baseTimeNanoseconds {b}"))
        )?,
        _ => writeln!(out, "time span: no timed events")?,
    }
    writeln!(out, "events: {}", file.events)?;
    let phases: Vec<String> = file
        .by_phase
        .iter()
        .map(|(p, n)| format!("{p} {n}"))
        .collect();
    writeln!(out, "  by phase: {}", phases.join(", "))?;
    let mut cats: Vec<(&String, &u64)> = file.by_category.iter().collect();
    cats.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    writeln!(out, "  by category:")?;
    for (cat, n) in cats {
        let cat = if cat.is_empty() {
            "(none)"
        } else {
            cat.as_str()
        };
        writeln!(out, "    {n:>9}  {cat}")?;
    }
    let by_type: Vec<String> = file
        .memory_events_by_device_type
        .iter()
        .map(|(t, n)| {
            format!(
                "{n} on device type {t}{}",
                if *t == 20 { " (PrivateUse1)" } else { "" }
            )
        })
        .collect();
    if by_type.is_empty() {
        writeln!(out, "[memory] events: {}", file.memory_events)?;
    } else {
        writeln!(
            out,
            "[memory] events: {} ({})",
            file.memory_events,
            by_type.join(", ")
        )?;
    }
    if file.flows.is_empty() {
        writeln!(out, "flows: none")?;
    } else {
        writeln!(out, "flows:")?;
        for (cat, f) in &file.flows {
            writeln!(
                out,
                "  {cat:<8} {} matched, {} starts without finish, {} finishes without start",
                f.matched, f.unmatched_starts, f.unmatched_finishes
            )?;
        }
    }
    match file.dropped_records {
        Some(n) => writeln!(out, "dropped records: {n}")?,
        None => writeln!(out, "dropped records: not stated by the trace")?,
    }
    if file.skipped_events > 0 {
        writeln!(
            out,
            "DAMAGE: {} event(s) skipped; first:",
            file.skipped_events
        )?;
        for example in &file.skipped_examples {
            writeln!(out, "  {example}")?;
        }
    }
    match &file.damage {
        Some(d) => writeln!(out, "DAMAGE: {}", d.message)?,
        None => writeln!(out, "damage: none")?,
    }
    if let Some(ne) = &file.neuron_explorer {
        writeln!(
            out,
            "neuron explorer profile: schema {}, LNC={}, worker_gid {:?}",
            ne.schema_version.as_deref().unwrap_or("not stated"),
            ne.lnc.unwrap_or(1),
            ne.worker_gids
        )?;
        for problem in &ne.problems {
            writeln!(out, "  DAMAGE (skipped): {problem}")?;
        }
        for missing in &ne.missing {
            writeln!(out, "  missing: {missing}")?;
        }
        if !ne.unknown.is_empty() {
            writeln!(out, "  unknown (not read): {}", ne.unknown.join(", "))?;
        }
        if let Some(framework) = &ne.framework {
            writeln!(out, "  framework trace merged: {framework}")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_pick_a_readable_unit() {
        assert_eq!(human_duration(999), "999 ns");
        assert_eq!(human_duration(1_500), "1.500 us");
        assert_eq!(human_duration(2_000_000), "2.000 ms");
        assert_eq!(human_duration(3_250_000_000), "3.250 s");
        assert_eq!(human_duration(-1_500), "-1.500 us");
    }
}
