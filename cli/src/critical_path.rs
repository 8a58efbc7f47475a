//! `neuronprof critical-path` and `neuronprof what-if`: the `analysis` crate's critical
//! path (HTA's with `--hta-compat`, across ranks otherwise) and its re-timing with
//! scaled durations.
//!
//! Paths are taken as `analyze` takes them ([`analysis::plan_inputs`]: non-trace files
//! skipped, files grouped into ranks, the latest window of each).
//! The window is an annotation's instance on each rank (`--annotation`, default
//! `ProfilerStep#`, the first instance), as HTA's `critical_path_analysis`.

use anyhow::Context as _;
use std::fmt::Write as _;
use std::path::PathBuf;

use analysis::critical_path::cross_device::{summarize, CrossDevice};
use analysis::critical_path::what_if::{what_if, ScaleRule, WhatIf};
use analysis::critical_path::{build_graph, CriticalPath, CriticalPathError, Options};
use analysis::{HtaVersion, LoadOptions, Mode};

/// What `critical-path` and `what-if` were asked for.
#[derive(Debug, Clone, Default)]
pub struct CriticalPathRequest {
    /// Files or directories of rank traces.
    pub paths: Vec<PathBuf>,
    /// Only this rank (compat mode: default the first).
    pub rank: Option<i64>,
    /// The annotation bounding the window (`None`: `ProfilerStep#`).
    pub annotation: Option<String>,
    /// Which instance of it (from 0).
    pub instance: usize,
    /// HTA's rules (one rank).
    pub hta_compat: bool,
    /// With `hta_compat`: the HTA release.
    pub hta_version: HtaVersion,
    /// `what-if --device`: re-cost the device rows for this built-in profile (emulator
    /// traces), or re-time them for this device (a built-in device name or a device file:
    /// any other trace).
    pub device: Option<String>,
    /// `what-if --lnc`: re-cost the device rows at this LNC.
    pub lnc: Option<u32>,
}

impl CriticalPathRequest {
    fn options(&self) -> Options {
        let annotation = self
            .annotation
            .clone()
            .unwrap_or_else(|| "ProfilerStep#".into());
        let mut options = if self.hta_compat {
            Options::hta(self.rank.unwrap_or(0), &annotation, self.instance)
        } else {
            let mut o = Options::default();
            o.annotation = annotation;
            o.instances = (self.instance, self.instance);
            o
        };
        options.hta_version = self.hta_version;
        if !self.hta_compat {
            options.ranks = self.rank.map(|r| vec![r]);
        }
        options
    }
}

fn load(request: &CriticalPathRequest) -> anyhow::Result<analysis::TraceSet> {
    load_window(request, None)
}

/// Reads the traces with their host operators (the roofline's model needs their
/// arguments: `what-if --device` on a GPU or neuron trace).
fn load_with_host_ops(request: &CriticalPathRequest) -> anyhow::Result<analysis::TraceSet> {
    let plan = analysis::plan_inputs(&request.paths, analysis::inputs::Window::Latest)?;
    crate::paths::report_skipped(&plan.skipped);
    let load = LoadOptions::default()
        .with_host_ops(true)
        .with_timeline(true);
    Ok(plan.load(&load)?)
}

/// What a windowed load keeps ([`LoadOptions::with_window`]).
struct KeepWindow<'a> {
    annotation: &'a str,
    instances: (usize, usize),
    /// Events kept besides ([`LoadOptions::with_window_events`]).
    also: Vec<u64>,
    /// Every correlated row ([`LoadOptions::with_window_records`]).
    records: bool,
    /// The rules the graph follows ([`LoadOptions::with_window_mode`]).
    mode: Mode,
}

