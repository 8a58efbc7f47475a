//! `neuronprof export --format perfetto|perfetto-archive|csv|parquet|neuron-explorer IN…
//! -o OUT`: Kineto traces into other formats (`perfetto-archive`: a `.pftrace` per rank
//! and Perfetto's manifest in one tar, [`perfetto_archive`]); the tables include the analysis results (`analysis_*`, see
//! `exporters::tables`); `neuron-explorer` writes each trace as a Neuron Explorer profile
//! folder (`OUT/profiles/global/NAME@latest/`, see the `neuron-explorer` crate).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context as _;
use exporters::tables::dataset::{write_dataset, DatasetOptions, DatasetOutcome};
use exporters::{CsvExporter, ExportError, ExportStats, PerfettoExporter, TableStats};
use serde::Serialize;

pub mod perfetto_archive;

/// Output formats of `neuronprof export`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    /// Perfetto's TrackEvent protobuf (`.pftrace`).
    Perfetto,
    /// A tar of one `.pftrace` per rank and a `perfetto_manifest.json` (machine per
    /// host, clocks related by the collectives): `exporters::perfetto::archive`.
    PerfettoArchive,
    /// CSV tables (events, kernels, collectives, memory, steps, and the analysis
    /// results: `analysis_temporal` …) in a directory.
    Csv,
    /// The same tables as a Hive-partitioned Parquet dataset (`TABLE/rank=R/part-K.parquet`,
    /// see `exporters::tables::dataset`), ranks converted in parallel; re-running adds
    /// the ranks the dataset lacks.
    Parquet,
    /// Neuron Explorer profile folders: `OUT` is a data path, each input trace (rank) a
    /// profile `OUT/profiles/global/NAME@latest/` with the documented Parquet tables.
    NeuronExplorer,
}

impl ExportFormat {
    /// Parses a `--format` value.
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        match text {
            "perfetto" => Ok(ExportFormat::Perfetto),
            "perfetto-archive" => Ok(ExportFormat::PerfettoArchive),
            "csv" => Ok(ExportFormat::Csv),
            "parquet" => Ok(ExportFormat::Parquet),
            "neuron-explorer" => Ok(ExportFormat::NeuronExplorer),
            other => {
                anyhow::bail!(
                    "unknown export format {other:?} (known: perfetto, perfetto-archive, csv, \
                     parquet, neuron-explorer)"
                )
            }
        }
    }
}

/// What to export.
#[derive(Clone, Debug)]
pub struct ExportRequest {
    /// Trace files or directories of rank traces.
    pub paths: Vec<PathBuf>,
    /// The output format.
    pub format: ExportFormat,
    /// The output file (perfetto) or directory (csv, parquet).
    pub out: PathBuf,
    /// Read past damage (parquet): damaged files are converted up to the damage and
    /// listed.
    pub lenient: bool,
    /// Show progress on standard error (parquet, when it is a terminal).
    pub progress: bool,
    /// The device of the `analysis_roofline` table (`--device-spec NAME|FILE`); `None`:
    /// from the traces' `deviceProperties`.
    pub device_spec: Option<String>,
}

