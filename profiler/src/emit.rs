//! [`TraceModel`] → Kineto JSON, following `../shared/reference/kineto-format.md` and
//! DESIGN.md's "Kineto conventions for neuron activity".
//!
//! Tracks (pid, tid):
//! - host: pid = OS process id, tid = OS thread id: `cpu_op`, `user_annotation`,
//!   `privateuse1_runtime`, `[memory]` instants, flow starts;
//! - device `d`: pid = `d`, tid = execution queue: `kernel`, `gpu_memcpy`, `gpu_memset`
//!   and collectives; tid = [`ENGINE_TID_BASE`] + 100 × core + engine: `neuron_instruction`;
//!   tid = [`DMA_TID_BASE`] + DMA queue: `neuron_dma`; counters (`C`) on the device pid.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::io::{self, Write};

use runtime_hooks::{clock::ClockAnchor, DmaDirection, FlowKind, RuntimeCallKind};
use trace_format::{ArgValue, Args, Category, Event, FlowEnd, RawJson, TraceMeta, TraceWriter};

use crate::config::{DeviceInfo, ProfilerConfig};
use crate::model::{
    device_annotations, Collective, DeviceKind, DmaSpan, HostKind, HostSpan, Instruction, SyncKind,
    TraceModel, EVENT_RECORD_NAME, STREAM_WAIT_NAME,
};

/// First tid of the engine-instruction tracks of a device: 1000 + 100 × core + engine.
pub const ENGINE_TID_BASE: u64 = 1_000;
/// First tid of the DMA-queue tracks of a device: 10000 + DMA queue.
pub const DMA_TID_BASE: u64 = 10_000;
/// Category of engine instructions and semaphore waits (not `kernel`, so tools that
/// only know kernels are not confused by them).
pub const INSTRUCTION_CATEGORY: &str = "neuron_instruction";
/// Category of DMA transfers.
pub const DMA_CATEGORY: &str = "neuron_dma";
/// Category of device counters (HBM, queue depth).
pub const COUNTER_CATEGORY: &str = "neuron_counters";
/// Top-level metadata key holding the number of records lost in the window.
pub const DROPPED_RECORDS_KEY: &str = "dropped_records";
/// `Device Type` of `[memory]` events: `c10::DeviceType::PrivateUse1`.
pub const PRIVATEUSE1_DEVICE_TYPE: i64 = 20;
/// Kineto's process sort index of device 0 (device `n` gets this + `n`, as in real
/// CUDA traces).
const DEVICE_SORT_BASE: i64 = 16_777_216;
/// Kineto floors wall time to this many seconds for `baseTimeNanoseconds`.
const BASE_TIME_INTERVAL_S: u64 = 7_889_238;

/// Where and when a window was recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Window {
    /// Index of the window in its session (the `N` of `PyTorch Profiler (N)`).
    pub(crate) index: u64,
    pub(crate) start_ns: u64,
    pub(crate) end_ns: u64,
    pub(crate) anchor: ClockAnchor,
}

impl Window {
    fn unix_ns(&self, timeline_ns: u64) -> i64 {
        i64::try_from(self.anchor.to_unix_ns(timeline_ns)).unwrap_or(i64::MAX)
    }

    /// `baseTimeNanoseconds`: the window start on the wall clock, floored like Kineto.
    pub(crate) fn base_time_ns(&self) -> i64 {
        let interval_ns = BASE_TIME_INTERVAL_S * 1_000_000_000;
        let start = self.anchor.to_unix_ns(self.start_ns);
        i64::try_from(start / interval_ns * interval_ns).unwrap_or(0)
    }
}

