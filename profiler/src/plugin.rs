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
//!
//! Engine instructions and DMA transfers ([`DeviceDetail::Instructions`]) are not
//! activities either: Kineto has no activity type for them (a plugin's activities are
//! written with their type's category, and PyTorch files every device activity of a
//! plugin into `key_averages()`, where engine rows would add their time to the
//! kernels'). They come back as [`PluginEngineRows`], which the plugin's host writes
//! into the trace file after PyTorch did (as `neuron_instruction` / `neuron_dma` rows on
//! the device's engine and DMA-queue tracks, exactly as this crate's own traces have
//! them: [`PluginEngineRows::events_between`]).

use std::sync::Arc;

use runtime_hooks::{clock::ClockAnchor, Record, RuntimeCallKind, ThreadStats};

use trace_format::{Args, Event};

use crate::config::{Activity, DeviceDetail, ProfilerConfig};
use crate::emit::{dma_event, engine_tracks, instruction_event};
use crate::model::{
    build, DeviceKind, DmaSpan, HostKind, Instruction, SyncKind, EVENT_RECORD_NAME,
    STREAM_WAIT_NAME,
};

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
    /// Engine instructions and DMA transfers (empty unless the window was converted
    /// with [`DeviceDetail::Instructions`]).
    pub engine_rows: PluginEngineRows,
}

/// The engine instructions and DMA transfers of a window, for the trace file (see the
/// module docs).
#[derive(Debug, Clone, Default)]
pub struct PluginEngineRows {
    instructions: Vec<Instruction>,
    dmas: Vec<DmaSpan>,
    anchor: Option<ClockAnchor>,
}

