//! Flow ids sit on the begin event of the innermost slice of their track that encloses
//! the flow event's time (as Perfetto's JSON importer binds Kineto's `bp: "e"` flows):
//! on a shared trace, `ac2g` starts on `cudaLaunchKernel`-like runtime calls and
//! finishes on kernels, each endpoint on the slice a brute-force search names.

mod common;

use std::collections::HashMap;
use std::ops::ControlFlow;

use exporters::perfetto::proto::{Trace, TYPE_SLICE_BEGIN};
use exporters::perfetto::validate;
use exporters::PerfettoExporter;
use prost::Message as _;
use trace_format::{Event, FlowEnd, Phase, TraceReader, TraceSink};

#[derive(Default)]
struct Collect {
    /// (pid, tid, start, end, index, name)
    slices: Vec<(String, String, i64, i64, u64, String)>,
    /// (pid, tid, ts, finish)
    flows: Vec<(String, String, i64, bool)>,
}

impl TraceSink for Collect {
    fn on_event(&mut self, index: u64, event: &Event<'_>) -> ControlFlow<()> {
        let pid = event
            .pid
            .as_ref()
            .map(|p| p.to_string())
            .unwrap_or_default();
        let tid = event
            .tid
            .as_ref()
            .map(|t| t.to_string())
            .unwrap_or_default();
        let Some(ts) = event.ts_ns else {
            return ControlFlow::Continue(());
        };
        if event.phase == Phase::Complete {
            let end = ts + event.dur_ns.unwrap_or(0).max(0);
            let name = event.name().to_owned();
            self.slices.push((pid, tid, ts, end, index, name));
        } else if let (Some(end), Some(_)) = (event.flow_end(), &event.flow_id) {
            self.flows.push((pid, tid, ts, end == FlowEnd::Finish));
        }
        ControlFlow::Continue(())
    }
}

#[test]
fn flows_bind_to_their_enclosing_slices() {
    let shared = common::shared_dir();
    let path = shared.join("hta/simple_add.json.gz");
    let mut input = Collect::default();
    TraceReader::open(&path).read(&mut input).unwrap();
    assert!(input.flows.len() > 100, "{} flows", input.flows.len());

    // Brute force: the enclosing slice with the latest start, then the shortest, then
    // the last read.
    let mut expected: HashMap<(bool, String), u64> = HashMap::new();
    let mut unbound = 0;
    for (pid, tid, ts, finish) in &input.flows {
        let innermost = input
            .slices
            .iter()
            .filter(|s| &s.0 == pid && &s.1 == tid && s.2 <= *ts && *ts <= s.3)
            .max_by_key(|s| (s.2, std::cmp::Reverse(s.3), s.4));
        match innermost {
            Some(slice) => *expected.entry((*finish, slice.5.clone())).or_default() += 1,
            None => unbound += 1,
        }
    }

    let mut exporter = PerfettoExporter::new(Vec::new());
    exporter.add_path(&path).unwrap();
    let (bytes, stats) = exporter.finish().unwrap();
    assert_eq!(stats.flow_events, input.flows.len() as u64);
    assert_eq!(stats.flows_unbound, unbound);
    assert_eq!(stats.flows_bound + stats.flows_unbound, stats.flow_events);
    let summary = validate::validate(&bytes).unwrap();
    assert_eq!(summary.flow_ids_on_slices, stats.flows_bound);

    // The output: flow ids per (kind, name of the slice begin carrying them).
    let trace = Trace::decode(bytes.as_slice()).unwrap();
    let mut names: HashMap<u64, String> = HashMap::new();
    let mut got: HashMap<(bool, String), u64> = HashMap::new();
    for packet in &trace.packet {
        if let Some(interned) = &packet.interned_data {
            for name in &interned.event_names {
                names.insert(name.iid.unwrap(), name.name.clone().unwrap());
            }
        }
        let Some(event) = &packet.track_event else {
            continue;
        };
        if event.r#type != Some(TYPE_SLICE_BEGIN) {
            continue;
        }
        let name = event
            .name
            .clone()
            .or_else(|| event.name_iid.map(|iid| names[&iid].clone()))
            .unwrap();
        for (finish, count) in [
            (false, event.flow_ids.len()),
            (true, event.terminating_flow_ids.len()),
        ] {
            if count > 0 {
                *got.entry((finish, name.clone())).or_default() += count as u64;
            }
        }
    }
    assert_eq!(got, expected);
    // ac2g: starts on runtime launches, finishes on kernels.
    assert!(got.get(&(false, "cudaLaunchKernel".to_owned())) > Some(&10));
    assert!(got
        .keys()
        .any(|(finish, name)| *finish && name.starts_with("void at::native::")));

    // The same bytes when slices, flows and bindings spill to disk.
    let mut small = PerfettoExporter::new(Vec::new()).sort_budget_bytes(8 << 10);
    small.add_path(&path).unwrap();
    let (spilled, spilled_stats) = small.finish().unwrap();
    assert!(spilled_stats.spilled_runs > 4, "{spilled_stats:?}");
    assert!(spilled == bytes, "same bytes whether spilled or not");
}