/// Reads the traces; with `window` keeping only that window's events.
fn load_window(
    request: &CriticalPathRequest,
    window: Option<KeepWindow<'_>>,
) -> anyhow::Result<analysis::TraceSet> {
    let plan = analysis::plan_inputs(&request.paths, analysis::inputs::Window::Latest)?;
    crate::paths::report_skipped(&plan.skipped);
    let mut load = LoadOptions::default()
        .with_host_ops(false)
        .with_timeline(true);
    if let Some(window) = window {
        load = load
            .with_window(window.annotation, window.instances)
            .with_window_events(window.also)
            .with_window_records(window.records)
            .with_window_mode(window.mode);
    }
    Ok(plan.load(&load)?)
}

/// The critical path needs one window of each rank: the load keeps only its events
/// (memory follows the window, not the file; in HTA-compat mode plus 10 bytes per
/// launch and device row of the file for HTA's queue count). When that load left
/// out events the graph needs (device rows that started long after their launch),
/// the files are read again keeping those too; when the compact form of the file's
/// correlations could not be proven exact (a correlation id used twice), again
/// keeping every correlated row; and if that still misses some, whole: the answer is
/// the same either way.
fn critical_path_windowed(
    request: &CriticalPathRequest,
    overlay: Option<&std::path::Path>,
) -> anyhow::Result<(CriticalPath, Vec<PathBuf>)> {
    let options = request.options();
    let mut also: Vec<u64> = Vec::new();
    let mut records = false;
    for _ in 0..3 {
        let window = KeepWindow {
            annotation: options.annotation.as_str(),
            instances: options.instances,
            also: also.clone(),
            records,
            mode: options.mode,
        };
        let set = load_window(request, Some(window))?;
        let request = rank_for_compat(request, &set);
        match build_graph(&set, &request.options()) {
            Err(CriticalPathError::OutsideKeptWindow { missing, .. }) if !missing.is_empty() => {
                eprintln!(
                    "neuronprof: {} events the window's graph needs start outside the \
                     window read; reading again",
                    missing.len()
                );
                also.extend(missing);
            }
            Err(CriticalPathError::WindowNeedsRecords { reason, .. }) if !records => {
                eprintln!(
                    "neuronprof: the window's compact record of the file's correlations is \
                     not exact here ({reason}); reading again keeping every correlated row"
                );
                records = true;
            }
            Err(
                CriticalPathError::OutsideKeptWindow { .. }
                | CriticalPathError::WindowNeedsRecords { .. },
            ) => break,
            graph => return finish(&set, &graph?, overlay),
        }
    }
    path_and_overlay(&load(request)?, request, overlay)
}

fn path_and_overlay(
    set: &analysis::TraceSet,
    request: &CriticalPathRequest,
    overlay: Option<&std::path::Path>,
) -> anyhow::Result<(CriticalPath, Vec<PathBuf>)> {
    let request = rank_for_compat(request, set);
    let graph = build_graph(set, &request.options())?;
    finish(set, &graph, overlay)
}

fn finish(
    set: &analysis::TraceSet,
    graph: &analysis::critical_path::CpGraph<'_>,
    overlay: Option<&std::path::Path>,
) -> anyhow::Result<(CriticalPath, Vec<PathBuf>)> {
    let path = graph.critical_path()?;
    let files = match overlay {
        Some(dir) => {
            let edges = graph
                .graph
                .longest_path(|e| e.weight)
                .map_err(|c| anyhow::anyhow!(CriticalPathError::Cycle(c)))?;
            analysis::critical_path::predicted::write_overlay(set, graph, &edges, dir)?
        }
        None => Vec::new(),
    };
    Ok((path, files))
}

fn rank_for_compat(request: &CriticalPathRequest, set: &analysis::TraceSet) -> CriticalPathRequest {
    let mut request = request.clone();
    if request.hta_compat && request.rank.is_none() {
        request.rank = set.ranks.first().map(|r| r.rank);
    }
    request
}

/// Reads the traces and finds the critical path.
pub fn run_critical_path(request: &CriticalPathRequest) -> anyhow::Result<CriticalPath> {
    Ok(run_critical_path_overlay(request, None)?.0)
}

