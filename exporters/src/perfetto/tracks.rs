//! The track layout: process groups per rank and device, thread, queue, engine, DMA and
//! counter tracks, as `TrackDescriptor`s with deterministic uuids.
//!
//! Facts used (`shared/reference/perfetto.md`, "Tracks"): uuids are global and 0 is
//! reserved, so uuids are handed out 1, 2, 3… in order of first use (reproducible). A
//! descriptor with `process` makes a process group and one with `thread` a thread
//! track; a child of either shows as a sibling inside the group, so engines and DMA
//! queues hang under plain parent tracks ("engines", "DMA queues") to nest.
//! Perfetto identifies processes by pid, so each (file, pid) gets a pid of its own in the
//! output: the real one the first time it is seen, a synthetic one for devices (whose
//! "pid" is a device index) and for a pid already used by another rank file.

use std::collections::{HashMap, HashSet};

use trace_format::Ident;

use super::proto::{
    CounterDescriptor, ProcessDescriptor, ThreadDescriptor, TrackDescriptor,
    CHILD_ORDERING_EXPLICIT,
};

/// First synthetic pid (devices, colliding pids, string pids).
const SYNTHETIC_PID_BASE: i32 = 0x4000_0000;
/// Sibling rank of the "engines" parent (after the queues).
const ENGINES_RANK: i32 = 1 << 24;
/// Sibling rank of the "DMA queues" parent.
const DMA_RANK: i32 = 2 << 24;
/// Sibling rank of counter tracks (last).
const COUNTERS_RANK: i32 = 3 << 24;

/// What a Kineto (pid, tid) holds, from the category of its first event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrackKind {
    /// Host thread (or anything not on a device).
    Host,
    /// Device execution queue (kernels, memcpy, memset, collectives).
    Queue,
    /// Engine instructions (`neuron_instruction`).
    Engine,
    /// DMA queue (`neuron_dma`).
    Dma,
}

impl TrackKind {
    /// Whether tracks of this kind belong to a device group.
    pub fn on_device(self) -> bool {
        self != TrackKind::Host
    }
}

/// One process group in the output.
#[derive(Debug)]
pub struct Process {
    /// Its track uuid.
    pub uuid: u64,
    /// The pid written.
    pub pid_out: i32,
    /// A device (NeuronCore / GPU) group.
    pub device: bool,
    engines_uuid: Option<u64>,
    dma_uuid: Option<u64>,
}

