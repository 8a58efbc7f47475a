//! The analysis tables (`add_analysis`) read back, as Parquet (`TABLE/part-0.parquet` in
//! the dataset) with the `parquet`/`arrow`
//! crates and as CSV, hold one row per element of the report's lists, with the documented
//! schema, and values equal to the report computed directly.

mod common;

use std::fs::File;

use arrow_array::{Array, Float64Array, Int64Array, RecordBatch, StringArray};
use exporters::tables::parquet::analysis_arrow_schema;
use exporters::tables::{ANALYSIS_SCHEMAS, ANALYSIS_TABLES};
use exporters::{CsvExporter, ParquetExporter};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

fn read(path: &std::path::Path) -> RecordBatch {
    let batches: Vec<RecordBatch> =
        ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap())
            .unwrap()
            .build()
            .unwrap()
            .map(|batch| batch.unwrap())
            .collect();
    assert!(batches.len() <= 1, "analysis tables are one row group");
    // `parquet/TABLE/part-0.parquet`
    let table = path
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap();
    let index = ANALYSIS_TABLES.iter().position(|t| *t == table).unwrap();
    batches
        .first()
        .cloned()
        .unwrap_or_else(|| RecordBatch::new_empty(analysis_arrow_schema(index)))
}

/// CSV records (header included), honouring quoted line breaks.
fn csv_records(text: &str) -> Vec<Vec<String>> {
    let mut records = Vec::new();
    let (mut record, mut field, mut quoted) = (Vec::new(), String::new(), false);
    let mut chars = text.chars().peekable();
    while let Some(ch) = chars.next() {
        match (ch, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => record.push(std::mem::take(&mut field)),
            ('\n', false) => {
                record.push(std::mem::take(&mut field));
                records.push(std::mem::take(&mut record));
            }
            (other, _) => field.push(other),
        }
    }
    records
}

/// Σ over the analyzed ranks' roofline tables of `rows`.
fn roofline_rows(
    report: &analysis::Report,
    rows: impl Fn(&analysis::analyses::roofline::RankRoofline) -> usize,
) -> usize {
    report
        .per_rank
        .iter()
        .filter_map(|r| r.roofline.as_ref())
        .map(rows)
        .sum()
}

