//! Several Kineto traces as one Perfetto archive: a `.pftrace` per rank and a
//! `perfetto_manifest.json`, in one tar that Perfetto (v58 and later) opens as one
//! timeline.
//!
//! Perfetto's trace processor opens a ZIP or TAR of traces as one merged trace, and a
//! manifest member tells it which machine each file belongs to and how the files'
//! clocks relate (`manifest`). What the archive says:
//! - **Members**: `rank<R>.pftrace` for a trace that states its rank (else the input's
//!   file name, `.pftrace` for `.json[.gz]`), each converted alone by
//!   [`PerfettoExporter`] (the single-file export's tracks, names and counts), then the
//!   manifest. Names stay below the 99 bytes Perfetto's UI keeps in its own tars.
//! - **Machines**: one per host (the trace's `host_name`), so the ranks of a host share
//!   it as processes do on a real machine; a machine is one pid namespace, so a pid
//!   another file of the same machine already used is replaced by a synthetic one, as
//!   the single-file export does. A trace that does not name its host (the emulator's,
//!   many profilers') is a machine of its own, named after its rank: nothing says it
//!   shares a host with another.
//! - **Clocks**: every member is on BOOTTIME with an equal REALTIME reading, and the
//!   merged timeline is the first member's BOOTTIME (`trace_time`). Ranks of one host
//!   share its clock. Where the traces name different hosts, each further host's clock
//!   is related to the first host's by `clocks {sync_to, offset_ns}` on its first
//!   member, the offset measured on the ends of the collectives the hosts share
//!   (`align`); a host that shares none is placed by wall clock (Perfetto's REALTIME
//!   rendezvous), as are the traces without a host.
//!
//! The tar is written in one pass ([`tar::TarWriter`] patches each member's size into
//! its header), so memory is what one rank's conversion needs.

pub mod align;
pub mod manifest;
pub mod tar;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{Seek, Write};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use trace_format::{Event, TraceMeta, TraceSink};

use self::align::HostOffset;
use self::manifest::{
    Attribute, Clocks, FileEntry, Machine, Manifest, ManifestDoc, SyncTo, TraceTime, MANIFEST_NAME,
    TRACE_CLOCK,
};
use super::{ExportError, ExportStats, PerfettoExporter};

/// One trace member of an archive.
#[derive(Clone, Debug, PartialEq)]
pub struct ArchiveMember {
    /// The input it was converted from.
    pub input: PathBuf,
    /// Its path in the archive.
    pub path: String,
    /// Its rank (`distributedInfo.rank`), when stated.
    pub rank: Option<i64>,
    /// Its host (`host_name`), when stated.
    pub host: Option<String>,
    /// The manifest's machine name of the file.
    pub machine: String,
    /// The offset written in its `clocks` entry (reference host's reading minus this
    /// host's, ns); `None` when the file carries no clock relation.
    pub clock_offset_ns: Option<i64>,
    /// What its conversion wrote.
    pub stats: ExportStats,
}

/// How one host's clock was placed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostClock {
    /// The host.
    pub host: String,
    /// The host its clock was measured against.
    pub reference: String,
    /// The measurement.
    pub offset: HostOffset,
}

/// What [`write_archive`] wrote.
#[derive(Clone, Debug, PartialEq)]
pub struct ArchiveStats {
    /// The trace members, in input order.
    pub members: Vec<ArchiveMember>,
    /// The hosts placed by their collectives (empty when the traces name fewer than two
    /// hosts).
    pub hosts: Vec<HostClock>,
    /// The manifest's text.
    pub manifest: String,
    /// Bytes of the archive.
    pub bytes_written: u64,
}

/// What a trace's header says of its rank and host.
#[derive(Debug, Default)]
struct Header {
    rank: Option<i64>,
    host: Option<String>,
}

impl TraceSink for Header {
    fn on_header(&mut self, meta: &TraceMeta) -> ControlFlow<()> {
        self.rank = meta.rank();
        self.host = meta
            .get("host_name")
            .and_then(|raw| raw.deserialize::<String>().ok())
            .filter(|host| !host.is_empty());
        ControlFlow::Break(())
    }

