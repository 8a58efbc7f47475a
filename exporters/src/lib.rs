//! Exporters of Kineto traces into other formats: Perfetto's protobuf, and tables as CSV
//! or Parquet; and of live neuron-monitor documents as Prometheus metrics
//! ([`prometheus`]: the metric names of neuron-monitor's Prometheus companion plus ours,
//! and Neuron Observer's names where they match a figure of ours: [`observer`]), and as
//! an OTLP metrics request ([`otlp`]).
//!
//! Kineto JSON opens in Perfetto on a best-effort basis: it cannot name tracks, and
//! Perfetto drops `X` events that overlap on one thread without nesting
//! (`shared/reference/perfetto.md`, "Perfetto and Chrome JSON"). [`perfetto`] writes
//! Perfetto's own TrackEvent protobuf instead: named process groups per rank and device,
//! overlapping work on extra lanes, counters, flows, args — at a fifth to two fifths of
//! the JSON's size.
//!
//! # Key types
//!
//! - [`PerfettoExporter`]: `add_path(file)` for each rank file, then `finish()`: the
//!   output writer and [`ExportStats`] (slices, split slices per track, counters, flows,
//!   what was skipped). Streaming, bounded memory.
//! - [`perfetto::archive::write_archive`]: one `.pftrace` per rank and Perfetto's
//!   `perfetto_manifest.json` (a machine per host, hosts' clocks related by their
//!   collectives) in one tar, which Perfetto v58 and later open as one timeline.
//! - [`perfetto::validate`]: decodes a `.pftrace` and checks it semantically (interned
//!   ids defined before use, track uuids resolve, counters only on counter tracks,
//!   begin/end balanced, flows paired, repeated fields unpacked), returning counts.
//! - [`perfetto::proto`]: the prost messages (the subset of Perfetto's protos we write).
//! - [`CsvExporter`] and [`ParquetExporter`]: events, kernels, collectives, memory,
//!   steps, ranks, operators and flows as tables, streaming: CSV files in a directory, or
//!   a Hive-partitioned Parquet dataset (`TABLE/rank=R/part-K.parquet`,
//!   [`tables::dataset`]; [`tables::dataset::write_dataset`] converts ranks in
//!   parallel and adds new ranks to an existing dataset). The schema is
//!   [`tables::SCHEMAS`], the one definition the writers, the SQL engine (crate `query`)
//!   and `docs/SQL.md` share. `add_analysis(&report)` adds the results of
//!   `analysis::analyze` as six small `analysis_*` tables ([`tables::ANALYSIS_SCHEMAS`],
//!   documented in [`tables::analysis`]).
//!
//! # Example
//!
//! ```
//! use exporters::perfetto::{validate, PerfettoExporter};
//! use trace_format::{Category, Event, FlowEnd, TraceMeta, TraceReader, TraceWriter};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let base = 1_790_857_026_000_000_000;
//! let mut writer = TraceWriter::new(Vec::new(), &TraceMeta::kineto(Some(base)))?;
//! writer.write_event(&Event::complete(Category::PrivateUse1Runtime, "launch", 42, 42, base + 1_000, 3_000))?;
//! writer.write_event(&Event::flow(FlowEnd::Start, Category::Ac2g, 7, 42, 42, base + 1_000))?;
//! writer.write_event(&Event::complete(Category::Kernel, "matmul", 0, 7, base + 5_000, 9_000))?;
//! writer.write_event(&Event::complete(Category::Kernel, "add", 0, 7, base + 12_000, 4_000))?; // overlaps
//! writer.write_event(&Event::flow(FlowEnd::Finish, Category::Ac2g, 7, 0, 7, base + 5_000))?;
//! let json = writer.finish()?;
//!
//! let mut exporter = PerfettoExporter::new(Vec::new());
//! exporter.add_reader("rank0.json".as_ref(), TraceReader::from_slice("rank0.json", &json))?;
//! let (pftrace, stats) = exporter.finish()?;
//! assert_eq!((stats.slices, stats.split_slices, stats.flow_events), (3, 1, 2));
//! assert_eq!(stats.flows_bound, 2); // on `launch` and `matmul`

