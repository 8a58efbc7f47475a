//! The device tables of activity and synchronization (`ActiveTime`, `CoreBarriers`,
//! `SemaphoreUpdate`, `Throttle`; fields from `profile-schema-reference.rst`, schema
//! 7.4.0) as events, and the schema's engine names as ours.
//!
//! - `ActiveTime` (an engine's instructions' intervals merged, semaphore waits left
//!   out): what the engine-utilization analysis computes from `Instruction` rows. It is
//!   read only when the profile has no `Instruction` table (a capture ingested with
//!   `--ignore-instruction-trace`): each interval becomes a `neuron_instruction` row
//!   named `active` on the engine's track, so engine utilization is still known.
//! - `CoreBarriers` (an engine waiting for the other physical cores of its logical
//!   core): a [`BARRIER_CATEGORY`] row on a track of its own per physical core, args
//!   `engine`, `semaphore`, `barrier_id`, `opcode`. Not device work: the engine waits.
//! - `SemaphoreUpdate`: a counter `semaphore <id>` on the core, its new value (series
//!   per physical core).
//! - `Throttle` (thermal or power throttling; the utilization permitted is `k / n`): a
//!   [`THROTTLE_CATEGORY`] row on a throttle track per physical core, args `type`, `k`,
//!   `n`, `utilization_limit_pct`.

use std::borrow::Cow;

use trace_format::{Args, Category, Event};

use super::{counter, Converter, ENGINE_TID_BASE, INSTRUCTION_CATEGORY};
use crate::error::NeuronError;
use crate::table::Batch;

/// Category of `CoreBarriers` rows.
pub const BARRIER_CATEGORY: &str = "neuron_core_barrier";
/// Category of `Throttle` rows.
pub const THROTTLE_CATEGORY: &str = "neuron_throttle";
/// Tid of core-barrier tracks: 8000 + physical core.
pub const BARRIER_TID_BASE: i64 = 8_000;
/// Tid of throttle tracks: 8500 + physical core.
pub const THROTTLE_TID_BASE: i64 = 8_500;

/// The schema's engine names (`tensor`, `Vector`, `GpSimd`, …) as the emulator's
/// profiler writes them (`TensorE`, `VectorE`, `ScalarE`, `GpSimdE`, `SyncE`), which the
/// analyses look up (TensorE's throttling); another name is kept as it is.
pub fn engine_name(raw: &str) -> Cow<'_, str> {
    let lower = raw.trim().to_ascii_lowercase();
    let base = lower
        .strip_suffix('e')
        .filter(|b| matches!(*b, "tensor" | "vector" | "scalar" | "gpsimd" | "sync"));
    Cow::Borrowed(match base.unwrap_or(&lower) {
        "tensor" => "TensorE",
        "vector" => "VectorE",
        "scalar" => "ScalarE",
        "gpsimd" => "GpSimdE",
        "sync" => "SyncE",
        _ => return Cow::Borrowed(raw),
    })
}

impl Converter {
    /// The track of `engine` on physical core `core` (shared with `Instruction` rows).
    pub(super) fn engine_track(&mut self, engine: &str, core: i64) -> i64 {
        let next = self.engines.len() as i64;
        let engine_idx = *self.engines.entry(engine.to_owned()).or_insert(next);
        let tid = ENGINE_TID_BASE + 100 * core + engine_idx;
        self.tracks
            .insert((self.device_pid, tid, format!("{engine} (core {core})")));
        tid
    }

    pub(super) fn active_rows(
        &mut self,
        b: &Batch,
        out: &mut Vec<Event<'static>>,
    ) -> Result<(), NeuronError> {
        let start = b.int_req("start_ts")?;
        let end = b.int_req("end_ts")?;
        let engine = b.str_req("engine")?;
        let pcore = b.int("pcore_idx")?;
        let device = self.device_pid;
        self.device_pids.insert(device);
        for row in 0..b.len() {
            let start_ns = b.need("start_ts", row, start.get(row))?;
            let end_ns = b.need("end_ts", row, end.get(row))?;
            let engine = engine_name(b.need("engine", row, engine.get(row))?).into_owned();
            let core = pcore.as_ref().and_then(|p| p.get(row)).unwrap_or(0);
            let tid = self.engine_track(&engine, core);
            out.push(
                Event::complete(
                    Category::Other(Cow::Borrowed(INSTRUCTION_CATEGORY)),
                    "active",
                    device,
                    tid,
                    start_ns,
                    end_ns - start_ns,
                )
                .with_arg("device", device)
                .with_arg("core", core)
                .with_arg("engine", engine)
                .with_arg("from", "ActiveTime"),
            );
        }
        Ok(())
    }