/// The trace's top-level metadata.
pub(crate) fn metadata(
    model: &TraceModel,
    config: &ProfilerConfig,
    window: &Window,
    trace_name: Option<&str>,
) -> TraceMeta {
    let mut meta = TraceMeta::kineto(Some(window.base_time_ns()));
    let devices: Vec<serde_json::Value> =
        config.devices.iter().map(DeviceInfo::properties).collect();
    // Devices with activity but no description still get an entry with their id.
    let described: BTreeSet<u16> = config.devices.iter().map(|d| d.index).collect();
    let mut devices = devices;
    for device in active_devices(model) {
        if !described.contains(&device) {
            devices.push(serde_json::json!({
                "id": device,
                "name": format!("NeuronCore {device}"),
                "deviceType": "neuron",
            }));
        }
    }
    if let Ok(raw) = RawJson::from_serialize(&devices) {
        meta.set_raw("deviceProperties", raw);
    }
    if config.record_shapes {
        meta.set_i64("record_shapes", 1);
    }
    if config.profile_memory {
        meta.set_i64("profile_memory", 1);
    }
    if config.with_flops {
        meta.set_i64("with_flops", 1);
    }
    if config.with_stack {
        meta.set_i64("with_stack", 1);
    }
    if let Some(d) = &config.distributed {
        let groups: Vec<serde_json::Value> = d
            .process_groups
            .iter()
            .map(|g| {
                serde_json::json!({
                    "pg_name": g.name,
                    "pg_desc": g.desc,
                    "backend_config": g.backend_config,
                    "pg_size": g.ranks.len(),
                    "ranks": g.ranks,
                })
            })
            .collect();
        let info = serde_json::json!({
            "backend": d.backend,
            "rank": d.rank,
            "world_size": d.world_size,
            "pg_count": d.process_groups.len(),
            "pg_config": groups,
        });
        // serde_json keeps insertion order only with `preserve_order`; write the keys
        // in PyTorch's order by hand.
        let text = format!(
            "{{\"backend\": {}, \"rank\": {}, \"world_size\": {}, \"pg_count\": {}, \"pg_config\": {}}}",
            info["backend"], info["rank"], info["world_size"], info["pg_count"], info["pg_config"]
        );
        if let Ok(raw) = RawJson::parse(text) {
            meta.set_raw("distributedInfo", raw.into_owned());
        }
    }
    if let Some(d) = &config.distributed {
        for (_, key, value) in config.rank_metadata.iter().filter(|(r, _, _)| *r == d.rank) {
            if let Ok(raw) = RawJson::from_serialize(value) {
                meta.set_raw(key, raw);
            }
        }
    }
    meta.set_str("neuron_device_detail", config.device_detail.as_str());
    meta.set_i64(
        DROPPED_RECORDS_KEY,
        i64::try_from(model.dropped_records).unwrap_or(i64::MAX),
    );
    if let Some(name) = trace_name {
        meta.set_str("traceName", name);
    }
    meta
}

/// Devices with any activity in the window, in index order.
fn active_devices(model: &TraceModel) -> BTreeSet<u16> {
    let mut devices: BTreeSet<u16> = model.device.iter().map(|d| d.device).collect();
    devices.extend(model.instructions.iter().map(|i| i.device));
    devices.extend(model.dmas.iter().map(|d| d.device));
    devices.extend(model.counters.iter().map(|c| c.device));
    devices
}

