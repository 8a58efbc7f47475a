//! Memory timeline from `[memory]` events (HTA drops them): peaks, fragmentation, what
//! was live at the peak, and allocations never freed.
//!
//! Each `[memory]` instant carries the allocator's `Total Allocated` and `Total Reserved`
//! after the change, so peaks and fragmentation (reserved − allocated) come straight from
//! them. Live allocations are replayed by address (`Bytes` > 0 allocates `Addr`, < 0 frees
//! it); frees of addresses allocated before profiling started are counted apart.
//! Times are µs since the rank's first event.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::frame::step_number;
use crate::model::{MemoryEvent, RankTrace};

/// Allocations of one size class.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SizeBucket {
    /// `"< 1 KiB"`, `"1 KiB – 1 MiB"`, `"1 – 16 MiB"`, `"16 – 256 MiB"`, `">= 256 MiB"`.
    pub label: &'static str,
    /// Allocations.
    pub count: u64,
    /// Their bytes.
    pub bytes: i64,
}

/// One live allocation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Allocation {
    /// Address.
    pub addr: i64,
    /// Size.
    pub bytes: i64,
    /// When it was allocated, µs since the rank's first event.
    pub allocated_at_us: f64,
    /// The `ProfilerStep` it was allocated in.
    pub step: Option<i64>,
}

/// Allocations live at one moment.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LiveSet {
    /// Allocations.
    pub count: u64,
    /// Their bytes.
    pub bytes: i64,
    /// By size class (classes with none omitted).
    pub by_size: Vec<SizeBucket>,
    /// The largest ones (at most 10), largest first.
    pub largest: Vec<Allocation>,
}

/// Allocations made in a step and still live at its end.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepLeaks {
    /// The step number (`ProfilerStep#N`).
    pub step: i64,
    /// Allocations still live at the step's end.
    pub count: u64,
    /// Their bytes.
    pub bytes: i64,
}

/// The memory timeline of one device.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeviceMemory {
    /// `cpu`, `cuda:N`, `privateuse1:N` (the `neuron` device), or `type T:N`.
    pub device: String,
    /// `[memory]` events.
    pub events: u64,
    /// Allocations (`Bytes` > 0).
    pub allocations: u64,
    /// Frees (`Bytes` < 0).
    pub frees: u64,
    /// Frees of addresses not allocated while profiling.
    pub frees_of_unknown_allocations: u64,
    /// Largest `Total Allocated`.
    pub peak_allocated_bytes: i64,
    /// When it was first reached.
    pub peak_allocated_at_us: f64,
    /// The step it was reached in.
    pub peak_allocated_step: Option<i64>,
    /// Largest `Total Reserved`.
    pub peak_reserved_bytes: i64,
    /// The device's memory from `deviceProperties`, when known.
    pub capacity_bytes: Option<i64>,
    /// When it was first reached.
    pub peak_reserved_at_us: f64,
    /// Reserved − allocated at the allocated peak.
    pub fragmentation_at_peak_bytes: i64,
    /// Largest reserved − allocated.
    pub max_fragmentation_bytes: i64,
    /// When it was first reached.
    pub max_fragmentation_at_us: f64,
    /// Allocations live at the allocated peak (replayed from this trace's events).
    pub live_at_peak: LiveSet,
    /// Per step, allocations made in it and still live at its end.
    pub leaks_by_step: Vec<StepLeaks>,
    /// Allocations never freed by the end of the trace.
    pub never_freed: LiveSet,
}

/// The memory timeline of one rank. JSON: `{"rank", "devices": [DeviceMemory…]}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryTimeline {
    /// The rank.
    pub rank: i64,
    /// One entry per device seen, by (device type, id).
    pub devices: Vec<DeviceMemory>,
}

const BUCKETS: [(&str, i64); 5] = [
    ("< 1 KiB", 1 << 10),
    ("1 KiB – 1 MiB", 1 << 20),
    ("1 – 16 MiB", 16 << 20),
    ("16 – 256 MiB", 256 << 20),
    (">= 256 MiB", i64::MAX),
];