/// Names from `M` events and rank labels of the files, and the uuids handed out.
#[derive(Debug, Default)]
pub struct Layout {
    next_uuid: u64,
    next_synthetic_pid: i32,
    used_pids: HashSet<i32>,
    /// (file, pid) → process.
    pub processes: HashMap<(u32, Ident<'static>), Process>,
    process_names: HashMap<(u32, Ident<'static>), String>,
    thread_names: HashMap<(u32, Ident<'static>, Ident<'static>), String>,
    rank_labels: HashMap<u32, String>,
    /// Descriptors made but not yet written.
    pub new_descriptors: Vec<TrackDescriptor>,
}

impl Layout {
    /// A fresh uuid.
    pub fn uuid(&mut self) -> u64 {
        self.next_uuid += 1;
        self.next_uuid
    }

    /// Makes `pids` taken: a process with one of them gets a synthetic pid.
    pub fn avoid_pids(&mut self, pids: impl IntoIterator<Item = i32>) {
        self.used_pids.extend(pids);
    }

    /// The pids of the process groups described so far, sorted.
    pub fn pids(&self) -> Vec<i32> {
        let mut pids: Vec<i32> = self.processes.values().map(|p| p.pid_out).collect();
        pids.sort_unstable();
        pids
    }

    /// Sets the label of a file's groups (`rank 3`), or none for a single unranked file.
    pub fn set_rank_label(&mut self, file: u32, label: Option<String>) {
        if let Some(label) = label {
            self.rank_labels.insert(file, label);
        }
    }

    /// The label of a file's groups (`rank 3`), if any.
    pub fn label(&self, file: u32) -> Option<&str> {
        self.rank_labels.get(&file).map(String::as_str)
    }

    /// Records a `process_name` (re-describes the group when it already exists).
    pub fn set_process_name(&mut self, file: u32, pid: Ident<'static>, name: &str) {
        self.process_names
            .insert((file, pid.clone()), name.to_owned());
        if let Some(process) = self.processes.get(&(file, pid.clone())) {
            let descriptor = self.process_descriptor(file, &pid, process);
            self.new_descriptors.push(descriptor);
        }
    }

    /// Records a `thread_name` (used when the track is first described).
    pub fn set_thread_name(
        &mut self,
        file: u32,
        pid: Ident<'static>,
        tid: Ident<'static>,
        name: &str,
    ) {
        self.thread_names.insert((file, pid, tid), name.to_owned());
    }

    /// The process group of (file, pid), described on first use.
    pub fn process(&mut self, file: u32, pid: &Ident<'_>, device: bool) -> &mut Process {
        let key = (file, pid.clone().into_owned());
        if !self.processes.contains_key(&key) {
            let uuid = self.uuid();
            let pid_out = match pid {
                Ident::Num(n) if !device => match i32::try_from(*n) {
                    Ok(n) if n > 0 && !self.used_pids.contains(&n) => n,
                    _ => self.synthetic_pid(),
                },
                _ => self.synthetic_pid(),
            };
            self.used_pids.insert(pid_out);
            let process = Process {
                uuid,
                pid_out,
                device,
                engines_uuid: None,
                dma_uuid: None,
            };
            let descriptor = self.process_descriptor(file, &key.1, &process);
            self.new_descriptors.push(descriptor);
            self.processes.insert(key.clone(), process);
        }
        self.processes.get_mut(&key).expect("inserted above")
    }

    fn synthetic_pid(&mut self) -> i32 {
        loop {
            let pid = SYNTHETIC_PID_BASE + self.next_synthetic_pid;
            self.next_synthetic_pid += 1;
            if !self.used_pids.contains(&pid) {
                return pid;
            }
        }
    }

    fn process_descriptor(
        &self,
        file: u32,
        pid: &Ident<'static>,
        process: &Process,
    ) -> TrackDescriptor {
        let own = self.process_names.get(&(file, pid.clone()));
        let base = match (own, process.device) {
            (Some(name), true) => format!("{name} (device {pid})"),
            (None, true) => format!("device {pid}"),
            (Some(name), false) => format!("{name} {pid}"),
            (None, false) => format!("process {pid}"),
        };
        let name = match self.rank_labels.get(&file) {
            Some(label) => format!("{label}: {base}"),
            None => base,
        };
        TrackDescriptor {
            uuid: Some(process.uuid),
            process: Some(ProcessDescriptor {
                pid: Some(process.pid_out),
                process_name: Some(name),
            }),
            child_ordering: process.device.then_some(CHILD_ORDERING_EXPLICIT),
            ..TrackDescriptor::default()
        }
    }

    /// Describes the track of a Kineto (pid, tid) and returns its uuid.
    pub fn track(
        &mut self,
        file: u32,
        pid: &Ident<'_>,
        tid: &Ident<'_>,
        kind: TrackKind,
    ) -> (u64, String) {
        let uuid = self.uuid();
        let key = (file, pid.clone().into_owned(), tid.clone().into_owned());
        let given = self.thread_names.get(&key).cloned();
        let process = self.process(file, pid, kind.on_device());
        let (process_uuid, pid_out) = (process.uuid, process.pid_out);
        let sort = match tid {
            Ident::Num(n) => i32::try_from(*n).unwrap_or(i32::MAX),
            Ident::Str(_) => 0,
        };
        let descriptor = match (kind, tid) {
            (TrackKind::Host, Ident::Num(n)) => TrackDescriptor {
                uuid: Some(uuid),
                thread: Some(ThreadDescriptor {
                    pid: Some(pid_out),
                    tid: Some(*n),
                    thread_name: Some(given.unwrap_or_else(|| format!("thread {n}"))),
                }),
                ..TrackDescriptor::default()
            },
            (TrackKind::Host, Ident::Str(s)) => TrackDescriptor {
                uuid: Some(uuid),
                name: Some(given.unwrap_or_else(|| s.to_string())),
                parent_uuid: Some(process_uuid),
                ..TrackDescriptor::default()
            },
            (TrackKind::Queue, _) => TrackDescriptor {
                uuid: Some(uuid),
                name: Some(given.unwrap_or_else(|| format!("queue {tid}"))),
                parent_uuid: Some(process_uuid),
                sibling_order_rank: Some(sort),
                ..TrackDescriptor::default()
            },
            (TrackKind::Engine | TrackKind::Dma, _) => {
                let parent = self.group_parent(file, pid, kind);
                let fallback = match kind {
                    TrackKind::Engine => format!("engine {tid}"),
                    _ => format!("DMA queue {tid}"),
                };
                TrackDescriptor {
                    uuid: Some(uuid),
                    name: Some(given.unwrap_or(fallback)),
                    parent_uuid: Some(parent),
                    sibling_order_rank: Some(sort),
                    ..TrackDescriptor::default()
                }
            }
        };
        let name = descriptor_name(&descriptor);
        self.new_descriptors.push(descriptor);
        (uuid, name)
    }

    /// The plain "engines" or "DMA queues" track of a device group.
    fn group_parent(&mut self, file: u32, pid: &Ident<'_>, kind: TrackKind) -> u64 {
        let fresh = self.next_uuid + 1;
        let process = self.process(file, pid, true);
        let slot = if kind == TrackKind::Engine {
            &mut process.engines_uuid
        } else {
            &mut process.dma_uuid
        };
        if let Some(uuid) = *slot {
            return uuid;
        }
        *slot = Some(fresh);
        let parent = process.uuid;
        self.next_uuid = fresh;
        let (name, rank) = if kind == TrackKind::Engine {
            ("engines", ENGINES_RANK)
        } else {
            ("DMA queues", DMA_RANK)
        };
        self.new_descriptors.push(TrackDescriptor {
            uuid: Some(fresh),
            name: Some(name.to_owned()),
            parent_uuid: Some(parent),
            sibling_order_rank: Some(rank),
            child_ordering: Some(CHILD_ORDERING_EXPLICIT),
            ..TrackDescriptor::default()
        });
        fresh
    }

    /// An extra lane of a track: a plain track under it, named after it.
    pub fn lane(&mut self, base_uuid: u64, base_name: &str, lane: usize) -> u64 {
        let uuid = self.uuid();
        self.new_descriptors.push(TrackDescriptor {
            uuid: Some(uuid),
            name: Some(format!("{base_name} (overlap {lane})")),
            parent_uuid: Some(base_uuid),
            sibling_order_rank: Some(lane as i32),
            ..TrackDescriptor::default()
        });
        uuid
    }

    /// A counter track in the group of (file, pid).
    pub fn counter(
        &mut self,
        file: u32,
        pid: &Ident<'_>,
        device: bool,
        name: &str,
        unit: Option<i32>,
    ) -> u64 {
        let uuid = self.uuid();
        let parent = self.process(file, pid, device).uuid;
        self.new_descriptors.push(TrackDescriptor {
            uuid: Some(uuid),
            name: Some(name.to_owned()),
            parent_uuid: Some(parent),
            sibling_order_rank: Some(COUNTERS_RANK),
            counter: Some(CounterDescriptor {
                unit,
                unit_name: None,
            }),
            ..TrackDescriptor::default()
        });
        uuid
    }

    /// A counter track under another track (an engine's utilization), with a free-form
    /// unit.
    pub fn child_counter(&mut self, parent_uuid: u64, name: &str, unit_name: &str) -> u64 {
        let uuid = self.uuid();
        self.new_descriptors.push(TrackDescriptor {
            uuid: Some(uuid),
            name: Some(name.to_owned()),
            parent_uuid: Some(parent_uuid),
            counter: Some(CounterDescriptor {
                unit: None,
                unit_name: Some(unit_name.to_owned()),
            }),
            ..TrackDescriptor::default()
        });
        uuid
    }

    /// A top-level track of a file (global markers), `rank R: NAME`.
    pub fn global(&mut self, file: u32, name: &str) -> u64 {
        let uuid = self.uuid();
        let name = match self.rank_labels.get(&file) {
            Some(label) => format!("{label}: {name}"),
            None => name.to_owned(),
        };
        self.new_descriptors.push(TrackDescriptor {
            uuid: Some(uuid),
            name: Some(name),
            ..TrackDescriptor::default()
        });
        uuid
    }
}

fn descriptor_name(descriptor: &TrackDescriptor) -> String {
    descriptor
        .name
        .clone()
        .or_else(|| {
            descriptor
                .thread
                .as_ref()
                .and_then(|t| t.thread_name.clone())
        })
        .unwrap_or_default()
}
