//! Neuron Explorer profiles — the Parquet tables a real Trainium capture becomes — read as
//! the Kineto events every neuronprof analysis takes.
//!
//! On a Trainium, TorchNeuron's profiler writes the framework trace beside the Neuron
//! runtime's files and the device's `.ntff`; `neuron-explorer view --ingest-only
//! --data-path D --display-name N` turns them into Parquet tables in
//! `D/profiles/global/N@latest/` (`<Table>.parquet`, or split as `<Table>_0.parquet`, …).
//! That documented, versioned layout is what this crate reads (the schema:
//! `tools/neuron-explorer/profile-schema-reference.rst` in AWS's `aws-neuron-sdk`,
//! schema 7.4.0; facts in `/work/shared/reference/neuron-explorer.md`).
//!
//! It is one reader beside the Kineto reader: a profile folder becomes the events the
//! `profiler` crate writes for the emulated device — host operators (`cpu_op`), runtime
//! calls (`privateuse1_runtime`), device executions (`kernel` rows with `device`,
//! `stream`, `correlation`), `ac2g` flows, engine instructions (`neuron_instruction`), DMA
//! transfers (`neuron_dma`), collectives (kernels with `Collective name`), counters — so
//! the analyses, the viewer and the exporters need no branch per format.
//! `docs/NEURON-EXPLORER.md` tables what each Neuron table and field becomes.
//!
//! # Key types
//!
//! - [`KinetoStream`]: a profile folder as Kineto JSON text ([`std::io::Read`]), produced
//!   one row group at a time; [`open_trace`] wraps it in a [`trace_format::TraceReader`].
//! - [`find_profiles`] / [`is_profile_dir`]: which folders are profiles (a `…@latest`
//!   folder, or a data path holding `profiles/global/*@latest`).
//! - [`ProfileLayout`]: a profile's tables and their files; [`TableReader`]: one table,
//!   row group by row group, with typed columns.
//! - [`Findings`]: damage skipped in lenient mode, unknown tables and columns, missing
//!   tables and what the analyses lose without them — written after `traceEvents`
//!   under [`FINDINGS_KEY`].
//! - [`NeuronError`]: what went wrong, naming the file, table, column and row group.
//! - [`write_profile`]: the other way, Kineto traces → a profile folder with the
//!   documented layout, tables, columns and types.
//!
//! # Versions
//!
//! `Metadata.profile_schema_version` is `MAJOR.MINOR.PATCH`; majors 7 and 12 are read
//! ([`schema::KNOWN_MAJORS`]), another is an error naming it and the known ones. Columns
//! are found by name and their types checked; `SchemaFields` (every profile's own schema)
//! is checked against each table's file.
//!
//! # Memory
//!
//! Tables are read one row group at a time (batches of at most 65,536 rows), keeping only
//! the columns the mapping uses. What is held across row groups: with LNC=2, a device
//! execution whose other physical core's row has not come yet; track names.
//!
//! # Example
//!
//! ```no_run
//! use trace_format::CollectSink;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut sink = CollectSink::default();
//! let reader = neuron_explorer::open_trace("data/profiles/global/train@latest".as_ref(), false)?;
//! reader.read(&mut sink)?;
//! let kernels = sink.events.iter().filter(|e| e.name().starts_with("nc_exec_running")).count();
//! println!("{kernels} device executions");
//! # Ok(()) }
//! ```
#![warn(missing_docs)]

mod error;
mod events;
pub mod framework;
mod layout;
pub mod schema;
mod stream;
mod survey;
mod table;
mod values;
mod write;

use std::path::Path;

pub use error::NeuronError;
pub use events::{
    collective_name, engine_name, Converter, BARRIER_CATEGORY, BARRIER_TID_BASE, CC_STREAM_BASE,
    COUNTER_CATEGORY, DMA_CATEGORY, DMA_TID_BASE, ENGINE_TID_BASE, EXEC_NAME, HW_CATEGORY,
    HW_TID_BASE, INSTRUCTION_CATEGORY, SYNTHETIC_CORRELATION, THROTTLE_CATEGORY, THROTTLE_TID_BASE,
};
pub use layout::{find_profiles, is_profile_dir, ProfileLayout};
pub use stream::{KinetoStream, FINDINGS_KEY, PROFILE_KEY};
pub use survey::{survey, Findings, Survey};
pub use table::{Batch, BoolCol, FloatCol, IntCol, ListCol, StrCol, TableReader};
pub use write::{table_of, write_profile, write_profile_from, WriteReport};

/// A [`trace_format::TraceReader`] over the profile folder `dir` (see [`KinetoStream`]).
/// `lenient` skips damaged row groups and tables and lists them under [`FINDINGS_KEY`].
pub fn open_trace(
    dir: &Path,
    lenient: bool,
) -> Result<trace_format::TraceReader<'static>, NeuronError> {
    let stream = KinetoStream::open(dir, lenient)?;
    Ok(trace_format::TraceReader::from_reader(&dir.display().to_string(), stream).lenient(lenient))
}

/// A [`trace_format::TraceReader`] over the profile folder `dir` merged with TorchNeuron's
/// framework trace `framework` of the same process ([`KinetoStream::open_with_framework`]).
pub fn open_trace_with_framework(
    dir: &Path,
    framework: &Path,
    lenient: bool,
) -> Result<trace_format::TraceReader<'static>, NeuronError> {
    let stream = KinetoStream::open_with_framework(dir, framework, lenient)?;
    Ok(trace_format::TraceReader::from_reader(&dir.display().to_string(), stream).lenient(lenient))
}