/// [`run_critical_path`], also writing HTA's overlay (the traces with the path's events
/// marked `args.critical` and its edges as flows) into `overlay` when given; returns the
/// files written.
pub fn run_critical_path_overlay(
    request: &CriticalPathRequest,
    overlay: Option<&std::path::Path>,
) -> anyhow::Result<(CriticalPath, Vec<PathBuf>)> {
    critical_path_windowed(request, overlay)
}

/// Reads the traces, re-times the graph with `scales` (`--scale` texts).
pub fn run_what_if(request: &CriticalPathRequest, scales: &[String]) -> anyhow::Result<WhatIf> {
    Ok(run_what_if_writing(request, scales, None)?.0)
}

/// [`run_what_if`], also writing the predicted rank traces into `out` when given;
/// returns the files written.
pub fn run_what_if_writing(
    request: &CriticalPathRequest,
    scales: &[String],
    out: Option<&std::path::Path>,
) -> anyhow::Result<(WhatIf, Vec<PathBuf>)> {
    let mut rules: Vec<ScaleRule> = scales
        .iter()
        .map(|s| s.parse().map_err(anyhow::Error::msg))
        .collect::<anyhow::Result<_>>()?;
    let recosting = request.device.is_some() || request.lnc.is_some();
    if rules.is_empty() && !recosting {
        anyhow::bail!("what-if needs at least one --scale (kernel:REGEX=F, op:REGEX=F, rank:R=F, host=F, collective=F) or --device/--lnc");
    }
    // `--device` re-costs emulator traces for one of its profiles and re-times any other
    // trace from the per-op model, which reads the operators' arguments.
    let set = if request.device.is_some() {
        load_with_host_ops(request)?
    } else {
        load(request)?
    };
    let mut labels = scales.to_vec();
    let cross_device = match request.device.as_deref() {
        Some(device) if crate::recost::is_cross_device(&set, device) => {
            let (retiming, target) = crate::recost::cross_device(&set, device, request.lnc)?;
            labels.push(crate::recost::cross_device_label(&retiming, &target));
            rules.push(ScaleRule::Rows(std::sync::Arc::new(
                retiming.rows.iter().map(|(&k, r)| (k, r.factor)).collect(),
            )));
            Some((retiming, target.name))
        }
        _ => None,
    };
    if recosting && cross_device.is_none() {
        let recost = crate::recost::recost(&set, request.device.as_deref(), request.lnc)?;
        if recost.factors.is_empty() {
            anyhow::bail!(
                "--device/--lnc: no kernel row has `<engine> busy (ns)` args ({} without); \
                 record the run with --detail instructions",
                recost.without_busy
            );
        }
        if recost.without_busy > 0 {
            eprintln!(
                "neuronprof: {} kernel rows without `<engine> busy (ns)` args keep their \
                 recorded time",
                recost.without_busy
            );
        }
        if recost.profiles.iter().any(|(_, from, to)| {
            from.rsplit_once("LNC=").map(|f| f.1) != to.rsplit_once("LNC=").map(|t| t.1)
        }) {
            eprintln!(
                "neuronprof: re-costing for another LNC is not checked against a run: on the \
                 demo GPT it predicted a step 20 % longer than a run at that LNC (docs/WHAT-IF.md)"
            );
        }
        let mut moves: Vec<String> = recost
            .profiles
            .iter()
            .map(|(_, from, to)| format!("{from} -> {to}"))
            .collect();
        moves.dedup();
        labels.push(format!("device: {}", moves.join(", ")));
        rules.push(ScaleRule::Rows(std::sync::Arc::new(recost.factors)));
    }
    let request = rank_for_compat(request, &set);
    let graph = build_graph(&set, &request.options())?;
    let mut answer = what_if(&graph, &rules, &labels)?;
    if let Some((retiming, target)) = &cross_device {
        answer.cross_device = Some(summarize(&graph, &answer.node_times, retiming, target));
    }
    let files = match out {
        Some(dir) => {
            analysis::critical_path::predicted::write_predicted(&set, &graph, &answer, dir)?
        }
        None => Vec::new(),
    };
    Ok((answer, files))
}