/// Writes every event of the window into `writer`.
pub(crate) fn write_events<W: Write>(
    writer: &mut TraceWriter<W>,
    model: &TraceModel,
    config: &ProfilerConfig,
    window: &Window,
) -> io::Result<()> {
    let pid = i64::from(std::process::id());
    for event in metadata_rows(model, config, window, pid) {
        writer.write_event(&event)?;
    }
    writer.write_event(
        &Event::complete(
            Category::Trace,
            format!("PyTorch Profiler ({})", window.index),
            "Spans",
            "PyTorch Profiler",
            window.unix_ns(window.start_ns),
            window.end_ns.saturating_sub(window.start_ns) as i64,
        )
        .with_arg("Op count", 0i64),
    )?;
    for span in &model.host {
        writer.write_event(&host_event(span, config, window, pid))?;
    }
    // Before the device spans: an annotation covering exactly one kernel is its parent.
    for a in device_annotations(model) {
        let mut e = Event::complete(
            Category::GpuUserAnnotation,
            a.name.to_string(),
            i64::from(a.device),
            i64::from(a.queue),
            window.unix_ns(a.start_ns),
            (a.end_ns - a.start_ns) as i64,
        );
        if a.external_id != 0 {
            e = e.with_arg("External id", a.external_id);
        }
        writer.write_event(&e)?;
    }
    for span in &model.device {
        let category = match span.kind {
            DeviceKind::Kernel | DeviceKind::Collective => Category::Kernel,
            DeviceKind::Memcpy => Category::GpuMemcpy,
            DeviceKind::Memset => Category::GpuMemset,
        };
        let mut e = Event::complete(
            category,
            span.name.to_string(),
            i64::from(span.device),
            i64::from(span.queue),
            window.unix_ns(span.start_ns),
            span.dur_ns() as i64,
        );
        if span.external_id != 0 {
            e = e.with_arg("External id", span.external_id);
        }
        e = e
            .with_arg("device", i64::from(span.device))
            .with_arg("stream", i64::from(span.queue))
            .with_arg("correlation", span.corr_id);
        if span.flops > 0 {
            e = e.with_arg("flops", span.flops);
        }
        if span.bytes > 0 {
            e = e.with_arg("bytes", span.bytes);
            if span.kind != DeviceKind::Kernel && span.dur_ns() > 0 {
                // Bytes per ns are GB/s.
                let gb_per_sec = span.bytes as f64 / span.dur_ns() as f64;
                e = e.with_arg("memory bandwidth (GB/s)", round3(gb_per_sec));
            }
        }
        for &(engine, busy_ns) in &span.engine_busy_ns {
            let name = engine_name(config, span.device, engine);
            e = e.with_arg(format!("{name} busy (ns)"), busy_ns);
        }
        if let Some(c) = &span.collective {
            e = collective_args(e, c, config);
        }
        writer.write_event(&e)?;
    }
    for sync in &model.syncs {
        // Device annotations, as the Kineto plugin hands them to PyTorch (which knows
        // no device for a plugin's `cuda_sync`/`cuda_event`), without `stream` and
        // `correlation` args: tools that take any event with both for a kernel (HTA)
        // must not count a wait as device work.
        let name = match sync.kind {
            SyncKind::EventRecord => EVENT_RECORD_NAME,
            SyncKind::StreamWait => STREAM_WAIT_NAME,
        };
        let mut e = Event::complete(
            Category::GpuUserAnnotation,
            name.to_owned(),
            i64::from(sync.device),
            i64::from(sync.queue),
            window.unix_ns(sync.start_ns),
            (sync.end_ns - sync.start_ns) as i64,
        )
        .with_arg("device", i64::from(sync.device));
        e = match (sync.kind, sync.paired) {
            (SyncKind::StreamWait, Some((device, queue))) => e
                .with_arg("wait_on_device", i64::from(device))
                .with_arg("wait_on_stream", i64::from(queue))
                .with_arg("wait_on_event_record_corr_id", sync.corr_id),
            (SyncKind::StreamWait, None) => {
                e.with_arg("wait_on_event_record_corr_id", sync.corr_id)
            }
            (SyncKind::EventRecord, _) => e.with_arg("event_record_corr_id", sync.corr_id),
        };
        writer.write_event(&e)?;
    }
    let unix = |ns: u64| window.unix_ns(ns);
    for i in &model.instructions {
        writer.write_event(&instruction_event(i, config, &unix))?;
    }
    for d in &model.dmas {
        writer.write_event(&dma_event(d, &unix))?;
    }
    for m in &model.memory {
        let mut e = Event::instant(
            Some(Category::CpuInstantEvent),
            "[memory]",
            "t",
            pid,
            m.tid as i64,
            window.unix_ns(m.ts_ns),
        )
        .with_arg("Total Reserved", m.total_reserved_bytes)
        .with_arg("Total Allocated", m.total_allocated_bytes)
        .with_arg("Bytes", m.bytes)
        .with_arg("Device Id", i64::from(m.device))
        .with_arg("Device Type", PRIVATEUSE1_DEVICE_TYPE)
        .with_arg("Addr", m.addr);
        if let Some(category) = &m.category {
            e = e.with_arg("Category", category.to_string());
        }
        writer.write_event(&e)?;
    }
    for c in &model.counters {
        let mut args = Args::new();
        for &(series, value) in &c.series {
            args.push(series, value);
        }
        let mut e = Event::new(trace_format::Phase::Counter);
        e.category = Some(Category::Other(Cow::Borrowed(COUNTER_CATEGORY)));
        e.name = Some(Cow::Owned(c.name.to_string()));
        e.pid = Some(i64::from(c.device).into());
        e.tid = Some(0i64.into());
        e.ts_ns = Some(window.unix_ns(c.ts_ns));
        e.args = Some(args);
        writer.write_event(&e)?;
    }
    for f in &model.flows {
        let category = match f.kind {
            FlowKind::ForwardToBackward => Category::Fwdbwd,
            _ => Category::Ac2g,
        };
        let flow_id = i64::try_from(f.flow_id).unwrap_or(i64::MAX);
        for (end, point) in [(FlowEnd::Start, f.from), (FlowEnd::Finish, f.to)] {
            let point_pid = point.device.map_or(pid, i64::from);
            writer.write_event(&Event::flow(
                end,
                category.clone(),
                flow_id,
                point_pid,
                point.tid as i64,
                window.unix_ns(point.ts_ns),
            ))?;
        }
    }
    writer.write_event(&Event::instant(
        None,
        "Record Window End",
        "g",
        "",
        "",
        window.unix_ns(window.end_ns),
    ))
}

