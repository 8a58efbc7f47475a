//! Live neuron-monitor documents as Prometheus metrics (text exposition format 0.0.4).
//!
//! Metric names follow neuron-monitor's Prometheus companion where it has one
//! (`shared/reference/neuron-monitor.md`: the names its Grafana dashboard uses), so an
//! existing dashboard keeps working; ours are prefixed `neuronprof_`. Every runtime
//! metric carries `runtime_tag` (one per rank: `<pid>/rank<N>`) and `pid`, plus
//! `instance_id` and `instance_type` from `instance_info`; per-core metrics add
//! `neuroncore`.
//!
//! | metric | type | from |
//! |---|---|---|
//! | `neuroncore_utilization_ratio{neuroncore}` | gauge | `neuroncore_utilization` / 100 |
//! | `execution_latency_seconds{latency_type,percentile}` | gauge | `latency_stats` (`total`, `device`; `p0`…`p100`), absent when `null` |
//! | `execution_status_total{status_type}` | counter | `execution_summary`, summed over the documents seen |
//! | `execution_errors_total{error_type}` | counter | `error_summary`, summed likewise |
//! | `neuron_runtime_memory_used_bytes{memory_location}` | gauge | `host`, `neuron_device` |
//! | `neuron_runtime_vcpu_usage_ratio{usage_type}` | gauge | `vcpu_usage` / 100 |
//! | `system_vcpu_usage_ratio{usage_type}` | gauge | `system_data.vcpu_usage.average_usage` / 100 |
//! | `system_memory_used_bytes`, `system_memory_total_bytes`, `system_swap_used_bytes`, `system_swap_total_bytes` | gauge | `system_data.memory_info` |
//! | `instance_info{instance_name,instance_id,instance_type,…}` | gauge (1) | `instance_info` |
//! | `neuron_hardware_info{neuron_device_type,neuroncore_version,…}` | gauge (1) | `neuron_hardware_info` |
//! | `neuronprof_neuroncore_flops_per_second{neuroncore}` | gauge | `flops` |
//! | `neuronprof_neuroncore_memory_used_bytes{neuroncore,memory_category}` | gauge | `usage_breakdown.neuroncore_memory_usage` |
//! | `neuronprof_runtime_up` | gauge | 1, 0 when the entry has an `error` |
//! | `neuronprof_engine_utilization_ratio{neuroncore,engine}` | gauge | extension `engine_utilization` / 100 |
//! | `neuronprof_hbm_used_bytes`, `neuronprof_hbm_peak_bytes`, `neuronprof_hbm_capacity_bytes` | gauge | extension `hbm` |
//! | `neuronprof_collectives_in_flight` | gauge | extension `collectives.in_flight` (count) |
//! | `neuronprof_collective_oldest_in_flight_seconds` | gauge | the oldest in-flight `age_s` (0 when none) |
//! | `neuronprof_collectives_completed_total` | counter | extension `collectives.completed` |
//! | `neuronprof_collective_latency_seconds{percentile}` | gauge | extension `collectives.latency_s` (`p50`, `p90`, `p99`, `p100`) |
//! | `neuronprof_dropped_records_total` | counter | extension `dropped_records` |
//! | `neuronprof_step` | gauge | extension `step` |
//! | `neuron_core_utilization_percent{neuroncore}`, `neuron_core_utilization_{sum,avg,max}_percent` | gauge | Neuron Observer's names for `neuroncore_utilization` (percent) and its sum, mean and maximum over the cores ([`crate::observer`]) |
//!
//! Counters the documents carry per period (`execution_summary`, `error_summary`)
//! become running totals in a [`PrometheusState`] that sees every document, as
//! Prometheus counters must only grow.
//!
//! ```
//! use analysis::live::{parse_document, fixtures};
//! use exporters::prometheus::PrometheusState;
//!
//! let doc = parse_document(fixtures::NEURONPROF_TWO_RANKS).unwrap();
//! let mut state = PrometheusState::default();
//! state.observe(&doc);
//! let mut text = Vec::new();
//! state.render(&doc, &mut text).unwrap();
//! let text = String::from_utf8(text).unwrap();
//! assert!(text.contains("# TYPE neuroncore_utilization_ratio gauge"));
//! assert!(text.contains("runtime_tag=\"9001/rank1\""));
//! ```

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io;

