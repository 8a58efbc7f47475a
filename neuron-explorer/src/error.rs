//! What can go wrong reading or writing a profile, and where.

use std::path::PathBuf;

/// An error reading or writing a Neuron Explorer profile: each variant names the file,
/// table, column and row group it concerns where they are known.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NeuronError {
    /// A file or folder could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The path is not a Neuron Explorer profile folder.
    #[error("{path}: not a Neuron Explorer profile ({reason})")]
    NotAProfile {
        /// The path.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A Parquet file could not be decoded (truncated, corrupt).
    #[error("{file}: table {table}{}: {message}", row_group_text(*.row_group))]
    Parquet {
        /// The file.
        file: PathBuf,
        /// The table it belongs to.
        table: String,
        /// The row group, when the damage is inside one.
        row_group: Option<usize>,
        /// What the Parquet decoder said.
        message: String,
    },
    /// A column has a type the schema does not allow.
    #[error("{file}: table {table}, column {column}, row group {row_group}: type {found}, expected {expected}")]
    ColumnType {
        /// The file.
        file: PathBuf,
        /// The table.
        table: String,
        /// The column.
        column: String,
        /// The row group.
        row_group: usize,
        /// The type the schema gives.
        expected: &'static str,
        /// The type found.
        found: Box<str>,
    },
    /// A required column is absent.
    #[error("{file}: table {table} has no column {column} (required by the schema)")]
    MissingColumn {
        /// The file.
        file: PathBuf,
        /// The table.
        table: String,
        /// The column.
        column: String,
    },
    /// A required value is null.
    #[error("{file}: table {table}, column {column}, row group {row_group}, row {row}: null in a required column")]
    NullValue {
        /// The file.
        file: PathBuf,
        /// The table.
        table: String,
        /// The column.
        column: String,
        /// The row group.
        row_group: usize,
        /// The row within the row group.
        row: usize,
    },
    /// `Metadata.profile_schema_version` has a major version this reader does not know.
    #[error("{file}: profile_schema_version {found}: major version {major} is not known (known: {known})")]
    UnknownVersion {
        /// The `Metadata` file.
        file: PathBuf,
        /// The version found.
        found: String,
        /// Its major number (or the text, when it does not parse).
        major: String,
        /// The major versions this reader knows.
        known: String,
    },
    /// `SchemaFields` says one thing, the table's file another.
    #[error("{file}: table {table}, column {column}: SchemaFields says {declared}, the file holds {found}")]
    SchemaMismatch {
        /// The table's file.
        file: PathBuf,
        /// The table.
        table: String,
        /// The column.
        column: String,
        /// What `SchemaFields` declares.
        declared: String,
        /// What the file holds.
        found: String,
    },
    /// A table has a file but no rows where rows are required (`Metadata`).
    #[error("{file}: table {table} is empty")]
    EmptyTable {
        /// The file.
        file: PathBuf,
        /// The table.
        table: String,
    },
    /// A Kineto trace given to the writer could not be read.
    #[error("{path}: {message}")]
    Trace {
        /// The trace.
        path: PathBuf,
        /// What the Kineto reader said (with its byte offset and event index).
        message: String,
    },
}

fn row_group_text(row_group: Option<usize>) -> String {
    row_group.map_or_else(String::new, |rg| format!(", row group {rg}"))
}

impl NeuronError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        NeuronError::Io {
            path: path.into(),
            source,
        }
    }
}