    pub(super) fn barrier_rows(
        &mut self,
        b: &Batch,
        out: &mut Vec<Event<'static>>,
    ) -> Result<(), NeuronError> {
        let start = b.int_req("start_ts")?;
        let end = b.int_req("end_ts")?;
        let engine = b.str_req("engine_name")?;
        let id = b.int("id")?;
        let semaphore = b.int("semaphore")?;
        let opcode = b.str("compiler_opcode")?;
        let pcore = b.int("pcore_idx")?;
        let device = self.device_pid;
        self.device_pids.insert(device);
        for row in 0..b.len() {
            let start_ns = b.need("start_ts", row, start.get(row))?;
            let end_ns = b.need("end_ts", row, end.get(row))?;
            let engine = engine_name(b.need("engine_name", row, engine.get(row))?).into_owned();
            let core = pcore.as_ref().and_then(|p| p.get(row)).unwrap_or(0);
            let tid = BARRIER_TID_BASE + core;
            self.tracks
                .insert((device, tid, format!("core barriers (core {core})")));
            let mut e = Event::complete(
                Category::Other(Cow::Borrowed(BARRIER_CATEGORY)),
                format!("core barrier {engine}"),
                device,
                tid,
                start_ns,
                end_ns - start_ns,
            )
            .with_arg("device", device)
            .with_arg("core", core)
            .with_arg("engine", engine);
            if let Some(s) = semaphore.as_ref().and_then(|s| s.get(row)) {
                e = e.with_arg("semaphore", s);
            }
            if let Some(i) = id.as_ref().and_then(|i| i.get(row)) {
                e = e.with_arg("barrier_id", i);
            }
            if let Some(o) = opcode.as_ref().and_then(|o| o.get(row)) {
                e = e.with_arg("opcode", o.to_owned());
            }
            out.push(e);
        }
        Ok(())
    }

    pub(super) fn semaphore_rows(
        &mut self,
        b: &Batch,
        out: &mut Vec<Event<'static>>,
    ) -> Result<(), NeuronError> {
        let ts = b.int_req("timestamp")?;
        let id = b.str_req("id")?;
        let value = b.int_req("value")?;
        let pcore = b.int("pcore_idx")?;
        let device = self.device_pid;
        for row in 0..b.len() {
            let ts_ns = b.need("timestamp", row, ts.get(row))?;
            let id = b.need("id", row, id.get(row))?;
            let value = b.need("value", row, value.get(row))?;
            let core = pcore.as_ref().and_then(|p| p.get(row)).unwrap_or(0);
            out.push(counter(
                &format!("semaphore {id}"),
                device.into(),
                ts_ns,
                Args::new().with(format!("core {core}"), value),
            ));
        }
        Ok(())
    }

    pub(super) fn throttle_rows(
        &mut self,
        b: &Batch,
        out: &mut Vec<Event<'static>>,
    ) -> Result<(), NeuronError> {
        let ts = b.int_req("timestamp")?;
        let duration = b.int_req("duration")?;
        let k = b.int_req("k")?;
        let n = b.int_req("n")?;
        let kind = b.str_req("type")?;
        let pcore = b.int("pcore_idx")?;
        let device = self.device_pid;
        self.device_pids.insert(device);
        for row in 0..b.len() {
            let ts_ns = b.need("timestamp", row, ts.get(row))?;
            let dur_ns = b.need("duration", row, duration.get(row))?;
            let k = b.need("k", row, k.get(row))?;
            let n = b.need("n", row, n.get(row))?;
            let kind = b.need("type", row, kind.get(row))?;
            let core = pcore.as_ref().and_then(|p| p.get(row)).unwrap_or(0);
            let tid = THROTTLE_TID_BASE + core;
            self.tracks
                .insert((device, tid, format!("throttle (core {core})")));
            let limit_pct = if n > 0 {
                100.0 * k as f64 / n as f64
            } else {
                100.0
            };
            out.push(
                Event::complete(
                    Category::Other(Cow::Borrowed(THROTTLE_CATEGORY)),
                    format!("throttle {kind}"),
                    device,
                    tid,
                    ts_ns,
                    dur_ns.max(0),
                )
                .with_arg("device", device)
                .with_arg("core", core)
                .with_arg("type", kind.to_owned())
                .with_arg("k", k)
                .with_arg("n", n)
                .with_arg("utilization_limit_pct", limit_pct),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_engine_names_become_the_profilers() {
        assert_eq!(engine_name("tensor"), "TensorE");
        assert_eq!(engine_name("Tensor"), "TensorE");
        assert_eq!(engine_name("TensorE"), "TensorE");
        assert_eq!(engine_name("GpSimd"), "GpSimdE");
        assert_eq!(engine_name("sync"), "SyncE");
        assert_eq!(engine_name("dma"), "dma");
    }
}
