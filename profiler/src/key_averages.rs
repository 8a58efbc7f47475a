//! `key_averages()`: the operator table torch prints, from a recorded window.
//!
//! Rows are keyed by name (and input shape when grouping by it). As in torch:
//! - host rows (operators, user ranges, runtime calls): total CPU time is the span's
//!   duration; self CPU time subtracts the durations of the spans directly inside it;
//! - device time: a kernel (copy, collective) counts as *self* device time of the
//!   operator with its correlation id (else of its launch); an operator's total device
//!   time adds that of the spans inside it;
//! - kernels are rows too, with self = total device time = their duration and no CPU
//!   time;
//! - percentages are of the sum of self times over all rows.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::config::ProfilerConfig;
use crate::model::{HostKind, TraceModel};

/// One row of the table.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KeyAverage {
    /// Operator, range, runtime call or kernel name.
    pub key: String,
    /// `Input Dims` when grouped by input shape (empty when not recorded).
    pub input_shapes: String,
    /// Whether the row is device activity (a kernel, copy or collective).
    pub is_device: bool,
    /// Number of calls.
    pub count: u64,
    /// Host time inside the calls, children included, in ns.
    pub cpu_total_ns: u64,
    /// Host time of the calls minus their children, in ns.
    pub self_cpu_ns: u64,
    /// Device time of the calls and their children, in ns.
    pub device_total_ns: u64,
    /// Device time launched by the calls themselves, in ns.
    pub self_device_ns: u64,
    /// Floating-point operations (with `with_flops`).
    pub flops: u64,
}

impl KeyAverage {
    /// Mean host time per call, in ns.
    pub fn cpu_avg_ns(&self) -> u64 {
        self.cpu_total_ns / self.count.max(1)
    }

    /// Mean device time per call, in ns.
    pub fn device_avg_ns(&self) -> u64 {
        self.device_total_ns / self.count.max(1)
    }
}

/// What to sort the table by (torch's `sort_by` keys), largest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortBy {
    /// `self_cpu_time_total`.
    SelfCpu,
    /// `cpu_time_total`.
    CpuTotal,
    /// `self_device_time_total`.
    SelfDevice,
    /// `device_time_total`.
    DeviceTotal,
    /// `count`.
    Count,
    /// `flops`.
    Flops,
}

impl SortBy {
    /// Parses torch's key names (`self_cpu_time_total`, `cpu_time_total`,
    /// `self_device_time_total`/`self_cuda_time_total`, `device_time_total`/
    /// `cuda_time_total`, `count`, `flops`).
    pub fn from_torch_key(key: &str) -> Option<Self> {
        Some(match key {
            "self_cpu_time_total" => SortBy::SelfCpu,
            "cpu_time_total" => SortBy::CpuTotal,
            "self_device_time_total" | "self_cuda_time_total" | "self_neuron_time_total" => {
                SortBy::SelfDevice
            }
            "device_time_total" | "cuda_time_total" | "neuron_time_total" => SortBy::DeviceTotal,
            "count" => SortBy::Count,
            "flops" => SortBy::Flops,
            _ => return None,
        })
    }

    fn value(self, row: &KeyAverage) -> u64 {
        match self {
            SortBy::SelfCpu => row.self_cpu_ns,
            SortBy::CpuTotal => row.cpu_total_ns,
            SortBy::SelfDevice => row.self_device_ns,
            SortBy::DeviceTotal => row.device_total_ns,
            SortBy::Count => row.count,
            SortBy::Flops => row.flops,
        }
    }
}

/// The operator table of a window.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KeyAverages {
    rows: Vec<KeyAverage>,
    with_flops: bool,
    by_input_shape: bool,
}

impl KeyAverages {
    pub(crate) fn new(model: &TraceModel, config: &ProfilerConfig, by_input_shape: bool) -> Self {
        let host = &model.host;
        let mut child_cpu_ns = vec![0u64; host.len()];
        let mut self_device_ns = vec![0u64; host.len()];
        for h in host {
            if let Some(p) = h.parent {
                child_cpu_ns[p] += h.dur_ns();
            }
        }
        for d in &model.device {
            if let Some(i) = d.host_span {
                self_device_ns[i] += d.dur_ns();
            }
        }
        // Children come after their parents (sorted by start), so a reverse pass adds
        // each span's total to its parent's after its own children were added.
        let mut device_total_ns = self_device_ns.clone();
        for i in (0..host.len()).rev() {
            if let Some(p) = host[i].parent {
                device_total_ns[p] += device_total_ns[i];
            }
        }
        let mut rows: Vec<KeyAverage> = Vec::new();
        let mut index: HashMap<(String, String, bool), usize> = HashMap::new();
        let mut add =
            |key: &str, shapes: &str, is_device: bool, f: &mut dyn FnMut(&mut KeyAverage)| {
                let k = (key.to_owned(), shapes.to_owned(), is_device);
                let i = *index.entry(k).or_insert_with(|| {
                    rows.push(KeyAverage {
                        key: key.to_owned(),
                        input_shapes: shapes.to_owned(),
                        is_device,
                        ..KeyAverage::default()
                    });
                    rows.len() - 1
                });
                f(&mut rows[i]);
            };
        for (i, h) in host.iter().enumerate() {
            let shapes = match (&h.input_sig, by_input_shape && h.kind == HostKind::Operator) {
                (Some((dims, _)), true) => dims.to_string(),
                _ => String::new(),
            };
            add(&h.name, &shapes, false, &mut |row| {
                row.count += 1;
                row.cpu_total_ns += h.dur_ns();
                row.self_cpu_ns += h.dur_ns().saturating_sub(child_cpu_ns[i]);
                row.self_device_ns += self_device_ns[i];
                row.device_total_ns += device_total_ns[i];
                if config.with_flops {
                    row.flops += h.flops;
                }
            });
        }
        for d in &model.device {
            add(&d.name, "", true, &mut |row| {
                row.count += 1;
                row.self_device_ns += d.dur_ns();
                row.device_total_ns += d.dur_ns();
            });
        }
        KeyAverages {
            rows,
            with_flops: config.with_flops,
            by_input_shape,
        }
    }

