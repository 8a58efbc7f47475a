//! `export --format perfetto-archive`: one `.pftrace` per rank and Perfetto's manifest
//! in one tar (`exporters::perfetto::archive`); what it wrote, as text and as JSON.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use exporters::perfetto::archive::{write_archive, ArchiveStats};
use serde::Serialize;

/// Writes `files` as one archive at `out`.
pub fn export_archive(files: &[PathBuf], out: &Path) -> anyhow::Result<ArchiveStats> {
    let output = File::create(out).with_context(|| format!("creating {}", out.display()))?;
    let mtime_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (writer, stats) = write_archive(files, BufWriter::with_capacity(1 << 20, output), mtime_s)
        .with_context(|| format!("writing {}", out.display()))?;
    writer
        .into_inner()
        .map_err(|err| err.into_error())
        .and_then(|file| file.sync_all())
        .with_context(|| format!("writing {}", out.display()))?;
    Ok(stats)
}

/// One trace member, in the JSON summary.
#[derive(Clone, Debug, Serialize)]
pub struct MemberRows {
    /// Its path in the archive.
    pub path: String,
    /// The input it came from.
    pub input: PathBuf,
    /// Its rank, when the trace states it.
    pub rank: Option<i64>,
    /// The manifest's machine of the file (its host, else its own).
    pub machine: String,
    /// The offset of its `clocks` entry, ns, when it has one.
    pub clock_offset_ns: Option<i64>,
    /// Bytes of the member.
    pub bytes: u64,
    /// Slices.
    pub slices: u64,
    /// Counter values written (read and derived).
    pub counter_values: u64,
    /// Flow events.
    pub flow_events: u64,
}

/// How a host's clock was placed, in the JSON summary.
#[derive(Clone, Debug, Serialize)]
pub struct HostRows {
    /// The host.
    pub host: String,
    /// The host it was measured against.
    pub reference: String,
    /// Reference reading minus this host's, ns; `None`: no shared collective (placed by
    /// wall clock).
    pub offset_ns: Option<i64>,
    /// Collective instances measured.
    pub collectives: usize,
}

/// The members and hosts of an archive, for `export --json`.
pub fn rows(stats: &ArchiveStats) -> (Vec<MemberRows>, Vec<HostRows>) {
    let members = stats
        .members
        .iter()
        .map(|m| MemberRows {
            path: m.path.clone(),
            input: m.input.clone(),
            rank: m.rank,
            machine: m.machine.clone(),
            clock_offset_ns: m.clock_offset_ns,
            bytes: m.stats.bytes_written,
            slices: m.stats.slices,
            counter_values: m.stats.counter_values + m.stats.derived_counter_values,
            flow_events: m.stats.flow_events,
        })
        .collect();
    let hosts = stats
        .hosts
        .iter()
        .map(|h| HostRows {
            host: h.host.clone(),
            reference: h.reference.clone(),
            offset_ns: h.offset.offset_ns,
            collectives: h.offset.instances,
        })
        .collect();
    (members, hosts)
}

/// Prints the archive's members, machines and clock placement.
pub fn render(stats: &ArchiveStats, out: &mut impl Write) -> io::Result<()> {
    writeln!(
        out,
        "written {:.1} MB: {} trace(s) and perfetto_manifest.json in one tar (open it in \
         Perfetto v58 or later: one timeline, a machine per host)",
        stats.bytes_written as f64 / 1e6,
        stats.members.len()
    )?;
    for m in &stats.members {
        let clock = match m.clock_offset_ns {
            Some(offset) => format!(", clock {offset:+} ns from its collectives"),
            None => String::new(),
        };
        writeln!(
            out,
            "  {}: machine {:?}, {} slices, {:.1} MB{clock}",
            m.path,
            m.machine,
            m.stats.slices,
            m.stats.bytes_written as f64 / 1e6
        )?;
    }
    for h in &stats.hosts {
        match h.offset.offset_ns {
            Some(offset) => writeln!(
                out,
                "host {} against {}: {offset:+} ns (median over {} collective(s))",
                h.host, h.reference, h.offset.instances
            )?,
            None => writeln!(
                out,
                "host {} against {}: no collective joins them, placed by wall clock",
                h.host, h.reference
            )?,
        }
    }
    let split: u64 = stats.members.iter().map(|m| m.stats.split_slices).sum();
    if split > 0 {
        writeln!(
            out,
            "split: {split} slice(s) overlapping without nesting moved to extra tracks"
        )?;
    }
    Ok(())
}
