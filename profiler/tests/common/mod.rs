//! Helpers shared by the integration tests: a lock that runs device tests one at a
//! time (recording is process-wide), device descriptions from the emulator's profile,
//! and trace checks.

#![allow(dead_code)]

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use neuron_backend::Device;
use profiler::DeviceInfo;
use trace_format::{CollectSink, Event, Phase};

/// Held for a whole test: tests of one binary would otherwise record into each
/// other's windows.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// The trace's description of an emulated device, from its profile (what the CLI does).
pub fn device_info(device: &Device) -> DeviceInfo {
    let p = device.profile();
    let lnc = f64::from(p.lnc);
    let bf16 = p.tensor_bf16_tflops * lnc;
    DeviceInfo {
        core_version: if p.name.starts_with("trn3") {
            "v4"
        } else {
            "v3"
        }
        .to_owned(),
        lnc: p.lnc,
        hbm_bytes: device.memory_capacity_bytes(),
        peak_tflops: vec![
            ("bf16".to_owned(), bf16),
            ("fp8".to_owned(), bf16 * p.tensor_fp8_speedup),
            ("fp32".to_owned(), bf16 / p.tensor_fp32_slowdown),
        ],
        compute_queues: p.compute_queues,
        collective_queues: p.collective_queues,
        tensor_op_queues: p.tensor_op_queues,
        ..DeviceInfo::new(device.index() as u16, &p.name)
    }
}

/// Reads a trace back strictly.
pub fn read_back(path: &Path) -> CollectSink {
    let mut sink = CollectSink::default();
    let report = trace_format::read_path(path, &mut sink).expect("the trace reads back");
    assert!(report.is_clean());
    sink
}

/// A readable place for assertion messages.
pub fn describe(e: &Event<'_>) -> String {
    format!(
        "{} {:?} {:?}/{:?} ts={:?} dur={:?}",
        e.name(),
        e.category.as_ref().map(|c| c.as_str().to_owned()),
        e.pid,
        e.tid,
        e.ts_ns,
        e.dur_ns
    )
}

/// Asserts that no two `X` events of one track overlap without nesting; returns the
/// number of tracks checked.
pub fn assert_tracks_nest(events: &[Event<'static>]) -> usize {
    let mut tracks: HashMap<(String, String), Vec<&Event<'static>>> = HashMap::new();
    for e in events.iter().filter(|e| e.phase == Phase::Complete) {
        let key = (
            e.pid.as_ref().map(|p| p.to_string()).unwrap_or_default(),
            e.tid.as_ref().map(|t| t.to_string()).unwrap_or_default(),
        );
        tracks.entry(key).or_default().push(e);
    }
    for list in tracks.values_mut() {
        list.sort_by_key(|e| (e.ts_ns, std::cmp::Reverse(e.dur_ns)));
        let mut open: Vec<&Event<'static>> = Vec::new();
        for e in list.iter() {
            let start = e.ts_ns.unwrap();
            let end = e.end_ns().unwrap();
            while open
                .last()
                .is_some_and(|top| top.end_ns().unwrap() <= start)
            {
                open.pop();
            }
            if let Some(top) = open.last() {
                assert!(
                    end <= top.end_ns().unwrap(),
                    "overlap without nesting:\n  {}\n  {}",
                    describe(top),
                    describe(e)
                );
            }
            open.push(e);
        }
    }
    tracks.len()
}

/// A fresh temporary directory for one test.
pub fn temp_dir(test: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("profiler-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