/// The critical path as text: windows, the summary by class, where the time goes.
pub fn render_critical_path(path: &CriticalPath) -> String {
    let mut out = String::new();
    let mode = match path.mode {
        Mode::HtaCompat => "HTA's rules (compat)",
        Mode::Default => "across ranks",
    };
    let _ = writeln!(
        out,
        "critical path ({mode}) of {:?}: {:.1} us, {} nodes, {} edges",
        path.annotation, path.length_us, path.nodes, path.edges
    );
    for w in &path.windows {
        let _ = writeln!(
            out,
            "  rank {}: window {:.1} us long, {} events",
            w.rank,
            w.end_us - w.start_us,
            w.clipped_events
        );
    }
    let _ = writeln!(out, "\nbound by                       time (us)      share");
    for s in &path.summary {
        let class = if s.bound_by.is_empty() {
            "(dependencies)"
        } else {
            s.bound_by
        };
        let _ = writeln!(
            out,
            "  {class:<28} {:>10.1} {:>9.2}%",
            s.duration_us, s.percent
        );
    }
    if path.ranks_on_path.len() > 1 {
        let parts: Vec<String> = path
            .ranks_on_path
            .iter()
            .map(|(r, us)| format!("rank {r} {us:.1} us"))
            .collect();
        let _ = writeln!(out, "\nthrough ranks: {}", parts.join(", "));
    }
    // Where the time goes: path time per attributed event name.
    let mut by_name: Vec<(String, &'static str, f64, usize)> = Vec::new();
    for e in &path.path {
        let Some(name) = &e.name else { continue };
        match by_name
            .iter_mut()
            .find(|(n, c, _, _)| n == name && *c == e.bound_by)
        {
            Some(slot) => {
                slot.2 += e.duration_us;
                slot.3 += 1;
            }
            None => by_name.push((name.clone(), e.bound_by, e.duration_us, 1)),
        }
    }
    by_name.sort_by(|a, b| b.2.total_cmp(&a.2));
    let _ = writeln!(
        out,
        "\ntop events on the path            time (us)  edges  bound by"
    );
    for (name, class, us, n) in by_name.iter().take(12) {
        let short: String = name.chars().take(32).collect();
        let _ = writeln!(out, "  {short:<32} {us:>9.1} {n:>6}  {class}");
    }
    let s = &path.skipped;
    let skipped = [
        (s.event_syncs, "event syncs (no cudaEventRecord edges)"),
        (
            s.syncs_without_host_call,
            "syncs whose host call is outside the window",
        ),
        (
            s.kernels_without_edge,
            "device rows with no launch or stream edge",
        ),
        (s.negative_edges, "negative-weight edges counted as 0"),
        (
            s.unmatched_collectives,
            "collectives not seen on every rank",
        ),
        (
            s.rows_without_launch,
            "device rows with no launch (not in the graph)",
        ),
    ];
    let notes: Vec<String> = skipped
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
    if !notes.is_empty() {
        let _ = writeln!(out, "\nnot placed: {}", notes.join("; "));
    }
    out
}

/// A what-if as text: per rank, recorded and predicted step, then the new path's summary.
pub fn render_what_if(answer: &WhatIf) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "what-if: {}", answer.scales.join(", "));
    let _ = writeln!(out, "  rank      step (us)   predicted (us)   change");
    for r in &answer.ranks {
        let _ = writeln!(
            out,
            "  {:<6} {:>12.1} {:>16.1} {:>+8.1}%",
            r.rank, r.step_us, r.predicted_step_us, r.change_percent
        );
    }
    let _ = writeln!(
        out,
        "step (slowest rank): {:.1} us -> {:.1} us predicted\n",
        answer.step_us, answer.predicted_step_us
    );
    if let Some(cross) = &answer.cross_device {
        out.push_str(&render_cross_device(cross));
    }
    out.push_str(&render_critical_path(&answer.critical_path));
    out
}

