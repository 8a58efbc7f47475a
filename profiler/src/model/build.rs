//! Records → [`TraceModel`]: pairing begins with ends, resolving names and threads,
//! linking launches, kernels, operators and flows, and filtering by the options.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use runtime_hooks::{
    Event, FlowKind, NameId, OperatorPayload, Phase, Record, RecordKind, RuntimeCallKind,
    ThreadStats,
};

use super::{
    Collective, CounterSample, DeviceKind, DeviceSpan, DmaSpan, Flow, FlowPoint, HostKind,
    HostSpan, HostThread, Instruction, MemoryChange, SyncKind, SyncSpan, TraceModel,
    EVENT_RECORD_NAME, STREAM_WAIT_NAME,
};
use crate::config::{Activity, DeviceDetail, ProfilerConfig};

/// The name user ranges are recorded under for `ProfilerStep#N` (N in the value).
pub(crate) const PROFILER_STEP: &str = "ProfilerStep";

/// Resolves name ids once each.
#[derive(Default)]
struct Names(HashMap<NameId, Arc<str>>);

impl Names {
    fn get(&mut self, name_id: NameId) -> Arc<str> {
        self.0
            .entry(name_id)
            .or_insert_with(|| {
                runtime_hooks::resolve(name_id)
                    .unwrap_or_else(|| Arc::from(format!("<name {}>", name_id.as_u32())))
            })
            .clone()
    }

    fn opt(&mut self, name_id: NameId) -> Option<Arc<str>> {
        (!name_id.is_none()).then(|| self.get(name_id))
    }
}

/// A begin waiting for its end.
struct Open {
    record: Record,
}