fn round3(value: f64) -> f64 {
    (value * 1000.0).round() / 1000.0
}

/// An engine instruction as a `neuron_instruction` row on its engine's track
/// (`unix_ns`: the window's timeline onto the Unix epoch).
pub(crate) fn instruction_event<'a>(
    i: &'a Instruction,
    config: &ProfilerConfig,
    unix_ns: &dyn Fn(u64) -> i64,
) -> Event<'a> {
    let mut e = Event::complete(
        Category::Other(Cow::Borrowed(INSTRUCTION_CATEGORY)),
        i.name.to_string(),
        i64::from(i.device),
        engine_tid(i.core, i.engine) as i64,
        unix_ns(i.start_ns),
        (i.end_ns - i.start_ns) as i64,
    )
    .with_arg("device", i64::from(i.device))
    .with_arg("core", i64::from(i.core))
    .with_arg("engine", engine_name(config, i.device, i.engine))
    .with_arg("kernel correlation", i.corr_id);
    if i.flops > 0 {
        e = e.with_arg("flops", i.flops);
    }
    e
}

/// A DMA transfer as a `neuron_dma` row on its queue's track.
pub(crate) fn dma_event(d: &DmaSpan, unix_ns: &dyn Fn(u64) -> i64) -> Event<'static> {
    let dur_ns = d.end_ns - d.start_ns;
    let mut e = Event::complete(
        Category::Other(Cow::Borrowed(DMA_CATEGORY)),
        format!("dma {}", direction_name(d.direction)),
        i64::from(d.device),
        (DMA_TID_BASE + u64::from(d.queue)) as i64,
        unix_ns(d.start_ns),
        dur_ns as i64,
    )
    .with_arg("device", i64::from(d.device))
    .with_arg("dma queue", i64::from(d.queue))
    .with_arg("kernel correlation", d.corr_id)
    .with_arg("bytes", d.bytes);
    if dur_ns > 0 {
        e = e.with_arg(
            "memory bandwidth (GB/s)",
            round3(d.bytes as f64 / dur_ns as f64),
        );
    }
    e
}

/// The engine and DMA-queue tracks of `instructions` and `dmas`: (device, tid, name);
/// an engine is named with its core on a device whose instructions use several.
pub(crate) fn engine_tracks<'a>(
    instructions: impl Iterator<Item = &'a Instruction> + Clone,
    dmas: impl Iterator<Item = &'a DmaSpan>,
    config: &ProfilerConfig,
) -> BTreeSet<(u16, u64, String)> {
    let multi_core: BTreeSet<u16> = instructions
        .clone()
        .filter(|i| i.core > 0)
        .map(|i| i.device)
        .collect();
    let mut tracks = BTreeSet::new();
    for i in instructions {
        let engine = engine_name(config, i.device, i.engine);
        let name = if multi_core.contains(&i.device) {
            format!("{engine} (core {})", i.core)
        } else {
            engine
        };
        tracks.insert((i.device, engine_tid(i.core, i.engine), name));
    }
    for d in dmas {
        tracks.insert((
            d.device,
            DMA_TID_BASE + u64::from(d.queue),
            format!("DMA queue {}", d.queue),
        ));
    }
    tracks
}

