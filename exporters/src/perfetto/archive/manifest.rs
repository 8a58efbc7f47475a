//! The archive's `perfetto_manifest.json`: Perfetto's trace manifest, format version 1.
//!
//! Facts used (Perfetto's `docs/reference/perfetto-manifest.md`, and its reader in
//! `src/trace_processor/plugins/perfetto_manifest/`, as of v58): the document is an
//! object with the one key `perfetto_manifest` (a reader recognises it by content: it
//! starts with `{"perfetto_manifest"`, whitespace aside), holding `version: 1`, an
//! optional `trace_time {clock, file}` (the clock of the merged timeline, pinned to a
//! file's machine), `files` (one entry per member: `path`, `machine {name}` — files
//! naming one machine share its processes, threads and clocks — and `clocks {clock,
//! sync_to {file, clock}, offset_ns}`: at one instant this file's clock reads T while
//! the reference reads T + `offset_ns`) and `attributes` (string or integer values; keys
//! should be namespaced). Clock names are `BOOTTIME`, `REALTIME`, `MONOTONIC` and their
//! variants.

use std::collections::BTreeMap;

use serde::Serialize;

/// The clock our traces are written on (Kineto's Unix-epoch ns, stated as BOOTTIME with
/// an equal REALTIME reading: the crate docs' wire format).
pub const TRACE_CLOCK: &str = "BOOTTIME";

/// The member name of the manifest (Perfetto's convention; any name would do).
pub const MANIFEST_NAME: &str = "perfetto_manifest.json";

/// The whole document.
#[derive(Clone, Debug, Serialize)]
pub struct ManifestDoc {
    /// The one top-level key.
    pub perfetto_manifest: Manifest,
}

/// `perfetto_manifest`.
#[derive(Clone, Debug, Serialize)]
pub struct Manifest {
    /// Always 1.
    pub version: u32,
    /// The merged timeline's clock.
    pub trace_time: TraceTime,
    /// One entry per trace member.
    pub files: Vec<FileEntry>,
    /// `neuronprof.*` facts about the archive.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: BTreeMap<String, Attribute>,
}

/// `trace_time`.
#[derive(Clone, Debug, Serialize)]
pub struct TraceTime {
    /// A clock name.
    pub clock: &'static str,
    /// The member whose machine owns the clock.
    pub file: String,
}

/// One entry of `files`.
#[derive(Clone, Debug, Serialize)]
pub struct FileEntry {
    /// The member's path in the archive.
    pub path: String,
    /// The machine the whole file belongs to.
    pub machine: Machine,
    /// This file's clock related to another file's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clocks: Option<Clocks>,
}

/// `machine`.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    /// Non-empty.
    pub name: String,
}

/// `clocks` (relating an internally clocked file: `clock` set).
#[derive(Clone, Debug, Serialize)]
pub struct Clocks {
    /// This file's clock.
    pub clock: &'static str,
    /// The reference.
    pub sync_to: SyncTo,
    /// Reference reading minus this file's reading at one instant.
    pub offset_ns: i64,
}

/// `clocks.sync_to`.
#[derive(Clone, Debug, Serialize)]
pub struct SyncTo {
    /// The reference member.
    pub file: String,
    /// The reference clock.
    pub clock: &'static str,
}

/// An `attributes` value.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum Attribute {
    /// An integer.
    Int(i64),
    /// A string.
    Text(String),
}

impl ManifestDoc {
    /// The document as JSON text (starting `{"perfetto_manifest"`, as a reader
    /// detects it).
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("plain data serializes");
        text.push('\n');
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_with_the_documented_keys() {
        let doc = ManifestDoc {
            perfetto_manifest: Manifest {
                version: 1,
                trace_time: TraceTime {
                    clock: TRACE_CLOCK,
                    file: "rank0.pftrace".into(),
                },
                files: vec![
                    FileEntry {
                        path: "rank0.pftrace".into(),
                        machine: Machine { name: "a".into() },
                        clocks: None,
                    },
                    FileEntry {
                        path: "rank1.pftrace".into(),
                        machine: Machine { name: "b".into() },
                        clocks: Some(Clocks {
                            clock: TRACE_CLOCK,
                            sync_to: SyncTo {
                                file: "rank0.pftrace".into(),
                                clock: TRACE_CLOCK,
                            },
                            offset_ns: -5,
                        }),
                    },
                ],
                attributes: BTreeMap::from([("neuronprof.ranks".into(), Attribute::Int(2))]),
            },
        };
        let text = doc.to_json();
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        assert!(compact.starts_with(r#"{"perfetto_manifest":{"version":1,"#));
        assert!(compact.contains(
            r#"{"path":"rank1.pftrace","machine":{"name":"b"},"clocks":{"clock":"BOOTTIME","sync_to":{"file":"rank0.pftrace","clock":"BOOTTIME"},"offset_ns":-5}}"#
        ));
        assert!(compact.contains(r#""trace_time":{"clock":"BOOTTIME","file":"rank0.pftrace"}"#));
        assert!(compact.contains(r#""attributes":{"neuronprof.ranks":2}"#));
        assert!(!compact.contains(r#""machine":{"name":"a"},"clocks""#));
    }
}
