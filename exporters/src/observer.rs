//! Live metrics under Neuron Observer's names, beside neuron-monitor's.
//!
//! Neuron Observer (Neuron 2.33, the per-node daemon `nobs`) names its OpenTelemetry
//! metrics `neuron.{scope}.{name}` when exported as measured ("native") and
//! `neuron.{scope}.{name}.{strategy}` when aggregated over the node, with the scopes
//! `device`, `core`, `vcpu`, `efa` and `system` and the strategies `sum`, `avg`, `max`,
//! `p50` and `p99` (AWS's page `tools/neuron-observer/metrics-fault-reference`). The
//! same series are on its Prometheus `/metrics` endpoint. This module turns one
//! neuron-monitor document into those series ([`observer_series`]), which
//! [`crate::prometheus`] renders next to neuron-monitor's families and
//! [`crate::otlp`] encodes for an OpenTelemetry collector, so a dashboard built for
//! Observer reads ours.
//!
//! # What is served, and what is not
//!
//! Only names that both appear in AWS's reference and equal a figure we already
//! report. What the stored copy of the reference let us read (its opening and naming
//! section; its metric tables were not readable here) fixes the naming scheme, that
//! `utilization` and `time_in_use` are aggregated with `sum`, `avg` and `max`, that
//! `infer_completed` is aggregated with `sum` and `avg`, node-level latency with `avg`,
//! `p50` and `p99`, per-vCPU percentages with `avg`, and one device metric,
//! `neuron.device.mem_ecc_uncorrected`.
//!
//! | Observer name | unit | kind | our figure |
//! |---|---|---|---|
//! | `neuron.core.utilization` | `%` | gauge | each core's `neuroncore_utilization` (the value of `neuroncore_utilization_ratio` × 100), per runtime and core |
//! | `neuron.core.utilization.sum` | `%` | gauge | the sum of those over every core the document reports |
//! | `neuron.core.utilization.avg` | `%` | gauge | their mean |
//! | `neuron.core.utilization.max` | `%` | gauge | their largest |
//!
//! Not served, and why:
//! - `neuron.core.time_in_use` (and its `sum`/`avg`/`max`): its meaning and unit are
//!   in the reference's table, which we could not read; "in use" in neuron-monitor
//!   means held by a runtime, not busy, so utilization × period would be a guess.
//! - `infer_completed`: the table gives its scope (device or core); our count
//!   (`execution_summary.completed`) is per runtime, not per core or device.
//! - latency (`avg`, `p50`, `p99` at node level, per-process percentiles): the metric's
//!   name and unit are in the unread table; ours are in `execution_latency_seconds`.
//! - per-vCPU percentages (`neuron.vcpu.*`): the names of the usage kinds are in the
//!   unread table; ours are in `system_vcpu_usage_ratio`.
//! - memory used, collectives: no Observer name for them could be read; ours stay under
//!   `neuron_runtime_memory_used_bytes`, `neuronprof_hbm_used_bytes` and
//!   `neuronprof_collective_*`.
//! - `neuron.device.mem_ecc_uncorrected`, `efa` and `system` metrics: the emulated devices
//!   have no hardware counters and there is no EFA to read.
//!
//! Not confirmed against the table: that `utilization` is in scope `core` (the naming
//! section lists it with the device- and core-scoped aggregations, and a NeuronCore's
//! utilization is what neuron-monitor and neuron-top report), its unit (`%`, as
//! neuron-monitor's 0–100 figure; OpenTelemetry would also allow `1`, a ratio) and the
//! attribute names of a native point (neuron-monitor's labels here). Whoever can read
//! the table should check these three first: each is one line of [`observer_series`] or
//! [`prometheus_name`].
//!
//! The aggregates are over the cores the document lists (neuron-monitor lists the cores
//! in use); Observer's own may count idle cores of the node as well.
//!
//! # Names in Prometheus
//!
//! [`prometheus_name`] follows OpenTelemetry's Prometheus compatibility rules: dots
//! become underscores, the unit is appended as a word (`%` → `percent`, `By` → `bytes`,
//! `s` → `seconds`, `1` on a gauge → `ratio`), and a monotonic sum ends in `_total`:
//! `neuron.core.utilization.avg` is `neuron_core_utilization_avg_percent`. The labels are
//! neuron-monitor's (`runtime_tag`, `pid`, `neuroncore`, `instance_id`,
//! `instance_type`).
//!
//! ```
//! use analysis::live::{fixtures, parse_document};
//! use exporters::observer::{observer_series, prometheus_name};
//!
//! let doc = parse_document(fixtures::NEURONPROF_TWO_RANKS).unwrap();
//! let series = observer_series(&doc);
//! let max = series.iter().find(|s| s.name == "neuron.core.utilization.max").unwrap();
//! assert_eq!(max.points[0].value, 91.25);
//! assert_eq!(prometheus_name(max), "neuron_core_utilization_max_percent");
//! ```

use analysis::live::MonitorDocument;

/// How a series' values behave (OpenTelemetry's point kinds we use).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeriesKind {
    /// A value at the time of the document.
    Gauge,
}

