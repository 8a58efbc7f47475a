//! Errors of the SQL engine, SQL errors with their position in the query.

use std::fmt;
use std::path::PathBuf;

use datafusion::common::{DataFusionError, SchemaError};

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
    /// The statement would write files, read files other than the given traces or
    /// dataset (`COPY … TO`, `CREATE EXTERNAL TABLE`, `INSERT`), or change the session,
    /// and the engine is read-only ([`QueryOptions::allow_write`](crate::QueryOptions)).
    ReadOnly {
        /// What kind of statement: the engine's words (`DML not supported: COPY`).
        statement: String,
    },
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
        let mut message = dedup_valid_fields(&strip_context(&err));
        // DataFusion gives no span for a column unknown in GROUP BY, ORDER BY or HAVING:
        // the column is looked up in the query itself.
        let position = span
            .or_else(|| line_column_in(&message))
            .or_else(|| missing_column(root).and_then(|name| identifier_position(query, name)));
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

/// The column of a "no field named" error.
fn missing_column(err: &DataFusionError) -> Option<&str> {
    match err {
        DataFusionError::SchemaError(inner, _) => match inner.as_ref() {
            SchemaError::FieldNotFound { field, .. } => Some(&field.name),
            _ => None,
        },
        _ => None,
    }
}

/// DataFusion lists a field twice when it is both selected and in the input (the
/// "Valid fields are" list of a GROUP BY error): each is shown once, in its first place.
fn dedup_valid_fields(message: &str) -> String {
    const LIST: &str = "Valid fields are ";
    let Some(at) = message.find(LIST) else {
        return message.to_owned();
    };
    let start = at + LIST.len();
    let rest = &message[start..];
    let (list, tail) = match rest
        .find(".\n")
        .or_else(|| rest.strip_suffix('.').map(str::len))
    {
        Some(end) => rest.split_at(end),
        None => (rest, ""),
    };
    let mut seen = std::collections::HashSet::new();
    let fields: Vec<&str> = list.split(", ").filter(|f| seen.insert(*f)).collect();
    format!("{}{}{tail}", &message[..start], fields.join(", "))
}

/// Line and column (1-based, in characters) of the first place `query` names the
/// identifier `name`: plain identifiers compare without case (the engine folds them
/// to lower case), double-quoted ones exactly; string literals and comments are skipped.
fn identifier_position(query: &str, name: &str) -> Option<(u64, u64)> {
    let chars: Vec<char> = query.chars().collect();
    let (mut line, mut column) = (1u64, 1u64);
    let mut i = 0;
    // Moves past `n` characters, keeping line and column.
    let advance = |i: &mut usize, n: usize, line: &mut u64, column: &mut u64| {
        for &c in &chars[*i..(*i + n).min(chars.len())] {
            if c == '\n' {
                *line += 1;
                *column = 1;
            } else {
                *column += 1;
            }
        }
        *i = (*i + n).min(chars.len());
    };
    let quoted_end = |from: usize, quote: char| {
        let mut j = from + 1;
        while j < chars.len() {
            if chars[j] == quote {
                if chars.get(j + 1) == Some(&quote) {
                    j += 2;
                    continue;
                }
                return j + 1;
            }
            j += 1;
        }
        chars.len()
    };
    while i < chars.len() {
        let c = chars[i];
        let len = if c == '\'' {
            quoted_end(i, '\'')
        } else if c == '-' && chars.get(i + 1) == Some(&'-') {
            (i..chars.len())
                .find(|&j| chars[j] == '\n')
                .unwrap_or(chars.len())
        } else if c == '/' && chars.get(i + 1) == Some(&'*') {
            (i + 2..chars.len())
                .find(|&j| chars[j] == '*' && chars.get(j + 1) == Some(&'/'))
                .map_or(chars.len(), |j| j + 2)
        } else if c == '"' {
            let end = quoted_end(i, '"');
            let text: String = chars[i + 1..end.saturating_sub(1).max(i + 1)]
                .iter()
                .collect();
            if text.replace("\"\"", "\"") == name {
                return Some((line, column));
            }
            end
        } else if c.is_alphabetic() || c == '_' {
            let end = (i..chars.len())
                .find(|&j| !(chars[j].is_alphanumeric() || chars[j] == '_' || chars[j] == '$'))
                .unwrap_or(chars.len());
            let word: String = chars[i..end].iter().collect();
            if word.to_lowercase() == name {
                return Some((line, column));
            }
            end
        } else {
            i + 1
        } - i;
        advance(&mut i, len, &mut line, &mut column);
    }
    None
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
            QueryError::ReadOnly { statement } => write!(
                f,
                "the query is read-only: it reads the given traces and writes only the \
                 result, so statements that write files, read other files or change the \
                 session (COPY … TO, CREATE EXTERNAL TABLE, INSERT, SET …) are refused \
                 ({statement}); pass --allow-write to run them"
            ),
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
    fn an_unknown_column_is_found_in_the_query() {
        let q = "SELECT name, count(*) AS n -- nme here is a comment\nFROM kernels\n\
                 WHERE name <> 'nme' GROUP BY NME";
        assert_eq!(identifier_position(q, "nme"), Some((3, 30)));
        assert_eq!(
            identifier_position("SELECT \"Nme\" FROM t", "Nme"),
            Some((1, 8))
        );
        assert_eq!(identifier_position("SELECT \"Nme\" FROM t", "nme"), None);
        assert_eq!(identifier_position("SELECT a.nme_x FROM t", "nme"), None);
    }

    #[test]
    fn valid_fields_are_listed_once() {
        assert_eq!(
            dedup_valid_fields("No field named x.\nValid fields are t.a, \"n\", t.b, t.a."),
            "No field named x.\nValid fields are t.a, \"n\", t.b."
        );
        assert_eq!(dedup_valid_fields("other"), "other");
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
