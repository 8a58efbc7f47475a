//! Neuron utilization: the device's busy share, its engines and its DMA queues.

use super::{bytes, num, opt, section, Table};
use crate::analyses::utilization::{DeviceUtilization, EngineSource};

pub(super) fn render_utilization(out: &mut String, devices: &[DeviceUtilization]) {
    let devices: Vec<_> = devices
        .iter()
        .filter(|d| d.engine_source != EngineSource::None || d.dma.is_some() || d.model_flops > 0)
        .collect();
    if devices.is_empty() {
        return;
    }
    let mut t = Table::new(&[
        "rank",
        "device",
        "window us",
        "busy %",
        "of it only waiting for peers %",
        "MFU",
        "HFU",
        "peak TFLOPS",
        "TensorE throttled us",
        "steps host/device-bound",
    ]);
    for d in &devices {
        t.row(vec![
            d.rank.to_string(),
            d.device.to_string(),
            num(d.window_us),
            num(d.device_busy_pct),
            num(d.peer_wait_pct),
            crate::insights::pct_text(d.mfu_pct),
            crate::insights::pct_text(d.hfu_pct),
            match (&d.peak_dtype, d.peak_tflops) {
                (Some(dtype), Some(peak)) => format!("{} {dtype}", num(peak)),
                _ => "-".to_owned(),
            },
            opt(d.tensor_throttled_us),
            format!("{}/{}", d.host_bound_steps, d.device_bound_steps),
        ]);
    }
    section(out, "Neuron utilization", &t);
    for d in devices.iter().filter(|d| d.throttled_us.is_some()) {
        out.push_str(&format!(
            "throttled (thermal/power, measured): rank {} device {}: {} us, {} of the window, \
             {} span(s)\n",
            d.rank,
            d.device,
            opt(d.throttled_us),
            crate::insights::pct_text(d.throttled_pct),
            d.throttle_events
        ));
    }
    let mut t = Table::new(&[
        "rank", "device", "core", "engine", "active %", "busy us", "instr", "wait us", "source",
    ]);
    for d in &devices {
        for e in &d.engines {
            t.row(vec![
                d.rank.to_string(),
                d.device.to_string(),
                e.core.map_or_else(|| "-".to_owned(), |c| c.to_string()),
                e.engine.clone(),
                num(e.active_pct),
                num(e.busy_us),
                e.instructions.to_string(),
                num(e.wait_us),
                match d.engine_source {
                    EngineSource::Instructions => "instructions",
                    EngineSource::KernelArgs => "kernel args",
                    EngineSource::None => "-",
                }
                .to_owned(),
            ]);
        }
        for c in &d.cores {
            t.row(vec![
                d.rank.to_string(),
                d.device.to_string(),
                c.core.to_string(),
                "any engine".to_owned(),
                num(c.active_pct),
                num(c.busy_us),
                String::new(),
                String::new(),
                "instructions".to_owned(),
            ]);
        }
    }
    section(out, "Engines", &t);
    let mut t = Table::new(&[
        "rank",
        "device",
        "transfers",
        "bytes",
        "queues",
        "active %",
        "queue use %",
        "GB/s",
        "small",
        "small time %",
    ]);
    for d in &devices {
        let Some(dma) = &d.dma else { continue };
        t.row(vec![
            d.rank.to_string(),
            d.device.to_string(),
            dma.transfers.to_string(),
            bytes(dma.bytes),
            dma.queues.to_string(),
            num(dma.active_pct),
            num(dma.queue_utilization_pct),
            opt(dma.achieved_gbps),
            format!("{} < {}", dma.small_transfers, bytes(dma.small_limit_bytes)),
            num(if dma.transfer_time_us > 0.0 {
                100.0 * dma.small_time_us / dma.transfer_time_us
            } else {
                0.0
            }),
        ]);
    }
    if !t.is_empty() {
        section(out, "DMA", &t);
    }
}
