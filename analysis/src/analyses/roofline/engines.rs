//! Beyond TraceLens, on neuron traces whose kernels state their engines' busy time
//! (`<engine> busy (ns)`, the emulator's kernels recorded with instructions): a row's
//! kernel time split by engine, the engine the roofline says should bind and the one
//! that was busiest.
//!
//! - **Busy time** of an engine is what the kernels' args state: the sum of its
//!   instructions' durations over the logical core's physical cores. Its share of the
//!   row's kernel time is busy / (kernel time × physical cores per logical core, the
//!   trace's `lnc`), so an engine busy on every core for the whole kernel reads 100 %.
//! - **Should bind**: `TensorE` for an op the roofline finds compute-bound on matrix
//!   units, `VectorE` for one compute-bound on vector units (VectorE runs elementwise
//!   and reduction work; ScalarE and GpSimdE take some of it), `DMA` for a memory-bound
//!   op (HBM traffic moves by DMA, which no engine row states).
//! - **Busiest**: the engine with the most busy time in the row's kernels.

use perf_model::{Bound, Unit};
use serde::Serialize;

use crate::model::{FastMap, NameId, RankTrace};

/// One engine's busy time in a row's kernels.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EngineShare {
    /// The engine (`TensorE`, `VectorE`, `ScalarE`, `GpSimdE`, …).
    pub engine: String,
    /// Busy time per call, µs (summed over the physical cores).
    pub busy_per_call_us: f64,
    /// Busy / (kernel time × physical cores), %.
    pub share_pct: f64,
}

/// A row's engine split.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EngineSplit {
    /// Per engine, most busy first.
    pub engines: Vec<EngineShare>,
    /// The engine the roofline says should bind (`TensorE`, `VectorE` or `DMA`);
    /// `None` without a device.
    pub should_bind: Option<String>,
    /// The busiest engine.
    pub busiest: String,
}

/// The split of `rows` (one row's kernels over `calls` calls and `kernel_time_us` of
/// kernel time); `None` when no kernel states an engine's busy time.
pub(super) fn engine_split(
    trace: &RankTrace,
    rows: impl Iterator<Item = u32>,
    calls: usize,
    kernel_time_us: f64,
    roofline: Option<(Bound, Unit)>,
) -> Option<EngineSplit> {
    let mut busy: FastMap<NameId, i64> = FastMap::default();
    for r in rows {
        for &(engine, ns) in trace.rows[r as usize]
            .engine_busy
            .iter()
            .flat_map(|b| b.iter())
        {
            *busy.entry(engine).or_default() += ns;
        }
    }
    if busy.is_empty() {
        return None;
    }
    let cores = trace
        .devices
        .iter()
        .find_map(|d| d.lnc)
        .filter(|&lnc| lnc > 0)
        .unwrap_or(1) as f64;
    let mut engines: Vec<EngineShare> = busy
        .into_iter()
        .map(|(engine, ns)| {
            let us = ns as f64 / 1e3;
            EngineShare {
                engine: trace.names.get(engine).to_owned(),
                busy_per_call_us: us / calls.max(1) as f64,
                share_pct: if kernel_time_us > 0.0 {
                    100.0 * us / (kernel_time_us * cores)
                } else {
                    0.0
                },
            }
        })
        .collect();
    engines.sort_by(|a, b| {
        b.busy_per_call_us
            .total_cmp(&a.busy_per_call_us)
            .then_with(|| a.engine.cmp(&b.engine))
    });
    let should_bind = roofline.map(|(bound, unit)| {
        match (bound, unit) {
            (Bound::Memory, _) => "DMA",
            (Bound::Compute, Unit::Matrix) => "TensorE",
            (Bound::Compute, Unit::Vector) => "VectorE",
        }
        .to_owned()
    });
    Some(EngineSplit {
        busiest: engines[0].engine.clone(),
        engines,
        should_bind,
    })
}