/// One value of a series, with its attributes (labels).
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Attribute names and values, in a fixed order.
    pub attributes: Vec<(&'static str, String)>,
    /// The value, in the series' unit.
    pub value: f64,
}

/// One Observer-named metric with its points.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The OpenTelemetry name, `neuron.{scope}.{name}[.{strategy}]`.
    pub name: &'static str,
    /// The UCUM unit (`%`).
    pub unit: &'static str,
    /// A one-line description.
    pub description: &'static str,
    /// Gauge or counter.
    pub kind: SeriesKind,
    /// The points; a series without points is not listed.
    pub points: Vec<Point>,
}

/// The Observer-named series of one document (those listed as served in the module
/// docs), each with at least one point.
pub fn observer_series(doc: &MonitorDocument) -> Vec<Series> {
    let mut per_core = Vec::new();
    for entry in &doc.neuron_runtime_data {
        let Some(counters) = &entry.report.neuroncore_counters else {
            continue;
        };
        for (core, c) in &counters.neuroncores_in_use {
            per_core.push(Point {
                attributes: vec![
                    ("runtime_tag", entry.neuron_runtime_tag.clone()),
                    ("pid", entry.pid.to_string()),
                    ("neuroncore", core.to_string()),
                ],
                value: c.neuroncore_utilization,
            });
        }
    }
    if per_core.is_empty() {
        return Vec::new();
    }
    let values: Vec<f64> = per_core.iter().map(|p| p.value).collect();
    let sum: f64 = values.iter().sum();
    let avg = sum / values.len() as f64;
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let node = |name, description, value| Series {
        name,
        unit: "%",
        description,
        kind: SeriesKind::Gauge,
        points: vec![Point {
            attributes: Vec::new(),
            value,
        }],
    };
    vec![
        Series {
            name: "neuron.core.utilization",
            unit: "%",
            description: "NeuronCore utilization over the period, percent.",
            kind: SeriesKind::Gauge,
            points: per_core,
        },
        node(
            "neuron.core.utilization.sum",
            "Sum of the NeuronCores' utilization over the period, percent.",
            sum,
        ),
        node(
            "neuron.core.utilization.avg",
            "Mean NeuronCore utilization over the period, percent.",
            avg,
        ),
        node(
            "neuron.core.utilization.max",
            "Highest NeuronCore utilization over the period, percent.",
            max,
        ),
    ]
}

/// The series' name in Prometheus (OpenTelemetry's compatibility rules: dots to
/// underscores, the unit as a suffix).
pub fn prometheus_name(series: &Series) -> String {
    let mut name: String = series
        .name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let unit = match series.unit {
        "%" => "percent",
        "By" => "bytes",
        "s" => "seconds",
        "1" if series.kind == SeriesKind::Gauge => "ratio",
        _ => "",
    };
    if !unit.is_empty() && !name.ends_with(unit) {
        name.push('_');
        name.push_str(unit);
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::live::{fixtures, parse_document};

    #[test]
    fn per_core_points_carry_the_documents_utilization() {
        let doc = parse_document(fixtures::NEURONPROF_TWO_RANKS).unwrap();
        let series = observer_series(&doc);
        let native = &series[0];
        assert_eq!(native.name, "neuron.core.utilization");
        let mut expected = Vec::new();
        for entry in &doc.neuron_runtime_data {
            let counters = entry.report.neuroncore_counters.as_ref().unwrap();
            for (core, c) in &counters.neuroncores_in_use {
                expected.push((core.to_string(), c.neuroncore_utilization));
            }
        }
        let got: Vec<(String, f64)> = native
            .points
            .iter()
            .map(|p| (p.attributes[2].1.clone(), p.value))
            .collect();
        assert_eq!(got, expected);
        let values: Vec<f64> = expected.iter().map(|e| e.1).collect();
        let sum: f64 = values.iter().sum();
        let find = |name: &str| series.iter().find(|s| s.name == name).unwrap().points[0].value;
        assert_eq!(find("neuron.core.utilization.sum"), sum);
        assert_eq!(
            find("neuron.core.utilization.avg"),
            sum / values.len() as f64
        );
        assert_eq!(find("neuron.core.utilization.max"), 91.25);
    }

    #[test]
    fn a_document_without_cores_has_no_series() {
        let doc = MonitorDocument::default();
        assert!(observer_series(&doc).is_empty());
    }

    #[test]
    fn prometheus_names_follow_the_opentelemetry_rules() {
        let series = |name, unit| Series {
            name,
            unit,
            description: "",
            kind: SeriesKind::Gauge,
            points: Vec::new(),
        };
        assert_eq!(
            prometheus_name(&series("neuron.core.utilization", "%")),
            "neuron_core_utilization_percent"
        );
        assert_eq!(
            prometheus_name(&series("neuron.device.memory_used", "By")),
            "neuron_device_memory_used_bytes"
        );
        assert_eq!(prometheus_name(&series("a.b", "1")), "a_b_ratio");
    }
}