    /// The rows, in first-seen order.
    pub fn rows(&self) -> &[KeyAverage] {
        &self.rows
    }

    /// The row of `key` (the first one when grouped by input shape).
    pub fn get(&self, key: &str) -> Option<&KeyAverage> {
        self.rows.iter().find(|r| r.key == key)
    }

    /// Sorts the rows by `sort_by`, largest first (ties by name).
    pub fn sort(&mut self, sort_by: SortBy) {
        self.rows.sort_by(|a, b| {
            sort_by
                .value(b)
                .cmp(&sort_by.value(a))
                .then_with(|| a.key.cmp(&b.key))
        });
    }

    /// Sum of self host time over all rows, in ns.
    pub fn self_cpu_total_ns(&self) -> u64 {
        self.rows.iter().map(|r| r.self_cpu_ns).sum()
    }

    /// Sum of self device time over the device rows (each kernel once), in ns.
    pub fn self_device_total_ns(&self) -> u64 {
        self.rows
            .iter()
            .filter(|r| r.is_device)
            .map(|r| r.self_device_ns)
            .sum()
    }

    /// The table as torch's `key_averages().table(sort_by=…, row_limit=…)` prints it.
    pub fn table(&self, sort_by: SortBy, row_limit: usize) -> String {
        let mut sorted = self.clone();
        sorted.sort(sort_by);
        let cpu_total = sorted.self_cpu_total_ns().max(1) as f64;
        let device_total = sorted.self_device_total_ns().max(1) as f64;
        let name_width = sorted
            .rows
            .iter()
            .take(row_limit)
            .map(|r| r.key.chars().count())
            .max()
            .unwrap_or(4)
            .clamp(4, 55);
        let mut headers = vec![
            "Self CPU %",
            "Self CPU",
            "CPU total %",
            "CPU total",
            "CPU time avg",
            "Self NEURON",
            "Self NEURON %",
            "NEURON total",
            "NEURON time avg",
            "# of Calls",
        ];
        if self.by_input_shape {
            headers.push("Input Shapes");
        }
        if self.with_flops {
            headers.push("Total MFLOPs");
        }
        let widths: Vec<usize> = headers.iter().map(|h| h.len().max(12)).collect();
        let rule = {
            let mut line = "-".repeat(name_width);
            for w in &widths {
                line.push_str("  ");
                line.push_str(&"-".repeat(*w));
            }
            line
        };
        let mut out = String::new();
        let _ = writeln!(out, "{rule}");
        let _ = write!(out, "{:<name_width$}", "Name");
        for (h, w) in headers.iter().zip(&widths) {
            let _ = write!(out, "  {h:>w$}");
        }
        let _ = writeln!(out);
        let _ = writeln!(out, "{rule}");
        for row in sorted.rows.iter().take(row_limit) {
            let name = truncate(&row.key, name_width);
            let _ = write!(out, "{name:<name_width$}");
            let mut cells = vec![
                percent(row.self_cpu_ns as f64 / cpu_total),
                format_time(row.self_cpu_ns),
                percent(row.cpu_total_ns as f64 / cpu_total),
                format_time(row.cpu_total_ns),
                format_time(row.cpu_avg_ns()),
                format_time(row.self_device_ns),
                percent(row.self_device_ns as f64 / device_total),
                format_time(row.device_total_ns),
                format_time(row.device_avg_ns()),
                row.count.to_string(),
            ];
            if self.by_input_shape {
                cells.push(row.input_shapes.clone());
            }
            if self.with_flops {
                cells.push(format!("{:.3}", row.flops as f64 / 1e6));
            }
            for (cell, w) in cells.iter().zip(&widths) {
                let _ = write!(out, "  {cell:>w$}");
            }
            let _ = writeln!(out);
        }
        let _ = writeln!(out, "{rule}");
        let _ = writeln!(
            out,
            "Self CPU time total: {}",
            format_time(sorted.self_cpu_total_ns())
        );
        let _ = writeln!(
            out,
            "Self NEURON time total: {}",
            format_time(sorted.self_device_total_ns())
        );
        out
    }
}

fn truncate(name: &str, width: usize) -> String {
    if name.chars().count() <= width {
        name.to_owned()
    } else {
        let kept: String = name.chars().take(width.saturating_sub(3)).collect();
        format!("{kept}...")
    }
}

fn percent(fraction: f64) -> String {
    format!("{:.2}%", fraction * 100.0)
}

/// torch's `_format_time`: microseconds below 1 ms, milliseconds below 1 s, seconds.
pub fn format_time(ns: u64) -> String {
    let us = ns as f64 / 1e3;
    if us >= 1e6 {
        format!("{:.3}s", us / 1e6)
    } else if us >= 1e3 {
        format!("{:.3}ms", us / 1e3)
    } else {
        format!("{us:.3}us")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_format_like_torch() {
        assert_eq!(format_time(1_500), "1.500us");
        assert_eq!(format_time(2_500_000), "2.500ms");
        assert_eq!(format_time(3_000_000_000), "3.000s");
        assert_eq!(
            SortBy::from_torch_key("self_cuda_time_total"),
            Some(SortBy::SelfDevice)
        );
        assert_eq!(SortBy::from_torch_key("nope"), None);
        assert_eq!(truncate("abcdefgh", 6), "abc...");
    }
}
