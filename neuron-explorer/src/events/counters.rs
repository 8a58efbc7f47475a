//! The counter tables (`HbmUsage`, `CpuUsage`, `HostMemUsage`; schema 7.4.0) as Kineto
//! counter events: HBM throughput on the core, host CPU and memory on `host <instance>`.

use std::borrow::Cow;

use trace_format::{Args, Category, Event, Ident, Phase};

use super::{Converter, COUNTER_CATEGORY};
use crate::error::NeuronError;
use crate::table::Batch;

impl Converter {
    pub(super) fn hbm_rows(
        &mut self,
        b: &Batch,
        out: &mut Vec<Event<'static>>,
    ) -> Result<(), NeuronError> {
        let ts = b.int_req("timestamp")?;
        let throughput = b.float("current_throughput")?;
        let total = b.int("total_transfer_bytes")?;
        let device = self.device_pid;
        for row in 0..b.len() {
            let ts_ns = b.need("timestamp", row, ts.get(row))?;
            let mut args = Args::new();
            if let Some(t) = throughput.as_ref().and_then(|t| t.get(row)) {
                args.push("HBM throughput (B/s)", t);
            }
            if let Some(t) = total.as_ref().and_then(|t| t.get(row)) {
                args.push("HBM transfer bytes", t);
            }
            out.push(counter("HBM", device.into(), ts_ns, args));
        }
        Ok(())
    }

    pub(super) fn cpu_rows(
        &mut self,
        b: &Batch,
        out: &mut Vec<Event<'static>>,
    ) -> Result<(), NeuronError> {
        let ts = b.int_req("timestamp")?;
        let util = b.float("util_percent")?;
        let cpu = b.str("cpu_id")?;
        let instance = b.str("instance_id")?;
        for row in 0..b.len() {
            let ts_ns = b.need("timestamp", row, ts.get(row))?;
            let cpu = cpu.as_ref().and_then(|c| c.get(row)).unwrap_or("all");
            let util = util.as_ref().and_then(|u| u.get(row)).unwrap_or(0.0);
            let pid = host_pid(instance.as_ref().and_then(|i| i.get(row)));
            out.push(counter(
                "CPU utilization (%)",
                pid,
                ts_ns,
                Args::new().with(format!("cpu {cpu}"), util),
            ));
        }
        Ok(())
    }

    pub(super) fn host_mem_rows(
        &mut self,
        b: &Batch,
        out: &mut Vec<Event<'static>>,
    ) -> Result<(), NeuronError> {
        let ts = b.int_req("timestamp")?;
        let used = b.int("used_bytes")?;
        let percent = b.float("used_percent")?;
        let instance = b.str("instance_id")?;
        for row in 0..b.len() {
            let ts_ns = b.need("timestamp", row, ts.get(row))?;
            let mut args = Args::new();
            if let Some(u) = used.as_ref().and_then(|u| u.get(row)) {
                args.push("used bytes", u);
            }
            if let Some(p) = percent.as_ref().and_then(|p| p.get(row)) {
                args.push("used (%)", p);
            }
            let pid = host_pid(instance.as_ref().and_then(|i| i.get(row)));
            out.push(counter("Host memory", pid, ts_ns, args));
        }
        Ok(())
    }
}

/// The pid of a host counter: `host <instance_id>`.
fn host_pid(instance: Option<&str>) -> Ident<'static> {
    Ident::Str(Cow::Owned(format!("host {}", instance.unwrap_or("?"))))
}

pub(super) fn counter(
    name: &str,
    pid: Ident<'static>,
    ts_ns: i64,
    args: Args<'static>,
) -> Event<'static> {
    let mut e = Event::new(Phase::Counter);
    e.category = Some(Category::Other(Cow::Borrowed(COUNTER_CATEGORY)));
    e.name = Some(Cow::Owned(name.to_owned()));
    e.pid = Some(pid);
    e.tid = Some(0i64.into());
    e.ts_ns = Some(ts_ns);
    e.args = Some(args);
    e
}
