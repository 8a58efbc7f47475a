//! Interop: the Perfetto archive of two ranks on two hosts (the second host's clock 7 ms
//! ahead) opens in the official `perfetto` Python package's trace processor, with every
//! rank's slices on its host's machine: counts per machine equal to what our export
//! wrote, no import errors.
//!
//! Needs the package: `NEURONPROF_PERFETTO_PYTHON`, else the venv `bash
//! scripts/perfetto-venv` makes (`target/perfetto-venv`, which `.ci/run` creates).
//! Without either the test is skipped with a message, and fails under CI (`CI` set).
//!
//! The package downloads its `trace_processor` binary at first use, from a host outside
//! the package registries. Where that fails the test says so (on standard error, and at
//! the end of `scripts/check` as a test that ran in part) and checks what it can
//! without the binary, with the same package (`scripts/perfetto_archive_check.py`): the
//! manifest against Perfetto's documented schema (version 1), and each member decoded
//! with the package's compiled protos, without fields they do not know, and with our
//! slice counts per member and per machine.

#[path = "../../tests/support/skip.rs"]
mod skip;

mod archive_inputs;

use std::collections::BTreeMap;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::process::Command;

use exporters::perfetto::archive::write_archive;
use serde_json::Value;

const TEST: &str = "exporters: perfetto_archive_loads_in_perfettos_trace_processor";

/// `NEURONPROF_PERFETTO_PYTHON`, else the workspace's `target/perfetto-venv` python.
fn perfetto_python() -> Option<PathBuf> {
    if let Some(python) = std::env::var_os("NEURONPROF_PERFETTO_PYTHON") {
        return Some(PathBuf::from(python));
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/perfetto-venv/bin/python");
    venv.exists().then_some(venv)
}

/// Says that the test ran with a stand-in for part of it: on standard error, and as a
/// record `scripts/check` lists at its end (`$NEURONPROF_SKIP_DIR/partial/`; not a skip,
/// so CI does not fail on it: the stand-in is a check of its own).
fn ran_in_part(what: &str) {
    eprintln!("RAN IN PART {TEST}: {what}");
    let Some(dir) = std::env::var_os("NEURONPROF_SKIP_DIR").map(PathBuf::from) else {
        return;
    };
    let dir = dir.join("partial");
    let file = dir.join(format!(
        "perfetto_archive_loads_in_perfettos_trace_processor.{}.txt",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(&file, format!("{TEST}: {what}\n")))
        .unwrap_or_else(|e| panic!("recording {} failed: {e}", file.display()));
}

#[test]
fn perfetto_archive_loads_in_perfettos_trace_processor() {
    let Some(python) = perfetto_python() else {
        skip::skipped(
            TEST,
            "no Perfetto Python package: run `bash scripts/perfetto-venv` or set \
             NEURONPROF_PERFETTO_PYTHON to a python with `perfetto` installed",
        );
        return;
    };
    let dir = archive_inputs::temp_dir("archive-trace-processor");
    let inputs =
        archive_inputs::ranks_on_hosts(&dir, [Some("node-a"), Some("node-b")], [0, 7_000_000]);
    let path = dir.join("perfetto.tar");
    let file = BufWriter::new(std::fs::File::create(&path).unwrap());
    let (_, stats) = write_archive(&inputs, file, 0).unwrap();
    let mut by_machine: BTreeMap<String, u64> = BTreeMap::new();
    for member in &stats.members {
        *by_machine.entry(member.machine.clone()).or_default() += member.stats.slices;
    }
    assert_eq!(by_machine.len(), 2, "{by_machine:?}");

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/perfetto_archive_check.py");
    let out = Command::new(&python)
        .arg(&script)
        .arg(&path)
        .output()
        .expect("running the check script");
    assert!(
        out.status.success(),
        "{}: {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let result: Value = serde_json::from_slice(&out.stdout).expect("the script prints JSON");
    assert_eq!(
        result["manifest_problems"],
        Value::Array(Vec::new()),
        "the manifest breaks Perfetto's documented schema"
    );
    let expected: Value = by_machine
        .iter()
        .map(|(machine, slices)| (machine.clone(), Value::from(*slices)))
        .collect::<serde_json::Map<_, _>>()
        .into();

    if let Some(tp) = result.get("trace_processor") {
        assert_eq!(tp["slices_by_machine"], expected, "slices per machine");
        for machine in by_machine.keys() {
            assert!(
                tp["machines"]
                    .as_array()
                    .unwrap()
                    .contains(&machine.as_str().into()),
                "machine {machine} in {}",
                tp["machines"]
            );
        }
        assert_eq!(
            tp["errors"],
            Value::Object(Default::default()),
            "import errors"
        );
    } else {
        let reason = result["trace_processor_unavailable"].as_str().unwrap();
        ran_in_part(&format!(
            "the trace_processor binary could not be fetched ({reason}); checked the \
             manifest against the documented schema and each member with the package's \
             protos instead"
        ));
        let protos = &result["protos"];
        assert_eq!(
            protos["unknown_fields"], 0,
            "fields unknown to Perfetto's protos"
        );
        assert_eq!(protos["slices_by_machine"], expected, "slices per machine");
        for member in &stats.members {
            assert_eq!(
                protos["slices_by_member"][&member.path], member.stats.slices,
                "{}",
                member.path
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