/// Builds the model of one window from its records (each thread's in recording order).
pub(crate) fn build(
    records: &[Record],
    threads: &[ThreadStats],
    config: &ProfilerConfig,
    dropped_records: u64,
) -> TraceModel {
    let cpu = config.has(Activity::Cpu);
    let neuron = config.has(Activity::Neuron);
    let instructions = neuron && config.device_detail == DeviceDetail::Instructions;
    let os_tid: HashMap<u32, (u64, Option<String>)> = threads
        .iter()
        .map(|t| {
            let tid = if t.os_tid == 0 {
                u64::from(t.thread_id)
            } else {
                t.os_tid
            };
            (t.thread_id, (tid, t.thread_name.clone()))
        })
        .collect();
    let tid_of = |thread_id: u32| os_tid.get(&thread_id).map_or(u64::from(thread_id), |t| t.0);

    let mut names = Names::default();
    let mut model = TraceModel {
        dropped_records,
        ..TraceModel::default()
    };
    let mut open: HashMap<(u32, u8), Vec<Open>> = HashMap::new();
    let mut flow_starts: HashMap<(u16, u64), (u64, u64)> = HashMap::new();
    let mut flow_ends: Vec<(FlowKind, u64, u64, u64)> = Vec::new();
    let mut busy: HashMap<(u16, u64), BTreeMap<u8, u64>> = HashMap::new();
    let mut collectives: Vec<DeviceSpan> = Vec::new();

    for record in records {
        let (Some(event), Some(phase)) = (record.event(), record.phase()) else {
            model.unpaired_records += 1;
            continue;
        };
        let tid = tid_of(record.thread_id);
        // Begin/End pairs: host operators, user ranges, host collectives.
        if matches!(phase, Phase::Begin | Phase::End) && record.kind() != Some(RecordKind::Flow) {
            let key = (record.thread_id, record.kind);
            if phase == Phase::Begin {
                open.entry(key).or_default().push(Open { record: *record });
                continue;
            }
            // The innermost open begin with the same name: ranges that cross (a
            // `record_function` alive across `step()`) still pair by name.
            let name_of = |r: &Record| r.payload_words()[0] as u32;
            let begin = open.get_mut(&key).and_then(|stack| {
                let at = stack
                    .iter()
                    .rposition(|o| name_of(&o.record) == name_of(record))?;
                Some(stack.remove(at))
            });
            let Some(begin) = begin else {
                // Its begin was before the window.
                model.unpaired_records += 1;
                continue;
            };
            let Some(span) = host_span(&begin.record, record, tid, &mut names) else {
                continue;
            };
            let keep = match span.kind {
                HostKind::Operator | HostKind::UserRange | HostKind::Collective => cpu,
                HostKind::Runtime(_) => neuron,
            };
            if keep {
                model.host.push(span);
            }
            continue;
        }
        match event {
            Event::RuntimeCall(kind, p) if neuron => model.host.push(HostSpan {
                kind: HostKind::Runtime(kind),
                name: names.get(p.name_id),
                tid,
                start_ns: record.start_ns,
                end_ns: record.end_ns.max(record.start_ns),
                corr_id: p.corr_id,
                external_id: 0,
                record_function_id: 0,
                seq_nr: 0,
                fwd_tid: 0,
                flops: 0,
                bytes: p.bytes,
                input_sig: None,
                parent: None,
                device: Some(p.device),
                collective: None,
            }),
            Event::Kernel(p) if neuron => {
                let name = names.get(p.name_id);
                let sync = match &*name {
                    EVENT_RECORD_NAME => Some(SyncKind::EventRecord),
                    STREAM_WAIT_NAME => Some(SyncKind::StreamWait),
                    _ => None,
                };
                if let Some(kind) = sync {
                    model.syncs.push(SyncSpan {
                        kind,
                        device: p.device,
                        queue: p.queue,
                        start_ns: record.start_ns,
                        end_ns: record.end_ns.max(record.start_ns),
                        corr_id: p.corr_id,
                        paired: None,
                    });
                    continue;
                }
                let kind = if name.starts_with("Memcpy") {
                    DeviceKind::Memcpy
                } else if name.starts_with("Memset") {
                    DeviceKind::Memset
                } else {
                    DeviceKind::Kernel
                };
                model
                    .device
                    .push(device_span(kind, name, record, p.device, p.queue));
                let span = model.device.last_mut().expect("just pushed");
                (span.corr_id, span.flops, span.bytes) = (p.corr_id, p.flops, p.bytes);
            }
            Event::Collective(op, p) if neuron => {
                let mut collective = Collective::new(op, &p, names.get(p.group_name_id));
                collective.group_ranks = names.opt(p.group_ranks_id);
                let name: Arc<str> = Arc::from(collective.kernel_name());
                let mut span = device_span(DeviceKind::Collective, name, record, p.device, p.queue);
                span.corr_id = p.corr_id;
                span.bytes = p.bytes;
                span.collective = Some(collective);
                collectives.push(span);
            }
            Event::Instruction(p) => {
                let is_wait = names.get(p.name_id).as_ref() == "semaphore_wait";
                if !is_wait {
                    *busy
                        .entry((p.device, p.corr_id))
                        .or_default()
                        .entry(p.engine)
                        .or_default() += record.dur_ns();
                }
                if instructions {
                    model.instructions.push(Instruction {
                        name: names.get(p.name_id),
                        device: p.device,
                        core: p.core,
                        engine: p.engine,
                        start_ns: record.start_ns,
                        end_ns: record.end_ns.max(record.start_ns),
                        corr_id: p.corr_id,
                        flops: p.flops,
                    });
                }
            }
            Event::Dma(direction, p) if instructions => model.dmas.push(DmaSpan {
                direction,
                device: p.device,
                queue: p.queue,
                start_ns: record.start_ns,
                end_ns: record.end_ns.max(record.start_ns),
                corr_id: p.corr_id,
                bytes: p.bytes,
            }),
            Event::Memory(action, p) if config.profile_memory => {
                let signed = i64::try_from(p.bytes).unwrap_or(i64::MAX);
                model.memory.push(MemoryChange {
                    tid,
                    ts_ns: record.start_ns,
                    device: p.device,
                    addr: p.addr,
                    bytes: match action {
                        runtime_hooks::MemoryAction::Allocate => signed,
                        runtime_hooks::MemoryAction::Free => -signed,
                    },
                    total_allocated_bytes: p.total_allocated_bytes,
                    total_reserved_bytes: p.total_reserved_bytes,
                    category: names.opt(p.category_id),
                });
            }
            Event::Counter(p) if neuron => model.counters.push(CounterSample {
                device: p.device,
                name: names.get(p.name_id),
                ts_ns: record.start_ns,
                series: vec![("value", p.value)],
            }),
            Event::Flow(kind, p) => match phase {
                Phase::Begin => {
                    flow_starts.insert((kind.raw(), p.flow_id), (tid, record.start_ns));
                }
                _ => flow_ends.push((kind, p.flow_id, tid, record.start_ns)),
            },
            _ => {}
        }
    }
    model.unpaired_records += open.values().map(|v| v.len() as u64).sum::<u64>();
    merge_collectives(&mut model.device, collectives);

    link_host(&mut model.host);
    link_device(&mut model, &busy);
    number_collectives(&mut model);
    if cpu || neuron {
        model.flows = flows(&model, &flow_starts, &flow_ends, cpu, neuron);
    }
    if neuron {
        pair_stream_waits(&mut model);
    }
    if neuron {
        queue_depth_counters(&mut model);
    }
    if config.profile_memory {
        memory_counters(&mut model);
    }
    model.threads = host_threads(&model, &os_tid);
    model
}