use analysis::live::{MonitorDocument, RuntimeEntry};

/// Running totals for the counters, fed every document in order.
#[derive(Debug, Clone, Default)]
pub struct PrometheusState {
    /// `(runtime_tag, pid, family, label value) -> total`.
    totals: BTreeMap<(String, u32, &'static str, &'static str), f64>,
}

impl PrometheusState {
    /// Adds a document's per-period counts to the running totals.
    pub fn observe(&mut self, doc: &MonitorDocument) {
        for entry in &doc.neuron_runtime_data {
            let Some(stats) = &entry.report.execution_stats else {
                continue;
            };
            let e = &stats.execution_summary;
            let s = &stats.error_summary;
            let counts = [
                ("execution_status_total", "completed", e.completed),
                (
                    "execution_status_total",
                    "completed_with_err",
                    e.completed_with_err,
                ),
                (
                    "execution_status_total",
                    "completed_with_num_err",
                    e.completed_with_num_err,
                ),
                ("execution_status_total", "timed_out", e.timed_out),
                (
                    "execution_status_total",
                    "incorrect_input",
                    e.incorrect_input,
                ),
                (
                    "execution_status_total",
                    "failed_to_queue",
                    e.failed_to_queue,
                ),
                ("execution_errors_total", "generic", s.generic),
                ("execution_errors_total", "numerical", s.numerical),
                ("execution_errors_total", "transient", s.transient),
                ("execution_errors_total", "model", s.model),
                ("execution_errors_total", "runtime", s.runtime),
                ("execution_errors_total", "hardware", s.hardware),
            ];
            for (family, label, count) in counts {
                *self
                    .totals
                    .entry((entry.neuron_runtime_tag.clone(), entry.pid, family, label))
                    .or_default() += count as f64;
            }
        }
    }

    /// Writes `doc` (the latest document) as exposition text, with the running totals.
    pub fn render(&self, doc: &MonitorDocument, out: &mut dyn io::Write) -> io::Result<()> {
        let mut families = Families::default();
        self.collect(doc, &mut families);
        let mut text = families.text();
        observer_families(doc, &mut text);
        out.write_all(text.as_bytes())
    }

    fn collect(&self, doc: &MonitorDocument, f: &mut Families) {
        let instance = doc.instance_info.as_ref();
        let instance_labels = [
            (
                "instance_id",
                instance.map_or(String::new(), |i| i.instance_id.clone()),
            ),
            (
                "instance_type",
                instance.map_or(String::new(), |i| i.instance_type.clone()),
            ),
        ];
        for entry in &doc.neuron_runtime_data {
            let mut base = vec![
                ("runtime_tag", entry.neuron_runtime_tag.clone()),
                ("pid", entry.pid.to_string()),
            ];
            base.extend(instance_labels.iter().cloned());
            runtime_metrics(entry, &base, f);
        }
        for ((tag, pid, family, label), total) in &self.totals {
            let key = if *family == "execution_status_total" {
                "status_type"
            } else {
                "error_type"
            };
            let mut labels = vec![("runtime_tag", tag.clone()), ("pid", pid.to_string())];
            labels.extend(instance_labels.iter().cloned());
            labels.push((key, (*label).to_owned()));
            f.add(family, &labels, *total);
        }
        if let Some(system) = &doc.system_data {
            if let Some(vcpu) = &system.vcpu_usage {
                let a = &vcpu.average_usage;
                for (usage, value) in [
                    ("user", a.user),
                    ("nice", a.nice),
                    ("system", a.system),
                    ("idle", a.idle),
                    ("io_wait", a.io_wait),
                    ("irq", a.irq),
                    ("soft_irq", a.soft_irq),
                ] {
                    let mut labels = instance_labels.to_vec();
                    labels.push(("usage_type", usage.to_owned()));
                    f.add("system_vcpu_usage_ratio", &labels, value / 100.0);
                }
            }
            if let Some(mem) = &system.memory_info {
                for (name, value) in [
                    ("system_memory_used_bytes", mem.memory_used_bytes),
                    ("system_memory_total_bytes", mem.memory_total_bytes),
                    ("system_swap_used_bytes", mem.swap_used_bytes),
                    ("system_swap_total_bytes", mem.swap_total_bytes),
                ] {
                    f.add(name, &instance_labels, value as f64);
                }
            }
        }
        if let Some(i) = instance {
            f.add(
                "instance_info",
                &[
                    ("instance_name", i.instance_name.clone()),
                    ("instance_id", i.instance_id.clone()),
                    ("instance_type", i.instance_type.clone()),
                    ("availability_zone", i.instance_availability_zone.clone()),
                    ("region", i.instance_region.clone()),
                ],
                1.0,
            );
        }
        if let Some(h) = &doc.neuron_hardware_info {
            let mut labels = instance_labels.to_vec();
            labels.extend([
                ("neuron_device_type", h.neuron_device_type.clone()),
                ("neuron_device_version", h.neuron_device_version.clone()),
                ("neuroncore_version", h.neuroncore_version.clone()),
                ("neuron_device_count", h.neuron_device_count.to_string()),
                (
                    "neuroncore_per_device_count",
                    h.neuroncore_per_device_count.to_string(),
                ),
                (
                    "logical_neuroncore_config",
                    h.logical_neuroncore_config
                        .map_or(String::new(), |c| c.to_string()),
                ),
            ]);
            f.add("neuron_hardware_info", &labels, 1.0);
        }
    }
}

