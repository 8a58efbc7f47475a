//! Device activity for a Kineto plugin: when PyTorch's own profiler writes the trace
//! (`torch.profiler` with the `neuron` PrivateUse1 device of `python/`), a libkineto
//! `IActivityProfiler` hands it our records as activities. This module is where those
//! records become activities — the same conversion ([`crate::model`]) as for the traces
//! this crate writes itself, so both agree on names, pairing and placement.
//!
//! What comes out ([`PluginActivity`]): runtime calls (`privateuse1_runtime` on the OS
//! thread that made them), kernels, copies and memsets (on `device` / `queue`), stream
//! synchronization (event marks and cross-queue waits, paired by a flow), with
//! their correlation ids and wall-clock (Unix epoch) nanoseconds — what Kineto's
//! activities carry. Memory changes are not here: PyTorch's profiler records `[memory]`
//! events itself when the allocator reports them (`c10::reportMemoryUsageToProfiler`),
//! and a second copy would double them. Operators and user ranges are not here either:
//! PyTorch records its own.

use std::sync::Arc;

use runtime_hooks::{clock::ClockAnchor, Record, RuntimeCallKind, ThreadStats};

use crate::config::{Activity, DeviceDetail, ProfilerConfig};
use crate::model::{build, DeviceKind, HostKind, SyncKind, EVENT_RECORD_NAME, STREAM_WAIT_NAME};

/// What a [`PluginActivity`] is, in Kineto's activity types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PluginActivityKind {
    /// A runtime call (`PRIVATEUSE1_RUNTIME`); `launch` says whether it launched a kernel.
    Runtime {
        /// Whether it is a kernel launch (the start of a launch→kernel flow).
        launch: bool,
    },
    /// A kernel (`CONCURRENT_KERNEL`), collectives included.
    Kernel,
    /// A copy (`GPU_MEMCPY`).
    Memcpy,
    /// A memset (`GPU_MEMSET`).
    Memset,
    /// An event's mark on its queue (zero long; the plugin sends it as a device
    /// annotation, `GPU_USER_ANNOTATION`).
    EventRecord,
    /// A queue's wait for another queue's event (also a device annotation).
    StreamWait,
}

/// One activity of a recorded window, ready for a Kineto plugin.
#[derive(Debug, Clone)]
pub struct PluginActivity {
    /// What it is.
    pub kind: PluginActivityKind,
    /// Its name (`nrt_execute`, `mm_f32`, `Memcpy HtoD (Host -> Neuron)`, ...).
    pub name: Arc<str>,
    /// Start, ns since the Unix epoch.
    pub start_unix_ns: i64,
    /// End, ns since the Unix epoch.
    pub end_unix_ns: i64,
    /// The device (the runtime call's target device).
    pub device: u16,
    /// Device activities: the execution queue. Runtime calls: 0.
    pub queue: u16,
    /// Runtime calls: the OS thread id that made the call. Device activities: 0.
    pub os_tid: u64,
    /// Correlation id: a launch and its kernel share it (0: none).
    pub corr_id: u64,
    /// FLOPs (device activities).
    pub flops: u64,
    /// Bytes moved or touched.
    pub bytes: u64,
    /// Whether the activity starts (`Some(true)`) or ends (`Some(false)`) a flow whose id
    /// is `corr_id`: launches start one, kernels, copies and memsets end theirs, an event
    /// mark starts one and a wait ends it when both are in the window.
    pub flow_start: Option<bool>,
    /// A wait: the device and queue of the event it waited for (when its record is in the
    /// window).
    pub wait_on: Option<(u16, u16)>,
}

/// The activities of one recorded window.
#[derive(Debug, Clone, Default)]
pub struct PluginWindow {
    /// Runtime calls first (in each thread's order), then device activities.
    pub activities: Vec<PluginActivity>,
    /// Records the conversion could not use (unpaired begins or ends).
    pub unpaired_records: u64,
}