fn device_span(
    kind: DeviceKind,
    name: Arc<str>,
    r: &Record,
    device: u16,
    queue: u16,
) -> DeviceSpan {
    DeviceSpan {
        kind,
        name,
        device,
        queue,
        start_ns: r.start_ns,
        end_ns: r.end_ns.max(r.start_ns),
        corr_id: 0,
        external_id: 0,
        host_span: None,
        launch: None,
        flops: 0,
        bytes: 0,
        engine_busy_ns: Vec::new(),
        collective: None,
    }
}

/// A device records a collective as a kernel (its name, timing, launch flow) plus a
/// collective record with the same correlation id: the collective's args go onto that
/// kernel. A collective without such a kernel becomes a kernel of its own.
fn merge_collectives(device: &mut Vec<DeviceSpan>, collectives: Vec<DeviceSpan>) {
    let kernels: HashMap<(u16, u64), usize> = device
        .iter()
        .enumerate()
        .filter(|(_, d)| d.corr_id != 0)
        .map(|(i, d)| ((d.device, d.corr_id), i))
        .collect();
    for c in collectives {
        match kernels.get(&(c.device, c.corr_id)) {
            Some(&i) if c.corr_id != 0 => {
                device[i].kind = DeviceKind::Collective;
                device[i].collective = c.collective;
            }
            _ => device.push(c),
        }
    }
}

/// A host span from a begin record and its end record.
fn host_span(begin: &Record, end: &Record, tid: u64, names: &mut Names) -> Option<HostSpan> {
    let mut span = HostSpan {
        kind: HostKind::Operator,
        name: Arc::from(""),
        tid,
        start_ns: begin.start_ns,
        end_ns: end.start_ns.max(begin.start_ns),
        corr_id: 0,
        external_id: 0,
        record_function_id: 0,
        seq_nr: 0,
        fwd_tid: 0,
        flops: 0,
        bytes: 0,
        input_sig: None,
        parent: None,
        device: None,
        collective: None,
    };
    match begin.event()? {
        Event::Operator(p) => {
            span.name = names.get(p.name_id);
            span.corr_id = p.corr_id;
            span.seq_nr = p.seq_nr;
            span.flops = p.flops;
            span.bytes = p.bytes;
            span.input_sig = names.opt(p.input_sig_id).and_then(|sig| {
                let (dims, types) = OperatorPayload::split_input_sig(&sig)?;
                Some((Arc::from(dims), Arc::from(types)))
            });
        }
        Event::UserRange(p) => {
            span.kind = HostKind::UserRange;
            let name = names.get(p.name_id);
            span.name = if name.as_ref() == PROFILER_STEP {
                Arc::from(format!("{PROFILER_STEP}#{}", p.value))
            } else {
                name
            };
            span.corr_id = p.corr_id;
        }
        Event::Collective(op, p) => {
            span.kind = HostKind::Collective;
            span.name = Arc::from("record_param_comms");
            span.corr_id = p.corr_id;
            span.bytes = p.bytes;
            span.device = Some(p.device);
            let mut collective = Collective::new(op, &p, names.get(p.group_name_id));
            collective.group_ranks = names.opt(p.group_ranks_id);
            span.collective = Some(collective);
        }
        _ => return None,
    }
    Some(span)
}