//!
//! let summary = validate::validate(&pftrace)?;
//! assert_eq!(summary.slices, 3);
//! assert_eq!(summary.flows_paired, 1);
//! # Ok(()) }
//! ```
//!
//! # Wire format (Perfetto)
//!
//! A `.pftrace` is a `perfetto.protos.Trace`: field 1 (`packet`) repeated, each a
//! length-delimited `TracePacket`, so the file is the concatenation of
//! `0x0a <varint length> <packet>` records and is written packet by packet. All packets
//! carry `trusted_packet_sequence_id = 1` (one sequence per writer). In order:
//!
//! 1. A `clock_snapshot` with equal BOOTTIME (6) and REALTIME (1) readings: times are
//!    Kineto's Unix-epoch nanoseconds on BOOTTIME, so the UI can show wall time, and
//!    rank files share one time axis. This first packet sets `sequence_flags = 3`
//!    (incremental state cleared and needed).
//!
//!    Packet timestamps are deltas on incremental clocks: where time goes back (each new
//!    track, events being sorted per track), a `clock_snapshot` defines a
//!    sequence-scoped clock (id 64–127, `is_incremental`) at that time with BOOTTIME at
//!    the same reading, and its `trace_packet_defaults.timestamp_clock_id` makes it the
//!    clock of the packets that follow; each `timestamp` is then the ns since the
//!    previous packet's. A packet earlier than that (a utilization bucket, a counter read
//!    out of order) carries its absolute time with `timestamp_clock_id: 6`. Ids are
//!    reused only when the new time is above their last snapshot, as Perfetto requires
//!    snapshots to grow (`perfetto/clock.rs`).
//! 2. `track_descriptor` packets, each written before the first event that uses it:
//!    - per (file, pid) a process group (`process {pid, process_name}`), named
//!      `rank R: python 4242` or `rank R: device 0`; its pid is the real one for a host
//!      process seen first, otherwise a synthetic pid from 2^30 up (device indices and
//!      pids reused by another rank file);
//!    - host threads: `thread {pid, tid, thread_name}` (name from Kineto's `thread_name`);
//!    - device queues (`kernel`, `gpu_memcpy`, `gpu_memset`, `gpu_user_annotation`):
//!      plain tracks `queue N` in the device group, ordered by id; engines
//!      (`neuron_instruction`) and DMA queues (`neuron_dma`) under plain parent tracks
//!      `engines` and `DMA queues` so they nest;
//!    - per engine track a `utilization` counter track under it (`unit_name: "%"`): the
//!      busy share of each time bucket (about 2,000 buckets over the whole output's
//!      span, at least 10 µs each), from the union of the engine's instructions;
//!    - counters (`counter {unit}`): one per `C` series (the profiler's queue depth) (`name series`) and, from
//!      `[memory]` events, `HBM allocated` / `HBM reserved` per device (bytes; `host
//!      memory …` for `Device Type` 0);
//!    - extra lanes `NAME (overlap K)` under a track whose slices overlap without
//!      nesting;
//!    - `markers` for global instants (`Record Window End`), one per file.
//! 3. `track_event` packets with `timestamp` (ns): `X` → `TYPE_SLICE_BEGIN` at `ts` and
//!    `TYPE_SLICE_END` at `ts + dur`; `i` → `TYPE_INSTANT`; `C` values and memory
//!    totals → `TYPE_COUNTER` (`counter_value` for integers, `double_counter_value`
//!    otherwise); flow events bind to the enclosing slice, as Perfetto's JSON importer
//!    binds Kineto's flows (`bp: "e"`): `s`/`t` put their id in `flow_ids` (field 47,
//!    fixed64, unpacked), `f` in `terminating_flow_ids` (48), of the `TYPE_SLICE_BEGIN`
//!    of the innermost slice on the flow's (pid, tid) track whose `[ts, ts + dur]`
//!    holds the flow's `ts` (latest start, then shortest, across the track's lanes);
//!    only when none does, an instant named after the flow kind (`ac2g`, `fwdbwd`)
//!    carries the id ([`ExportStats::flows_bound`] / [`ExportStats::flows_unbound`]).
//!    The flow endpoints are sorted per track like the slices (spilling past the
//!    budget) and merged with them: one binding pass, one writing pass. Flow ids are
//!    FNV-1a hashes of (file, kind, Kineto id).
//!    Names and categories are `name_iid` / `category_iids` (unpacked varints), args
//!    are `debug_annotations` with interned names (`name_iid`), interned string values
//!    (`string_value_iid`, any length while the table's 32 MiB text budget lasts),
//!    `int_value`, `uint_value`, `double_value`, `bool_value`, and arrays/objects as
//!    `legacy_json_value`.
//!    Track-event packets set `sequence_flags = 2`; new interned entries ride in the
//!    `interned_data` of the first track-event packet written after they were made (so
//!    before any use).
//!
//! Example: the `matmul` begin of the crate example above (decoded with `protoc
//! --decode=perfetto.protos.Trace`, in protobuf's text format): 1,000 ns after the
//! previous packet (the end of `launch`), its name and category interned earlier, the
//! `ac2g` flow ending on it:
//!
//! ```text
//! packet { timestamp: 1000 trusted_packet_sequence_id: 1
//!   track_event { category_iids: 3 type: TYPE_SLICE_BEGIN name_iid: 3 track_uuid: 3
//!                 terminating_flow_ids: 4299409990799344212 }
//!   sequence_flags: 2 }
//! ```
//!
//! # Performance
//!
//! Measured numbers are in `docs/PERFORMANCE.md`, section "exporters (issue 7)".
#![warn(missing_docs)]

pub mod observer;
pub mod otlp;
pub mod perfetto;
pub mod prometheus;
pub mod tables;

pub use perfetto::{ExportError, ExportStats, PerfettoExporter, SplitTrack};
pub use tables::{CsvExporter, ParquetExporter, TableStats};
