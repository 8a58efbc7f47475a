//! The application state: documents and keys in, state changes out. No I/O, no drawing.

mod keys;
mod tree;
mod view;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use analysis::live::{HardwareInfo, InstanceInfo, MonitorDocument, RuntimeEntry, SystemData};
use ratatui::crossterm::event::KeyEvent;

use crate::history::History;
use crate::roofline::ReplayRoofline;

pub use keys::KEY_HELP;
pub use tree::TreeNode;
pub use view::{CoreRow, EngineRow, OperatorsRoofline, TabView};

/// Documents kept while frozen, applied on unfreeze (older ones are dropped, counted).
pub const FROZEN_QUEUE_LEN: usize = 600;

/// Something that happened: input from a source, a key, a timer.
#[derive(Debug)]
pub enum Event {
    /// A new report.
    Document(Box<MonitorDocument>),
    /// A source could not read or parse something; the UI shows it and goes on.
    InputError(String),
    /// A source has no more input (stdin closed, replay loaded, …), with a note.
    InputEnded(String),
    /// A monitored process went away (live attach).
    Exited {
        /// Its pid.
        pid: u32,
        /// Why we think so.
        reason: String,
    },
    /// A key was pressed.
    Key(KeyEvent),
    /// The terminal was resized.
    Resize,
    /// Replay's play timer.
    Tick,
    /// A termination signal (SIGTERM, SIGHUP, SIGINT): quit, restoring the terminal.
    Signal(i32),
}

/// `%` or TFLOPS in the utilization pane (key `F`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Units {
    /// Busy percentage.
    Percent,
    /// Tera floating-point operations per second.
    Tflops,
}

/// Which panes the narrow (80×24) layout shows (key `Tab`); a wide terminal shows all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// AWS neuron-top's panes: utilization, vCPU, memory summary and details.
    Overview,
    /// Engine utilization per core with history, HBM history.
    Device,
    /// Collectives, top operators, execution latency, dropped records.
    Activity,
}

impl View {
    /// Name shown in the title bar.
    pub fn label(self) -> &'static str {
        match self {
            View::Overview => "overview",
            View::Device => "device",
            View::Activity => "activity",
        }
    }
}

/// Order of the top-operators table (key `s`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpSort {
    /// Device time, largest first.
    DeviceTime,
    /// Calls, most first.
    Calls,
    /// Name, alphabetical.
    Name,
}

impl OpSort {
    /// Label shown in the pane title.
    pub fn label(self) -> &'static str {
        match self {
            OpSort::DeviceTime => "device time",
            OpSort::Calls => "calls",
            OpSort::Name => "name",
        }
    }
}

/// Order of the core rows (key `u`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CoreSort {
    /// By core index.
    Index,
    /// Busiest first.
    Utilization,
}

/// One monitored runtime (a process, or one rank of a multi-rank process) and its history.
#[derive(Debug, Clone, Default)]
pub struct Runtime {
    /// `neuron_runtime_tag` (`"<pid>"` or `"<pid>/rank<N>"`).
    pub tag: String,
    /// Its last report entry.
    pub entry: RuntimeEntry,
    /// Gone from the reports, or its process was seen to exit.
    pub exited: Option<String>,
    /// Utilization history per core index.
    pub core_history: BTreeMap<u32, History>,
    /// Engine utilization history per (core index, engine).
    pub engine_history: BTreeMap<(u32, String), History>,
    /// Device memory in use, bytes, per report.
    pub hbm_history: History,
}

impl Runtime {
    /// The tab label: tag plus state.
    pub fn label(&self) -> String {
        if self.exited.is_some() {
            format!("{} (exited)", self.tag)
        } else if self.finished() {
            format!("{} (finished)", self.tag)
        } else {
            self.tag.clone()
        }
    }

    /// Whether our publisher said the workload finished.
    pub fn finished(&self) -> bool {
        self.entry
            .report
            .neuronprof
            .as_ref()
            .is_some_and(|n| n.is_finished())
    }

    /// Device bytes in use: our HBM figure, else neuron-monitor's device total.
    pub fn device_bytes(&self) -> u64 {
        let report = &self.entry.report;
        if let Some(hbm) = report.neuronprof.as_ref().and_then(|n| n.hbm.as_ref()) {
            return hbm.used_bytes;
        }
        report
            .memory_used
            .as_ref()
            .map_or(0, |m| m.neuron_runtime_used_bytes.neuron_device)
    }
}

/// The replay cursor over a recorded run (`--replay`).
#[derive(Debug, Clone)]
pub struct Replay {
    /// Every document of the run.
    pub documents: Arc<Vec<MonitorDocument>>,
    /// Seconds from the run's start at the end of each document's period.
    pub times_s: Arc<Vec<f64>>,
    /// The document shown.
    pub index: usize,
    /// Whether the play timer advances the cursor.
    pub playing: bool,
    /// The operators' roofline per document ([`crate::roofline`]), once computed, or
    /// why there is none; `None` when not asked for.
    pub roofline: Option<Result<Arc<ReplayRoofline>, String>>,
}