type Labels = [(&'static str, String)];

fn with(base: &Labels, more: &[(&'static str, String)]) -> Vec<(&'static str, String)> {
    base.iter().cloned().chain(more.iter().cloned()).collect()
}

fn runtime_metrics(entry: &RuntimeEntry, base: &Labels, f: &mut Families) {
    let report = &entry.report;
    f.add(
        "neuronprof_runtime_up",
        base,
        if entry.error.is_empty() { 1.0 } else { 0.0 },
    );
    if let Some(counters) = &report.neuroncore_counters {
        for (core, c) in &counters.neuroncores_in_use {
            let labels = with(base, &[("neuroncore", core.to_string())]);
            f.add(
                "neuroncore_utilization_ratio",
                &labels,
                c.neuroncore_utilization / 100.0,
            );
            if let Some(flops) = c.flops {
                f.add("neuronprof_neuroncore_flops_per_second", &labels, flops);
            }
        }
    }
    if let Some(stats) = &report.execution_stats {
        for (kind, percentiles) in [
            ("total", &stats.latency_stats.total_latency),
            ("device", &stats.latency_stats.device_latency),
        ] {
            let Some(percentiles) = percentiles else {
                continue;
            };
            for (name, value) in percentiles.entries() {
                if let Some(value) = value {
                    let labels = with(
                        base,
                        &[
                            ("latency_type", kind.to_owned()),
                            ("percentile", name.to_owned()),
                        ],
                    );
                    f.add("execution_latency_seconds", &labels, value);
                }
            }
        }
    }
    if let Some(memory) = &report.memory_used {
        let used = &memory.neuron_runtime_used_bytes;
        for (location, bytes) in [("host", used.host), ("neuron_device", used.neuron_device)] {
            let labels = with(base, &[("memory_location", location.to_owned())]);
            f.add("neuron_runtime_memory_used_bytes", &labels, bytes as f64);
        }
        for (core, mem) in &used.usage_breakdown.neuroncore_memory_usage {
            // The JSON keys, as neuron-monitor writes them.
            for (category, bytes) in [
                ("constants", mem.constants),
                ("model_code", mem.model_code),
                ("model_shared_scratchpad", mem.model_shared_scratchpad),
                ("runtime_memory", mem.runtime_memory),
                ("tensors", mem.tensors),
            ] {
                let labels = with(
                    base,
                    &[
                        ("neuroncore", core.to_string()),
                        ("memory_category", category.to_owned()),
                    ],
                );
                f.add(
                    "neuronprof_neuroncore_memory_used_bytes",
                    &labels,
                    bytes as f64,
                );
            }
        }
    }
    if let Some(vcpu) = &report.neuron_runtime_vcpu_usage {
        for (usage, value) in [
            ("user", vcpu.vcpu_usage.user),
            ("system", vcpu.vcpu_usage.system),
        ] {
            let labels = with(base, &[("usage_type", usage.to_owned())]);
            f.add("neuron_runtime_vcpu_usage_ratio", &labels, value / 100.0);
        }
    }
    let Some(ext) = &report.neuronprof else {
        return;
    };
    for (core, engines) in &ext.engine_utilization {
        for (engine, percent) in engines {
            let labels = with(
                base,
                &[("neuroncore", core.to_string()), ("engine", engine.clone())],
            );
            f.add(
                "neuronprof_engine_utilization_ratio",
                &labels,
                percent / 100.0,
            );
        }
    }
    if let Some(hbm) = &ext.hbm {
        f.add("neuronprof_hbm_used_bytes", base, hbm.used_bytes as f64);
        f.add("neuronprof_hbm_peak_bytes", base, hbm.peak_bytes as f64);
        f.add(
            "neuronprof_hbm_capacity_bytes",
            base,
            hbm.capacity_bytes as f64,
        );
    }
    if let Some(c) = &ext.collectives {
        f.add(
            "neuronprof_collectives_in_flight",
            base,
            c.in_flight.len() as f64,
        );
        let oldest = c.in_flight.iter().map(|i| i.age_s).fold(0.0, f64::max);
        f.add(
            "neuronprof_collective_oldest_in_flight_seconds",
            base,
            oldest,
        );
        f.add(
            "neuronprof_collectives_completed_total",
            base,
            c.completed as f64,
        );
        let l = &c.latency_s;
        for (name, value) in [
            ("p50", l.p50),
            ("p90", l.p90),
            ("p99", l.p99),
            ("p100", l.p100),
        ] {
            if let Some(value) = value {
                let labels = with(base, &[("percentile", name.to_owned())]);
                f.add("neuronprof_collective_latency_seconds", &labels, value);
            }
        }
    }
    f.add(
        "neuronprof_dropped_records_total",
        base,
        ext.dropped_records as f64,
    );
    if let Some(step) = ext.step {
        f.add("neuronprof_step", base, step as f64);
    }
}

/// The Observer-named families (`crate::observer`), with the instance labels the
/// other families carry.
fn observer_families(doc: &MonitorDocument, text: &mut String) {
    let instance = doc.instance_info.as_ref();
    let instance_labels = [
        (
            "instance_id",
            instance.map_or("", |i| i.instance_id.as_str()),
        ),
        (
            "instance_type",
            instance.map_or("", |i| i.instance_type.as_str()),
        ),
    ];
    for series in crate::observer::observer_series(doc) {
        let name = crate::observer::prometheus_name(&series);
        let kind = match series.kind {
            crate::observer::SeriesKind::Gauge => "gauge",
        };
        let _ = writeln!(text, "# HELP {name} {}", series.description);
        let _ = writeln!(text, "# TYPE {name} {kind}");
        for point in &series.points {
            text.push_str(&name);
            text.push('{');
            let labels = point
                .attributes
                .iter()
                .map(|(k, v)| (*k, v.as_str()))
                .chain(instance_labels);
            for (i, (key, value)) in labels.enumerate() {
                if i > 0 {
                    text.push(',');
                }
                let _ = write!(text, "{key}=\"{}\"", escape_label(value));
            }
            let _ = writeln!(text, "}} {}", format_value(point.value));
        }
    }
}

/// Metric families in the order first added, each with its samples.
#[derive(Debug, Default)]
struct Families {
    order: Vec<&'static str>,
    samples: BTreeMap<&'static str, Vec<String>>,
}

impl Families {
    fn add(&mut self, name: &'static str, labels: &[(&'static str, String)], value: f64) {
        let samples = self.samples.entry(name).or_insert_with(|| {
            self.order.push(name);
            Vec::new()
        });
        let mut line = String::from(name);
        if !labels.is_empty() {
            line.push('{');
            for (i, (key, value)) in labels.iter().enumerate() {
                if i > 0 {
                    line.push(',');
                }
                let _ = write!(line, "{key}=\"{}\"", escape_label(value));
            }
            line.push('}');
        }
        let _ = write!(line, " {}", format_value(value));
        samples.push(line);
    }

    fn text(&self) -> String {
        let mut text = String::new();
        for name in &self.order {
            let (kind, help) = describe(name);
            let _ = writeln!(text, "# HELP {name} {help}");
            let _ = writeln!(text, "# TYPE {name} {kind}");
            for line in &self.samples[name] {
                text.push_str(line);
                text.push('\n');
            }
        }
        text
    }
}

/// Escapes a label value: backslash, double quote and line feed (exposition format).
fn escape_label(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

fn format_value(value: f64) -> String {
    if value.is_nan() {
        "NaN".to_owned()
    } else if value.is_infinite() {
        if value > 0.0 { "+Inf" } else { "-Inf" }.to_owned()
    } else {
        format!("{value}")
    }
}

fn describe(name: &str) -> (&'static str, &'static str) {
    match name {
        "neuroncore_utilization_ratio" => {
            ("gauge", "NeuronCore utilization over the period (0-1).")
        }
        "execution_latency_seconds" => (
            "gauge",
            "Execution latency percentiles over the period, seconds.",
        ),
        "execution_status_total" => ("counter", "Executions by outcome."),
        "execution_errors_total" => ("counter", "Execution errors by class."),
        "neuron_runtime_memory_used_bytes" => ("gauge", "Memory used by the runtime, bytes."),
        "neuron_runtime_vcpu_usage_ratio" => (
            "gauge",
            "CPU used by the runtime over the period (0-1 of all vCPUs).",
        ),
        "system_vcpu_usage_ratio" => ("gauge", "Machine CPU use over the period by kind (0-1)."),
        "system_memory_used_bytes" => ("gauge", "Machine memory in use, bytes."),
        "system_memory_total_bytes" => ("gauge", "Machine memory, bytes."),
        "system_swap_used_bytes" => ("gauge", "Swap in use, bytes."),
        "system_swap_total_bytes" => ("gauge", "Swap, bytes."),
        "instance_info" => ("gauge", "The instance (always 1)."),
        "neuron_hardware_info" => ("gauge", "The Neuron hardware (always 1)."),
        "neuronprof_neuroncore_flops_per_second" => (
            "gauge",
            "Floating-point operations per second of device time over the period.",
        ),
        "neuronprof_neuroncore_memory_used_bytes" => {
            ("gauge", "Device memory per NeuronCore by category, bytes.")
        }
        "neuronprof_runtime_up" => (
            "gauge",
            "1 when the runtime answered, 0 when its entry has an error.",
        ),
        "neuronprof_engine_utilization_ratio" => {
            ("gauge", "Engine busy share over the period (0-1).")
        }
        "neuronprof_hbm_used_bytes" => ("gauge", "HBM allocated, bytes."),
        "neuronprof_hbm_peak_bytes" => ("gauge", "Most HBM allocated at once, bytes."),
        "neuronprof_hbm_capacity_bytes" => ("gauge", "HBM capacity, bytes."),
        "neuronprof_collectives_in_flight" => {
            ("gauge", "Collectives called and not yet met by every rank.")
        }
        "neuronprof_collective_oldest_in_flight_seconds" => {
            ("gauge", "Age of the oldest collective in flight, seconds.")
        }
        "neuronprof_collectives_completed_total" => {
            ("counter", "Collectives completed since start.")
        }
        "neuronprof_collective_latency_seconds" => (
            "gauge",
            "Collective latency percentiles since start, seconds.",
        ),
        "neuronprof_dropped_records_total" => (
            "counter",
            "Profiler records dropped on full rings since start.",
        ),
        "neuronprof_step" => ("gauge", "Last completed training step."),
        _ => ("gauge", "neuronprof metric."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::live::{fixtures, parse_document};

    fn render(docs: &[&MonitorDocument]) -> String {
        let mut state = PrometheusState::default();
        for doc in docs {
            state.observe(doc);
        }
        let mut out = Vec::new();
        state.render(docs.last().unwrap(), &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// `name{labels} value` lines parsed back: (name, labels, value).
    fn samples(text: &str) -> Vec<(String, BTreeMap<String, String>, f64)> {
        text.lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .map(|line| {
                let (head, value) = line.rsplit_once(' ').unwrap();
                let (name, labels) = match head.split_once('{') {
                    Some((name, rest)) => (name, rest.strip_suffix('}').unwrap()),
                    None => (head, ""),
                };
                let labels = labels
                    .split("\",")
                    .filter(|p| !p.is_empty())
                    .map(|p| {
                        let (k, v) = p.split_once("=\"").unwrap();
                        (k.to_owned(), v.trim_end_matches('"').to_owned())
                    })
                    .collect();
                (name.to_owned(), labels, value.parse().unwrap())
            })
            .collect()
    }

    #[test]
    fn every_family_has_help_and_type_once_before_its_samples() {
        let doc = parse_document(fixtures::NEURONPROF_TWO_RANKS).unwrap();
        let text = render(&[&doc]);
        let mut seen = std::collections::HashSet::new();
        let mut current = String::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let name = rest.split(' ').next().unwrap().to_owned();
                assert!(seen.insert(name.clone()), "{name} twice");
                current = name;
            } else if !line.starts_with('#') {
                assert!(line.starts_with(&current), "{line} outside {current}");
            }
        }
        for name in [
            "neuroncore_utilization_ratio",
            "execution_latency_seconds",
            "neuron_runtime_memory_used_bytes",
            "neuron_runtime_vcpu_usage_ratio",
            "execution_status_total",
            "neuronprof_engine_utilization_ratio",
            "neuronprof_hbm_used_bytes",
            "neuronprof_collectives_in_flight",
            "neuronprof_collective_latency_seconds",
            "neuronprof_dropped_records_total",
        ] {
            assert!(seen.contains(name), "{name} missing:\n{text}");
        }
    }

    #[test]
    fn values_are_ratios_and_labels_name_rank_and_core() {
        let doc = parse_document(fixtures::NEURONPROF_TWO_RANKS).unwrap();
        let text = render(&[&doc]);
        let all = samples(&text);
        let entry = &doc.neuron_runtime_data[1];
        let (core, counters) = entry
            .report
            .neuroncore_counters
            .as_ref()
            .unwrap()
            .neuroncores_in_use
            .iter()
            .next()
            .unwrap();
        let util = all
            .iter()
            .find(|(n, l, _)| {
                n == "neuroncore_utilization_ratio"
                    && l["runtime_tag"] == entry.neuron_runtime_tag
                    && l["neuroncore"] == core.to_string()
            })
            .unwrap();
        assert!((util.2 - counters.neuroncore_utilization / 100.0).abs() < 1e-12);
        let dropped = all
            .iter()
            .find(|(n, l, _)| {
                n == "neuronprof_dropped_records_total"
                    && l["runtime_tag"] == entry.neuron_runtime_tag
            })
            .unwrap();
        assert_eq!(dropped.2, 17.0);
        let categories: std::collections::BTreeSet<&str> = all
            .iter()
            .filter(|(n, _, _)| n == "neuronprof_neuroncore_memory_used_bytes")
            .map(|(_, l, _)| l["memory_category"].as_str())
            .collect();
        assert_eq!(
            categories.into_iter().collect::<Vec<_>>(),
            [
                "constants",
                "model_code",
                "model_shared_scratchpad",
                "runtime_memory",
                "tensors"
            ]
        );
    }

    #[test]
    fn counters_accumulate_over_documents() {
        let doc = parse_document(fixtures::NEURONPROF_TWO_RANKS).unwrap();
        let entry = &doc.neuron_runtime_data[0];
        let completed = entry
            .report
            .execution_stats
            .as_ref()
            .unwrap()
            .execution_summary
            .completed as f64;
        let text = render(&[&doc, &doc, &doc]);
        let total = samples(&text)
            .into_iter()
            .find(|(n, l, _)| {
                n == "execution_status_total"
                    && l["runtime_tag"] == entry.neuron_runtime_tag
                    && l["status_type"] == "completed"
            })
            .unwrap();
        assert_eq!(total.2, 3.0 * completed);
    }

    #[test]
    fn aws_documents_render_without_the_extension() {
        let doc = parse_document(fixtures::AWS_TRN2).unwrap();
        let text = render(&[&doc]);
        assert!(text.contains("neuroncore_utilization_ratio{"));
        assert!(text.contains("system_memory_total_bytes"));
        assert!(text.contains("instance_info{"));
        assert!(!text.contains("neuronprof_hbm_used_bytes"));
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        assert_eq!(format_value(f64::INFINITY), "+Inf");
        assert_eq!(format_value(0.25), "0.25");
    }
}
