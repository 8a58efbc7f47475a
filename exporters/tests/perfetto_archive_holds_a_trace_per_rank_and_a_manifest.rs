//! `write_archive` makes a tar that `tar` itself reads, holding Perfetto's manifest and
//! one `.pftrace` per rank, each decoding with Perfetto's official schema (the
//! `perfetto_protos` crate) without unknown fields, valid by `validate`, and with the
//! slices the single-file export writes for that rank. The manifest puts each rank's
//! file on its host's machine (its own when the trace names none), relates a host whose
//! clock is ahead to the first host by the offset its collectives show, and keeps the
//! pids of ranks sharing a machine apart.

mod archive_inputs;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::process::Command;

use exporters::perfetto::archive::{write_archive, ArchiveStats};
use exporters::perfetto::validate;
use exporters::PerfettoExporter;
use perfetto_protos::trace::Trace;
use protobuf::Message as _;
use serde_json::Value;

/// The archive of `inputs`, unpacked by `tar` into `dir`; the stats and the manifest.
fn archive(inputs: &[PathBuf], dir: &Path) -> (ArchiveStats, Value) {
    let (bytes, stats) = write_archive(inputs, Cursor::new(Vec::new()), 1_790_857_026).unwrap();
    let bytes = bytes.into_inner();
    assert_eq!(bytes.len() as u64, stats.bytes_written);
    let tar_file = dir.join("archive.tar");
    std::fs::write(&tar_file, &bytes).unwrap();
    let unpacked = dir.join("unpacked");
    std::fs::create_dir_all(&unpacked).unwrap();
    let status = Command::new("tar")
        .arg("-xf")
        .arg(&tar_file)
        .arg("-C")
        .arg(&unpacked)
        .status()
        .expect("running tar");
    assert!(status.success(), "tar could not unpack the archive");
    let listed = Command::new("tar")
        .arg("-tf")
        .arg(&tar_file)
        .output()
        .unwrap();
    let names: Vec<String> = String::from_utf8(listed.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let mut expected = vec!["perfetto_manifest.json".to_owned()];
    expected.extend(stats.members.iter().map(|m| m.path.clone()));
    assert_eq!(names, expected, "members, manifest first");

    let text = std::fs::read_to_string(unpacked.join("perfetto_manifest.json")).unwrap();
    assert_eq!(text, stats.manifest);
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    assert!(
        compact.starts_with(r#"{"perfetto_manifest":"#),
        "detected by content"
    );
    let manifest: Value = serde_json::from_str(&text).unwrap();
    let doc = &manifest["perfetto_manifest"];
    assert_eq!(doc["version"], 1);
    assert_eq!(doc["trace_time"]["clock"], "BOOTTIME");
    assert_eq!(doc["trace_time"]["file"], stats.members[0].path.as_str());

    for member in &stats.members {
        let bytes = std::fs::read(unpacked.join(&member.path)).unwrap();
        assert_eq!(
            bytes.len() as u64,
            member.stats.bytes_written,
            "{}",
            member.path
        );
        let trace = Trace::parse_from_bytes(&bytes).expect("decodes with Perfetto's schema");
        let text = protobuf::text_format::print_to_string_pretty(&trace);
        let unknown = text
            .lines()
            .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
            .count();
        assert_eq!(unknown, 0, "{}: fields unknown to Perfetto", member.path);
        let begins = text.matches("type: TYPE_SLICE_BEGIN").count() as u64;
        assert_eq!(begins, member.stats.slices, "{}", member.path);
        let summary = validate::validate(&bytes).unwrap();
        assert_eq!(summary.slices, member.stats.slices, "{}", member.path);
        // The single-file export of the same rank alone writes the same slices.
        let mut alone = PerfettoExporter::new(Vec::new());
        alone.add_path(&member.input).unwrap();
        let (_, alone) = alone.finish().unwrap();
        assert_eq!(alone.slices, member.stats.slices, "{}", member.path);
        assert!(member.stats.slices > 1000, "{}: a real rank", member.path);
    }
    (stats, manifest)
}

fn entries(manifest: &Value) -> BTreeMap<String, Value> {
    manifest["perfetto_manifest"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["path"].as_str().unwrap().to_owned(), e.clone()))
        .collect()
}

/// The pids of the process groups of a member.
fn pids(dir: &Path, member: &str) -> BTreeSet<i32> {
    let bytes = std::fs::read(dir.join("unpacked").join(member)).unwrap();
    let trace = Trace::parse_from_bytes(&bytes).unwrap();
    trace
        .packet
        .iter()
        .filter_map(|p| p.track_descriptor().process.as_ref()?.pid)
        .collect()
}

#[test]
fn ranks_without_a_host_are_machines_of_their_own() {
    let dir = archive_inputs::temp_dir("archive-no-host");
    let (stats, manifest) = archive(&archive_inputs::recorded_ranks(), &dir);
    let files = entries(&manifest);
    assert_eq!(files.len(), 2);
    for (r, path) in ["rank0.pftrace", "rank1.pftrace"].iter().enumerate() {
        assert_eq!(files[*path]["machine"]["name"], format!("rank {r}"));
        assert!(files[*path].get("clocks").is_none(), "wall clock only");
    }
    assert!(stats.hosts.is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_host_whose_clock_is_ahead_is_related_by_its_collectives() {
    let dir = archive_inputs::temp_dir("archive-two-hosts");
    let ahead_ns = 7_000_000;
    let inputs =
        archive_inputs::ranks_on_hosts(&dir, [Some("node-a"), Some("node-b")], [0, ahead_ns]);
    let (stats, manifest) = archive(&inputs, &dir);
    let files = entries(&manifest);
    assert_eq!(files["rank0.pftrace"]["machine"]["name"], "node-a");
    assert_eq!(files["rank1.pftrace"]["machine"]["name"], "node-b");
    assert!(files["rank0.pftrace"].get("clocks").is_none());
    let clocks = &files["rank1.pftrace"]["clocks"];
    assert_eq!(clocks["clock"], "BOOTTIME");
    assert_eq!(clocks["sync_to"]["file"], "rank0.pftrace");
    assert_eq!(clocks["sync_to"]["clock"], "BOOTTIME");
    // At one instant node-b reads T and node-a T - 7 ms: the emulator's collectives end
    // at one modeled instant on every rank, so the offset is exact.
    assert_eq!(clocks["offset_ns"], -ahead_ns);
    assert_eq!(stats.hosts.len(), 1);
    assert_eq!(stats.hosts[0].host, "node-b");
    assert!(stats.hosts[0].offset.instances > 10, "{:?}", stats.hosts);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ranks_sharing_a_host_share_its_machine_with_distinct_pids() {
    let dir = archive_inputs::temp_dir("archive-one-host");
    let inputs = archive_inputs::ranks_on_hosts(&dir, [Some("node-a"), Some("node-a")], [0, 0]);
    let (stats, manifest) = archive(&inputs, &dir);
    let files = entries(&manifest);
    for path in ["rank0.pftrace", "rank1.pftrace"] {
        assert_eq!(files[path]["machine"]["name"], "node-a");
        assert!(files[path].get("clocks").is_none(), "one host, one clock");
    }
    assert!(stats.hosts.is_empty());
    // Both ranks ran in one process (one pid) with device 0 and 1: on one machine the
    // second file's groups take other pids.
    let (first, second) = (pids(&dir, "rank0.pftrace"), pids(&dir, "rank1.pftrace"));
    assert!(!first.is_empty() && !second.is_empty());
    assert!(first.is_disjoint(&second), "{first:?} and {second:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
