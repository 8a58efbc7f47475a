//! The inspect report: what one trace file holds, and the totals over a set of files.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

/// A device named by the trace: from `deviceProperties`, or seen as the `device`
/// argument of device activity.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceSummary {
    /// Device index (`id` in `deviceProperties`, `device` in event args).
    pub device_index: i64,
    /// The name `deviceProperties` gives, if any.
    pub name: Option<String>,
    /// Device events (kernels, copies, sets) on this device.
    pub device_events: u64,
}

/// Flow links of one category (`ac2g`, `fwdbwd`, …), matched by flow id.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FlowCounts {
    /// Flow ids that have both a start (`s`) and at least one finish (`f`).
    pub matched: u64,
    /// Flow ids with a start but no finish.
    pub unmatched_starts: u64,
    /// Flow ids with a finish but no start.
    pub unmatched_finishes: u64,
}

/// Where and how a file was damaged; everything before it was still read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Damage {
    /// The reader's message: what went wrong, with file, byte offset and event index.
    pub message: String,
    /// Byte offset of the damage in the (decompressed) JSON text, when known.
    pub byte_offset: Option<u64>,
    /// Index of the event being read when the damage was found, when known.
    pub event_index: Option<u64>,
}

/// Everything `inspect` found in one trace file.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FileReport {
    /// The file as given or found in a directory.
    pub path: PathBuf,
    /// `distributedInfo.rank`, if the trace states it.
    pub rank: Option<i64>,
    /// `distributedInfo.world_size`, if the trace states it.
    pub world_size: Option<i64>,
    /// `distributedInfo.backend` (nccl, gloo, …), if stated.
    pub backend: Option<String>,
    /// Devices from `deviceProperties` and from device activity.
    pub devices: Vec<DeviceSummary>,
    /// `baseTimeNanoseconds`, if stated.
    pub base_time_ns: Option<i64>,
    /// Earliest timestamp of any timed event (absolute ns since the epoch, or the
    /// trace's own origin when it states none).
    pub first_ts_ns: Option<i64>,
    /// Latest end (`ts + dur`) of any timed event, same clock as `first_ts_ns`.
    pub last_end_ns: Option<i64>,
    /// Events read (before any damage).
    pub events: u64,
    /// Event counts by category, as spelled in the trace; events without a
    /// category (metadata rows, global markers) count under `""`.
    pub by_category: BTreeMap<String, u64>,
    /// Event counts by phase (`X`, `i`, `s`, `f`, `M`, `C`, …).
    pub by_phase: BTreeMap<String, u64>,
    /// `[memory]` instant events.
    pub memory_events: u64,
    /// `[memory]` events by `Device Type` (20 = PrivateUse1, the neuron device).
    pub memory_events_by_device_type: BTreeMap<i64, u64>,
    /// Flow links by (normalised) category.
    pub flows: BTreeMap<String, FlowCounts>,
    /// Records the recorder dropped (a full ring buffer), if the trace states it.
    pub dropped_records: Option<u64>,
    /// Events skipped because they were damaged on their own (wrong types, bad
    /// numbers); the rest of the file was still read.
    pub skipped_events: u64,
    /// The first few errors of skipped events, with file, byte offset and event index.
    pub skipped_examples: Vec<String>,
    /// Damage that stopped the read, if any.
    pub damage: Option<Damage>,
    /// For a Neuron Explorer profile folder: its schema version and what the read found
    /// (problems skipped, unknown tables and columns, missing tables).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub neuron_explorer: Option<NeuronExplorerInfo>,
}

/// What `inspect` says of a Neuron Explorer profile folder. JSON: `{"schema_version",
/// "lnc", "worker_gids", "problems", "unknown", "missing"}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct NeuronExplorerInfo {
    /// `Metadata.profile_schema_version`, when the profile has it.
    pub schema_version: Option<String>,
    /// Physical cores per logical core seen in the device executions.
    pub lnc: Option<u64>,
    /// `worker_gid`s of the runtime and device events.
    pub worker_gids: Vec<i64>,
    /// Damage skipped (table, column, row group of each).
    pub problems: Vec<String>,
    /// Tables and columns the profile's schema does not declare or this reader does
    /// not know, each once.
    pub unknown: Vec<String>,
    /// Tables absent, and what the analyses lack without them.
    pub missing: Vec<String>,
    /// With a framework trace merged: what was linked.
    pub framework: Option<String>,
}

