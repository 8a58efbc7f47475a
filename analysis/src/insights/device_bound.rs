//! The device-bound step: the counterpart of [`FindingKind::HostBoundStep`]. A step whose
//! device was busy for most of it is limited by the device, not by the host's launches;
//! the finding says how busy, and how deep the busiest stream's queue got (the host
//! launching ahead of the device).

use super::{Finding, FindingKind, Thresholds};
use crate::analyses::steps::Bound;
use crate::report::Report;

/// The device-bound steps of `report`, one finding each.
pub(crate) fn device_bound_steps(report: &Report, t: &Thresholds) -> Vec<Finding> {
    let mut out = Vec::new();
    for s in &report.steps {
        if s.dur_us <= 0.0 || s.bound != Bound::Device {
            continue;
        }
        let busy_us = s.computation_us + s.communication_us + s.memory_us + s.other_device_us;
        let fraction = busy_us / s.dur_us;
        if fraction < t.device_bound_busy_fraction {
            continue;
        }
        let depth = report
            .per_rank
            .iter()
            .filter(|r| r.rank == s.rank)
            .flat_map(|r| &r.queue_length)
            .map(|q| q.max_queue_length)
            .max();
        let queue = depth.map_or(String::new(), |d| {
            format!("; up to {d} kernels queued on a stream")
        });
        out.push(
            Finding::new(
                fraction * 0.5,
                FindingKind::DeviceBoundStep,
                Some(s.rank),
                format!(
                    "rank {} step {}: device-bound: device busy {:.0} of {:.0} us ({:.0}%), \
                     waiting for the host {:.0} us{queue}",
                    s.rank,
                    s.step,
                    busy_us,
                    s.dur_us,
                    fraction * 100.0,
                    s.host_bound_idle_us,
                ),
                fraction,
                t.device_bound_busy_fraction,
                "fraction",
                Some((s.start_us, s.start_us + s.dur_us)),
                "device-bound: device busy, share of the step".to_owned(),
            )
            .with_step(s.step),
        );
    }
    out
}