/// Builds the memory timeline of one rank (exact nanoseconds; no HTA counterpart).
pub fn memory_timeline(trace: &RankTrace) -> MemoryTimeline {
    let origin_ns = trace
        .min_ts_rel_ns
        .unwrap_or(0)
        .min(trace.memory.first().map_or(i64::MAX, |m| m.ts_rel_ns));
    let steps: Vec<(i64, i64, i64)> = trace
        .rows
        .iter()
        .filter_map(|r| {
            step_number(trace.name(r), true).map(|n| (r.ts_rel_ns, r.ts_rel_ns + r.dur_ns, n))
        })
        .collect();
    let mut by_device: BTreeMap<(i64, i64), Vec<&MemoryEvent>> = BTreeMap::new();
    for m in &trace.memory {
        by_device
            .entry((m.device_type, m.device_id))
            .or_default()
            .push(m);
    }
    let devices = by_device
        .into_iter()
        .map(|((device_type, device_id), events)| {
            let capacity = (device_type != 0)
                .then(|| {
                    trace
                        .device_memory_bytes
                        .iter()
                        .find(|d| d.0 == device_id)
                        .map(|d| d.1)
                })
                .flatten();
            device_memory(device_type, device_id, &events, &steps, origin_ns, capacity)
        })
        .collect();
    MemoryTimeline {
        rank: trace.rank,
        devices,
    }
}

fn step_at(steps: &[(i64, i64, i64)], ts_ns: i64) -> Option<i64> {
    steps
        .iter()
        .rev()
        .find(|(s, e, _)| *s <= ts_ns && ts_ns < *e)
        .map(|s| s.2)
}

fn device_name(device_type: i64, device_id: i64) -> String {
    match device_type {
        0 => "cpu".to_owned(),
        1 => format!("cuda:{device_id}"),
        20 => format!("privateuse1:{device_id}"),
        t => format!("type {t}:{device_id}"),
    }
}

fn device_memory(
    device_type: i64,
    device_id: i64,
    events: &[&MemoryEvent],
    steps: &[(i64, i64, i64)],
    origin_ns: i64,
    capacity_bytes: Option<i64>,
) -> DeviceMemory {
    let at_us = |ns: i64| (ns - origin_ns) as f64 / 1000.0;
    let first_max = |key: &dyn Fn(&MemoryEvent) -> i64| -> Option<usize> {
        let mut best: Option<usize> = None;
        for (i, e) in events.iter().enumerate() {
            if best.is_none_or(|b| key(e) > key(events[b])) {
                best = Some(i);
            }
        }
        best
    };
    let peak_alloc = first_max(&|e| e.total_allocated_bytes).unwrap_or(0);
    let peak_reserved = first_max(&|e| e.total_reserved_bytes).unwrap_or(0);
    let max_frag = first_max(&|e| e.total_reserved_bytes - e.total_allocated_bytes).unwrap_or(0);
    // Replay allocations by address; snapshot at the peak and at each step end.
    let mut live: HashMap<i64, Allocation> = HashMap::new();
    let mut unknown_frees = 0u64;
    let mut live_at_peak = LiveSet::default();
    let mut step_ends: Vec<(i64, i64)> = steps.iter().map(|s| (s.1, s.2)).collect();
    step_ends.sort_unstable();
    let mut next_step_end = 0;
    let mut leaks_by_step = Vec::new();
    let mut check_step_ends = |until_ns: i64, live: &HashMap<i64, Allocation>, next: &mut usize| {
        while *next < step_ends.len() && step_ends[*next].0 <= until_ns {
            let step = step_ends[*next].1;
            let leaked: Vec<&Allocation> = live.values().filter(|a| a.step == Some(step)).collect();
            leaks_by_step.push(StepLeaks {
                step,
                count: leaked.len() as u64,
                bytes: leaked.iter().map(|a| a.bytes).sum(),
            });
            *next += 1;
        }
    };
    for (i, e) in events.iter().enumerate() {
        check_step_ends(e.ts_rel_ns, &live, &mut next_step_end);
        if e.bytes > 0 {
            live.insert(
                e.addr,
                Allocation {
                    addr: e.addr,
                    bytes: e.bytes,
                    allocated_at_us: at_us(e.ts_rel_ns),
                    step: step_at(steps, e.ts_rel_ns),
                },
            );
        } else if e.bytes < 0 && live.remove(&e.addr).is_none() {
            unknown_frees += 1;
        }
        if i == peak_alloc {
            live_at_peak = live_set(live.values());
        }
    }
    check_step_ends(i64::MAX, &live, &mut next_step_end);
    let pa = events.get(peak_alloc);
    DeviceMemory {
        device: device_name(device_type, device_id),
        events: events.len() as u64,
        allocations: events.iter().filter(|e| e.bytes > 0).count() as u64,
        frees: events.iter().filter(|e| e.bytes < 0).count() as u64,
        frees_of_unknown_allocations: unknown_frees,
        peak_allocated_bytes: pa.map_or(0, |e| e.total_allocated_bytes),
        peak_allocated_at_us: pa.map_or(0.0, |e| at_us(e.ts_rel_ns)),
        peak_allocated_step: pa.and_then(|e| step_at(steps, e.ts_rel_ns)),
        peak_reserved_bytes: events
            .get(peak_reserved)
            .map_or(0, |e| e.total_reserved_bytes),
        capacity_bytes,
        peak_reserved_at_us: events
            .get(peak_reserved)
            .map_or(0.0, |e| at_us(e.ts_rel_ns)),
        fragmentation_at_peak_bytes: pa
            .map_or(0, |e| e.total_reserved_bytes - e.total_allocated_bytes),
        max_fragmentation_bytes: events
            .get(max_frag)
            .map_or(0, |e| e.total_reserved_bytes - e.total_allocated_bytes),
        max_fragmentation_at_us: events.get(max_frag).map_or(0.0, |e| at_us(e.ts_rel_ns)),
        live_at_peak,
        leaks_by_step,
        never_freed: live_set(live.values()),
    }
}

