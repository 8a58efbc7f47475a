//! Size: the Perfetto output of the two traces the size target was set on (41 % and
//! 52 % of their JSON before string values of any length were interned and timestamps
//! went incremental) must stay at most 40 % of the uncompressed JSON. Figures and the
//! command that prints them: docs/PERFORMANCE.md, "exporters".

mod common;

use std::io::Read as _;

use exporters::PerfettoExporter;

/// The most output bytes per byte of uncompressed JSON.
const MAX_RATIO: f64 = 0.40;

#[test]
fn perfetto_output_is_at_most_40_percent_of_the_json() {
    let dir = common::shared_dir();
    let mut report = Vec::new();
    for file in [
        "hta/mtia_inference_rank_0.json.gz",
        "kineto-legacy/resnet50_2021.json.gz",
    ] {
        let path = dir.join(file);
        let mut json = Vec::new();
        flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap())
            .read_to_end(&mut json)
            .unwrap();
        let mut exporter = PerfettoExporter::new(Vec::new());
        exporter
            .add_reader(&path, trace_format::TraceReader::from_slice(file, &json))
            .unwrap();
        let (bytes, stats) = exporter.finish().unwrap();
        assert_eq!(stats.bytes_written, bytes.len() as u64);
        let ratio = bytes.len() as f64 / json.len() as f64;
        report.push(format!(
            "{file}: {} of {} JSON bytes = {:.1} %",
            bytes.len(),
            json.len(),
            100.0 * ratio
        ));
        assert!(ratio <= MAX_RATIO, "{}", report.join("\n"));
    }
    eprintln!("{}", report.join("\n"));
}