    fn on_event(&mut self, _index: u64, _event: &Event<'_>) -> ControlFlow<()> {
        ControlFlow::Break(())
    }
}

fn read_header(path: &Path) -> Result<Header, ExportError> {
    let reader =
        analysis::inputs::open_trace(path, false).map_err(|e| ExportError::Open(e.to_string()))?;
    let mut header = Header::default();
    reader.read(&mut header).map_err(ExportError::Read)?;
    Ok(header)
}

/// The member name of an input without a (unique) rank: its file name with
/// `.pftrace` for `.pt.trace.json[.gz]` / `.json[.gz]`, made safe for a tar and for
/// Perfetto (no `/`, not hidden, at most 90 bytes before the extension).
fn file_member_name(input: &Path) -> String {
    let name = input
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("trace");
    let stem = [".pt.trace.json.gz", ".pt.trace.json", ".json.gz", ".json"]
        .iter()
        .find_map(|suffix| name.strip_suffix(suffix))
        .unwrap_or(name);
    let mut safe: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() && c != '/' {
                c
            } else {
                '_'
            }
        })
        .collect();
    while safe.starts_with('.') {
        safe.replace_range(..1, "_");
    }
    let mut end = safe.len().min(90);
    while !safe.is_char_boundary(end) {
        end -= 1;
    }
    safe.truncate(end);
    if safe.is_empty() {
        safe.push_str("trace");
    }
    safe
}