fn live_set<'a>(allocations: impl Iterator<Item = &'a Allocation>) -> LiveSet {
    let mut all: Vec<&Allocation> = allocations.collect();
    all.sort_by_key(|a| (std::cmp::Reverse(a.bytes), a.addr));
    let mut by_size: Vec<SizeBucket> = BUCKETS
        .iter()
        .map(|(label, _)| SizeBucket {
            label,
            ..SizeBucket::default()
        })
        .collect();
    for a in &all {
        let i = BUCKETS
            .iter()
            .position(|(_, limit)| a.bytes < *limit)
            .unwrap_or(4);
        by_size[i].count += 1;
        by_size[i].bytes += a.bytes;
    }
    by_size.retain(|b| b.count > 0);
    LiveSet {
        count: all.len() as u64,
        bytes: all.iter().map(|a| a.bytes).sum(),
        by_size,
        largest: all.iter().take(10).map(|a| (*a).clone()).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Names, RankCounts, Row};

    fn event(ts_us: i64, addr: i64, bytes: i64, allocated: i64, reserved: i64) -> MemoryEvent {
        MemoryEvent {
            ts_rel_ns: ts_us * 1000,
            device_type: 20,
            device_id: 0,
            addr,
            bytes,
            total_allocated_bytes: allocated,
            total_reserved_bytes: reserved,
        }
    }

    #[test]
    fn peaks_fragmentation_and_leaks_by_step() {
        let mut names = Names::default();
        let step = names.intern("ProfilerStep#1");
        let cat = names.intern("user_annotation");
        let trace = RankTrace {
            rank: 0,
            path: "x.json".into(),
            rows: vec![Row {
                event_index: 0,
                category: cat,
                name: step,
                pid: Some(1),
                tid: Some(1),
                stream: -1,
                correlation: -1,
                ts_rel_ns: 0,
                dur_ns: 100_000,
                bytes: -1,
                memory_bw_gbps: 0.0,
                collective: None,
                flops: -1,
                engine_busy: None,
            }],
            names,
            memory: vec![
                event(10, 1, 100, 100, 1000),
                event(20, 2, 2 << 20, 100 + (2 << 20), 4 << 20),
                event(30, 2, -(2 << 20), 100, 4 << 20),
                event(40, 3, 50, 150, 4 << 20),
                event(150, 9, -8, 142, 4 << 20),
            ],
            counts: RankCounts::default(),
            ts_is_float: false,
            min_ts_rel_ns: Some(0),
            min_host_ts_rel_ns: Some(0),
            backend: None,
            compile_meta: None,
            host_name: None,
            neuron_place: None,
            base_ns: 0,
            damage: Vec::new(),
            device_memory_bytes: Vec::new(),
            devices: Vec::new(),
            engine_rows: Vec::new(),
            graph_passes: Vec::new(),
            graph_passes_unreadable: Vec::new(),
            dma_rows: Vec::new(),
            throttle_rows: Vec::new(),
            max_end_rel_ns: Some(100_000),
            host_ops: None,
            timeline: None,
        };
        let timeline = memory_timeline(&trace);
        let d = &timeline.devices[0];
        assert_eq!(d.device, "privateuse1:0");
        assert_eq!(
            (d.peak_allocated_bytes, d.peak_allocated_at_us),
            (100 + (2 << 20), 20.0)
        );
        assert_eq!(d.peak_allocated_step, Some(1));
        assert_eq!(d.live_at_peak.count, 2);
        assert_eq!(d.live_at_peak.largest[0].bytes, 2 << 20);
        assert_eq!(d.max_fragmentation_bytes, (4 << 20) - 100);
        assert_eq!(d.max_fragmentation_at_us, 30.0);
        assert_eq!(
            d.leaks_by_step,
            [StepLeaks {
                step: 1,
                count: 2,
                bytes: 150
            }]
        );
        assert_eq!((d.never_freed.count, d.never_freed.bytes), (2, 150));
        assert_eq!(d.frees_of_unknown_allocations, 1);
    }
}
