//! The roofline of one op on one device: the time its FLOPs need at the peak of its
//! units and the time its bytes need at the memory bandwidth; the larger bounds it.

use serde::Serialize;

use crate::cost::OpCost;
use crate::device::{DeviceSpec, Peak};

/// Which limit binds an op on a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Bound {
    /// FLOPs at peak take longer than bytes at bandwidth.
    Compute,
    /// Bytes at bandwidth take longer.
    Memory,
}

/// The roofline of one op call.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Roofline {
    /// The lower bound on its time, seconds: the larger of the two below.
    pub time_s: f64,
    /// FLOPs / peak, seconds (0 when the device has no peak for its units).
    pub compute_s: f64,
    /// Bytes / bandwidth, seconds.
    pub memory_s: f64,
    /// Which binds.
    pub bound: Bound,
    /// The peak used; `None` when the device publishes none for the op's units.
    pub peak: Option<Peak>,
}

/// The roofline of `cost` on `device`.
pub fn roofline(cost: &OpCost, device: &DeviceSpec) -> Roofline {
    let peak = device.peak_flops_per_sec(cost.compute);
    let compute_s = peak.as_ref().map_or(0.0, |p| cost.flops / p.flops_per_sec);
    let memory_s = cost.bytes / device.memory_bytes_per_sec;
    let bound = if compute_s >= memory_s && peak.is_some() {
        Bound::Compute
    } else {
        Bound::Memory
    };
    Roofline {
        time_s: compute_s.max(memory_s),
        compute_s,
        memory_s,
        bound,
        peak,
    }
}
