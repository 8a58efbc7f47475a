//! A few numbers that sum a window up, for `neuronprof demo`'s closing lines.

use crate::model::{DeviceKind, HostKind, TraceModel};

/// What one recorded window (one rank) amounts to.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Summary {
    /// `ProfilerStep#N` ranges in the window.
    pub steps: usize,
    /// Mean duration of those steps on the host, in ns (0 without steps).
    pub mean_step_ns: u64,
    /// Span the utilization is measured over: the steps (first start to last end), or
    /// the whole window without steps, in ns.
    pub span_ns: u64,
    /// Time at least one kernel, copy or collective ran on a device, within the span
    /// (overlaps across queues counted once), per device index.
    pub device_busy_ns: Vec<(u16, u64)>,
    /// Time collectives ran, within the span, summed over devices.
    pub collective_ns: u64,
    /// Highest `Total Allocated` of any `[memory]` event (needs `profile_memory`).
    pub peak_allocated_bytes: Option<u64>,
    /// Records lost in the window.
    pub dropped_records: u64,
}

impl Summary {
    /// Busy time over the span, averaged over the devices (0.0–1.0).
    pub fn device_utilization(&self) -> f64 {
        if self.span_ns == 0 || self.device_busy_ns.is_empty() {
            return 0.0;
        }
        let busy: u64 = self.device_busy_ns.iter().map(|&(_, ns)| ns).sum();
        busy as f64 / (self.span_ns as f64 * self.device_busy_ns.len() as f64)
    }

    pub(crate) fn new(model: &TraceModel, window: (u64, u64)) -> Self {
        let steps: Vec<(u64, u64)> = model
            .host
            .iter()
            .filter(|h| h.kind == HostKind::UserRange && h.name.starts_with("ProfilerStep#"))
            .map(|h| (h.start_ns, h.end_ns))
            .collect();
        let (start_ns, end_ns) = match (
            steps.iter().map(|s| s.0).min(),
            steps.iter().map(|s| s.1).max(),
        ) {
            (Some(start), Some(end)) => (start, end),
            _ => window,
        };
        let mean_step_ns = if steps.is_empty() {
            0
        } else {
            steps.iter().map(|s| s.1 - s.0).sum::<u64>() / steps.len() as u64
        };
        let clip = |(s, e): (u64, u64)| (s.max(start_ns), e.min(end_ns));
        let mut devices: Vec<u16> = model.device.iter().map(|d| d.device).collect();
        devices.sort_unstable();
        devices.dedup();
        let device_busy_ns = devices
            .into_iter()
            .map(|device| {
                let mut spans: Vec<(u64, u64)> = model
                    .device
                    .iter()
                    .filter(|d| d.device == device)
                    .map(|d| clip((d.start_ns, d.end_ns)))
                    .filter(|(s, e)| s < e)
                    .collect();
                spans.sort_unstable();
                (device, union_ns(&spans))
            })
            .collect();
        let collective_ns = model
            .device
            .iter()
            .filter(|d| d.kind == DeviceKind::Collective)
            .map(|d| clip((d.start_ns, d.end_ns)))
            .map(|(s, e)| e.saturating_sub(s))
            .sum();
        Summary {
            steps: steps.len(),
            mean_step_ns,
            span_ns: end_ns.saturating_sub(start_ns),
            device_busy_ns,
            collective_ns,
            peak_allocated_bytes: model.memory.iter().map(|m| m.total_allocated_bytes).max(),
            dropped_records: model.dropped_records,
        }
    }
}

/// Length of the union of sorted intervals.
fn union_ns(sorted: &[(u64, u64)]) -> u64 {
    let mut total = 0;
    let mut current: Option<(u64, u64)> = None;
    for &(s, e) in sorted {
        current = match current {
            Some((cs, ce)) if s <= ce => Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += ce - cs;
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    total + current.map_or(0, |(s, e)| e - s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn union_counts_overlaps_once() {
        assert_eq!(union_ns(&[(0, 10), (5, 15), (20, 25)]), 20);
        assert_eq!(union_ns(&[]), 0);
        let s = Summary {
            span_ns: 100,
            device_busy_ns: vec![(0, 50), (1, 100)],
            ..Summary::default()
        };
        assert!((s.device_utilization() - 0.75).abs() < 1e-12);
    }
}
