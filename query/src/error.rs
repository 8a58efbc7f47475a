//! Errors of the SQL engine, SQL errors with their position in the query.

use std::fmt;
use std::path::PathBuf;

use datafusion::common::DataFusionError;

/// What went wrong running a query.
#[derive(Debug)]
#[non_exhaustive]
pub enum QueryError {
    /// The SQL is wrong (syntax, an unknown table or column, a type error): the message,
    /// and where in the query when the engine knows (1-based line and column).
    Sql {
        /// The engine's message.
        message: String,
        /// The query.
        query: String,
        /// Line and column of the offending text, when known.
        position: Option<(u64, u64)>,
    },
    /// Reading or running failed (a damaged trace: its message has the file, byte offset
    /// and event index).
    Engine(String),
    /// No input files.
    NoInput,
    /// A directory given as a dataset is not one.
    NotADataset(PathBuf),
    /// Writing the result failed.
    Io(std::io::Error),
}

impl QueryError {
    pub(crate) fn engine(err: DataFusionError) -> Self {
        QueryError::Engine(strip_context(&err))
    }

    /// Classifies a DataFusion error: SQL errors (parser, planner, schema) keep their
    /// position; read errors from the trace tables become [`QueryError::Engine`].
    pub(crate) fn from_datafusion(err: DataFusionError, query: &str) -> Self {
        let span = err
            .diagnostic()
            .and_then(|d| d.span.or_else(|| d.notes.iter().find_map(|n| n.span)))
            .map(|s| (s.start.line, s.start.column))
            .filter(|&(line, _)| line > 0);
        let root = root_of(&err);
        let is_sql = matches!(
            root,
            DataFusionError::SQL(..)
                | DataFusionError::Plan(..)
                | DataFusionError::SchemaError(..)
                | DataFusionError::NotImplemented(..)
        ) || err.diagnostic().is_some();
        if !is_sql {
            return QueryError::Engine(strip_context(&err));
        }
        let mut message = strip_context(&err);
        let position = span.or_else(|| line_column_in(&message));
        // The parser's own " at Line: L, Column: C" is shown as the caret instead.
        if let Some(at) = message.rfind(" at Line: ") {
            if line_column_in(&message[at..]).is_some() {
                message.truncate(at);
            }
        }
        QueryError::Sql {
            message,
            query: query.to_owned(),
            position,
        }
    }
}

fn root_of(err: &DataFusionError) -> &DataFusionError {
    match err {
        DataFusionError::Context(_, inner) => root_of(inner),
        DataFusionError::Diagnostic(_, inner) => root_of(inner),
        other => other,
    }
}

/// The message without DataFusion's wrappers (`External error: `, contexts).
fn strip_context(err: &DataFusionError) -> String {
    match root_of(err) {
        DataFusionError::External(inner) => inner.to_string(),
        DataFusionError::SQL(inner, _) => format!("SQL error: {inner}"),
        other => other.to_string(),
    }
}

/// The `Line: L, Column: C` the SQL parser writes into its messages.
fn line_column_in(message: &str) -> Option<(u64, u64)> {
    let at = message.rfind("Line: ")?;
    let rest = &message[at + "Line: ".len()..];
    let (line, rest) = rest.split_once(", Column: ")?;
    let column: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    Some((line.trim().parse().ok()?, column.parse().ok()?))
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueryError::Sql {
                message,
                query,
                position,
            } => {
                write!(f, "{message}")?;
                if let Some((line, column)) = *position {
                    let text = query.lines().nth(line.saturating_sub(1) as usize);
                    if let Some(text) = text {
                        write!(f, "\n  at line {line}, column {column}:\n    {text}\n    ")?;
                        let pad: String = text
                            .chars()
                            .take(column.saturating_sub(1) as usize)
                            .map(|c| if c == '\t' { '\t' } else { ' ' })
                            .collect();
                        write!(f, "{pad}^")?;
                    }
                }
                Ok(())
            }
            QueryError::Engine(message) => f.write_str(message),
            QueryError::NoInput => f.write_str("no input traces"),
            QueryError::NotADataset(dir) => write!(
                f,
                "{}: not a dataset of `neuronprof export --format parquet` (no ranks/ directory)",
                dir.display()
            ),
            QueryError::Io(err) => write!(f, "writing the result: {err}"),
        }
    }
}

impl std::error::Error for QueryError {}

impl From<std::io::Error> for QueryError {
    fn from(err: std::io::Error) -> Self {
        QueryError::Io(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parser_positions_are_read_from_the_message() {
        assert_eq!(
            line_column_in(
                "sql parser error: Expected: end of statement, found: FORM at Line: 1, Column: 10"
            ),
            Some((1, 10))
        );
        assert_eq!(line_column_in("no position here"), None);
    }

    #[test]
    fn the_caret_stands_under_the_position() {
        let err = QueryError::Sql {
            message: "bad".into(),
            query: "SELECT *\nFROM kernals".into(),
            position: Some((2, 6)),
        };
        assert_eq!(
            err.to_string(),
            "bad\n  at line 2, column 6:\n    FROM kernals\n         ^"
        );
    }
}