/// Converts drained records (with the threads' statistics, for OS thread ids) into the
/// window's runtime calls and device activities; `anchor` turns the process timeline
/// into wall time ([`runtime_hooks::clock::anchor`]).
pub fn plugin_window(
    records: &[Record],
    threads: &[ThreadStats],
    anchor: &ClockAnchor,
) -> PluginWindow {
    let config = ProfilerConfig {
        activities: vec![Activity::Neuron],
        device_detail: DeviceDetail::Kernels,
        ..ProfilerConfig::default()
    };
    let model = build(records, threads, &config, 0);
    let unix = |ns: u64| i64::try_from(anchor.to_unix_ns(ns)).unwrap_or(i64::MAX);
    let mut activities = Vec::with_capacity(model.host.len() + model.device.len());
    for span in &model.host {
        let HostKind::Runtime(kind) = span.kind else {
            continue;
        };
        activities.push(PluginActivity {
            kind: PluginActivityKind::Runtime {
                launch: kind == RuntimeCallKind::KernelLaunch,
            },
            name: Arc::clone(&span.name),
            start_unix_ns: unix(span.start_ns),
            end_unix_ns: unix(span.end_ns),
            device: span.device.unwrap_or(0),
            queue: 0,
            os_tid: span.tid,
            corr_id: span.corr_id,
            flops: span.flops,
            bytes: span.bytes,
            flow_start: (kind == RuntimeCallKind::KernelLaunch).then_some(true),
            wait_on: None,
        });
    }
    for span in &model.device {
        activities.push(PluginActivity {
            kind: match span.kind {
                DeviceKind::Kernel | DeviceKind::Collective => PluginActivityKind::Kernel,
                DeviceKind::Memcpy => PluginActivityKind::Memcpy,
                DeviceKind::Memset => PluginActivityKind::Memset,
            },
            name: Arc::clone(&span.name),
            start_unix_ns: unix(span.start_ns),
            end_unix_ns: unix(span.end_ns),
            device: span.device,
            queue: span.queue,
            os_tid: 0,
            corr_id: span.corr_id,
            flops: span.flops,
            bytes: span.bytes,
            flow_start: Some(false),
            wait_on: None,
        });
    }
    for sync in &model.syncs {
        let (kind, name, start) = match sync.kind {
            SyncKind::EventRecord => (PluginActivityKind::EventRecord, EVENT_RECORD_NAME, true),
            SyncKind::StreamWait => (PluginActivityKind::StreamWait, STREAM_WAIT_NAME, false),
        };
        activities.push(PluginActivity {
            kind,
            name: Arc::from(name),
            start_unix_ns: unix(sync.start_ns),
            end_unix_ns: unix(sync.end_ns),
            device: sync.device,
            queue: sync.queue,
            os_tid: 0,
            corr_id: sync.corr_id,
            flops: 0,
            bytes: 0,
            flow_start: sync.paired.map(|_| start),
            wait_on: sync.paired.filter(|_| !start),
        });
    }
    PluginWindow {
        activities,
        unpaired_records: model.unpaired_records,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runtime_hooks::{KernelPayload, RuntimeCallPayload};

    #[test]
    fn memory_changes_are_left_to_pytorch_and_only_launches_start_flows() {
        let anchor = ClockAnchor {
            monotonic_ns: 0,
            unix_ns: 0,
        };
        let sync = Record::new(
            runtime_hooks::RecordKind::RuntimeCall,
            runtime_hooks::Phase::Complete,
            RuntimeCallKind::Synchronize as u16,
            10,
            20,
            RuntimeCallPayload {
                name_id: runtime_hooks::intern("nrt_synchronize"),
                ..Default::default()
            }
            .into(),
        );
        let memory = Record::new(
            runtime_hooks::RecordKind::Memory,
            runtime_hooks::Phase::Instant,
            runtime_hooks::MemoryAction::Allocate as u16,
            15,
            15,
            runtime_hooks::MemoryPayload {
                bytes: 256,
                ..Default::default()
            }
            .into(),
        );
        let window = plugin_window(&[sync, memory], &[], &anchor);
        assert_eq!(window.activities.len(), 1, "{:?}", window.activities);
        assert_eq!(
            window.activities[0].kind,
            PluginActivityKind::Runtime { launch: false }
        );
        assert_eq!(window.unpaired_records, 0);
    }

    #[test]
    fn a_launch_and_its_kernel_share_a_correlation_in_wall_time() {
        let anchor = ClockAnchor {
            monotonic_ns: 1_000,
            unix_ns: 1_700_000_000_000_000_000,
        };
        let launch = Record::new(
            runtime_hooks::RecordKind::RuntimeCall,
            runtime_hooks::Phase::Complete,
            RuntimeCallKind::KernelLaunch as u16,
            2_000,
            2_500,
            RuntimeCallPayload {
                name_id: runtime_hooks::intern("nrt_execute"),
                device: 1,
                corr_id: 77,
                ..Default::default()
            }
            .into(),
        );
        let kernel = Record::new(
            runtime_hooks::RecordKind::Kernel,
            runtime_hooks::Phase::Complete,
            0,
            3_000,
            4_000,
            KernelPayload {
                name_id: runtime_hooks::intern("mm_f32"),
                device: 1,
                queue: 0,
                corr_id: 77,
                ..Default::default()
            }
            .into(),
        );
        let window = plugin_window(&[launch, kernel], &[], &anchor);
        assert_eq!(window.activities.len(), 2);
        let (host, device) = (&window.activities[0], &window.activities[1]);
        assert_eq!(host.kind, PluginActivityKind::Runtime { launch: true });
        assert_eq!(&*host.name, "nrt_execute");
        assert_eq!(host.start_unix_ns, 1_700_000_000_000_001_000);
        assert_eq!(device.kind, PluginActivityKind::Kernel);
        assert_eq!((device.device, device.corr_id), (1, 77));
        assert_eq!(device.end_unix_ns - device.start_unix_ns, 1_000);
    }

    #[test]
    fn a_wait_pairs_with_its_events_record_by_correlation() {
        let anchor = ClockAnchor {
            monotonic_ns: 0,
            unix_ns: 0,
        };
        let mark = |name: &str, queue: u16, span: (u64, u64), corr_id: u64| {
            Record::new(
                runtime_hooks::RecordKind::Kernel,
                runtime_hooks::Phase::Complete,
                0,
                span.0,
                span.1,
                KernelPayload {
                    name_id: runtime_hooks::intern(name),
                    queue,
                    corr_id,
                    ..Default::default()
                }
                .into(),
            )
        };
        let records = [
            mark("Event Record", 0, (500, 500), 9),
            mark("Stream Wait Event", 6, (200, 500), 9),
            mark("Stream Wait Event", 7, (300, 400), 10), // its record is not in the window
        ];
        let window = plugin_window(&records, &[], &anchor);
        let kinds: Vec<_> = window
            .activities
            .iter()
            .map(|a| (a.kind, a.queue, a.flow_start, a.wait_on))
            .collect();
        assert_eq!(
            kinds,
            [
                (PluginActivityKind::EventRecord, 0, Some(true), None),
                (PluginActivityKind::StreamWait, 6, Some(false), Some((0, 0))),
                (PluginActivityKind::StreamWait, 7, None, None),
            ]
        );
    }
}