/// Sorts host spans by thread and time, finds each one's parent, and gives operators
/// their `External id`, `Record function id` and `Fwd thread id`.
fn link_host(host: &mut [HostSpan]) {
    // Outer spans first at equal starts: longer first, then operators before the
    // runtime calls they hold.
    let rank = |kind: HostKind| match kind {
        HostKind::UserRange => 0,
        HostKind::Operator | HostKind::Collective => 1,
        HostKind::Runtime(RuntimeCallKind::KernelLaunch) => 2,
        HostKind::Runtime(_) => 3,
    };
    host.sort_by(|a, b| {
        (a.tid, a.start_ns, std::cmp::Reverse(a.end_ns), rank(a.kind)).cmp(&(
            b.tid,
            b.start_ns,
            std::cmp::Reverse(b.end_ns),
            rank(b.kind),
        ))
    });
    let mut stack: Vec<usize> = Vec::new();
    let mut next_record_function_id = 1;
    let mut first_of_seq: HashMap<u64, u64> = HashMap::new();
    for i in 0..host.len() {
        while let Some(&top) = stack.last() {
            let outer = &host[top];
            if outer.tid == host[i].tid && host[i].start_ns < outer.end_ns {
                break;
            }
            stack.pop();
        }
        host[i].parent = stack.last().copied();
        if let Some(p) = host[i].parent {
            // A span that outlives the one it started in (a user range crossing a step
            // boundary) is clipped there: one track never holds partial overlaps.
            if host[i].end_ns > host[p].end_ns {
                host[i].end_ns = host[p].end_ns;
            }
        }
        match host[i].kind {
            HostKind::Operator | HostKind::UserRange | HostKind::Collective => {
                // A host collective shares its correlation id with the operator around
                // it; like `record_param_comms` in real traces it gets an id of its own.
                let own = host[i].kind != HostKind::Collective;
                host[i].external_id = if own && host[i].corr_id != 0 {
                    host[i].corr_id
                } else {
                    runtime_hooks::next_corr_id()
                };
                host[i].record_function_id = next_record_function_id;
                next_record_function_id += 1;
                if host[i].seq_nr != 0 {
                    // The first operator of a sequence number is the forward one.
                    host[i].fwd_tid = match first_of_seq.entry(host[i].seq_nr) {
                        Entry::Occupied(first) => *first.get(),
                        Entry::Vacant(slot) => {
                            slot.insert(host[i].tid);
                            0
                        }
                    };
                }
            }
            HostKind::Runtime(_) => {
                let mut up = host[i].parent;
                while let Some(p) = up {
                    if host[p].kind == HostKind::Operator {
                        host[i].external_id = host[p].external_id;
                        break;
                    }
                    up = host[p].parent;
                }
            }
        }
        stack.push(i);
    }
}

