//! The roofline table ([`analysis::analyses::roofline`]) against AMD TraceLens's own
//! performance reports on the same traces: the four MI300X and two H100 Hugging Face
//! traces of `../shared/traces/tracelens/` (TraceLens's test data; its report CSVs beside
//! each, see that folder's README).
//!
//! For every row of TraceLens's `GEMM.csv`, `SDPA_fwd.csv`, `BinaryElementwise.csv`,
//! `UnaryElementwise.csv` and `Reduce_fwd.csv` our row with the same operator and
//! arguments has the same call count, GFLOPS and data moved (same definitions), and the
//! same mean achieved TFLOP/s and TB/s within 1 %. One difference is on purpose:
//! TraceLens counts a reduction's output as one element whatever dims it reduces
//! (`aten::mean(x, [-1])` writes one value per row); ours counts the real output, so
//! where a dim is given our bytes are TraceLens's plus the output's other elements, and
//! the test checks exactly that.
//!
//! The category table equals `ops_summary_by_category.csv` (calls, and kernel time to
//! within the resolution of TraceLens's float64 µs timestamps: 0.001 µs per call), with our finer categories folded into TraceLens's `other`: TraceLens has
//! no category for softmax, for the inner attention op (`_flash_attention_forward`, whose
//! kernels its SDPA row counts) or for `cat`/`index_select`/`_local_scalar_dense`; ours
//! are `softmax`, `SDPA_fwd` and `memory`.

#[path = "../../tests/support/skip.rs"]
mod skip;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use analysis::analyses::roofline::{roofline_table, RankRoofline, RooflineOptions};
use analysis::{load_paths, LoadOptions};
use perf_model::Category;

/// The vendored copy of the shared collection's `tracelens/` (`tests/data/README.md`), or
/// `NEURONPROF_SHARED_TRACES/tracelens`.
fn tracelens_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("NEURONPROF_SHARED_TRACES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/traces"))
        .join("tracelens");
    dir.is_dir().then_some(dir)
}

const TRACES: &[&str] = &[
    "mi300_Qwen_Qwen1.5-0.5B-Chat__1016005",
    "mi300_facebook_timesformer-base-finetuned-k400__1016002",
    "mi300_Falconsai_nsfw_image_detection__1016002",
    "mi300_gaunernst_bert-small-uncased__1016001",
    "h100_Falconsai_nsfw_image_detection__1016002",
    "h100_gaunernst_bert-small-uncased__1016001",
];

/// A CSV file as header → value maps (RFC 4180 quoting).
fn read_csv(path: &Path) -> Vec<HashMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut records: Vec<Vec<String>> = Vec::new();
    let (mut record, mut field, mut quoted, mut chars) =
        (Vec::new(), String::new(), false, text.chars().peekable());
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => record.push(std::mem::take(&mut field)),
            (false, '\n') => {
                record.push(std::mem::take(&mut field));
                records.push(std::mem::take(&mut record));
            }
            (false, '\r') => {}
            (false, c) => field.push(c),
        }
    }
    if !field.is_empty() || !record.is_empty() {
        record.push(field);
        records.push(record);
    }
    let header = records.remove(0);
    records
        .into_iter()
        .map(|r| header.iter().cloned().zip(r).collect())
        .collect()
}

/// Python's and JSON's spelling of the same list, made equal: no spaces, one quote kind.
fn canonical(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_whitespace())
        .map(|c| if c == '\'' { '"' } else { c })
        .collect()
}

fn num(row: &HashMap<String, String>, key: &str) -> f64 {
    row[key]
        .parse()
        .unwrap_or_else(|_| panic!("{key} = {:?} is not a number", row[key]))
}

fn close(ours: f64, theirs: f64, rel: f64) -> bool {
    (ours - theirs).abs() <= rel * theirs.abs().max(1e-12)
}

fn load(dir: &Path, name: &str) -> RankRoofline {
    let path = dir.join(format!("{name}.json.gz"));
    let traces = load_paths(&[&path], &LoadOptions::default()).expect("trace loads");
    roofline_table(&traces.ranks[0], &RooflineOptions::default()).expect("roofline")
}

