//! Times HTA-compat mode's critical path of one annotation instance, as
//! `neuronprof critical-path --hta-compat --annotation A --instance N` computes it
//! (with `--default`, the default mode's, as `neuronprof critical-path --annotation A
//! --instance N`): the load keeping only the window's events
//! (`LoadOptions::with_window`, and a second load when the window missed events), or
//! with `--whole` the whole trace (what the command did before), then the graph and
//! its longest path.
//!
//! ```text
//! cargo run --release -p analysis --example critical_path_window -- \
//!     FILE [--annotation ProfilerStep] [--instance 1] [--whole] [--default]
//! ```
//!
//! Prints one JSON line: seconds per phase, rows and timeline events kept, loads, and
//! the path's length and graph size (to check both ways agree). Peak memory: run it
//! under `/usr/bin/time -f %M`.

use std::path::PathBuf;
use std::time::Instant;

use analysis::critical_path::{build_graph, CriticalPathError, Options};
use analysis::model::WindowCorrelations;
use analysis::{load_paths, LoadOptions, Mode, TraceSet};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut file: Option<PathBuf> = None;
    let mut annotation = "ProfilerStep".to_owned();
    let mut instance = 1usize;
    let mut whole = false;
    let mut default_mode = false;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--annotation" => annotation = args.next().ok_or("--annotation needs a name")?,
            "--instance" => instance = args.next().ok_or("--instance needs N")?.parse()?,
            "--whole" => whole = true,
            "--default" => default_mode = true,
            _ => file = Some(arg.into()),
        }
    }
    let file = file.ok_or(
        "usage: critical_path_window FILE [--annotation A] [--instance N] [--whole] [--default]",
    )?;
    let mode = if default_mode {
        Mode::Default
    } else {
        Mode::HtaCompat
    };
    let load =
        |also: Vec<u64>, records: bool, whole: bool| -> Result<TraceSet, analysis::AnalysisError> {
            let mut options = LoadOptions::default()
                .with_host_ops(false)
                .with_timeline(true);
            if !whole {
                options = options
                    .with_window(&annotation, (instance, instance))
                    .with_window_events(also)
                    .with_window_records(records)
                    .with_window_mode(mode);
            }
            load_paths(&[&file], &options)
        };
    let start = Instant::now();
    let mut set = load(Vec::new(), false, whole)?;
    let mut loads = 1;
    let rank = set.ranks[0].rank;
    let options = if default_mode {
        let mut o = Options::default();
        o.annotation = annotation.clone();
        o.instances = (instance, instance);
        o
    } else {
        Options::hta(rank, &annotation, instance)
    };
    let (mut also, mut records) = (Vec::new(), false);
    for _ in 0..2 {
        match build_graph(&set, &options) {
            Err(CriticalPathError::OutsideKeptWindow { missing, .. }) if !missing.is_empty() => {
                also.extend(missing)
            }
            // Refused with nothing more to keep: the whole trace, as the command does.
            Err(CriticalPathError::OutsideKeptWindow { .. }) => whole = true,
            Err(CriticalPathError::WindowNeedsRecords { .. }) => records = true,
            _ => break,
        }
        set = load(also.clone(), records, whole)?;
        loads += 1;
    }
    let load_s = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let graph = build_graph(&set, &options)?;
    let graph_s = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let path = graph.critical_path()?;
    let path_s = start.elapsed().as_secs_f64();
    let trace = &set.ranks[0];
    let timeline = trace.timeline.as_ref().map_or(0, |t| t.events.len());
    // What is kept of the file's correlated rows: records, or the compact form's
    // pairs and log entries.
    let correlated = match trace
        .timeline
        .as_ref()
        .and_then(|t| t.window.as_ref())
        .map(|w| &w.correlations)
    {
        Some(WindowCorrelations::Records(rows)) => serde_json::json!({"records": rows.len()}),
        Some(WindowCorrelations::Compact(c)) => serde_json::json!({
            "pairs": c.pairs.len(),
            "launch_log": c.launches.ts_rel_ns.len(),
            "device_row_log": c.device_rows.ts_rel_ns.len(),
        }),
        _ => serde_json::Value::Null,
    };
    println!(
        "{}",
        serde_json::json!({
            "file": file.display().to_string(),
            "whole": whole,
            "mode": if default_mode { "default" } else { "hta_compat" },
            "loads": loads,
            "load_s": load_s,
            "graph_s": graph_s,
            "path_s": path_s,
            "events": trace.counts.events,
            "rows_kept": trace.rows.len(),
            "timeline_kept": timeline,
            "correlated": correlated,
            "nodes": path.nodes,
            "edges": path.edges,
            "length_us": path.length_us,
        })
    );
    Ok(())
}