/// Links device spans to the operators and launches with their correlation id, and
/// adds engine busy time from their instructions.
fn link_device(model: &mut TraceModel, busy: &HashMap<(u16, u64), BTreeMap<u8, u64>>) {
    let mut ops: HashMap<u64, usize> = HashMap::new();
    let mut launches: HashMap<u64, usize> = HashMap::new();
    let mut host_collectives: HashMap<u64, usize> = HashMap::new();
    for (i, h) in model.host.iter().enumerate() {
        if h.corr_id == 0 {
            continue;
        }
        match h.kind {
            HostKind::Operator => {
                ops.entry(h.corr_id).or_insert(i);
            }
            HostKind::Collective => {
                host_collectives.entry(h.corr_id).or_insert(i);
            }
            HostKind::Runtime(RuntimeCallKind::KernelLaunch) => {
                launches.entry(h.corr_id).or_insert(i);
            }
            _ => {}
        }
    }
    for span in &mut model.device {
        if span.corr_id == 0 {
            continue;
        }
        if let Some(&op) = ops
            .get(&span.corr_id)
            .or_else(|| host_collectives.get(&span.corr_id))
        {
            span.external_id = model.host[op].external_id;
            span.host_span = Some(op);
        }
        if let Some(&launch) = launches.get(&span.corr_id) {
            let h = &model.host[launch];
            span.launch = Some((h.tid, h.start_ns));
            span.host_span = span.host_span.or(Some(launch));
        }
        if let Some(per_engine) = busy.get(&(span.device, span.corr_id)) {
            span.engine_busy_ns = per_engine.iter().map(|(&e, &ns)| (e, ns)).collect();
        }
    }
    model
        .device
        .sort_by_key(|d| (d.device, d.queue, d.start_ns, std::cmp::Reverse(d.end_ns)));
}

/// Gives collectives their `Seq` (order among this rank's collectives of a group) and
/// their group's ranks.
fn number_collectives(model: &mut TraceModel) {
    let mut device: Vec<&mut DeviceSpan> = model
        .device
        .iter_mut()
        .filter(|d| d.collective.is_some())
        .collect();
    device.sort_by_key(|d| d.start_ns);
    let mut seq: HashMap<Arc<str>, u64> = HashMap::new();
    for d in device {
        let c = d.collective.as_mut().expect("filtered");
        let n = seq.entry(c.group.clone()).or_default();
        c.seq = *n;
        *n += 1;
    }
    let mut seq: HashMap<Arc<str>, u64> = HashMap::new();
    let mut host: Vec<&mut HostSpan> = model
        .host
        .iter_mut()
        .filter(|h| h.collective.is_some())
        .collect();
    host.sort_by_key(|h| h.start_ns);
    for h in host {
        let c = h.collective.as_mut().expect("filtered");
        let n = seq.entry(c.group.clone()).or_default();
        c.seq = *n;
        *n += 1;
    }
}

/// Flows with both ends in the window. `ac2g` goes from the launch's start (Kineto puts
/// the `s` on the runtime event) to the kernel's start; `fwdbwd` from the forward
/// record to the backward one.
fn flows(
    model: &TraceModel,
    starts: &HashMap<(u16, u64), (u64, u64)>,
    ends: &[(FlowKind, u64, u64, u64)],
    cpu: bool,
    neuron: bool,
) -> Vec<Flow> {
    let kernels: HashMap<u64, &DeviceSpan> = model
        .device
        .iter()
        .filter(|d| d.corr_id != 0)
        .map(|d| (d.corr_id, d))
        .collect();
    let mut flows = Vec::new();
    for &(kind, flow_id, end_tid, end_ns) in ends {
        let Some(&(start_tid, start_ns)) = starts.get(&(kind.raw(), flow_id)) else {
            continue;
        };
        match kind {
            FlowKind::LaunchToKernel if neuron => {
                let Some(kernel) = kernels.get(&flow_id) else {
                    continue;
                };
                let (tid, ts_ns) = kernel.launch.unwrap_or((start_tid, start_ns));
                flows.push(Flow {
                    kind,
                    flow_id,
                    from: FlowPoint {
                        device: None,
                        tid,
                        ts_ns,
                    },
                    to: FlowPoint {
                        device: Some(kernel.device),
                        tid: u64::from(kernel.queue),
                        ts_ns: kernel.start_ns,
                    },
                });
            }
            FlowKind::ForwardToBackward if cpu => flows.push(Flow {
                kind,
                flow_id,
                from: FlowPoint {
                    device: None,
                    tid: start_tid,
                    ts_ns: start_ns,
                },
                to: FlowPoint {
                    device: None,
                    tid: end_tid,
                    ts_ns: end_ns,
                },
            }),
            _ => {}
        }
    }
    flows.sort_by_key(|f| (f.kind.raw(), f.from.ts_ns, f.flow_id));
    flows
}

