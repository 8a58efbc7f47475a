//! `analyze`'s selectable sections: the parts of `neuronprof analyze --json` a tool call
//! asks for, each exactly as the CLI prints it.
//!
//! A selection keeps the report's context (`mode`, `hta_version`, `device_type`,
//! `ranks`, `device_activity`, `last_step_filtered`, `step`, `errors`, `notes`) and the
//! sections named, in the report's order. A per-rank section (`roofline`, `operators`,
//! `memory`, …) keeps `per_rank` with each rank's `rank` and that field; `per_rank`
//! keeps every per-rank field.

use analysis::{RankReport, Report};
use serde::ser::{Serialize, SerializeStruct as _, Serializer};

/// A part of the analyze report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Section {
    /// Findings, most important first.
    Insights,
    /// HTA's temporal breakdown (idle, compute, non-compute time per rank).
    TemporalBreakdown,
    /// Communication–computation overlap per rank.
    CommCompOverlap,
    /// Kernels by type and name.
    KernelBreakdown,
    /// Every per-rank analysis below (`idle_time` … `roofline`).
    PerRank,
    /// Ranks that straggle.
    Stragglers,
    /// Each `ProfilerStep` split into device work, collective transfer, waiting for
    /// peers and idle.
    Steps,
    /// Collectives matched across ranks: transfer, waits, skews, bus bandwidth.
    Collectives,
    /// Engines, MFU/HFU, DMA per rank and device; host- versus device-bound steps.
    Utilization,
    /// `torch.compile` regions, graph kernels, graph breaks and recompiles.
    Compile,
    /// Per rank: idle time by stream and category.
    IdleTime,
    /// Per rank: queue length per stream.
    QueueLength,
    /// Per rank: memory bandwidth per copy kind.
    MemoryBw,
    /// Per rank: launch statistics.
    LaunchStats,
    /// Per rank: the memory timeline.
    Memory,
    /// Per rank: copies and memsets by kind.
    Transfers,
    /// Per rank: the `key_averages`-style operator table.
    Operators,
    /// Per rank: the roofline table, operators ranked by the time reaching their
    /// roofline would win (`win_us`).
    Roofline,
}

impl Section {
    /// Whether this is a field of each `per_rank` entry.
    fn per_rank(self) -> bool {
        matches!(
            self,
            Section::IdleTime
                | Section::QueueLength
                | Section::MemoryBw
                | Section::LaunchStats
                | Section::Memory
                | Section::Transfers
                | Section::Operators
                | Section::Roofline
        )
    }
}

/// The report with only the sections chosen; serializes as `analyze --json` would with
/// the other sections left out.
pub struct Selected<'a> {
    report: &'a Report,
    sections: &'a [Section],
}

impl<'a> Selected<'a> {
    /// The sections of `report`.
    pub fn new(report: &'a Report, sections: &'a [Section]) -> Self {
        Selected { report, sections }
    }

    fn has(&self, section: Section) -> bool {
        self.sections.contains(&section)
    }

    fn any_per_rank(&self) -> bool {
        self.has(Section::PerRank) || self.sections.iter().any(|s| s.per_rank())
    }
}

impl Serialize for Selected<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let r = self.report;
        let mut out = serializer.serialize_struct("Report", 19)?;
        out.serialize_field("mode", &r.mode)?;
        out.serialize_field("hta_version", &r.hta_version)?;
        if self.has(Section::Insights) {
            out.serialize_field("insights", &r.insights)?;
        }
        out.serialize_field("device_type", &r.device_type)?;
        out.serialize_field("ranks", &r.ranks)?;
        out.serialize_field("device_activity", &r.device_activity)?;
        out.serialize_field("last_step_filtered", &r.last_step_filtered)?;
        out.serialize_field("step", &r.step)?;
        if self.has(Section::TemporalBreakdown) {
            out.serialize_field("temporal_breakdown", &r.temporal_breakdown)?;
        }
        if self.has(Section::CommCompOverlap) {
            out.serialize_field("comm_comp_overlap", &r.comm_comp_overlap)?;
        }
        if self.has(Section::KernelBreakdown) {
            out.serialize_field("kernel_breakdown", &r.kernel_breakdown)?;
        }
        if self.has(Section::PerRank) {
            out.serialize_field("per_rank", &r.per_rank)?;
        } else if self.any_per_rank() {
            let ranks: Vec<SelectedRank<'_>> = r
                .per_rank
                .iter()
                .map(|rank| SelectedRank {
                    rank,
                    sections: self.sections,
                })
                .collect();
            out.serialize_field("per_rank", &ranks)?;
        }
        if self.has(Section::Stragglers) {
            out.serialize_field("stragglers", &r.stragglers)?;
        }
        if self.has(Section::Steps) {
            out.serialize_field("steps", &r.steps)?;
        }
        if self.has(Section::Collectives) {
            out.serialize_field("collectives", &r.collectives)?;
        }
        if self.has(Section::Utilization) {
            out.serialize_field("utilization", &r.utilization)?;
        }
        if self.has(Section::Compile) {
            out.serialize_field("compile", &r.compile)?;
        }
        out.serialize_field("errors", &r.errors)?;
        out.serialize_field("notes", &r.notes)?;
        out.end()
    }
}

/// One `per_rank` entry with only the per-rank sections chosen.
struct SelectedRank<'a> {
    rank: &'a RankReport,
    sections: &'a [Section],
}

impl Serialize for SelectedRank<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let r = self.rank;
        let has = |s: Section| self.sections.contains(&s);
        let mut out = serializer.serialize_struct("RankReport", 9)?;
        out.serialize_field("rank", &r.rank)?;
        if has(Section::IdleTime) {
            out.serialize_field("idle_time", &r.idle_time)?;
        }
        if has(Section::QueueLength) {
            out.serialize_field("queue_length", &r.queue_length)?;
        }
        if has(Section::MemoryBw) {
            out.serialize_field("memory_bw", &r.memory_bw)?;
        }
        if has(Section::LaunchStats) {
            out.serialize_field("launch_stats", &r.launch_stats)?;
        }
        if has(Section::Memory) {
            out.serialize_field("memory", &r.memory)?;
        }
        if has(Section::Transfers) {
            out.serialize_field("transfers", &r.transfers)?;
        }
        if has(Section::Operators) {
            out.serialize_field("operators", &r.operators)?;
        }
        if has(Section::Roofline) {
            out.serialize_field("roofline", &r.roofline)?;
        }
        out.end()
    }
}