/// Writes the traces `inputs` (files or Neuron Explorer profiles, one rank each) as
/// one archive into `out` (a `BufWriter<File>`, say); members get `mtime_s` (Unix
/// seconds) as their time. See the module docs for what it holds.
pub fn write_archive<W: Write + Seek>(
    inputs: &[PathBuf],
    out: W,
    mtime_s: u64,
) -> Result<(W, ArchiveStats), ExportError> {
    let headers = inputs
        .iter()
        .map(|p| read_header(p))
        .collect::<Result<Vec<_>, _>>()?;

    // Member names: by rank where every stated rank is unique, else by file name.
    let mut rank_count: HashMap<i64, usize> = HashMap::new();
    for header in &headers {
        if let Some(rank) = header.rank {
            *rank_count.entry(rank).or_default() += 1;
        }
    }
    let mut taken = BTreeSet::from([MANIFEST_NAME.to_owned()]);
    let mut paths = Vec::with_capacity(inputs.len());
    for (input, header) in inputs.iter().zip(&headers) {
        let stem = match header.rank {
            Some(rank) if rank_count[&rank] == 1 => format!("rank{rank}"),
            _ => file_member_name(input),
        };
        let mut path = format!("{stem}.pftrace");
        let mut n = 1;
        while !taken.insert(path.clone()) {
            n += 1;
            path = format!("{stem}_{n}.pftrace");
        }
        paths.push(path);
    }

    // Machines: the host, else the file's own.
    let machines: Vec<String> = headers
        .iter()
        .zip(&paths)
        .map(|(header, path)| match (&header.host, header.rank) {
            (Some(host), _) => host.clone(),
            (None, Some(rank)) => format!("rank {rank}"),
            (None, None) => path.trim_end_matches(".pftrace").to_owned(),
        })
        .collect();

    // Clocks: hosts measured against the first host, on their collectives.
    let named: Vec<(PathBuf, String, &String)> = headers
        .iter()
        .zip(inputs)
        .zip(&paths)
        .filter_map(|((h, input), path)| Some((input.clone(), h.host.clone()?, path)))
        .collect();
    let distinct: BTreeSet<&str> = named.iter().map(|(_, host, _)| host.as_str()).collect();
    let mut hosts = Vec::new();
    let mut clocks: HashMap<&str, Clocks> = HashMap::new();
    if distinct.len() > 1 {
        let (reference, reference_path) = (&named[0].1, named[0].2);
        let files: Vec<PathBuf> = named.iter().map(|(input, _, _)| input.clone()).collect();
        let of_files: Vec<String> = named.iter().map(|(_, host, _)| host.clone()).collect();
        let offsets = align::host_offsets(&files, &of_files, reference)?;
        for (host, offset) in offsets {
            let first_path = named
                .iter()
                .find(|(_, h, _)| *h == host)
                .map(|(_, _, path)| path.as_str())
                .expect("a measured host has a file");
            if let Some(offset_ns) = offset.offset_ns {
                clocks.insert(
                    first_path,
                    Clocks {
                        clock: TRACE_CLOCK,
                        sync_to: SyncTo {
                            file: reference_path.clone(),
                            clock: TRACE_CLOCK,
                        },
                        offset_ns,
                    },
                );
            }
            hosts.push(HostClock {
                host,
                reference: reference.clone(),
                offset,
            });
        }
    }

    let files = paths
        .iter()
        .zip(&machines)
        .map(|(path, machine)| FileEntry {
            path: path.clone(),
            machine: Machine {
                name: machine.clone(),
            },
            clocks: clocks.get(path.as_str()).cloned(),
        })
        .collect();
    let mut attributes = BTreeMap::new();
    attributes.insert(
        "neuronprof.version".to_owned(),
        Attribute::Text(env!("CARGO_PKG_VERSION").to_owned()),
    );
    attributes.insert(
        "neuronprof.traces".to_owned(),
        Attribute::Int(inputs.len() as i64),
    );
    let manifest = ManifestDoc {
        perfetto_manifest: Manifest {
            version: 1,
            trace_time: TraceTime {
                clock: TRACE_CLOCK,
                file: paths.first().cloned().unwrap_or_default(),
            },
            files,
            attributes,
        },
    }
    .to_json();

    let write_error = |input: &Path| {
        let input = input.to_owned();
        move |source| ExportError::Write { input, source }
    };
    let mut tar = tar::TarWriter::new(out, mtime_s);
    tar.add_member(MANIFEST_NAME, manifest.as_bytes())
        .map_err(write_error(Path::new(MANIFEST_NAME)))?;
    let mut pids_of_machine: HashMap<&str, Vec<i32>> = HashMap::new();
    let mut members = Vec::with_capacity(inputs.len());
    for (((input, header), path), machine) in inputs.iter().zip(headers).zip(&paths).zip(&machines)
    {
        tar.begin_member(path).map_err(write_error(input))?;
        let used = pids_of_machine.entry(machine).or_default();
        let mut exporter = PerfettoExporter::new(&mut tar).avoid_pids(used.iter().copied());
        exporter.add_path(input)?;
        used.extend(exporter.pids());
        let (_, stats) = exporter.finish()?;
        tar.end_member().map_err(write_error(input))?;
        members.push(ArchiveMember {
            input: input.clone(),
            path: path.clone(),
            rank: header.rank,
            host: header.host,
            machine: machine.clone(),
            clock_offset_ns: clocks.get(path.as_str()).map(|c| c.offset_ns),
            stats,
        });
    }
    let mut out = tar.finish().map_err(write_error(Path::new("")))?;
    let bytes_written = out.stream_position().map_err(write_error(Path::new("")))?;
    Ok((
        out,
        ArchiveStats {
            members,
            hosts,
            manifest,
            bytes_written,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::file_member_name;
    use std::path::Path;

    #[test]
    fn member_names_come_from_file_names() {
        assert_eq!(file_member_name(Path::new("a/w1.pt.trace.json.gz")), "w1");
        assert_eq!(file_member_name(Path::new("x.json")), "x");
        assert_eq!(file_member_name(Path::new(".hidden.json")), "_hidden");
        assert_eq!(file_member_name(Path::new("sp ace.json")), "sp_ace");
        assert_eq!(file_member_name(Path::new(&"a".repeat(120))).len(), 90);
        assert_eq!(file_member_name(Path::new("é.json")), "_");
    }
}