/// Pairs each cross-queue wait with its event's record (same correlation id) and draws a
/// `StreamWait` flow from the record's mark to the wait.
fn pair_stream_waits(model: &mut TraceModel) {
    let records: HashMap<u64, usize> = model
        .syncs
        .iter()
        .enumerate()
        .filter(|(_, s)| s.kind == SyncKind::EventRecord)
        .map(|(i, s)| (s.corr_id, i))
        .collect();
    let mut flows = Vec::new();
    for i in 0..model.syncs.len() {
        let wait = &model.syncs[i];
        if wait.kind != SyncKind::StreamWait {
            continue;
        }
        let Some(&r) = records.get(&wait.corr_id) else {
            continue;
        };
        let record = &model.syncs[r];
        flows.push(Flow {
            kind: FlowKind::StreamWait,
            flow_id: wait.corr_id,
            from: FlowPoint {
                device: Some(record.device),
                tid: u64::from(record.queue),
                ts_ns: record.start_ns,
            },
            // At the wait's start, which lies inside the wait span (its end is where the
            // next kernel begins).
            to: FlowPoint {
                device: Some(wait.device),
                tid: u64::from(wait.queue),
                ts_ns: wait.start_ns,
            },
        });
        let (from, to) = ((record.device, record.queue), (wait.device, wait.queue));
        model.syncs[i].paired = Some(from);
        model.syncs[r].paired = Some(to);
    }
    model.flows.extend(flows);
}

/// `Queue depth (stream q)` counters: +1 at each launch, −1 when its kernel ends (HTA's
/// queue-length definition, `../shared/reference/hta-analyses.md`).
fn queue_depth_counters(model: &mut TraceModel) {
    let mut changes: BTreeMap<(u16, u16), Vec<(u64, i64)>> = BTreeMap::new();
    for d in &model.device {
        if let Some((_, launch_ns)) = d.launch {
            let list = changes.entry((d.device, d.queue)).or_default();
            list.push((launch_ns, 1));
            list.push((d.end_ns, -1));
        }
    }
    for ((device, queue), mut list) in changes {
        // At equal instants the ends count first.
        list.sort();
        let name: Arc<str> = Arc::from(format!("Queue depth (stream {queue})"));
        let mut depth = 0i64;
        let mut i = 0;
        while i < list.len() {
            let ts_ns = list[i].0;
            while i < list.len() && list[i].0 == ts_ns {
                depth += list[i].1;
                i += 1;
            }
            model.counters.push(CounterSample {
                device,
                name: name.clone(),
                ts_ns,
                series: vec![("depth", depth.max(0) as f64)],
            });
        }
    }
}

/// `HBM (bytes)` counters: allocated and reserved after each change.
fn memory_counters(model: &mut TraceModel) {
    let name: Arc<str> = Arc::from("HBM (bytes)");
    let mut samples: Vec<CounterSample> = model
        .memory
        .iter()
        .map(|m| CounterSample {
            device: m.device,
            name: name.clone(),
            ts_ns: m.ts_ns,
            series: vec![
                ("allocated", m.total_allocated_bytes as f64),
                ("reserved", m.total_reserved_bytes as f64),
            ],
        })
        .collect();
    samples.sort_by_key(|s| (s.device, s.ts_ns));
    model.counters.extend(samples);
}

