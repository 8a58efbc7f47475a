//! The CSV tables hold one row per matching event of every input, each row with as many
//! fields as the header (quotes respected), and values that read back.

mod common;

use std::ops::ControlFlow;

use exporters::tables::TABLES;
use exporters::CsvExporter;
use trace_format::{Category, Event, Phase, TraceReader};

/// Splits CSV text into rows of fields (RFC 4180 quoting).
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let (mut row, mut field, mut quoted) = (Vec::new(), String::new(), false);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => row.push(std::mem::take(&mut field)),
            ('\n', false) => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (c, _) => field.push(c),
        }
    }
    rows
}

#[test]
fn csv_tables_hold_one_row_per_matching_event() {
    let shared = common::shared_dir();
    // A small trace of our own with collectives on the host and the device ("[0, 1]"
    // needs quoting).
    let dir = std::env::temp_dir().join(format!("exporters-csv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ours = dir.join("collectives.json");
    let base = 1_790_857_026_000_000_000;
    let mut meta = trace_format::TraceMeta::kineto(Some(base));
    meta.set_distributed("gloo", 1, 2);
    let mut writer = trace_format::TraceWriter::new(Vec::new(), &meta).unwrap();
    for (category, pid, tid, name) in [
        (Category::CpuOp, 42, 42, "record_param_comms"),
        (Category::Kernel, 0, 1, "ncclDevKernel_AllReduce"),
    ] {
        let event = Event::complete(category, name, pid, tid, base + 1_000, 5_000)
            .with_arg("Collective name", "allreduce")
            .with_arg("In msg nelems", 1024i64)
            .with_arg("Process Group Ranks", "[0, 1]");
        writer.write_event(&event).unwrap();
    }
    std::fs::write(&ours, writer.finish().unwrap()).unwrap();
    let inputs = [
        ours.clone(),
        shared.join("torch-2.15/gloo_2rank-rank0.pt.trace.json.gz"),
        shared.join("torch-2.15/gloo_2rank-rank1.pt.trace.json.gz"),
        shared.join("torch-2.15/python_privateuse1_neuron.pt.trace.json.gz"),
        shared.join("hta/amd_mi250_train.json.gz"),
    ];
    let mut expected = [0u64; 8];
    for input in &inputs {
        let mut sink = trace_format::from_fn(|_, event: &Event<'_>| {
            expected[0] += 1;
            let complete = event.phase == Phase::Complete;
            if complete
                && matches!(
                    event.normalized_category(),
                    Some(Category::Kernel | Category::GpuMemcpy | Category::GpuMemset)
                )
            {
                expected[1] += 1;
            }
            if complete && event.arg("Collective name").is_some() {
                expected[2] += 1;
            }
            if event.is_memory_event() {
                expected[3] += 1;
            }
            if complete && event.name().starts_with("ProfilerStep#") {
                expected[4] += 1;
            }
            if complete
                && matches!(
                    event.normalized_category(),
                    Some(Category::CpuOp | Category::UserAnnotation)
                )
            {
                expected[6] += 1;
            }
            if event.flow_end().is_some() {
                expected[7] += 1;
            }
            ControlFlow::Continue(())
        });
        TraceReader::open(input).read(&mut sink).unwrap();
        expected[5] += 1; // one `ranks` row per input
    }
    let mut exporter = CsvExporter::create(&dir).unwrap();
    for input in &inputs {
        exporter.add_path(input).unwrap();
    }
    let stats = exporter.finish().unwrap();
    assert_eq!(stats.rows, expected);
    for (table, count) in TABLES.iter().zip(expected) {
        assert!(count > 0, "{table}: the inputs have rows for every table");
        let text = std::fs::read_to_string(dir.join(format!("{table}.csv"))).unwrap();
        let rows = parse_csv(&text);
        assert_eq!(rows.len() as u64, count + 1, "{table}: header + rows");
        let width = rows[0].len();
        for row in &rows {
            assert_eq!(row.len(), width, "{table}: {row:?}");
        }
    }
    let steps = parse_csv(&std::fs::read_to_string(dir.join("steps.csv")).unwrap());
    let step = &steps[1];
    let collectives = parse_csv(&std::fs::read_to_string(dir.join("collectives.csv")).unwrap());
    assert_eq!(collectives[1][1], "1", "rank");
    assert_eq!(collectives[1][2], "host");
    assert_eq!(collectives[2][2], "device");
    assert_eq!(collectives[2][4], "allreduce");
    assert_eq!(collectives[2][10], "[0, 1]");
    assert!(step[0].ends_with("gloo_2rank-rank0.pt.trace.json.gz"));
    assert_eq!(step[1], "0", "rank");
    assert!(step[2].parse::<u64>().is_ok(), "step number {step:?}");
    assert!(step[6].parse::<i64>().unwrap() > 0, "dur_ns {step:?}");
    let events = parse_csv(&std::fs::read_to_string(dir.join("events.csv")).unwrap());
    let with_args = events
        .iter()
        .skip(1)
        .find(|r| r[11].contains("\""))
        .unwrap();
    let args: serde_json::Value = serde_json::from_str(&with_args[11]).unwrap();
    assert!(args.is_object());
    std::fs::remove_dir_all(&dir).unwrap();
}