impl FileReport {
    /// Time span covered by timed events, in ns.
    pub fn span_ns(&self) -> Option<i64> {
        Some(self.last_end_ns? - self.first_ts_ns?)
    }
}

/// The report over all files given to `inspect`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct InspectReport {
    /// One entry per file, in the order read (directories expanded, sorted).
    pub files: Vec<FileReport>,
    /// Ranks stated by the files, sorted, each once.
    pub ranks: Vec<i64>,
    /// World size, when all files that state one agree; the largest one otherwise.
    pub world_size: Option<i64>,
    /// Problems across files: duplicated ranks, disagreeing world sizes, ranks missing.
    pub warnings: Vec<String>,
    /// Events read over all files.
    pub total_events: u64,
}

impl InspectReport {
    /// Number of files that were damaged (skipped events or a stopped read) or could not
    /// be read.
    pub fn damaged_files(&self) -> usize {
        self.files
            .iter()
            .filter(|f| f.damage.is_some() || f.skipped_events > 0)
            .count()
    }

    /// Builds the totals and cross-file warnings from per-file reports.
    pub fn from_files(files: Vec<FileReport>) -> Self {
        let mut files_per_rank: BTreeMap<i64, usize> = BTreeMap::new();
        for rank in files.iter().filter_map(|f| f.rank) {
            *files_per_rank.entry(rank).or_default() += 1;
        }
        let mut warnings: Vec<String> = files_per_rank
            .iter()
            .filter(|(_, n)| **n > 1)
            .map(|(rank, n)| format!("rank {rank} is stated by {n} files"))
            .collect();
        let ranks: Vec<i64> = files_per_rank.into_keys().collect();
        let mut sizes: Vec<i64> = files.iter().filter_map(|f| f.world_size).collect();
        sizes.sort_unstable();
        sizes.dedup();
        if sizes.len() > 1 {
            warnings.push(format!("files disagree on the world size: {sizes:?}"));
        }
        let world_size = sizes.last().copied();
        if let Some(size) = world_size {
            let missing = usize::try_from(size)
                .unwrap_or(0)
                .saturating_sub(ranks.len());
            if files.len() > 1 && missing > 0 {
                warnings.push(format!(
                    "{} of {size} ranks have a trace here ({missing} missing)",
                    ranks.len()
                ));
            }
        }
        let total_events = files.iter().map(|f| f.events).sum();
        Self {
            files,
            ranks,
            world_size,
            warnings,
            total_events,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(rank: Option<i64>, world_size: Option<i64>) -> FileReport {
        FileReport {
            rank,
            world_size,
            events: 10,
            ..FileReport::default()
        }
    }

    #[test]
    fn duplicated_ranks_warn_once_each() {
        let report = InspectReport::from_files(vec![
            file(Some(1), Some(2)),
            file(Some(1), Some(2)),
            file(Some(1), Some(2)),
            file(Some(0), Some(2)),
        ]);
        assert_eq!(report.ranks, vec![0, 1]);
        assert_eq!(
            report.warnings,
            vec!["rank 1 is stated by 3 files".to_owned()]
        );
        assert_eq!(report.total_events, 40);
    }

    #[test]
    fn disagreeing_world_sizes_and_missing_ranks_are_reported() {
        let report =
            InspectReport::from_files(vec![file(Some(0), Some(4)), file(Some(1), Some(8))]);
        assert_eq!(report.world_size, Some(8));
        assert_eq!(
            report.warnings,
            vec![
                "files disagree on the world size: [4, 8]".to_owned(),
                "2 of 8 ranks have a trace here (6 missing)".to_owned()
            ]
        );
    }

    #[test]
    fn span_needs_both_ends() {
        let mut f = file(None, None);
        assert_eq!(f.span_ns(), None);
        f.first_ts_ns = Some(100);
        f.last_end_ns = Some(350);
        assert_eq!(f.span_ns(), Some(250));
    }
}