#[test]
fn analysis_tables_match_the_report() {
    let shared = common::shared_dir();
    let inputs = [
        shared.join("hta/two_rank-rank0.json.gz"),
        shared.join("hta/two_rank-rank1.json.gz"),
    ];
    let set = analysis::load_paths(&inputs, &analysis::LoadOptions::default()).unwrap();
    let report = analysis::analyze(&set, &analysis::ReportOptions::default());
    let expected = [
        report
            .temporal_breakdown
            .as_ref()
            .map_or(0, |t| t.ranks.len()),
        report.kernel_breakdown.kernels.len(),
        report.steps.len(),
        report.collectives.instances.len(),
        report.collectives.groups.len(),
        report.collectives.per_rank.len(),
        report
            .collectives
            .all_to_all
            .iter()
            .map(|a| a.ranks.len() * a.ranks.len())
            .sum(),
        report.utilization.len(),
        report.insights.len(),
        roofline_rows(&report, |t| t.ops.len()),
        roofline_rows(&report, |t| t.ops.iter().map(|o| o.kernels.len()).sum()),
        roofline_rows(&report, |t| {
            t.ops
                .iter()
                .map(|o| o.passes.as_ref().map_or(0, Vec::len))
                .sum()
        }),
        roofline_rows(&report, |t| t.uncovered.len()),
    ];
    assert!(
        expected[9] > 0 && expected[10] > 0,
        "roofline rows: {expected:?}"
    );
    assert_eq!(expected[0], 2, "temporal breakdown of both ranks");
    assert!(expected[1] > 0 && expected[2] > 0, "{expected:?}");

    let dir = std::env::temp_dir().join(format!("exporters-analysis-{}", std::process::id()));
    let mut parquet = ParquetExporter::create(&dir.join("parquet")).unwrap();
    let mut csv = CsvExporter::create(&dir.join("csv")).unwrap();
    parquet.add_analysis(&report).unwrap();
    csv.add_analysis(&report).unwrap();
    let stats = parquet.finish().unwrap();
    let csv_stats = csv.finish().unwrap();
    assert_eq!(stats.analysis_rows.map(|n| n as usize), expected);
    assert_eq!(csv_stats.analysis_rows, stats.analysis_rows);

    for (index, table) in ANALYSIS_TABLES.iter().enumerate() {
        let batch = read(&dir.join("parquet").join(table).join("part-0.parquet"));
        assert_eq!(batch.num_rows(), expected[index], "{table}: parquet rows");
        assert_eq!(
            batch.schema(),
            analysis_arrow_schema(index),
            "{table}: schema"
        );
        let text = std::fs::read_to_string(dir.join("csv").join(format!("{table}.csv"))).unwrap();
        let records = csv_records(&text);
        let header: Vec<&str> = ANALYSIS_SCHEMAS[index].iter().map(|c| c.name).collect();
        assert_eq!(records[0], header, "{table}: csv header");
        assert_eq!(records.len() - 1, expected[index], "{table}: csv rows");
        assert!(records.iter().all(|r| r.len() == header.len()), "{table}");
    }

    let column = |batch: &RecordBatch, name: &str| {
        batch.column(batch.schema().index_of(name).unwrap()).clone()
    };
    // Temporal: rank and idle time per rank.
    let temporal = read(&dir.join("parquet/analysis_temporal/part-0.parquet"));
    let ranks = column(&temporal, "rank");
    let ranks = ranks.as_any().downcast_ref::<Int64Array>().unwrap();
    let idle = column(&temporal, "idle_time_us");
    let idle = idle.as_any().downcast_ref::<Float64Array>().unwrap();
    for (row, rank) in report
        .temporal_breakdown
        .as_ref()
        .unwrap()
        .ranks
        .iter()
        .enumerate()
    {
        assert_eq!(ranks.value(row), rank.rank);
        assert_eq!(idle.value(row), rank.idle_time_us);
    }
    // Kernels: names, types and sums in the report's order.
    let kernels = read(&dir.join("parquet/analysis_kernels/part-0.parquet"));
    let names = column(&kernels, "name");
    let names = names.as_any().downcast_ref::<StringArray>().unwrap();
    let types = column(&kernels, "kernel_type");
    let types = types.as_any().downcast_ref::<StringArray>().unwrap();
    let sums = column(&kernels, "sum_us");
    let sums = sums.as_any().downcast_ref::<Float64Array>().unwrap();
    for (row, kernel) in report.kernel_breakdown.kernels.iter().enumerate() {
        assert_eq!(names.value(row), &*kernel.name);
        assert_eq!(
            types.value(row),
            serde_json::to_value(kernel.kernel_type)
                .unwrap()
                .as_str()
                .unwrap()
        );
        assert_eq!(sums.value(row), kernel.sum_us);
    }
    // Steps: step numbers, durations and the bound, also in the CSV.
    let steps = read(&dir.join("parquet/analysis_steps/part-0.parquet"));
    let numbers = column(&steps, "step");
    let numbers = numbers.as_any().downcast_ref::<Int64Array>().unwrap();
    let durs = column(&steps, "dur_us");
    let durs = durs.as_any().downcast_ref::<Float64Array>().unwrap();
    let bounds = column(&steps, "bound");
    let bounds = bounds.as_any().downcast_ref::<StringArray>().unwrap();
    let csv_steps =
        csv_records(&std::fs::read_to_string(dir.join("csv/analysis_steps.csv")).unwrap());
    for (row, step) in report.steps.iter().enumerate() {
        assert_eq!(numbers.value(row), step.step);
        assert_eq!(durs.value(row), step.dur_us);
        let bound = serde_json::to_value(step.bound).unwrap();
        assert_eq!(bounds.value(row), bound.as_str().unwrap());
        assert_eq!(csv_steps[row + 1][1], step.step.to_string());
        assert_eq!(csv_steps[row + 1][3].parse::<f64>().unwrap(), step.dur_us);
    }
    // Insights: kinds and summaries in order.
    let insights = read(&dir.join("parquet/analysis_insights/part-0.parquet"));
    let summaries = column(&insights, "summary");
    let summaries = summaries.as_any().downcast_ref::<StringArray>().unwrap();
    for (row, finding) in report.insights.iter().enumerate() {
        assert_eq!(summaries.value(row), finding.summary);
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// The collective report's per-group and per-rank tables on the 4-rank demo run TraceLens
/// reported on (vendored in `analysis/tests/data`): one row per group and operation, one
/// per rank, the bandwidth percentiles split into columns, the straggler counts.
#[test]
fn collective_group_and_rank_tables_carry_the_report() {
    let demo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../analysis/tests/data/tracelens-demo-4rank");
    let inputs: Vec<_> = (0..4)
        .map(|r| demo.join(format!("rank{r}.pt.trace.json.gz")))
        .collect();
    let set = analysis::load_paths(&inputs, &analysis::LoadOptions::default()).unwrap();
    let report = analysis::analyze(&set, &analysis::ReportOptions::default());
    let c = &report.collectives;
    assert!(
        !c.groups.is_empty() && c.per_rank.len() == 4,
        "{:?}",
        c.groups
    );
    let dir = std::env::temp_dir().join(format!("exporters-coll-{}", std::process::id()));
    let mut parquet = ParquetExporter::create(&dir).unwrap();
    parquet.add_analysis(&report).unwrap();
    let column = |batch: &RecordBatch, name: &str| {
        batch.column(batch.schema().index_of(name).unwrap()).clone()
    };
    let groups = read(&dir.join("analysis_collective_groups/part-0.parquet"));
    assert_eq!(groups.num_rows(), c.groups.len());
    let p50 = column(&groups, "busbw_p50_gbps");
    let p50 = p50.as_any().downcast_ref::<Float64Array>().unwrap();
    let ops = column(&groups, "collective");
    let ops = ops.as_any().downcast_ref::<StringArray>().unwrap();
    let links = column(&groups, "link");
    let links = links.as_any().downcast_ref::<StringArray>().unwrap();
    for (row, g) in c.groups.iter().enumerate() {
        assert_eq!(ops.value(row), g.collective);
        assert_eq!(p50.value(row), g.bus_bandwidth_gbps.unwrap()[1]);
        assert_eq!(links.value(row), g.link.link);
    }
    let ranks = read(&dir.join("analysis_collective_ranks/part-0.parquet"));
    let last = column(&ranks, "times_waited_for");
    let last = last.as_any().downcast_ref::<Int64Array>().unwrap();
    let rank = column(&ranks, "rank");
    let rank = rank.as_any().downcast_ref::<Int64Array>().unwrap();
    let rank2 = (0..ranks.num_rows()).find(|&i| rank.value(i) == 2).unwrap();
    // TraceLens's straggler summary: rank 2 arrived last 84 times.
    assert_eq!(last.value(rank2), 84);
    std::fs::remove_dir_all(&dir).ok();
}

/// The roofline's tables join on (`rank`, `op_index`): each row's kernels and each compiled
/// graph's passes come back under the row they belong to, with the report's values, and
/// the engine split is columns. On a `torch.compile(backend="neuron")` block
/// (`analysis/tests/data/compiled-block`: passes) and an emulator GPT run recorded with
/// engine busy times (`analysis/tests/data/gpt-2ranks-4steps`: engines).
#[test]
fn roofline_tables_join_on_the_row() {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../analysis/tests/data");
    check_roofline_tables(
        &data.join("compiled-block/rank0.pt.trace.json.gz"),
        false,
        true,
    );
    check_roofline_tables(
        &data.join("gpt-2ranks-4steps/rank0.pt.trace.json.gz"),
        true,
        false,
    );
}

/// A pass row: op index, graph, pass, share of the graph's time.
type PassRow = (Option<i64>, Option<String>, Option<String>, f64);

/// Exports the report of `trace` and checks its roofline tables against it; `engines`,
/// `passes`: the trace must give rows with an engine split, graph passes.
fn check_roofline_tables(trace: &std::path::Path, engines_expected: bool, passes_expected: bool) {
    let set = analysis::load_paths(&[trace], &analysis::LoadOptions::default()).unwrap();
    let report = analysis::analyze(&set, &analysis::ReportOptions::default());
    let table = report.per_rank[0]
        .roofline
        .as_ref()
        .expect("a roofline table");
    let name = trace
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap();
    let dir =
        std::env::temp_dir().join(format!("exporters-roofline-{}-{name}", std::process::id()));
    let mut parquet = ParquetExporter::create(&dir).unwrap();
    parquet.add_analysis(&report).unwrap();
    parquet.finish().unwrap();
    let column = |batch: &RecordBatch, name: &str| {
        batch.column(batch.schema().index_of(name).unwrap()).clone()
    };
    let ints = |batch: &RecordBatch, name: &str| -> Vec<Option<i64>> {
        let c = column(batch, name);
        let c = c.as_any().downcast_ref::<Int64Array>().unwrap();
        (0..c.len())
            .map(|i| c.is_valid(i).then(|| c.value(i)))
            .collect()
    };
    let texts = |batch: &RecordBatch, name: &str| -> Vec<Option<String>> {
        let c = column(batch, name);
        let c = c.as_any().downcast_ref::<StringArray>().unwrap();
        (0..c.len())
            .map(|i| c.is_valid(i).then(|| c.value(i).to_owned()))
            .collect()
    };
    let floats = |batch: &RecordBatch, name: &str| -> Vec<f64> {
        let c = column(batch, name);
        let c = c.as_any().downcast_ref::<Float64Array>().unwrap();
        (0..c.len()).map(|i| c.value(i)).collect()
    };

    let ops = read(&dir.join("analysis_roofline/part-0.parquet"));
    let rows: Vec<Option<i64>> = (0..table.ops.len() as i64).map(Some).collect();
    assert_eq!(ints(&ops, "op_index"), rows);
    let with_engines: Vec<(usize, &analysis::analyses::roofline::engines::EngineSplit)> = table
        .ops
        .iter()
        .enumerate()
        .filter_map(|(i, o)| o.engines.as_ref().map(|e| (i, e)))
        .collect();
    assert_eq!(
        !with_engines.is_empty(),
        engines_expected,
        "{name}: engine splits"
    );
    let (busiest, engines) = (texts(&ops, "busiest"), texts(&ops, "engines"));
    for &(i, split) in &with_engines {
        assert_eq!(busiest[i].as_deref(), Some(split.busiest.as_str()));
        // JSON text: serde_json's default float parsing may differ in the last bit.
        let json: Vec<serde_json::Value> =
            serde_json::from_str(engines[i].as_ref().unwrap()).unwrap();
        assert_eq!(json.len(), split.engines.len());
        for (cell, engine) in json.iter().zip(&split.engines) {
            assert_eq!(cell["engine"], engine.engine.as_str());
            let close = |field: &str, want: f64| {
                let got = cell[field].as_f64().unwrap();
                assert!((got - want).abs() <= 1e-9 * want.abs().max(1.0), "{field}");
            };
            close("busy_per_call_us", engine.busy_per_call_us);
            close("share_pct", engine.share_pct);
        }
    }
    let peaks = texts(&ops, "peak_spec");
    for (i, op) in table.ops.iter().enumerate() {
        assert_eq!(peaks[i].as_deref(), op.peak.as_ref().map(|p| p.0.as_str()));
    }

    let kernels = read(&dir.join("analysis_roofline_kernels/part-0.parquet"));
    let expected: Vec<(Option<i64>, Option<String>, f64)> = table
        .ops
        .iter()
        .enumerate()
        .flat_map(|(i, o)| {
            o.kernels
                .iter()
                .map(move |k| (Some(i as i64), Some(k.name.clone()), k.total_us))
        })
        .collect();
    let got: Vec<(Option<i64>, Option<String>, f64)> = ints(&kernels, "op_index")
        .into_iter()
        .zip(texts(&kernels, "name"))
        .zip(floats(&kernels, "total_us"))
        .map(|((r, n), t)| (r, n, t))
        .collect();
    assert!(!got.is_empty());
    assert_eq!(got, expected);

    let passes = read(&dir.join("analysis_roofline_passes/part-0.parquet"));
    let expected: Vec<PassRow> = table
        .ops
        .iter()
        .enumerate()
        .flat_map(|(i, o)| {
            o.passes.iter().flatten().map(move |p| {
                (
                    Some(i as i64),
                    Some(o.name.clone()),
                    Some(p.pass.clone()),
                    p.share_pct,
                )
            })
        })
        .collect();
    assert_eq!(
        !expected.is_empty(),
        passes_expected,
        "{name}: graph passes"
    );
    let got: Vec<PassRow> = ints(&passes, "op_index")
        .into_iter()
        .zip(texts(&passes, "graph"))
        .zip(texts(&passes, "pass"))
        .zip(floats(&passes, "share_pct"))
        .map(|(((r, g), p), s)| (r, g, p, s))
        .collect();
    assert_eq!(got, expected);
    std::fs::remove_dir_all(&dir).ok();
}
