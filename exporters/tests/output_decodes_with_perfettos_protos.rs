//! The output decodes with Perfetto's official `.proto` files (vendored in
//! `tests/protos/`) through `protoc --decode=perfetto.protos.Trace`, with no unknown
//! fields. Without `protoc` the test is skipped with a message — except in CI (`CI`
//! set), where `.ci/run` installs `protobuf-compiler` and a missing `protoc` fails.

mod common;

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use exporters::PerfettoExporter;

fn protoc() -> Option<PathBuf> {
    let found = Command::new("protoc").arg("--version").output().ok()?;
    found.status.success().then(|| PathBuf::from("protoc"))
}

fn decode(protoc: &PathBuf, bytes: &[u8]) -> String {
    let protos = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/protos");
    let mut child = Command::new(protoc)
        .arg(format!("-I{protos}"))
        .arg("--decode=perfetto.protos.Trace")
        .arg("protos/perfetto/trace/trace.proto")
        .current_dir(protos)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = bytes.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(
        output.status.success(),
        "protoc --decode failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn output_decodes_with_perfettos_protos() {
    let Some(protoc) = protoc() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run this test: install protobuf-compiler (protoc)"
        );
        eprintln!("skipped: no protoc (apt-get install protobuf-compiler)");
        return;
    };
    let Some(dir) = common::shared_dir() else {
        return;
    };
    for file in [
        dir.join("torch-2.15/python_privateuse1_neuron.pt.trace.json.gz"),
        dir.join("hta/memory_events.json.gz"),
        dir.join("hta/two_rank-rank0.json.gz"),
    ] {
        let mut exporter = PerfettoExporter::new(Vec::new());
        exporter.add_path(&file).unwrap();
        let (bytes, stats) = exporter.finish().unwrap();
        let text = decode(&protoc, &bytes);
        let name = file.display();
        // Every field we write is known to Perfetto's schema: protoc prints unknown
        // fields as bare numbers (`47: 0x…`), known ones by name.
        assert!(
            !text
                .lines()
                .any(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit())),
            "{name}: unknown fields in\n{}",
            &text[..text.len().min(2000)]
        );
        let begins = text.matches("type: TYPE_SLICE_BEGIN").count() as u64;
        assert_eq!(begins, stats.slices, "{name}: slices decoded by protoc");
        assert_eq!(
            text.matches("type: TYPE_COUNTER").count() as u64,
            stats.counter_values + stats.derived_counter_values,
            "{name}: counter values decoded by protoc"
        );
        assert!(text.contains("trusted_packet_sequence_id: 1"));
        assert!(text.contains("clock_snapshot {"));
        assert!(text.contains("sequence_flags: 3"));
        if stats.flow_events > 0 {
            assert!(text.contains("flow_ids: "), "{name}: flows");
            assert!(text.contains("terminating_flow_ids: "), "{name}: flows");
        }
    }
}
