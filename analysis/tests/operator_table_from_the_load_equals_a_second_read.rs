//! The operator table is built from what the loader keeps (`RankTrace::host_ops`), in the
//! same streaming pass as every other analysis. Here a reference reads each vendored
//! trace a second time with `trace_format` directly and builds the table from the events
//! with torch's `EventList` rules written out plainly (children lists, the folding loop
//! over the whole list until nothing changes, as `_remove_dup_nodes` does); both must
//! agree on every line, by name and by name and input shapes.

mod support {
    pub mod traces;
}

use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;
use std::path::Path;

use analysis::analyses::operators::{operator_table, operator_table_with, OperatorOptions};
use analysis::{load_paths, AnalysisError, LoadOptions};
use support::traces::traces_dir;
use trace_format::{ArgValue, Event, Ident, TraceReader, TraceSink};

#[derive(Clone)]
struct Op {
    start: i64,
    end: i64,
    key: (String, String),
    external_id: i64,
    /// A runtime call: its External id's device work is its operator's.
    runtime: bool,
    /// A Python frame: in the tree, not a line.
    python: bool,
}

// torch's `_filter_name` (the names are facts of torch; the tree rules below are
// written out independently of the table's).
use analysis::analyses::operators::FILTERED_NAMES as FILTERED;

#[derive(Default)]
struct Reference {
    by_thread: HashMap<(String, String), Vec<Op>>,
    device_by_external: HashMap<i64, i64>,
}

fn ident(i: Option<&Ident<'_>>) -> String {
    match i {
        None => "-".into(),
        Some(Ident::Num(n)) => format!("n{n}"),
        Some(Ident::Str(s)) => format!("s{s}"),
    }
}

impl TraceSink for Reference {
    fn on_event(&mut self, _index: u64, event: &Event<'_>) -> ControlFlow<()> {
        let (Some(ts), Some(dur), Some(category)) = (event.ts_ns, event.dur_ns, &event.category)
        else {
            return ControlFlow::Continue(());
        };
        let category = category.normalized();
        let external_id = event
            .arg("External id")
            .and_then(|v| v.as_i64())
            .unwrap_or(-1);
        if matches!(
            category.as_str(),
            "kernel" | "gpu_memcpy" | "gpu_memset" | "mtia_ccp_events"
        ) {
            if external_id >= 0 {
                *self.device_by_external.entry(external_id).or_default() += dur;
            }
            return ControlFlow::Continue(());
        }
        let runtime = analysis::classify::is_runtime_call_category(category.as_str());
        let python = category.as_str() == "python_function";
        if !(runtime || python || matches!(category.as_str(), "cpu_op" | "user_annotation")) {
            return ControlFlow::Continue(());
        }
        if FILTERED.contains(&event.name()) {
            return ControlFlow::Continue(());
        }
        let dims = match event.arg("Input Dims") {
            Some(ArgValue::Array(raw)) if raw.as_str() != "[]" && !runtime && !python => {
                raw.as_str().to_owned()
            }
            _ => String::new(),
        };
        let name = if event.name().starts_with("ProfilerStep#") {
            "ProfilerStep*"
        } else {
            event.name()
        };
        let thread = (ident(event.pid.as_ref()), ident(event.tid.as_ref()));
        self.by_thread.entry(thread).or_default().push(Op {
            start: ts,
            end: ts + dur,
            key: (name.to_owned(), dims),
            external_id,
            runtime,
            python,
        });
        ControlFlow::Continue(())
    }
}

/// (name, dims) → (calls, host total, host self, device self, device total), ns.
type Lines = BTreeMap<(String, String), (u64, i64, i64, i64, i64)>;