/// The device time of the window by op group, recorded and predicted on the target.
fn render_cross_device(cross: &CrossDevice) -> String {
    let mut out = String::new();
    let mut sources: Vec<String> = cross.ranks.iter().map(|r| r.source.clone()).collect();
    sources.dedup();
    let _ = writeln!(
        out,
        "device time of the window: recorded on {}, predicted on {}",
        sources.join(", "),
        cross.target
    );
    let _ = writeln!(
        out,
        "  {:<14} {:>14} {:>15} {:>8}",
        "op group", "recorded (us)", "predicted (us)", "change"
    );
    let change = |old: f64, new: f64| {
        if old > 0.0 {
            format!("{:+.1}%", (new - old) / old * 100.0)
        } else {
            "-".to_owned()
        }
    };
    for g in &cross.groups {
        let _ = writeln!(
            out,
            "  {:<14} {:>14.1} {:>15.1} {:>8}",
            g.group.label(),
            g.recorded_us,
            g.predicted_us,
            change(g.recorded_us, g.predicted_us)
        );
    }
    let _ = writeln!(
        out,
        "  {:<14} {:>14.1} {:>15.1} {:>8}",
        "device busy",
        cross.device_busy_us,
        cross.predicted_device_busy_us,
        change(cross.device_busy_us, cross.predicted_device_busy_us)
    );
    if cross.kept_rows > 0 {
        let _ = writeln!(
            out,
            "  ({} device row{} of copies, memsets or collectives kept as recorded)",
            cross.kept_rows,
            if cross.kept_rows == 1 { "" } else { "s" }
        );
    }
    out.push('\n');
    out
}

/// The end of `neuronprof demo`: the critical path of the second recorded step across
/// ranks, and what-if's answer for the slow rank at full speed (`--scale
/// rank:R=1/FACTOR`).
pub fn demo_epilogue(dir: &std::path::Path, rank: usize, factor: f64) -> anyhow::Result<String> {
    // The run's rank traces, not the directory's listing: it also holds the demo's own
    // Perfetto file, which reading the directory would report as skipped.
    let traces = analysis::inputs::find_traces(&[dir])
        .with_context(|| format!("reading {}", dir.display()))?
        .files;
    let request = CriticalPathRequest {
        paths: traces,
        instance: 1,
        ..Default::default()
    };
    let scale = format!("rank:{rank}={}", 1.0 / factor);
    let answer = run_what_if(&request, std::slice::from_ref(&scale))?;
    let path = run_critical_path(&request)?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\ncritical path of the second recorded step (neuronprof critical-path --instance 1):"
    );
    let shares: Vec<String> = path
        .summary
        .iter()
        .filter(|s| !s.bound_by.is_empty() && s.percent >= 0.05)
        .map(|s| format!("{} {:.1}%", s.bound_by, s.percent))
        .collect();
    let _ = writeln!(
        out,
        "  {:.2} ms: {}",
        path.length_us / 1000.0,
        shares.join(", ")
    );
    if path.ranks_on_path.len() > 1 {
        let parts: Vec<String> = path
            .ranks_on_path
            .iter()
            .map(|(r, us)| format!("rank {r} {:.2} ms", us / 1000.0))
            .collect();
        let _ = writeln!(out, "  through {}", parts.join(", "));
    }
    let _ = writeln!(
        out,
        "what-if (neuronprof what-if --instance 1 --scale {scale}): at 1x speed, rank {rank} \
         would cut the step from {:.2} to {:.2} ms",
        answer.step_us / 1000.0,
        answer.predicted_step_us / 1000.0
    );
    Ok(out)
}