#[test]
fn every_tracelens_perf_model_row_has_our_flops_bytes_and_rates() {
    let Some(dir) = tracelens_dir() else {
        skip::skipped(
            "every_tracelens_perf_model_row_has_our_flops_bytes_and_rates",
            "../shared/traces/tracelens is absent",
        );
        return;
    };
    let mut checked = 0;
    let mut failures = Vec::new();
    for name in TRACES {
        let table = load(&dir, name);
        let ours: HashMap<(String, String, String, String, String), _> = table
            .ops
            .iter()
            .map(|op| {
                let key = (
                    op.name.clone(),
                    canonical(&op.input_dims),
                    canonical(&op.input_types),
                    canonical(&op.input_strides),
                    canonical(&op.concrete_inputs),
                );
                (key, op)
            })
            .collect();
        let csvs = dir.join(format!("{name}_perf_report_csvs"));
        for file in [
            "GEMM.csv",
            "SDPA_fwd.csv",
            "BinaryElementwise.csv",
            "UnaryElementwise.csv",
            "Reduce_fwd.csv",
        ] {
            let path = csvs.join(file);
            if !path.exists() {
                continue;
            }
            for row in read_csv(&path) {
                let key = (
                    row["name"].clone(),
                    canonical(&row["Input Dims_first"]),
                    canonical(&row["Input type_first"]),
                    canonical(&row["Input Strides_first"]),
                    canonical(&row["Concrete Inputs_first"]),
                );
                let at = format!("{name}/{file}: {} {}", key.0, key.1);
                if num(&row, "Kernel Time (µs)_sum") == 0.0 {
                    // TraceLens lists calls that launched no device work (a copy done on
                    // the host), with no rates; our rows are calls with kernels.
                    if ours.contains_key(&key) {
                        failures.push(format!("{at}: a row of ours for calls without kernels"));
                    }
                    continue;
                }
                let Some(op) = ours.get(&key) else {
                    failures.push(format!("{at}: no row of ours"));
                    continue;
                };
                checked += 1;
                let count = num(&row, "name_count") as u64;
                if op.count != count {
                    failures.push(format!("{at}: count {} vs {count}", op.count));
                }
                if !close(op.gflops, num(&row, "GFLOPS_first"), 1e-9) {
                    failures.push(format!(
                        "{at}: GFLOPS {} vs {}",
                        op.gflops, row["GFLOPS_first"]
                    ));
                }
                let mb = op.data_moved_bytes / 1048576.0;
                let tracelens_mb = num(&row, "Data Moved (MB)_first");
                let mut theirs_mb = tracelens_mb;
                if file == "Reduce_fwd.csv" {
                    // On purpose (module docs): TraceLens writes one output element.
                    let out_elems = op
                        .params
                        .rsplit("out_elems=")
                        .next()
                        .and_then(|s| s.parse::<f64>().ok())
                        .expect("reduce params name out_elems");
                    let out_bytes_each = output_elem_bytes(&op.input_types);
                    theirs_mb += (out_elems - 1.0) * out_bytes_each / 1048576.0;
                }
                if !close(mb, theirs_mb, 1e-9) {
                    failures.push(format!("{at}: data moved {mb} MB vs {theirs_mb}"));
                }
                // A reduction's rate over TraceLens's bytes (the difference on purpose).
                let tb_scale = if file == "Reduce_fwd.csv" {
                    tracelens_mb / mb
                } else {
                    1.0
                };
                for (ours_v, key) in [
                    (op.tflops_per_sec.mean, "TFLOPS/s_mean"),
                    (op.tb_per_sec.mean * tb_scale, "TB/s_mean"),
                    (op.kernel_time_us, "Kernel Time (µs)_sum"),
                ] {
                    if !close(ours_v, num(&row, key), 0.01) {
                        failures.push(format!("{at}: {key} {ours_v} vs {}", row[key]));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} rows differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked >= 80, "only {checked} rows compared");
}

/// The size of a reduction's output element: its input's (the first `Input type`).
fn output_elem_bytes(types: &str) -> f64 {
    let first = canonical(types);
    let first = first
        .trim_start_matches("[\"")
        .split('"')
        .next()
        .unwrap_or("");
    perf_model::DType::parse(first).map_or(0.0, |t| t.bytes() as f64)
}

#[test]
fn category_kernel_times_equal_tracelens_ops_summary_by_category() {
    let Some(dir) = tracelens_dir() else {
        skip::skipped(
            "category_kernel_times_equal_tracelens_ops_summary_by_category",
            "../shared/traces/tracelens is absent",
        );
        return;
    };
    let mut failures = Vec::new();
    for name in TRACES {
        let table = load(&dir, name);
        let mut ours: HashMap<&str, (u64, f64)> = HashMap::new();
        for c in &table.categories {
            // Ours is finer where TraceLens has no category (module docs).
            let label = match c.category {
                Category::Softmax | Category::SdpaFwd | Category::Memory | Category::Embedding => {
                    "other"
                }
                other => other.label(),
            };
            let e = ours.entry(label).or_default();
            e.0 += c.count;
            e.1 += c.kernel_time_us;
        }
        let path = dir.join(format!(
            "{name}_perf_report_csvs/ops_summary_by_category.csv"
        ));
        let theirs = read_csv(&path);
        assert_eq!(ours.len(), theirs.len(), "{name}: categories {ours:?}");
        for row in theirs {
            let label = row["op category"].as_str();
            let (count, us) = ours.get(label).copied().unwrap_or_default();
            let their_us = num(&row, "total_direct_kernel_time_ms") * 1e3;
            // TraceLens takes durations from float64 µs timestamps near 2.2·10¹² µs,
            // whose resolution is 2⁻¹¹ µs: equal to within 0.001 µs per call.
            let resolution_us = 1e-3 * count as f64;
            if count != num(&row, "Count") as u64 || (us - their_us).abs() > resolution_us {
                failures.push(format!(
                    "{name}: {label}: {count} calls {us} us vs {} calls {their_us} us",
                    row["Count"]
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn analyze_says_when_much_of_the_kernel_time_is_far_from_the_roofline() {
    let Some(dir) = tracelens_dir() else {
        skip::skipped(
            "analyze_says_when_much_of_the_kernel_time_is_far_from_the_roofline",
            "../shared/traces/tracelens is absent",
        );
        return;
    };
    // Timesformer on the MI300X: softmax over 3137×3137 scores and batched GEMMs of
    // 8×8 blocks run far below the device's roofline.
    let path = dir.join(format!("{}.json.gz", TRACES[1]));
    let traces = load_paths(&[&path], &LoadOptions::default()).expect("trace loads");
    let report = analysis::analyze(&traces, &analysis::ReportOptions::default());
    let finding = report
        .insights
        .iter()
        .find(|f| f.kind == analysis::insights::FindingKind::FarFromRoofline)
        .expect("a far-from-roofline finding");
    assert!(finding.value >= 0.25, "{}", finding.summary);
    assert!(finding.summary.contains("MI300X"), "{}", finding.summary);
    // A share of the kernel time: nested calls (an SDPA inside its flash variant) must
    // not count their kernels twice. On BERT it read 141 % before.
    for name in TRACES {
        let path = dir.join(format!("{name}.json.gz"));
        let traces = load_paths(&[&path], &LoadOptions::default()).expect("trace loads");
        let report = analysis::analyze(&traces, &analysis::ReportOptions::default());
        for f in &report.insights {
            if f.kind == analysis::insights::FindingKind::FarFromRoofline {
                assert!(f.value <= 1.0, "{name}: {}", f.summary);
            }
        }
    }
    assert!(
        finding.summary.contains("aten::_softmax"),
        "{}",
        finding.summary
    );
    let table = report.per_rank[0]
        .roofline
        .as_ref()
        .expect("roofline table");
    assert_eq!(table.ops[0].name, "aten::_softmax");
    let text = analysis::render::render_report(&report);
    assert!(text.contains("Roofline, rank 0 (MI300X"), "{text}");
}

#[test]
fn one_model_on_two_devices_compares_op_by_op() {
    let Some(dir) = tracelens_dir() else {
        skip::skipped(
            "one_model_on_two_devices_compares_op_by_op",
            "../shared/traces/tracelens is absent",
        );
        return;
    };
    // BERT-small on the MI300X and on the H100: the same ops with the same arguments.
    let mi300 = load(&dir, TRACES[3]);
    let h100 = load(&dir, TRACES[5]);
    let diff = analysis::analyses::roofline::diff::roofline_diff(&mi300, &h100);
    assert_eq!(
        diff.devices,
        (Some("MI300X".to_owned()), Some("H100 SXM".to_owned()))
    );
    assert!(diff.changes.len() >= 5, "{} pairs", diff.changes.len());
    let gemm = diff
        .changes
        .iter()
        .find(|c| c.name == "aten::addmm")
        .expect("an addmm on both");
    assert_eq!(gemm.count.0, gemm.count.1, "{gemm:?}");
    assert!(gemm.roofline_pct.0.is_some() && gemm.roofline_pct.1.is_some());
    // Sorted by the size of the change in total kernel time.
    for pair in diff.changes.windows(2) {
        assert!(pair[0].kernel_time_delta_us.abs() >= pair[1].kernel_time_delta_us.abs());
    }
}