/// Counts of what was written, per format.
#[derive(Clone, Debug)]
pub enum Converted {
    /// Perfetto: slices, counters, flows, splits.
    Perfetto(ExportStats),
    /// Perfetto archive: each member's counts, machines and clocks.
    PerfettoArchive(Box<exporters::perfetto::archive::ArchiveStats>),
    /// CSV: rows per table.
    Tables(TableStats, &'static str),
    /// Parquet: the dataset written, and rows per analysis table.
    Dataset(
        Box<DatasetOutcome>,
        [u64; exporters::tables::ANALYSIS_TABLE_COUNT],
    ),
    /// Neuron Explorer: one profile folder per input.
    Profiles(Vec<neuron_explorer::WriteReport>),
}

/// What was exported.
#[derive(Clone, Debug)]
pub struct ExportOutcome {
    /// The input files, in the order converted.
    pub files: Vec<PathBuf>,
    /// Bytes of the input files as stored (compressed for `.gz`).
    pub input_bytes: u64,
    /// The output file.
    pub out: PathBuf,
    /// Counts of what was converted (and split).
    pub converted: Converted,
    /// Wall time of the conversion, seconds.
    pub seconds: f64,
}

/// Converts the traces into one output file.
pub fn run_export(request: &ExportRequest) -> anyhow::Result<ExportOutcome> {
    let files = crate::paths::collect_trace_files(&request.paths)?;
    let started = Instant::now();
    let mut input_bytes = 0;
    let converted = match request.format {
        ExportFormat::Perfetto => {
            let output = File::create(&request.out)
                .with_context(|| format!("creating {}", request.out.display()))?;
            let mut exporter = PerfettoExporter::new(BufWriter::with_capacity(1 << 20, output))
                .label_unranked_files(files.len() > 1);
            for file in &files {
                input_bytes += std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
                exporter
                    .add_path(file)
                    .with_context(|| format!("converting {}", file.display()))?;
            }
            let (writer, stats) = exporter
                .finish()
                .with_context(|| format!("writing {}", request.out.display()))?;
            writer
                .into_inner()
                .map_err(|err| err.into_error())
                .and_then(|file| file.sync_all())
                .with_context(|| format!("writing {}", request.out.display()))?;
            Converted::Perfetto(stats)
        }
        ExportFormat::PerfettoArchive => {
            for file in &files {
                input_bytes += std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
            }
            let stats = perfetto_archive::export_archive(&files, &request.out)?;
            Converted::PerfettoArchive(Box::new(stats))
        }
        ExportFormat::Csv => {
            let exporter = CsvExporter::create(&request.out)
                .with_context(|| format!("creating tables in {}", request.out.display()))?;
            let stats = export_tables(exporter, &files, request, &mut input_bytes)?;
            Converted::Tables(stats, "csv")
        }
        ExportFormat::Parquet => {
            for file in &files {
                input_bytes += std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
            }
            let options = DatasetOptions {
                lenient: request.lenient,
                ..DatasetOptions::default()
            };
            let show = request.progress && {
                use std::io::IsTerminal as _;
                io::stderr().is_terminal()
            };
            let progress = |done: usize, total: usize| {
                if show {
                    let mut err = io::stderr().lock();
                    let _ = write!(err, "\rconverting ranks: {done}/{total}");
                    if done == total {
                        let _ = write!(err, "\r{:40}\r", "");
                    }
                    let _ = err.flush();
                }
            };
            let outcome = write_dataset(&files, &request.out, &options, &progress)
                .with_context(|| format!("writing the dataset {}", request.out.display()))?;
            let report = analyze(&files, request.lenient, request.device_spec.as_deref())?;
            let (analysis_rows, _) =
                exporters::tables::parquet::write_analysis(&request.out, &report).with_context(
                    || format!("writing analysis tables in {}", request.out.display()),
                )?;
            Converted::Dataset(Box::new(outcome), analysis_rows)
        }
        ExportFormat::NeuronExplorer => {
            let mut written = Vec::new();
            let mut names = std::collections::BTreeSet::new();
            for file in &files {
                input_bytes += std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
                let mut name = profile_name(file);
                let mut n = 1;
                while !names.insert(name.clone()) {
                    n += 1;
                    name = format!("{}_{n}", profile_name(file));
                }
                let dir = request
                    .out
                    .join("profiles")
                    .join("global")
                    .join(format!("{name}@latest"));
                let reader = analysis::inputs::open_trace(file, request.lenient)?;
                let report = neuron_explorer::write_profile_from(reader, file, &dir)
                    .with_context(|| format!("writing {}", dir.display()))?;
                written.push(report);
            }
            Converted::Profiles(written)
        }
    };
    Ok(ExportOutcome {
        files,
        input_bytes,
        out: request.out.clone(),
        converted,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// The profile name of a trace: its file name without `.pt.trace.json[.gz]` /
/// `.json[.gz]` (a profile folder keeps its name without `@latest`).
fn profile_name(file: &Path) -> String {
    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("trace");
    [
        ".pt.trace.json.gz",
        ".pt.trace.json",
        ".json.gz",
        ".json",
        "@latest",
    ]
    .iter()
    .find_map(|suffix| name.strip_suffix(suffix))
    .unwrap_or(name)
    .to_owned()
}

/// The calls CSV and Parquet exporters share, so one loop serves both formats.
trait TableExport: Sized {
    fn add_path(&mut self, path: &Path) -> Result<(), ExportError>;
    fn add_analysis(&mut self, report: &analysis::Report) -> io::Result<()>;
    fn finish(self) -> io::Result<TableStats>;
}

macro_rules! table_export {
    ($exporter:ty) => {
        impl TableExport for $exporter {
            fn add_path(&mut self, path: &Path) -> Result<(), ExportError> {
                <$exporter>::add_path(self, path)
            }
            fn add_analysis(&mut self, report: &analysis::Report) -> io::Result<()> {
                <$exporter>::add_analysis(self, report)
            }
            fn finish(self) -> io::Result<TableStats> {
                <$exporter>::finish(self)
            }
        }
    };
}
table_export!(CsvExporter);

/// Writes the event tables of every file, then the analysis tables, into `out`;
/// adds the files' sizes to `input_bytes`.
fn export_tables(
    mut exporter: impl TableExport,
    files: &[PathBuf],
    request: &ExportRequest,
    input_bytes: &mut u64,
) -> anyhow::Result<TableStats> {
    let out = &request.out;
    for file in files {
        *input_bytes += std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
        exporter
            .add_path(file)
            .with_context(|| format!("converting {}", file.display()))?;
    }
    let report = analyze(files, false, request.device_spec.as_deref())?;
    exporter
        .add_analysis(&report)
        .with_context(|| format!("writing analysis tables in {}", out.display()))?;
    exporter
        .finish()
        .with_context(|| format!("writing tables in {}", out.display()))
}

/// Every analysis of the traces (HTA defaults), for the analysis tables: read a few
/// ranks at a time ([`analysis::analyze_paths`]), so memory does not grow with the ranks.
/// The roofline table's device is the one `device_spec` names (`--device-spec`).
fn analyze(
    files: &[PathBuf],
    lenient: bool,
    device_spec: Option<&str>,
) -> anyhow::Result<analysis::Report> {
    let ranked: Vec<(Option<i64>, &Path)> = files.iter().map(|f| (None, f.as_path())).collect();
    let device = device_spec.map(crate::analyze::device_spec).transpose()?;
    analysis::analyze_paths(
        &ranked,
        &analysis::LoadOptions::default().with_lenient(lenient),
        &analysis::ReportOptions::default().with_device_spec(device),
    )
    .context("analyzing the traces for the analysis tables")
}

/// What `neuronprof export --json` prints (and `neuronprof mcp`'s `export` tool returns):
/// the counts the text summary shows, with the format as `format`.
#[derive(Clone, Debug, Serialize)]
pub struct ExportSummary {
    /// The input files, in the order converted.
    pub files: Vec<PathBuf>,
    /// Bytes of the input files as stored (compressed for `.gz`).
    pub input_bytes: u64,
    /// The output file or directory.
    pub out: PathBuf,
    /// Wall time of the conversion, seconds.
    pub seconds: f64,
    /// What was written, by format.
    #[serde(flatten)]
    pub converted: ConvertedSummary,
}

/// Rows written to one table.
#[derive(Clone, Debug, Serialize)]
pub struct TableRows {
    /// The table (`kernels`, `analysis_steps`, a Neuron Explorer table …).
    pub table: String,
    /// Rows written.
    pub rows: u64,
}

/// What one format wrote: `{"format": "perfetto" | "perfetto-archive" | "csv" |
/// "parquet" | "neuron-explorer", …}`.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "format", rename_all = "kebab-case")]
pub enum ConvertedSummary {
    /// The Perfetto trace: bytes, events by kind, flows, tracks, what was skipped and
    /// the slices moved to extra tracks (`split_tracks`: track, slices, extra tracks).
    Perfetto {
        /// Bytes written.
        bytes_written: u64,
        /// Events read; `slices`, `instants`, … say what they became.
        events_read: u64,
        /// Slices.
        slices: u64,
        /// Instants.
        instants: u64,
        /// Counter values (`[memory]` totals included).
        counter_values: u64,
        /// `[memory]` events.
        memory_events: u64,
        /// Flow events.
        flow_events: u64,
        /// Metadata events.
        metadata_events: u64,
        /// Flow endpoints on their enclosing slice.
        flows_bound: u64,
        /// Flow endpoints on instants (no slice encloses them).
        flows_unbound: u64,
        /// Engine utilization values derived.
        derived_counter_values: u64,
        /// Tracks.
        tracks: u64,
        /// Packets.
        packets: u64,
        /// Events without a time, skipped.
        skipped_no_time: u64,
        /// Events of unsupported phases, skipped.
        skipped_unsupported: u64,
        /// Non-numeric counter values, skipped.
        skipped_counter_values: u64,
        /// Slices overlapping without nesting, moved to extra tracks.
        split_slices: u64,
        /// The tracks with such slices, most split first.
        split_tracks: Vec<SplitTrackRows>,
    },
    /// The Perfetto archive: its bytes, each trace member (machine, clock offset,
    /// counts) and how each further host's clock was placed.
    PerfettoArchive {
        /// Bytes of the archive.
        bytes_written: u64,
        /// The trace members, in input order.
        members: Vec<perfetto_archive::MemberRows>,
        /// Hosts placed by their collectives.
        hosts: Vec<perfetto_archive::HostRows>,
    },
    /// CSV files: rows per table (event tables, then analysis tables).
    Csv {
        /// Rows per table.
        tables: Vec<TableRows>,
    },
    /// The Parquet dataset: ranks in it after the export, files converted now, ranks
    /// kept as they were, rows written per table, and the damaged files of a lenient
    /// read.
    Parquet {
        /// Ranks in the dataset.
        ranks: Vec<i64>,
        /// Input files converted now.
        converted: Vec<String>,
        /// Inputs whose rank was already in the dataset.
        kept: Vec<KeptRank>,
        /// Rows written per table (event tables over the converted files, then analysis
        /// tables over every input).
        tables: Vec<TableRows>,
        /// Files converted up to their damage.
        damaged: Vec<DamagedFile>,
    },
    /// Neuron Explorer profile folders, one per input.
    NeuronExplorer {
        /// The profiles written.
        profiles: Vec<ProfileRows>,
    },
}

/// A Perfetto track whose overlapping slices were moved to extra tracks.
#[derive(Clone, Debug, Serialize)]
pub struct SplitTrackRows {
    /// The track's name.
    pub track: String,
    /// Slices moved.
    pub split_slices: u64,
    /// Extra tracks added.
    pub extra_tracks: usize,
}

/// An input not converted because its rank was already in the dataset.
#[derive(Clone, Debug, Serialize)]
pub struct KeptRank {
    /// The input.
    pub file: PathBuf,
    /// Its rank.
    pub rank: i64,
}

/// A file converted up to its damage (lenient read).
#[derive(Clone, Debug, Serialize)]
pub struct DamagedFile {
    /// The input.
    pub file: String,
    /// Its rank.
    pub rank: i64,
    /// Events read.
    pub events: u64,
    /// Damaged events skipped.
    pub events_skipped: u64,
    /// Where and why (file, byte offset, event).
    pub damage: Vec<String>,
}

/// A Neuron Explorer profile folder written.
#[derive(Clone, Debug, Serialize)]
pub struct ProfileRows {
    /// The folder.
    pub dir: PathBuf,
    /// Rows per table.
    pub tables: Vec<TableRows>,
    /// Events with no table for them, by kind.
    pub not_written: std::collections::BTreeMap<String, u64>,
}

fn table_rows(names: &[&str], rows: &[u64]) -> Vec<TableRows> {
    names
        .iter()
        .zip(rows)
        .map(|(table, rows)| TableRows {
            table: (*table).to_owned(),
            rows: *rows,
        })
        .collect()
}

/// The JSON form of an export's outcome.
pub fn summary(outcome: &ExportOutcome) -> ExportSummary {
    use exporters::tables::{ANALYSIS_TABLES, TABLES};
    let converted = match &outcome.converted {
        Converted::Perfetto(stats) => ConvertedSummary::Perfetto {
            bytes_written: stats.bytes_written,
            events_read: stats.events_read,
            slices: stats.slices,
            instants: stats.instants,
            counter_values: stats.counter_values,
            memory_events: stats.memory_events,
            flow_events: stats.flow_events,
            metadata_events: stats.metadata_events,
            flows_bound: stats.flows_bound,
            flows_unbound: stats.flows_unbound,
            derived_counter_values: stats.derived_counter_values,
            tracks: stats.tracks,
            packets: stats.packets,
            skipped_no_time: stats.skipped_no_time,
            skipped_unsupported: stats.skipped_unsupported,
            skipped_counter_values: stats.skipped_counter_values,
            split_slices: stats.split_slices,
            split_tracks: stats
                .split_tracks
                .iter()
                .map(|t| SplitTrackRows {
                    track: t.track.clone(),
                    split_slices: t.split_slices,
                    extra_tracks: t.lanes.saturating_sub(1),
                })
                .collect(),
        },
        Converted::PerfettoArchive(stats) => {
            let (members, hosts) = perfetto_archive::rows(stats);
            ConvertedSummary::PerfettoArchive {
                bytes_written: stats.bytes_written,
                members,
                hosts,
            }
        }
        Converted::Tables(stats, _) => {
            let mut tables = table_rows(&TABLES, &stats.rows);
            tables.extend(table_rows(&ANALYSIS_TABLES, &stats.analysis_rows));
            ConvertedSummary::Csv { tables }
        }
        Converted::Dataset(dataset, analysis_rows) => {
            let mut tables = table_rows(&TABLES, &dataset.rows);
            tables.extend(table_rows(&ANALYSIS_TABLES, analysis_rows));
            ConvertedSummary::Parquet {
                ranks: exporters::tables::dataset::ranks_in(&outcome.out),
                converted: dataset
                    .converted
                    .iter()
                    .map(|c| c.rank.file.clone())
                    .collect(),
                kept: dataset
                    .kept
                    .iter()
                    .map(|(file, rank)| KeptRank {
                        file: file.clone(),
                        rank: *rank,
                    })
                    .collect(),
                tables,
                damaged: dataset
                    .damaged()
                    .map(|r| DamagedFile {
                        file: r.file.clone(),
                        rank: r.rank,
                        events: r.events,
                        events_skipped: r.events_skipped,
                        damage: r.damage.clone(),
                    })
                    .collect(),
            }
        }
        Converted::Profiles(profiles) => ConvertedSummary::NeuronExplorer {
            profiles: profiles
                .iter()
                .map(|p| ProfileRows {
                    dir: p.dir.clone(),
                    tables: p
                        .rows
                        .iter()
                        .map(|(table, rows)| TableRows {
                            table: table.clone(),
                            rows: *rows,
                        })
                        .collect(),
                    not_written: p.dropped.clone(),
                })
                .collect(),
        },
    };
    ExportSummary {
        files: outcome.files.clone(),
        input_bytes: outcome.input_bytes,
        out: outcome.out.clone(),
        seconds: outcome.seconds,
        converted,
    }
}

/// Prints what was converted and what was split.
pub fn render_outcome(outcome: &ExportOutcome, out: &mut impl Write) -> io::Result<()> {
    writeln!(
        out,
        "converted {} file(s), {:.1} MB, in {:.2} s -> {}",
        outcome.files.len(),
        outcome.input_bytes as f64 / 1e6,
        outcome.seconds,
        outcome.out.display(),
    )?;
    for file in &outcome.files {
        writeln!(out, "  {}", file.display())?;
    }
    match &outcome.converted {
        Converted::Perfetto(stats) => render_perfetto(stats, out),
        Converted::PerfettoArchive(stats) => perfetto_archive::render(stats, out),
        Converted::Tables(tables, extension) => {
            for (table, rows) in exporters::tables::TABLES.iter().zip(tables.rows) {
                writeln!(out, "{table}.{extension}: {rows} row(s)")?;
            }
            let analysis = exporters::tables::ANALYSIS_TABLES
                .iter()
                .zip(tables.analysis_rows);
            for (table, rows) in analysis {
                writeln!(out, "{table}.{extension}: {rows} row(s)")?;
            }
            Ok(())
        }
        Converted::Dataset(dataset, analysis_rows) => {
            render_dataset(outcome, dataset, analysis_rows, out)
        }
        Converted::Profiles(profiles) => {
            for profile in profiles {
                writeln!(out, "profile {}", profile.dir.display())?;
                for (table, rows) in &profile.rows {
                    writeln!(out, "  {table}.parquet: {rows} row(s)")?;
                }
                for (kind, count) in &profile.dropped {
                    writeln!(
                        out,
                        "  not written (no table for it): {count} {kind} event(s)"
                    )?;
                }
            }
            Ok(())
        }
    }
}

fn render_dataset(
    outcome: &ExportOutcome,
    dataset: &DatasetOutcome,
    analysis_rows: &[u64; exporters::tables::ANALYSIS_TABLE_COUNT],
    out: &mut impl Write,
) -> io::Result<()> {
    let ranks = exporters::tables::dataset::ranks_in(&outcome.out);
    writeln!(
        out,
        "dataset {}: {} rank(s) ({} file(s) converted now, {} kept as they were)",
        outcome.out.display(),
        ranks.len(),
        dataset.converted.len(),
        dataset.kept.len()
    )?;
    for (file, rank) in &dataset.kept {
        writeln!(
            out,
            "  kept rank {rank} (already in the dataset): {}",
            file.display()
        )?;
    }
    for (table, rows) in exporters::tables::TABLES.iter().zip(dataset.rows) {
        writeln!(out, "{table}/rank=*/: {rows} row(s) written")?;
    }
    let analysis = exporters::tables::ANALYSIS_TABLES.iter().zip(analysis_rows);
    for (table, rows) in analysis {
        writeln!(
            out,
            "{table}/: {rows} row(s) (over the {} input file(s))",
            outcome.files.len()
        )?;
    }
    let damaged: Vec<_> = dataset.damaged().collect();
    let heading = format!(
        "{} damaged file(s) converted up to the damage (--lenient):",
        damaged.len()
    );
    crate::query::render_damaged_files(&heading, &damaged, out)
}

fn render_perfetto(stats: &ExportStats, out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "written {:.1} MB", stats.bytes_written as f64 / 1e6)?;
    writeln!(
        out,
        "events read {}: slices {}, instants {}, counter values {} ({} [memory] events), flow events {}, metadata {}",
        stats.events_read,
        stats.slices,
        stats.instants,
        stats.counter_values,
        stats.memory_events,
        stats.flow_events,
        stats.metadata_events
    )?;
    writeln!(
        out,
        "flows: {} endpoint(s) on their enclosing slice, {} on instants (no slice encloses them)",
        stats.flows_bound, stats.flows_unbound
    )?;
    if stats.derived_counter_values > 0 {
        writeln!(
            out,
            "derived: {} engine utilization values",
            stats.derived_counter_values
        )?;
    }
    writeln!(out, "tracks {}, packets {}", stats.tracks, stats.packets)?;
    let skipped = stats.skipped_no_time + stats.skipped_unsupported + stats.skipped_counter_values;
    if skipped > 0 {
        writeln!(
            out,
            "skipped {skipped}: {} without a time, {} of unsupported phases, {} non-numeric counter values",
            stats.skipped_no_time, stats.skipped_unsupported, stats.skipped_counter_values
        )?;
    }
    if stats.split_slices == 0 {
        writeln!(out, "split: none (no slices overlap without nesting)")?;
    } else {
        writeln!(
            out,
            "split: {} slice(s) overlapping without nesting moved to extra tracks on {} track(s):",
            stats.split_slices,
            stats.split_tracks.len()
        )?;
        for track in stats.split_tracks.iter().take(10) {
            writeln!(
                out,
                "  {}: {} slice(s) on {} extra track(s)",
                track.track,
                track.split_slices,
                track.lanes - 1
            )?;
        }
        if stats.split_tracks.len() > 10 {
            writeln!(out, "  … and {} more", stats.split_tracks.len() - 10)?;
        }
    }
    Ok(())
}