fn engine_tid(core: u8, engine: u8) -> u64 {
    ENGINE_TID_BASE + 100 * u64::from(core) + u64::from(engine)
}

fn engine_name(config: &ProfilerConfig, device: u16, engine: u8) -> String {
    match config.device(device) {
        Some(info) => info.engine_name(engine),
        None => crate::config::DeviceInfo::new(device, "").engine_name(engine),
    }
}

fn direction_name(direction: DmaDirection) -> &'static str {
    match direction {
        DmaDirection::HostToDevice => "HtoD",
        DmaDirection::DeviceToHost => "DtoH",
        DmaDirection::DeviceToDevice => "DtoD",
        DmaDirection::PeerToPeer => "PtoP",
    }
}

fn host_event<'a>(
    span: &'a HostSpan,
    config: &ProfilerConfig,
    window: &Window,
    pid: i64,
) -> Event<'a> {
    let category = match span.kind {
        HostKind::Operator | HostKind::Collective => Category::CpuOp,
        HostKind::UserRange => Category::UserAnnotation,
        HostKind::Runtime(_) => Category::PrivateUse1Runtime,
    };
    let mut e = Event::complete(
        category,
        &*span.name,
        pid,
        span.tid as i64,
        window.unix_ns(span.start_ns),
        span.dur_ns() as i64,
    );
    match span.kind {
        HostKind::Operator | HostKind::UserRange | HostKind::Collective => {
            e = e
                .with_arg("External id", span.external_id)
                .with_arg("Record function id", span.record_function_id);
            if span.seq_nr != 0 {
                e = e
                    .with_arg("Sequence number", span.seq_nr)
                    .with_arg("Fwd thread id", span.fwd_tid);
            }
            if config.record_shapes {
                if let Some((dims, types)) = &span.input_sig {
                    if let (Ok(dims), Ok(types)) =
                        (RawJson::parse(&**dims), RawJson::parse(&**types))
                    {
                        e = e
                            .with_arg("Input Dims", ArgValue::Array(dims))
                            .with_arg("Input type", ArgValue::Array(types));
                    }
                }
            }
            if config.with_flops && span.flops > 0 {
                e = e.with_arg("flops", span.flops);
            }
            if let Some(c) = &span.collective {
                e = collective_args(e, c, config);
            }
        }
        HostKind::Runtime(kind) => {
            if span.external_id != 0 {
                e = e.with_arg("External id", span.external_id);
            }
            e = e.with_arg("correlation", span.corr_id);
            if let Some(device) = span.device {
                e = e.with_arg("device", i64::from(device));
            }
            if span.bytes > 0 && kind != RuntimeCallKind::KernelLaunch {
                e = e.with_arg("bytes", span.bytes);
            }
        }
    }
    e
}

/// The NCCL-style args of a collective (`kineto-format.md`, args, Collectives).
fn collective_args<'a>(e: Event<'a>, c: &Collective, config: &ProfilerConfig) -> Event<'a> {
    let group = config.distributed.as_ref().and_then(|d| d.group(&c.group));
    let ranks = c.group_ranks.as_ref().map(|r| r.to_string()).or_else(|| {
        group.map(|g| {
            let list: Vec<String> = g.ranks.iter().map(u32::to_string).collect();
            format!("[{}]", list.join(", "))
        })
    });
    let mut e = e
        .with_arg("Collective name", c.collective_name())
        .with_arg("In msg nelems", c.in_nelems())
        .with_arg("Out msg nelems", c.out_nelems())
        .with_arg("Group size", i64::from(c.group_size))
        .with_arg("dtype", crate::model::dtype_name(c.dtype))
        .with_arg("In split size", "[]")
        .with_arg("Out split size", "[]")
        .with_arg("Process Group Name", c.group.to_string());
    if let Some(g) = group {
        e = e.with_arg("Process Group Description", g.desc.clone());
    }
    if let Some(ranks) = ranks {
        e = e.with_arg("Process Group Ranks", ranks);
    }
    e = e.with_arg("Rank", i64::from(c.rank)).with_arg("Seq", c.seq);
    if let Some(algorithm) = c.algorithm_name() {
        e = e.with_arg("algorithm", algorithm);
    }
    e
}

