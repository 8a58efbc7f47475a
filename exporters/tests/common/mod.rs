//! Shared helpers: the shared traces, and what a Kineto trace holds, counted directly.

#![allow(dead_code)]

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use trace_format::{ArgValue, Event, FlowEnd, Phase, TraceReader};

/// The real traces vendored in the repository (`tests/data/traces`, provenance in
/// `tests/data/README.md`).
pub fn shared_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/traces");
    assert!(
        dir.is_dir(),
        "{} is missing: the vendored test data",
        dir.display()
    );
    dir
}

/// Every `.json.gz` under the shared traces folder, sorted.
pub fn shared_traces(shared: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in std::fs::read_dir(shared).unwrap() {
        let dir = dir.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&dir).unwrap() {
            let file = file.unwrap().path();
            if file.to_string_lossy().ends_with(".json.gz") {
                files.push(file);
            }
        }
    }
    files.sort();
    files
}

/// What the exporter must carry over, counted from the JSON.
#[derive(Debug, Default)]
pub struct Expected {
    pub slices: u64,
    pub instants: u64,
    pub counter_values: u64,
    pub flow_events: u64,
    pub flows_paired: u64,
}

/// Counts a trace's `X` events, instants, counter values (numeric `C` series values
/// and `[memory]` totals) and flow events, and the flows that have a start and a finish.
pub fn count_input(path: &Path) -> Expected {
    let mut expected = Expected::default();
    let mut flows: HashMap<(String, String), (bool, bool)> = HashMap::new();
    let mut sink = trace_format::from_fn(|_, event: &Event<'_>| {
        if event.ts_ns.is_none() {
            return ControlFlow::Continue(());
        }
        match event.phase {
            Phase::Complete => expected.slices += 1,
            Phase::Instant if event.is_memory_event() => {
                for key in ["Total Allocated", "Total Reserved"] {
                    if event.arg(key).and_then(|v| v.as_i64()).is_some() {
                        expected.counter_values += 1;
                    }
                }
            }
            Phase::Instant => expected.instants += 1,
            Phase::Counter => {
                if let Some(args) = &event.args {
                    for (_, value) in args.iter() {
                        if matches!(value, ArgValue::Int(_)) || value.as_f64().is_some() {
                            expected.counter_values += 1;
                        }
                    }
                }
            }
            _ => {}
        }
        if let (Some(end), Some(id)) = (event.flow_end(), &event.flow_id) {
            expected.flow_events += 1;
            let kind = event
                .flow_category()
                .map(|c| c.as_str().to_owned())
                .unwrap_or_default();
            let entry = flows.entry((kind, id.to_string())).or_default();
            match end {
                FlowEnd::Finish => entry.1 = true,
                _ => entry.0 = true,
            }
        }
        ControlFlow::Continue(())
    });
    TraceReader::open(path).read(&mut sink).unwrap();
    expected.flows_paired = flows.values().filter(|(s, f)| *s && *f).count() as u64;
    expected
}
