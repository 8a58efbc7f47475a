//! The critical path of one step for the viewer: computed off the UI thread with the
//! `analysis` crate (`neuronprof critical-path`'s default mode: every rank, the path
//! through the rank that arrived last), and the slices it runs through, so the timeline
//! can dim everything else.
//!
//! The window is instance N of `ProfilerStep#` (the step selector), or the whole trace
//! when the files have no `ProfilerStep#` annotation. A path event is found on the
//! timeline by its file and its position in the file's `traceEvents`, which both the
//! viewer's model and the analysis keep.

use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;

use analysis::critical_path::{build_graph, CriticalPath, Options};
use analysis::TraceSet;

use crate::model::{FastHasher, FastMap, SliceRef, Timeline};

type FastSet<K> = std::collections::HashSet<K, std::hash::BuildHasherDefault<FastHasher>>;

/// The annotation whose instances are the steps.
pub const STEP_ANNOTATION: &str = "ProfilerStep#";

/// One computed path.
#[derive(Debug)]
pub struct PathOnTimeline {
    /// The step (instance of [`STEP_ANNOTATION`]); `None`: the whole trace.
    pub instance: Option<usize>,
    /// The path and its summary, as `neuronprof critical-path --json` prints it.
    pub path: CriticalPath,
    /// Slices on the path: by track, by row (depth), their indices, sorted.
    pub on_path: Vec<Vec<Vec<u32>>>,
    /// Path events that have no slice on the timeline (none unless the files changed).
    pub not_on_timeline: usize,
    /// The slice of each path edge's attributed event (same order as `path.path`).
    pub edge_slices: Vec<Option<SliceRef>>,
}

impl PathOnTimeline {
    /// Whether a slice is on the path.
    pub fn contains(&self, slice: SliceRef) -> bool {
        self.row(slice.track, slice.depth)
            .binary_search(&slice.index)
            .is_ok()
    }

    /// Whether any of `count` consecutive slices from `first` (a merged block) is on
    /// the path.
    pub fn any_in(&self, first: SliceRef, count: u32) -> bool {
        let row = self.row(first.track, first.depth);
        let at = row.partition_point(|&i| i < first.index);
        row.get(at)
            .is_some_and(|&i| i < first.index.saturating_add(count))
    }

    /// Slices on the path, in all.
    pub fn slice_count(&self) -> usize {
        self.on_path.iter().flatten().map(Vec::len).sum()
    }

    fn row(&self, track: u32, depth: u16) -> &[u32] {
        self.on_path
            .get(track as usize)
            .and_then(|rows| rows.get(depth as usize))
            .map_or(&[], Vec::as_slice)
    }
}

/// What a computation sends back: the path placed on the timeline, or why there is none.
pub type Computed = Result<PathOnTimeline, String>;

/// The critical-path panel's state: which step, whether to dim, the computation.
#[derive(Debug, Default)]
pub struct CriticalState {
    /// Dim every slice that is not on the path.
    pub dim: bool,
    /// The step asked for (`None`: the whole trace, when there are no steps).
    pub instance: Option<usize>,
    /// How many steps every file has ([`step_count`]), once counted.
    pub steps: Option<usize>,
    /// The last result (or why there is none), with the step it is for.
    pub result: Option<Result<Arc<PathOnTimeline>, String>>,
    /// A computation in progress: the step and where its result arrives.
    pub job: Option<(Option<usize>, Receiver<Computed>)>,
}

impl CriticalState {
    /// Takes a finished computation's result; returns true when one arrived.
    pub fn poll(&mut self) -> bool {
        let Some((_, receiver)) = &self.job else {
            return false;
        };
        match receiver.try_recv() {
            Ok(result) => {
                self.result = Some(result.map(Arc::new));
                self.job = None;
                true
            }
            Err(std::sync::mpsc::TryRecvError::Empty) => false,
            Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                self.result = Some(Err("the critical-path thread stopped".to_owned()));
                self.job = None;
                true
            }
        }
    }

    /// Starts computing the path of `instance` unless it is shown or being computed.
    pub fn request(
        &mut self,
        set: &Arc<TraceSet>,
        timeline: &Arc<Timeline>,
        instance: Option<usize>,
        wake: impl Fn() + Send + 'static,
    ) {
        self.instance = instance;
        let shown = matches!(&self.result, Some(Ok(p)) if p.instance == instance);
        let running = matches!(&self.job, Some((i, _)) if *i == instance);
        if shown || running {
            return;
        }
        let (sender, receiver) = channel();
        let (set, timeline) = (Arc::clone(set), Arc::clone(timeline));
        let spawned = std::thread::Builder::new()
            .name("critical-path".to_owned())
            .spawn(move || {
                let _ = sender.send(compute(&set, &timeline, instance));
                wake();
            });
        match spawned {
            Ok(_) => self.job = Some((instance, receiver)),
            Err(e) => self.result = Some(Err(format!("cannot start a thread: {e}"))),
        }
    }

    /// The path shown, when it is for the step asked for.
    pub fn shown(&self) -> Option<&Arc<PathOnTimeline>> {
        match &self.result {
            Some(Ok(p)) if p.instance == self.instance => Some(p),
            _ => None,
        }
    }
}