/// The table by name and the table by name and shapes.
fn reference(path: &Path, window: Option<(i64, i64)>) -> Option<[Lines; 2]> {
    let mut sink = Reference::default();
    // Damaged shared traces (read leniently elsewhere) are left out.
    TraceReader::open(path).read(&mut sink).ok()?;
    let mut tables = [Lines::new(), Lines::new()];
    for ops in sink.by_thread.values_mut() {
        ops.sort_by_key(|o| (o.start, std::cmp::Reverse(o.end)));
        let device = |o: &Op| {
            (o.external_id >= 0 && !o.runtime)
                .then(|| sink.device_by_external.get(&o.external_id).copied())
                .flatten()
                .unwrap_or(0)
        };
        // The tree: an event is the child of the innermost open one it starts in and
        // does not outlast.
        let n = ops.len();
        let mut parent: Vec<Option<usize>> = vec![None; n];
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut own: Vec<i64> = ops.iter().map(device).collect();
        let mut open: Vec<usize> = Vec::new();
        for i in 0..n {
            while open
                .last()
                .is_some_and(|&t| ops[i].start >= ops[t].end || ops[i].end > ops[t].end)
            {
                open.pop();
            }
            if let Some(&p) = open.last() {
                parent[i] = Some(p);
                children[p].push(i);
            }
            open.push(i);
        }
        // Folding, as torch does it: repeat passes over the list until none folds.
        let mut alive = vec![true; n];
        loop {
            let mut changed = false;
            for i in 0..n {
                if !alive[i] {
                    continue;
                }
                let Some(p) = parent[i] else { continue };
                if ops[p].key.0 == ops[i].key.0 && children[p].len() == 1 {
                    children[p] = std::mem::take(&mut children[i]);
                    own[p] = own[i];
                    for &c in &children[p] {
                        parent[c] = Some(p);
                    }
                    alive[i] = false;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let child: Vec<i64> = (0..n)
            .map(|i| children[i].iter().map(|&c| ops[c].end - ops[c].start).sum())
            .collect();
        // A child comes after its parent in start order: totals from the end.
        let mut device_total = own.clone();
        for i in (0..n).rev() {
            device_total[i] += children[i].iter().map(|&c| device_total[c]).sum::<i64>();
        }
        for (i, o) in ops.iter().enumerate() {
            if !alive[i] || o.python || window.is_some_and(|(s, e)| o.start < s || o.start >= e) {
                continue;
            }
            let by_name = (o.key.0.clone(), String::new());
            for (lines, key) in tables.iter_mut().zip([by_name, o.key.clone()]) {
                let line = lines.entry(key).or_default();
                line.0 += 1;
                line.1 += o.end - o.start;
                line.2 += o.end - o.start - child[i];
                line.3 += own[i];
                line.4 += device_total[i];
            }
        }
    }
    Some(tables)
}

fn lines_of(table: &analysis::analyses::operators::OperatorTable) -> Lines {
    let ns = |us: f64| (us * 1000.0).round() as i64;
    table
        .operators
        .iter()
        .map(|o| {
            (
                (o.name.clone(), o.input_dims.clone()),
                (
                    o.calls,
                    ns(o.cpu_total_us),
                    ns(o.cpu_self_us),
                    ns(o.device_self_us),
                    ns(o.device_total_us),
                ),
            )
        })
        .collect()
}

#[test]
fn every_shared_trace_gives_the_table_of_a_second_read() {
    let dir = traces_dir();
    let mut compared = 0;
    for path in support::traces::shared_trace_files(&dir) {
        let Ok(set) = load_paths(&[&path], &LoadOptions::default()) else {
            continue;
        };
        let Some(tables) = reference(&path, None) else {
            continue;
        };
        for (by_shape, expected) in [false, true].into_iter().zip(tables) {
            let table = operator_table(&set.ranks[0], by_shape).unwrap();
            assert_eq!(
                lines_of(&table),
                expected,
                "{} by_shape={by_shape}",
                path.display()
            );
            compared += usize::from(!expected.is_empty());
        }
    }
    assert!(
        compared >= 10,
        "host operators in most shared traces: {compared}"
    );
}

#[test]
fn neuron_traces_from_our_profiler_give_the_table_of_a_second_read() {
    // Committed with the crate, so this runs without the shared traces.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/gpt-2ranks-4steps");
    for rank in ["rank0", "rank1"] {
        let path = dir.join(format!("{rank}.pt.trace.json.gz"));
        let set = load_paths(&[&path], &LoadOptions::default()).unwrap();
        let [by_name, by_shape] = reference(&path, None).expect("the trace reads");
        let table = operator_table(&set.ranks[0], false).unwrap();
        assert_eq!(lines_of(&table), by_name, "{rank}");
        let shaped = operator_table(&set.ranks[0], true).unwrap();
        assert_eq!(lines_of(&shaped), by_shape, "{rank}");
        assert!(
            shaped.operators.len() > table.operators.len(),
            "{rank}: shapes split"
        );
        // Kernels and copies on the neuron device carry their operator's External id.
        let device_self: f64 = table.operators.iter().map(|o| o.device_self_us).sum();
        assert!(
            device_self > 0.0,
            "{rank}: device time reaches the operators"
        );
    }
}

#[test]
fn a_step_counts_the_operators_that_start_in_it() {
    let dir = traces_dir();
    let path = dir.join("hta/nccl_data.json.gz");
    let set = load_paths(&[&path], &LoadOptions::default()).unwrap();
    let trace = &set.ranks[0];
    let step = trace
        .rows
        .iter()
        .find(|r| trace.name(r) == "ProfilerStep#5")
        .unwrap();
    let base = trace.base_ns;
    let window = (base + step.ts_rel_ns, base + step.ts_rel_ns + step.dur_ns);
    let [expected, _] = reference(&path, Some(window)).unwrap();
    let table = operator_table_with(trace, &OperatorOptions::default().with_step(Some(5))).unwrap();
    assert_eq!(table.step, Some(5));
    assert_eq!(lines_of(&table), expected);
    let whole = operator_table(trace, false).unwrap();
    let calls = |t: &analysis::analyses::operators::OperatorTable| -> u64 {
        t.operators.iter().map(|o| o.calls).sum()
    };
    assert!(calls(&table) * 2 < calls(&whole), "one step of three");
    let err =
        operator_table_with(trace, &OperatorOptions::default().with_step(Some(99))).unwrap_err();
    assert!(err.to_string().contains("no ProfilerStep#99"), "{err}");
}

#[test]
fn without_host_ops_the_table_says_why() {
    let dir = traces_dir();
    let path = dir.join("hta/simple_add.json.gz");
    let set = load_paths(&[&path], &LoadOptions::default().with_host_ops(false)).unwrap();
    assert!(set.ranks[0].host_ops.is_none());
    let err = operator_table(&set.ranks[0], false).unwrap_err();
    assert!(matches!(err, AnalysisError::NotApplicable { .. }));
    assert!(
        err.to_string().contains("host operators were not kept")
            && err.to_string().contains("simple_add.json.gz"),
        "{err}"
    );
}