/// Host threads with any host activity, by OS thread id.
fn host_threads(model: &TraceModel, os: &HashMap<u32, (u64, Option<String>)>) -> Vec<HostThread> {
    let mut tids: Vec<u64> = model.host.iter().map(|h| h.tid).collect();
    tids.extend(model.memory.iter().map(|m| m.tid));
    tids.extend(
        model
            .flows
            .iter()
            .flat_map(|f| [f.from, f.to])
            .filter(|p| p.device.is_none())
            .map(|p| p.tid),
    );
    tids.sort_unstable();
    tids.dedup();
    tids.into_iter()
        .map(|tid| HostThread {
            tid,
            name: os
                .values()
                .find(|(t, _)| *t == tid)
                .and_then(|(_, name)| name.clone()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use runtime_hooks::{KernelPayload, RangePayload, RuntimeCallPayload};

    fn rec(
        kind: RecordKind,
        phase: Phase,
        op: u16,
        t: (u64, u64),
        payload: impl Into<runtime_hooks::Payload>,
    ) -> Record {
        let mut r = Record::new(kind, phase, op, t.0, t.1, payload.into());
        r.thread_id = 7;
        r
    }

    fn thread() -> Vec<ThreadStats> {
        vec![ThreadStats {
            thread_id: 7,
            os_tid: 4242,
            thread_name: Some("main".to_owned()),
            recorded: 0,
            dropped: 0,
            drained: 0,
            capacity: 0,
            exited: false,
        }]
    }

    #[test]
    fn pairs_links_and_drops_what_has_no_partner() {
        let op = OperatorPayload {
            name_id: runtime_hooks::intern("build::test::op"),
            corr_id: 99,
            ..Default::default()
        };
        let stray = OperatorPayload {
            name_id: runtime_hooks::intern("build::test::stray"),
            ..Default::default()
        };
        let step = RangePayload {
            name_id: runtime_hooks::intern(PROFILER_STEP),
            value: 4,
            ..Default::default()
        };
        let launch = RuntimeCallPayload {
            name_id: runtime_hooks::intern("build::test::launch"),
            corr_id: 99,
            ..Default::default()
        };
        let kernel = KernelPayload {
            name_id: runtime_hooks::intern("build::test::kernel"),
            corr_id: 99,
            queue: 2,
            ..Default::default()
        };
        let records = [
            rec(RecordKind::Operator, Phase::End, 0, (5, 5), stray), // began before the window
            rec(RecordKind::UserRange, Phase::Begin, 0, (10, 10), step),
            rec(RecordKind::Operator, Phase::Begin, 0, (20, 20), op),
            rec(
                RecordKind::RuntimeCall,
                Phase::Complete,
                1,
                (30, 40),
                launch,
            ),
            rec(RecordKind::Kernel, Phase::Complete, 0, (50, 90), kernel),
            rec(RecordKind::Operator, Phase::End, 0, (45, 45), op),
            rec(RecordKind::UserRange, Phase::End, 0, (100, 100), step),
            rec(RecordKind::Operator, Phase::Begin, 0, (110, 110), stray), // never ends
        ];
        let model = build(&records, &thread(), &ProfilerConfig::default(), 3);
        assert_eq!(model.unpaired_records, 2);
        assert_eq!(model.dropped_records, 3);
        let names: Vec<&str> = model.host.iter().map(|h| &*h.name).collect();
        assert_eq!(
            names,
            ["ProfilerStep#4", "build::test::op", "build::test::launch"]
        );
        assert!(model.host.iter().all(|h| h.tid == 4242));
        let (step, op, launch) = (&model.host[0], &model.host[1], &model.host[2]);
        assert_eq!((op.parent, launch.parent), (Some(0), Some(1)));
        assert_eq!(op.external_id, 99);
        assert_eq!(
            launch.external_id, 99,
            "a launch carries its operator's External id"
        );
        assert_ne!(step.external_id, 0);
        let k = &model.device[0];
        assert_eq!(
            (k.external_id, k.host_span, k.launch),
            (99, Some(1), Some((4242, 30)))
        );
        assert_eq!(model.flows.len(), 0, "no flow records, no flows");
        let depth: Vec<(u64, f64)> = model
            .counters
            .iter()
            .map(|c| (c.ts_ns, c.series[0].1))
            .collect();
        assert_eq!(depth, [(30, 1.0), (90, 0.0)]);
        assert_eq!(
            model.threads,
            [HostThread {
                tid: 4242,
                name: Some("main".to_owned())
            }]
        );
    }
}