/// How many steps every file has (the fewest of any file; 0: no steps).
pub fn step_count(timeline: &Timeline) -> usize {
    let mut per_file = vec![0usize; timeline.files.len()];
    let step_names: FastSet<u32> = (0..timeline.names.len() as u32)
        .filter(|&id| timeline.names.get(id).contains(STEP_ANNOTATION))
        .collect();
    if step_names.is_empty() {
        return 0;
    }
    for track in &timeline.tracks {
        let file = timeline.groups[track.group as usize].file as usize;
        for row in track.rows() {
            per_file[file] += row.name.iter().filter(|n| step_names.contains(n)).count();
        }
    }
    per_file.into_iter().min().unwrap_or(0)
}

/// The critical path of `instance` (or the whole trace) across every rank of `set`,
/// placed on `timeline`.
pub fn compute(
    set: &TraceSet,
    timeline: &Timeline,
    instance: Option<usize>,
) -> Result<PathOnTimeline, String> {
    let mut options = Options::default();
    match instance {
        Some(i) => {
            options.annotation = STEP_ANNOTATION.to_owned();
            options.instances = (i, i);
        }
        None => options.annotation = String::new(),
    }
    let graph = build_graph(set, &options).map_err(|e| e.to_string())?;
    let edges = graph
        .graph
        .longest_path(|e| e.weight)
        .map_err(|c| analysis::critical_path::CriticalPathError::Cycle(c).to_string())?;
    let path = graph.critical_path().map_err(|e| e.to_string())?;
    // Rank → file of the timeline (the same paths were given to both).
    let file_of_rank: FastMap<i64, u32> = set
        .ranks
        .iter()
        .filter_map(|t| {
            let file = timeline.files.iter().position(|f| f.path == t.path)?;
            Some((t.rank, file as u32))
        })
        .collect();
    let wanted: FastSet<(u32, u64)> = graph
        .path_events(&edges)
        .into_iter()
        .filter_map(|(rank, index)| Some((*file_of_rank.get(&rank)?, index)))
        .collect();
    let edge_events: Vec<Option<(u32, u64)>> = path
        .path
        .iter()
        .map(|e| Some((*file_of_rank.get(&e.rank)?, e.event_index?)))
        .collect();
    let attributed: FastSet<(u32, u64)> = edge_events.iter().flatten().copied().collect();
    let mut slice_of: FastMap<(u32, u64), SliceRef> = FastMap::default();
    let mut on_path: Vec<Vec<Vec<u32>>> = Vec::with_capacity(timeline.tracks.len());
    let mut found = 0usize;
    for (t, track) in timeline.tracks.iter().enumerate() {
        let file = timeline.groups[track.group as usize].file;
        let rows = track
            .rows()
            .iter()
            .enumerate()
            .map(|(depth, row)| {
                let mut indices = Vec::new();
                for (i, &event_index) in row.event_index.iter().enumerate() {
                    let key = (file, event_index);
                    if wanted.contains(&key) {
                        indices.push(i as u32);
                        found += 1;
                    }
                    if attributed.contains(&key) {
                        slice_of.insert(
                            key,
                            SliceRef {
                                track: t as u32,
                                depth: depth as u16,
                                index: i as u32,
                            },
                        );
                    }
                }
                indices
            })
            .collect();
        on_path.push(rows);
    }
    let edge_slices = edge_events
        .iter()
        .map(|k| k.and_then(|k| slice_of.get(&k).copied()))
        .collect();
    Ok(PathOnTimeline {
        instance,
        path,
        on_path,
        not_on_timeline: wanted.len().saturating_sub(found),
        edge_slices,
    })
}
