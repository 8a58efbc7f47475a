//! Every shared Kineto trace (ours, PyTorch's, HTA's test traces, a 2021 legacy trace)
//! converts to Perfetto protobuf that passes the semantic validator, and every slice,
//! counter value, instant and flow event of the input is in the output.

mod common;

use exporters::perfetto::validate;
use exporters::PerfettoExporter;

#[test]
fn every_shared_trace_converts_validates_and_keeps_every_event() {
    let shared = common::shared_dir();
    let files = common::shared_traces(&shared);
    assert!(files.len() >= 15, "shared traces missing: {files:?}");
    for file in files {
        let expected = common::count_input(&file);
        let mut exporter = PerfettoExporter::new(Vec::new());
        exporter.add_path(&file).unwrap();
        let (bytes, stats) = exporter.finish().unwrap();
        let summary =
            validate::validate(&bytes).unwrap_or_else(|err| panic!("{}: {err}", file.display()));
        let name = file.display();
        assert_eq!(stats.slices, expected.slices, "{name}: slices");
        assert_eq!(
            summary.slices, expected.slices,
            "{name}: slices in the output"
        );
        assert_eq!(
            summary.counter_values, expected.counter_values,
            "{name}: counter values"
        );
        assert_eq!(
            summary.instants,
            expected.instants + stats.flows_unbound,
            "{name}: instants and unbound flow endpoints"
        );
        assert_eq!(
            stats.flows_bound + stats.flows_unbound,
            expected.flow_events,
            "{name}: every flow event bound or an instant"
        );
        assert_eq!(
            summary.flow_ids_on_slices, stats.flows_bound,
            "{name}: bound flow ids on slice begins"
        );
        assert_eq!(
            summary.flow_starts + summary.flow_terminations,
            expected.flow_events,
            "{name}: flow events"
        );
        assert_eq!(
            summary.flows_paired, expected.flows_paired,
            "{name}: paired flows"
        );
        assert_eq!(stats.skipped_counter_values, 0, "{name}");
    }
}

#[test]
fn two_ranks_go_into_one_trace_on_one_time_axis() {
    let shared = common::shared_dir();
    let dir = shared.join("torch-2.15");
    let ranks = [
        "gloo_2rank-rank0.pt.trace.json.gz",
        "gloo_2rank-rank1.pt.trace.json.gz",
    ];
    let mut exporter = PerfettoExporter::new(Vec::new()).label_unranked_files(true);
    let mut expected_slices = 0;
    for rank in ranks {
        expected_slices += common::count_input(&dir.join(rank)).slices;
        exporter.add_path(dir.join(rank)).unwrap();
    }
    let (bytes, stats) = exporter.finish().unwrap();
    let summary = validate::validate(&bytes).unwrap();
    assert_eq!(summary.slices, expected_slices);
    assert_eq!(stats.slices, expected_slices);
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.contains("rank 0: "), "rank 0 group");
    assert!(text.contains("rank 1: "), "rank 1 group");
}

#[test]
fn spilling_to_disk_gives_the_same_trace_as_sorting_in_memory() {
    let shared = common::shared_dir();
    let file = shared.join("hta/nccl_data.json.gz");
    let convert = |budget: usize| {
        let mut exporter = PerfettoExporter::new(Vec::new()).sort_budget_bytes(budget);
        exporter.add_path(&file).unwrap();
        exporter.finish().unwrap()
    };
    let (in_memory, stats) = convert(exporters::perfetto::DEFAULT_BUDGET_BYTES);
    let (spilled, spilled_stats) = convert(256 << 10);
    assert_eq!(stats.spilled_runs, 0);
    assert!(spilled_stats.spilled_runs >= 4, "{spilled_stats:?}");
    assert!(in_memory == spilled, "same bytes whether spilled or not");
}

#[test]
fn engines_get_a_utilization_counter_and_nest_under_their_device() {
    use trace_format::{Category, Event, TraceMeta, TraceReader, TraceWriter};
    let base = 1_790_857_026_000_000_000;
    let mut meta = TraceMeta::kineto(Some(base));
    meta.set_distributed("gloo", 3, 4);
    let mut writer = TraceWriter::new(Vec::new(), &meta).unwrap();
    let instruction = Category::parse("neuron_instruction".into());
    for i in 0..100i64 {
        // Busy 0..60 µs of every 100 µs on engine 1000 of device 0.
        let event = Event::complete(
            instruction.clone(),
            "matmul",
            0,
            1000,
            base + i * 100_000,
            60_000,
        );
        writer.write_event(&event).unwrap();
    }
    let json = writer.finish().unwrap();
    let mut exporter = PerfettoExporter::new(Vec::new());
    exporter
        .add_reader(
            "rank3.json".as_ref(),
            TraceReader::from_slice("rank3.json", &json),
        )
        .unwrap();
    let (bytes, stats) = exporter.finish().unwrap();
    let summary = validate::validate(&bytes).unwrap();
    assert_eq!(summary.slices, 100);
    assert!(stats.derived_counter_values > 100, "{stats:?}");
    assert_eq!(summary.counter_values, stats.derived_counter_values);
    let text = String::from_utf8_lossy(&bytes);
    for name in ["rank 3: device 0", "engines", "utilization"] {
        assert!(text.contains(name), "{name}");
    }
}
