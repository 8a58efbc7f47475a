//! The trace diff's summary is made from what the loader keeps (rows plus
//! `RankTrace::host_ops`), in the same streaming pass as every other analysis. Here a
//! reference reads each shared trace with steps a second time with `trace_format`
//! directly, assigning each complete event its iteration as the summary does (what the
//! summary did before the loader kept host events); both must agree for every iteration,
//! row filter, name rule and mode.

mod support {
    pub mod traces;
}

use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use analysis::analyses::trace_diff::{ops_summary, shorten_name, DeviceFilter, DiffOptions};
use analysis::{load_paths, Frames, LoadOptions, Mode, TraceSet};
use support::traces::traces_dir;
use trace_format::{Event, TraceMeta, TraceReader, TraceSink};

/// HTA's rounding of one event to integer µs (`ceil(ts)`, `floor(ts + dur)` on the
/// Python floats of the µs texts).
fn round_us(ts_ns: i64, dur_ns: i64) -> (i64, i64) {
    let float = |ns: i64| -> f64 {
        let m = ns.unsigned_abs();
        let sign = if ns < 0 { "-" } else { "" };
        format!("{sign}{}.{:03}", m / 1000, m % 1000)
            .parse()
            .unwrap()
    };
    let (ts, dur) = (float(ts_ns), float(dur_ns));
    (ts.ceil() as i64, (ts + dur).floor() as i64)
}

/// One complete event, as the reference read sees it.
struct Ev {
    index: u64,
    ts_rel_ns: i64,
    dur_ns: i64,
    stream: i64,
    cpu_op: bool,
    name: String,
}

#[derive(Default)]
struct Reader {
    base_ns: i64,
    events: Vec<Ev>,
}

impl TraceSink for Reader {
    fn on_header(&mut self, meta: &TraceMeta) -> ControlFlow<()> {
        self.base_ns = meta.base_time_ns().unwrap_or(0);
        ControlFlow::Continue(())
    }

    fn on_event(&mut self, index: u64, event: &Event<'_>) -> ControlFlow<()> {
        let (Some(ts), Some(category), Some(dur)) = (event.ts_ns, &event.category, event.dur_ns)
        else {
            return ControlFlow::Continue(());
        };
        if category.as_str() == "Trace" {
            return ControlFlow::Continue(());
        }
        let stream = match event.arg("stream") {
            None => -1,
            Some(v) => match v.as_str() {
                Some(text) => text.trim().parse::<f64>().map_or(-1, |f| f as i64),
                None => v
                    .as_i64()
                    .or_else(|| v.as_f64().map(|f| f as i64))
                    .unwrap_or(-1),
            },
        };
        self.events.push(Ev {
            index,
            ts_rel_ns: ts - self.base_ns,
            dur_ns: dur,
            stream,
            cpu_op: category.as_str() == "cpu_op",
            name: event.name().to_owned(),
        });
        ControlFlow::Continue(())
    }
}

/// What the frame of one mode says: the steps (start, duration, number) in its time
/// unit, each device row's iteration by event index, and whether times are rounded.
struct Steps {
    steps: Vec<(i64, i64, i64)>,
    device_iteration: HashMap<u64, i64>,
    rounding: bool,
}

fn steps_in(set: &TraceSet, mode: Mode) -> Steps {
    let frames = Frames::build_with(set, mode, false);
    let frame = &frames.ranks[0];
    Steps {
        steps: frame
            .rows
            .iter()
            .filter_map(|r| step_of(frame.name(r)).map(|n| (r.start_ticks, r.dur_ticks(), n)))
            .collect(),
        // HTA's device rows (stream > 0) and, in the default mode, device rows on
        // stream 0 (a PrivateUse1 device's default stream).
        device_iteration: frame
            .rows
            .iter()
            .filter(|r| {
                let stream = frame.model_row(r).stream;
                stream > 0 || (mode == Mode::Default && stream == 0 && r.is_device)
            })
            .map(|r| (frame.model_row(r).event_index, r.iteration))
            .collect(),
        rounding: mode == Mode::HtaCompat && frame.trace.ts_is_float,
    }
}

/// The summary from the events of a second read, µs summed per event in `f64`.
fn summary(
    events: &[Ev],
    frame: &Steps,
    options: &DiffOptions,
    iterations: &[i64],
) -> BTreeMap<String, (u64, f64)> {
    let Steps {
        steps,
        device_iteration,
        rounding,
    } = frame;
    let rounding = *rounding;
    let mut ops: BTreeMap<String, (u64, f64)> = BTreeMap::new();
    for e in events {
        let wanted = match options.device {
            DeviceFilter::Cpu => e.stream == -1,
            DeviceFilter::Gpu => e.stream != -1,
            DeviceFilter::All => true,
        };
        if !wanted {
            continue;
        }
        let (start, dur_us) = if rounding {
            let (s, end) = round_us(e.ts_rel_ns, e.dur_ns);
            (s, (end - s) as f64)
        } else {
            (e.ts_rel_ns, e.dur_ns as f64 / 1000.0)
        };
        let iteration = if let Some(&iteration) = device_iteration.get(&e.index) {
            iteration
        } else if e.stream < 0 || (e.stream == 0 && e.cpu_op) {
            let mut found = -1;
            for &(s, d, n) in steps {
                if s <= start && start < s + d {
                    found = n;
                }
            }
            found
        } else {
            -1
        };
        if iterations.contains(&iteration) {
            let name = if options.use_short_name {
                shorten_name(&e.name)
            } else {
                e.name.clone()
            };
            let t = ops.entry(name).or_default();
            t.0 += 1;
            t.1 += dur_us;
        }
    }
    ops
}