impl PluginEngineRows {
    /// Instructions and transfers held.
    pub fn len(&self) -> usize {
        self.instructions.len() + self.dmas.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keeps at most `max` rows (the earliest instructions first, then transfers);
    /// returns how many were let go.
    pub fn truncate(&mut self, max: usize) -> u64 {
        let before = self.len();
        self.instructions.truncate(max);
        self.dmas.truncate(max - self.instructions.len());
        (before - self.len()) as u64
    }

    /// The rows that start in `[from_unix_ns, to_unix_ns]`, as Kineto events
    /// (`neuron_instruction` and `neuron_dma`, with the args this crate's traces give
    /// them: device, core, engine, `kernel correlation`, flops, bytes), preceded by a
    /// `thread_name` and a `thread_sort_index` row for each of their tracks (stamped
    /// `from_unix_ns`); each goes to `write`. Returns the number of rows (metadata
    /// excluded).
    pub fn events_between(
        &self,
        from_unix_ns: i64,
        to_unix_ns: i64,
        mut write: impl FnMut(&Event<'_>),
    ) -> u64 {
        let Some(anchor) = self.anchor else {
            return 0;
        };
        let unix = |ns: u64| i64::try_from(anchor.to_unix_ns(ns)).unwrap_or(i64::MAX);
        let inside = |ns: u64| (from_unix_ns..=to_unix_ns).contains(&unix(ns));
        let instructions = self.instructions.iter().filter(|i| inside(i.start_ns));
        let dmas = self.dmas.iter().filter(|d| inside(d.start_ns));
        let config = ProfilerConfig::default();
        for (device, tid, name) in engine_tracks(instructions.clone(), dmas.clone(), &config) {
            let (pid, tid) = (i64::from(device), tid as i64);
            let row = |kind: &'static str, args: Args<'static>| {
                Event::metadata(kind, pid, tid, from_unix_ns, args)
            };
            write(&row("thread_name", Args::new().with("name", name)));
            write(&row(
                "thread_sort_index",
                Args::new().with("sort_index", tid),
            ));
        }
        let mut rows = 0;
        for i in instructions {
            write(&instruction_event(i, &config, &unix));
            rows += 1;
        }
        for d in dmas {
            write(&dma_event(d, &unix));
            rows += 1;
        }
        rows
    }
}

/// Converts drained records (with the threads' statistics, for OS thread ids) into the
/// window's runtime calls and device activities; `anchor` turns the process timeline
/// into wall time ([`runtime_hooks::clock::anchor`]). With
/// [`DeviceDetail::Instructions`], the window's engine instructions and DMA transfers
/// are kept too ([`PluginWindow::engine_rows`]).
pub fn plugin_window(
    records: &[Record],
    threads: &[ThreadStats],
    anchor: &ClockAnchor,
    detail: DeviceDetail,
) -> PluginWindow {
    let config = ProfilerConfig {
        activities: vec![Activity::Neuron],
        device_detail: detail,
        ..ProfilerConfig::default()
    };
    let mut model = build(records, threads, &config, 0);
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
    let engine_rows = PluginEngineRows {
        instructions: std::mem::take(&mut model.instructions),
        dmas: std::mem::take(&mut model.dmas),
        anchor: Some(*anchor),
    };
    PluginWindow {
        activities,
        unpaired_records: model.unpaired_records,
        engine_rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runtime_hooks::{DmaDirection, KernelPayload, RuntimeCallPayload};

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
        let window = plugin_window(&[sync, memory], &[], &anchor, DeviceDetail::Kernels);
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
        let window = plugin_window(&[launch, kernel], &[], &anchor, DeviceDetail::Kernels);
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
    fn engine_rows_are_kept_apart_from_the_activities_with_instruction_detail() {
        let anchor = ClockAnchor {
            monotonic_ns: 0,
            unix_ns: 1_700_000_000_000_000_000,
        };
        let kernel = Record::new(
            runtime_hooks::RecordKind::Kernel,
            runtime_hooks::Phase::Complete,
            0,
            3_000,
            4_000,
            KernelPayload {
                name_id: runtime_hooks::intern("graph_0_0_forward"),
                corr_id: 9,
                ..Default::default()
            }
            .into(),
        );
        let instruction = |engine: u8, span: (u64, u64)| {
            Record::new(
                runtime_hooks::RecordKind::Instruction,
                runtime_hooks::Phase::Complete,
                0,
                span.0,
                span.1,
                runtime_hooks::InstructionPayload {
                    name_id: runtime_hooks::intern("matmul"),
                    engine,
                    corr_id: 9,
                    flops: 4096,
                    ..Default::default()
                }
                .into(),
            )
        };
        let dma = Record::new(
            runtime_hooks::RecordKind::Dma,
            runtime_hooks::Phase::Complete,
            DmaDirection::HostToDevice as u16,
            3_000,
            3_400,
            runtime_hooks::DmaPayload {
                queue: 3,
                corr_id: 9,
                bytes: 4_000,
                ..Default::default()
            }
            .into(),
        );
        let records = [
            kernel,
            instruction(0, (3_100, 3_600)),
            instruction(1, (3_600, 3_900)),
            dma,
        ];
        let kernels_only = plugin_window(&records, &[], &anchor, DeviceDetail::Kernels);
        assert!(kernels_only.engine_rows.is_empty());
        let window = plugin_window(&records, &[], &anchor, DeviceDetail::Instructions);
        // The activities are the same either way: engine rows are no Kineto activity.
        assert_eq!(window.activities.len(), kernels_only.activities.len());
        assert_eq!(window.engine_rows.len(), 3);
        let t0 = 1_700_000_000_000_000_000i64;
        let mut events = Vec::new();
        let rows = window
            .engine_rows
            .events_between(t0 + 3_000, t0 + 4_000, |e| {
                events.push(e.clone().into_owned())
            });
        assert_eq!(rows, 3);
        let names: Vec<(String, Option<String>)> = events
            .iter()
            .map(|e| {
                (
                    e.name.as_deref().unwrap_or("").to_owned(),
                    e.category.as_ref().map(|c| c.as_str().to_owned()),
                )
            })
            .collect();
        // Two engine tracks and one DMA queue, each named, then the rows.
        assert_eq!(
            names.iter().filter(|(n, _)| n == "thread_name").count(),
            3,
            "{names:?}"
        );
        let cats: Vec<&str> = names.iter().filter_map(|(_, c)| c.as_deref()).collect();
        assert_eq!(
            cats,
            ["neuron_instruction", "neuron_instruction", "neuron_dma"]
        );
        let first = events
            .iter()
            .find(|e| e.name.as_deref() == Some("matmul"))
            .unwrap();
        assert_eq!(first.ts_ns, Some(t0 + 3_100));
        assert_eq!(first.tid.as_ref().and_then(|t| t.as_i64()), Some(1_000));
        // Outside the range: nothing.
        assert_eq!(window.engine_rows.events_between(t0, t0 + 2_999, |_| {}), 0);
        let mut truncated = window.engine_rows.clone();
        assert_eq!(truncated.truncate(2), 1);
        assert_eq!(truncated.len(), 2);
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
        let window = plugin_window(&records, &[], &anchor, DeviceDetail::Kernels);
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
