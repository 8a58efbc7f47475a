//! The device-bound step: the counterpart of [`FindingKind::HostBoundStep`]. A step whose
//! device was busy for most of it is limited by the device, not by the host's launches;
//! the finding says how busy, and how deep the busiest stream's queue got (the host
//! launching ahead of the device).
//!
//! Time a rank spent in collectives waiting for a late peer is not device work: a
//! collective kernel runs while it waits, but the rank is limited by the peer, which the
//! collective-bottleneck finding names. Its exposed part is taken out of the busy time
//! here ([`crate::analyses::steps::StepSplit::peer_wait_us`]), and a step whose
//! collectives waited for peers (hidden under computation or not) for more than the
//! share the rule leaves idle is not device-bound: a rank that waits is not called
//! device-bound.

use super::{Finding, FindingKind, Thresholds};
use crate::analyses::steps::{Bound, StepWindow};
use crate::report::Report;

/// The device-bound steps of `report`, one finding each.
pub(crate) fn device_bound_steps(report: &Report, t: &Thresholds) -> Vec<Finding> {
    let mut out = Vec::new();
    for s in &report.steps {
        if s.dur_us <= 0.0 || s.bound != Bound::Device {
            continue;
        }
        // A rank whose collectives waited for a late peer for more of the step than the
        // device-bound rule leaves idle (1 - the busy share) is limited by that peer,
        // whatever its device did meanwhile: a faster device would wait longer. The
        // collective-bottleneck finding names the peer.
        let waited_in_collectives_us: f64 = report
            .collectives
            .per_step
            .iter()
            .filter(|c| c.rank == s.rank && c.step == Some(s.step))
            .map(|c| c.wait_us)
            .sum();
        if waited_in_collectives_us > (1.0 - t.device_bound_busy_fraction) * s.dur_us {
            continue;
        }
        // The exposed part of its collectives' waiting, inside `communication_us`.
        let waiting_us = s.peer_wait_us;
        let busy_us = s.busy_us() - waiting_us;
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
        let waiting = if waiting_us > 0.0 {
            format!(" (not counting {waiting_us:.0} us waiting for peers in collectives)")
        } else {
            String::new()
        };
        // Over the device window, say how long the host's window of the step was: a
        // host that ran long before its first launch shows there, not in the device's.
        let host = match (s.window, s.host_dur_us) {
            (StepWindow::Device, Some(host_us)) if host_us > s.dur_us => {
                format!("; the host's window of the step is {host_us:.0} us")
            }
            _ => String::new(),
        };
        out.push(
            Finding::new(
                fraction * 0.5,
                FindingKind::DeviceBoundStep,
                Some(s.rank),
                format!(
                    "rank {} step {} ({}): device-bound: device busy {:.0} of {:.0} us \
                     ({:.0}%){waiting}, waiting for the host {:.0} us{queue}{host}",
                    s.rank,
                    s.step,
                    s.window.label(),
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