/// The whole UI state.
#[derive(Debug)]
pub struct App {
    /// Where the documents come from, for the title bar (`stdin`, `replay DIR`, `live`).
    pub source_label: String,
    /// Runtimes in order of first appearance.
    pub runtimes: Vec<Runtime>,
    /// Reports applied so far.
    pub documents_applied: u64,
    /// Instance from the last report that had it.
    pub instance: Option<InstanceInfo>,
    /// Hardware from the last report that had it.
    pub hardware: Option<HardwareInfo>,
    /// System groups from the last report that had them.
    pub system: Option<SystemData>,
    /// Device bytes of all runtimes together, per report.
    pub all_hbm_history: History,
    /// Selected tab: 0 is "all", `i` is `runtimes[i - 1]`.
    pub selected: usize,
    /// Utilization units.
    pub units: Units,
    /// Narrow-layout view.
    pub view: View,
    /// Display frozen (`f`): documents queue up.
    pub frozen: bool,
    /// Documents that arrived while frozen.
    pub queued: VecDeque<MonitorDocument>,
    /// Documents dropped from a full freeze queue.
    pub queued_dropped: u64,
    /// Active filter (case-insensitive substring) on operators, collectives and the tree.
    pub filter: String,
    /// The filter being typed after `/`, if any.
    pub filter_input: Option<String>,
    /// Help overlay shown (`?`).
    pub help: bool,
    /// Top-operators order.
    pub op_sort: OpSort,
    /// Core rows order.
    pub core_sort: CoreSort,
    /// Memory-details tree: expanded node paths.
    pub expanded: BTreeSet<String>,
    /// Memory-details tree: cursor row among visible nodes.
    pub tree_cursor: usize,
    /// The latest input error, shown on the status line.
    pub last_error: Option<String>,
    /// Input errors so far.
    pub errors: u64,
    /// Set when a source ended, with its note.
    pub input_ended: Option<String>,
    /// Replay cursor, when replaying.
    pub replay: Option<Replay>,
    /// Set by `q`.
    pub quit: bool,
}

impl App {
    /// An empty state for a source named `source_label`.
    pub fn new(source_label: impl Into<String>) -> Self {
        App {
            source_label: source_label.into(),
            runtimes: Vec::new(),
            documents_applied: 0,
            instance: None,
            hardware: None,
            system: None,
            all_hbm_history: History::default(),
            selected: 0,
            units: Units::Percent,
            view: View::Overview,
            frozen: false,
            queued: VecDeque::new(),
            queued_dropped: 0,
            filter: String::new(),
            filter_input: None,
            help: false,
            op_sort: OpSort::DeviceTime,
            core_sort: CoreSort::Index,
            expanded: BTreeSet::new(),
            tree_cursor: 0,
            last_error: None,
            errors: 0,
            input_ended: None,
            replay: None,
            quit: false,
        }
    }

    /// A state replaying `documents` (with their times), positioned on the first.
    pub fn with_replay(
        source_label: impl Into<String>,
        documents: Vec<MonitorDocument>,
        times_s: Vec<f64>,
    ) -> Self {
        let mut app = App::new(source_label);
        app.replay = Some(Replay {
            documents: Arc::new(documents),
            times_s: Arc::new(times_s),
            index: 0,
            playing: false,
            roofline: None,
        });
        app.seek(0);
        app
    }

    /// Gives the replay its operators' roofline (computed once per document by
    /// [`ReplayRoofline::build`]), or why there is none; the top-operators pane then
    /// shows it. Does nothing outside a replay.
    pub fn set_replay_roofline(&mut self, roofline: Result<ReplayRoofline, String>) {
        if let Some(replay) = &mut self.replay {
            replay.roofline = Some(roofline.map(Arc::new));
        }
    }

    /// Handles one event; returns whether the screen needs a redraw.
    pub fn handle(&mut self, event: Event) -> bool {
        match event {
            Event::Document(doc) => {
                if self.frozen {
                    if self.queued.len() == FROZEN_QUEUE_LEN {
                        self.queued.pop_front();
                        self.queued_dropped += 1;
                    }
                    self.queued.push_back(*doc);
                    return true; // the title shows the queue length
                }
                self.apply(*doc);
                true
            }
            Event::InputError(message) => {
                self.errors += 1;
                self.last_error = Some(message);
                true
            }
            Event::InputEnded(note) => {
                self.input_ended = Some(note);
                true
            }
            Event::Exited { pid, reason } => {
                let mut changed = false;
                for rt in self.runtimes.iter_mut().filter(|r| r.entry.pid == pid) {
                    if rt.exited.is_none() {
                        rt.exited = Some(reason.clone());
                        changed = true;
                    }
                }
                changed
            }
            Event::Key(key) => self.key(key),
            Event::Resize => true,
            Event::Tick => self.tick(),
            Event::Signal(_) => {
                self.quit = true;
                true
            }
        }
    }