fn step_of(name: &str) -> Option<i64> {
    let rest = name.strip_prefix("ProfilerStep")?.trim_start();
    let rest = rest.strip_prefix('#')?.trim_start();
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

fn traces_with_steps(dir: &Path) -> Vec<(PathBuf, TraceSet, Vec<i64>)> {
    let mut out = Vec::new();
    for path in support::traces::shared_trace_files(dir) {
        // Damaged shared traces (read leniently elsewhere) are left out.
        let Ok(set) = load_paths(&[&path], &LoadOptions::default()) else {
            continue;
        };
        let mut steps: Vec<i64> = set.ranks[0]
            .names
            .iter()
            .filter(|n| n.starts_with("ProfilerStep#"))
            .filter_map(step_of)
            .collect();
        steps.sort_unstable();
        steps.dedup();
        if !steps.is_empty() {
            out.push((path, set, steps));
        }
    }
    out
}

#[test]
fn every_shared_trace_with_steps_gives_the_summary_of_a_second_read() {
    let dir = traces_dir();
    let traces = traces_with_steps(&dir);
    assert!(
        traces.len() >= 5,
        "shared traces with steps: {}",
        traces.len()
    );
    let mut names_compared = 0;
    for (path, set, steps) in &traces {
        let rank = set.ranks[0].rank;
        let mut reader = Reader::default();
        TraceReader::open(path).read(&mut reader).unwrap();
        // The last step (the first is HTA's default, in the HTA tests), and all of them.
        let choices = [vec![*steps.last().unwrap()], steps.clone()];
        let rules = [
            (DeviceFilter::All, false),
            (DeviceFilter::All, true),
            (DeviceFilter::Cpu, false),
            (DeviceFilter::Gpu, true),
        ];
        let modes = [Mode::Default, Mode::HtaCompat].map(|m| (m, steps_in(set, m)));
        for iterations in &choices {
            for (device, short) in rules {
                for (mode, frame) in &modes {
                    let mode = *mode;
                    let options = DiffOptions::default()
                        .at(rank, iterations.clone())
                        .device(device)
                        .short_names(short)
                        .mode(mode);
                    let got = ops_summary(set, &options).unwrap();
                    let expected = summary(&reader.events, frame, &options, iterations);
                    let what = format!("{} {options:?}", path.display());
                    assert_eq!(
                        got.ops.keys().collect::<Vec<_>>(),
                        expected.keys().collect::<Vec<_>>(),
                        "{what}"
                    );
                    for (name, t) in &got.ops {
                        let (counts, us) = expected[name];
                        assert_eq!(t.counts, counts, "{name} in {what}");
                        // The reference sums µs per event in f64; the summary sums
                        // integers and divides once.
                        assert!(
                            (t.total_duration_us - us).abs() <= 1e-9 * us.abs().max(1.0),
                            "{name} in {what}: {} vs {us}",
                            t.total_duration_us
                        );
                    }
                    names_compared += got.ops.len();
                }
            }
        }
    }
    assert!(names_compared > 1000, "{names_compared}");
}

#[test]
fn without_host_ops_the_summary_says_why() {
    let dir = traces_dir();
    let path = dir.join("hta/compare_base.json.gz");
    let set = load_paths(&[&path], &LoadOptions::default().with_host_ops(false)).unwrap();
    let err = ops_summary(&set, &DiffOptions::default()).unwrap_err();
    assert!(
        err.to_string().contains("trace_diff") && err.to_string().contains("not kept"),
        "{err}"
    );
}

#[test]
fn a_kernel_on_stream_0_is_in_its_launchs_step_in_the_default_mode() {
    // A PrivateUse1 device (neuron) writes its default stream as 0. HTA gives rows on
    // stream 0 no iteration, so its diff leaves such kernels out; the default mode
    // takes them, through their launch's correlation, like kernels on other streams.
    let json = r#"{"traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 1, "ts": 0.0, "dur": 10},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1.0, "dur": 3, "args": {"External id": 1}},
  {"ph": "X", "cat": "privateuse1_runtime", "name": "nrt_execute", "pid": 1, "tid": 1, "ts": 2.0, "dur": 1, "args": {"correlation": 5, "External id": 1}},
  {"ph": "X", "cat": "privateuse1_runtime", "name": "nrt_execute", "pid": 1, "tid": 1, "ts": 3.0, "dur": 1, "args": {"correlation": 6, "External id": 1}},
  {"ph": "X", "cat": "kernel", "name": "mm_f32", "pid": 0, "tid": 0, "ts": 12.0, "dur": 4, "args": {"stream": 0, "correlation": 5, "device": 0}},
  {"ph": "X", "cat": "kernel", "name": "add_f32", "pid": 0, "tid": 7, "ts": 16.0, "dur": 2, "args": {"stream": 7, "correlation": 6, "device": 0}}
]}"#;
    let dir = std::env::temp_dir().join(format!("diff-stream0-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("rank0.json");
    std::fs::write(&path, json).unwrap();
    let set = load_paths(&[&path], &LoadOptions::default()).unwrap();
    let kernels = |mode: Mode| {
        let options = DiffOptions::default().device(DeviceFilter::Gpu).mode(mode);
        let summary = ops_summary(&set, &options).unwrap();
        assert_eq!(summary.iterations, [3]);
        summary
            .ops
            .iter()
            .map(|(name, t)| (name.clone(), t.counts, t.total_duration_us))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        kernels(Mode::Default),
        [("add_f32".into(), 1, 2.0), ("mm_f32".into(), 1, 4.0)]
    );
    assert_eq!(kernels(Mode::HtaCompat), [("add_f32".into(), 1, 2.0)]);
    std::fs::remove_dir_all(&dir).unwrap();
}