/// `M` rows: host process and threads, then each device with its queues, engine tracks
/// and DMA queues, sorted so they show in that order.
fn metadata_rows(
    model: &TraceModel,
    config: &ProfilerConfig,
    window: &Window,
    pid: i64,
) -> Vec<Event<'static>> {
    let ts = window.unix_ns(window.start_ns);
    let row =
        |name: &'static str, pid: i64, tid: i64, key: &'static str, value: ArgValue<'static>| {
            Event::metadata(name, pid, tid, ts, Args::new().with(key, value))
        };
    let exe = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "neuronprof".to_owned());
    let mut rows = vec![
        row("process_name", pid, 0, "name", exe.clone().into()),
        row("process_labels", pid, 0, "labels", "CPU".into()),
        row("process_sort_index", pid, 0, "sort_index", pid.into()),
    ];
    for t in &model.threads {
        let tid = t.tid as i64;
        let name = t.name.clone().unwrap_or_else(|| exe.clone());
        rows.push(row(
            "thread_name",
            pid,
            tid,
            "name",
            format!("thread {tid} ({name})").into(),
        ));
        rows.push(row("thread_sort_index", pid, tid, "sort_index", tid.into()));
    }
    let mut devices: BTreeSet<u16> = config.devices.iter().map(|d| d.index).collect();
    let mut tracks: BTreeSet<(u16, u64, String)> = BTreeSet::new();
    for d in &model.device {
        devices.insert(d.device);
        let name = match config.device(d.device) {
            Some(info) => info.queue_name(d.queue),
            None => format!("stream {} ", d.queue),
        };
        tracks.insert((d.device, u64::from(d.queue), name));
    }
    devices.extend(model.instructions.iter().map(|i| i.device));
    devices.extend(model.dmas.iter().map(|d| d.device));
    tracks.extend(engine_tracks(
        model.instructions.iter(),
        model.dmas.iter(),
        config,
    ));
    devices.extend(model.counters.iter().map(|c| c.device));
    for device in devices {
        let dpid = i64::from(device);
        let name = match config.device(device) {
            Some(info) => info.process_name(),
            None => format!("NeuronCore {device}"),
        };
        rows.push(row("process_name", dpid, 0, "name", name.into()));
        rows.push(row(
            "process_labels",
            dpid,
            0,
            "labels",
            format!("neuron:{device}").into(),
        ));
        rows.push(row(
            "process_sort_index",
            dpid,
            0,
            "sort_index",
            (DEVICE_SORT_BASE + dpid).into(),
        ));
        for (_, tid, name) in tracks.iter().filter(|t| t.0 == device) {
            let tid = *tid as i64;
            rows.push(row("thread_name", dpid, tid, "name", name.clone().into()));
            rows.push(row(
                "thread_sort_index",
                dpid,
                tid,
                "sort_index",
                tid.into(),
            ));
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_time_is_floored_like_kineto() {
        let window = Window {
            index: 0,
            start_ns: 10,
            end_ns: 20,
            anchor: ClockAnchor {
                monotonic_ns: 0,
                unix_ns: 1_790_857_026_123_456_789,
            },
        };
        let base = window.base_time_ns();
        assert_eq!(base % (BASE_TIME_INTERVAL_S as i64 * 1_000_000_000), 0);
        assert!(base <= window.unix_ns(10));
        assert!(window.unix_ns(10) - base < BASE_TIME_INTERVAL_S as i64 * 1_000_000_000);
    }
}