    /// Applies one report: updates runtimes and their history, marks runtimes that are
    /// no longer reported as exited (AWS's neuron-monitor drops a process that exits).
    pub fn apply(&mut self, doc: MonitorDocument) {
        self.documents_applied += 1;
        if !doc.neuron_runtime_data.is_empty() {
            // A live source that found nobody said so; now somebody publishes.
            self.input_ended = None;
        }
        if doc.instance_info.is_some() {
            self.instance = doc.instance_info;
        }
        if doc.neuron_hardware_info.is_some() {
            self.hardware = doc.neuron_hardware_info;
        }
        if doc.system_data.is_some() {
            self.system = doc.system_data;
        }
        let mut seen = BTreeSet::new();
        for entry in doc.neuron_runtime_data {
            let tag = if entry.neuron_runtime_tag.is_empty() {
                entry.pid.to_string()
            } else {
                entry.neuron_runtime_tag.clone()
            };
            seen.insert(tag.clone());
            let index = match self.runtimes.iter().position(|r| r.tag == tag) {
                Some(i) => i,
                None => {
                    self.runtimes.push(Runtime {
                        tag,
                        ..Runtime::default()
                    });
                    self.runtimes.len() - 1
                }
            };
            let rt = &mut self.runtimes[index];
            rt.exited = None;
            rt.entry = entry;
            record_history(rt);
        }
        for rt in &mut self.runtimes {
            if !seen.contains(&rt.tag) && rt.exited.is_none() {
                rt.exited = Some("no longer reported".to_string());
            }
        }
        let total: u64 = self
            .runtimes
            .iter()
            .filter(|r| r.exited.is_none())
            .map(Runtime::device_bytes)
            .sum();
        self.all_hbm_history.push(total as f64);
    }

    /// Tab labels, "all" first.
    pub fn tab_labels(&self) -> Vec<String> {
        std::iter::once("all".to_string())
            .chain(self.runtimes.iter().map(Runtime::label))
            .collect()
    }

    /// The runtimes of the selected tab.
    pub fn selected_runtimes(&self) -> Vec<&Runtime> {
        match self.selected {
            0 => self.runtimes.iter().collect(),
            i => self.runtimes.get(i - 1).into_iter().collect(),
        }
    }

    /// Whether `text` passes the filter.
    pub fn matches_filter(&self, text: &str) -> bool {
        self.filter.is_empty() || text.to_lowercase().contains(&self.filter.to_lowercase())
    }

    /// Moves the replay cursor to `index` and rebuilds the state as it was then (the
    /// history from the documents before it).
    pub fn seek(&mut self, index: usize) {
        let Some(replay) = &self.replay else { return };
        let documents = Arc::clone(&replay.documents);
        if documents.is_empty() {
            return;
        }
        let index = index.min(documents.len() - 1);
        self.runtimes.clear();
        self.all_hbm_history = History::default();
        self.documents_applied = 0;
        let first = index.saturating_sub(crate::history::HISTORY_LEN - 1);
        for doc in &documents[first..=index] {
            self.apply(doc.clone());
        }
        if self.selected > self.runtimes.len() {
            self.selected = 0;
        }
        if let Some(replay) = &mut self.replay {
            replay.index = index;
        }
    }

    fn tick(&mut self) -> bool {
        let Some(replay) = &mut self.replay else {
            return false;
        };
        if !replay.playing || self.frozen {
            return false;
        }
        if replay.index + 1 >= replay.documents.len() {
            replay.playing = false;
            return true;
        }
        let next = replay.index + 1;
        let doc = replay.documents[next].clone();
        replay.index = next;
        self.apply(doc);
        true
    }
}

fn record_history(rt: &mut Runtime) {
    let report = &rt.entry.report;
    if let Some(counters) = &report.neuroncore_counters {
        for (core, c) in &counters.neuroncores_in_use {
            rt.core_history
                .entry(*core)
                .or_default()
                .push(c.neuroncore_utilization);
        }
    }
    if let Some(ext) = &report.neuronprof {
        for (core, engines) in &ext.engine_utilization {
            for (engine, pct) in engines {
                rt.engine_history
                    .entry((*core, engine.clone()))
                    .or_default()
                    .push(*pct);
            }
        }
    }
    let bytes = rt.device_bytes();
    rt.hbm_history.push(bytes as f64);
}
