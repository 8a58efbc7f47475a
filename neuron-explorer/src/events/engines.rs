//! The engine and DMA tables (`Instruction`; `DmaPacketAggregated`, else `DmaPacket`;
//! schema 7.4.0) as the rows the engine-utilization and DMA analyses take.

use std::borrow::Cow;

use trace_format::{Category, Event};

use super::{engine_name, Converter, DMA_CATEGORY, DMA_TID_BASE, INSTRUCTION_CATEGORY};
use crate::error::NeuronError;
use crate::table::Batch;

impl Converter {
    pub(super) fn instruction_rows(
        &mut self,
        b: &Batch,
        out: &mut Vec<Event<'static>>,
    ) -> Result<(), NeuronError> {
        let start = b.int_req("start_ts")?;
        let end = b.int_req("end_ts")?;
        let engine = b.str_req("engine")?;
        let pcore = b.int("pcore_idx")?;
        let opcode = b.str_req("opcode")?;
        let hlo = b.str("hlo_name")?;
        let raw = b.int("raw_flops")?;
        let adjusted = b.int("adjusted_flops")?;
        let device = self.device_pid;
        self.device_pids.insert(device);
        for row in 0..b.len() {
            let start_ns = b.need("start_ts", row, start.get(row))?;
            let end_ns = b.need("end_ts", row, end.get(row))?;
            let engine = engine_name(b.need("engine", row, engine.get(row))?);
            let opcode = b.need("opcode", row, opcode.get(row))?;
            let core = pcore.as_ref().and_then(|p| p.get(row)).unwrap_or(0);
            let tid = self.engine_track(&engine, core);
            let mut e = Event::complete(
                Category::Other(Cow::Borrowed(INSTRUCTION_CATEGORY)),
                opcode.to_owned(),
                device,
                tid,
                start_ns,
                end_ns - start_ns,
            )
            .with_arg("device", device)
            .with_arg("core", core)
            .with_arg("engine", engine.into_owned());
            let flops = adjusted
                .as_ref()
                .and_then(|a| a.get(row))
                .or_else(|| raw.as_ref().and_then(|r| r.get(row)));
            if let Some(f) = flops.filter(|f| *f > 0) {
                e = e.with_arg("flops", f);
            }
            if let Some(h) = hlo.as_ref().and_then(|h| h.get(row)) {
                e = e.with_arg("hlo_name", h.to_owned());
            }
            out.push(e);
        }
        Ok(())
    }

    pub(super) fn dma_rows(
        &mut self,
        b: &Batch,
        out: &mut Vec<Event<'static>>,
    ) -> Result<(), NeuronError> {
        let start = b.int_req("start_ts")?;
        let end = b.int_req("end_ts")?;
        let pcore = b.int("pcore_idx")?;
        let queue = b.int("queue_idx")?;
        let queue_name = b.str("queue_name")?;
        let op = b.str("op")?;
        let bytes = b.int_req("transfer_bytes")?;
        let source = b.str("source")?;
        let dest = b.str("dest")?;
        let device = self.device_pid;
        self.device_pids.insert(device);
        for row in 0..b.len() {
            let start_ns = b.need("start_ts", row, start.get(row))?;
            let end_ns = b.need("end_ts", row, end.get(row))?;
            let bytes = b.need("transfer_bytes", row, bytes.get(row))?;
            let pcore = pcore.as_ref().and_then(|p| p.get(row));
            let core = pcore.unwrap_or(0);
            let q = queue.as_ref().and_then(|q| q.get(row)).unwrap_or(0);
            let tid = DMA_TID_BASE + 1000 * core + q;
            let qname = queue_name.as_ref().and_then(|n| n.get(row));
            self.tracks.insert((
                device,
                tid,
                format!("DMA {} (core {core})", qname.unwrap_or("queue")),
            ));
            let name = match op.as_ref().and_then(|o| o.get(row)) {
                Some(op) => format!("dma {op}"),
                None => "dma".to_owned(),
            };
            let dur_ns = end_ns - start_ns;
            let mut e = Event::complete(
                Category::Other(Cow::Borrowed(DMA_CATEGORY)),
                name,
                device,
                tid,
                start_ns,
                dur_ns,
            )
            .with_arg("device", device)
            .with_arg("dma queue", q)
            .with_arg("bytes", bytes);
            if let Some(core) = pcore {
                e = e.with_arg("core", core);
            }
            if let Some(n) = qname {
                e = e.with_arg("queue_name", n.to_owned());
            }
            if let Some(s) = source.as_ref().and_then(|s| s.get(row)) {
                e = e.with_arg("source", s.to_owned());
            }
            if let Some(d) = dest.as_ref().and_then(|d| d.get(row)) {
                e = e.with_arg("dest", d.to_owned());
            }
            if dur_ns > 0 {
                e = e.with_arg(
                    "memory bandwidth (GB/s)",
                    (bytes as f64 / dur_ns as f64 * 1000.0).round() / 1000.0,
                );
            }
            out.push(e);
        }
        Ok(())
    }
}
