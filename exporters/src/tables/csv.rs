//! The tables as CSV files (RFC 4180).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use super::{read_rows, Cell, RowSink, TableStats, SCHEMAS, TABLES};
use crate::ExportError;

/// Writes the tables of one or more traces as `TABLE.csv` files in a directory.
#[derive(Debug)]
pub struct CsvExporter {
    writers: Vec<BufWriter<File>>,
    stats: TableStats,
    line: String,
}

impl CsvExporter {
    /// Creates (or truncates) `events.csv` … `steps.csv` in `dir` (created if missing).
    pub fn create(dir: &Path) -> io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let mut writers = Vec::new();
        let mut files = Vec::new();
        for (table, columns) in TABLES.iter().zip(SCHEMAS) {
            let path = dir.join(format!("{table}.csv"));
            let mut writer = BufWriter::with_capacity(1 << 16, File::create(&path)?);
            let header: Vec<&str> = columns.iter().map(|c| c.name).collect();
            writeln!(writer, "{}", header.join(","))?;
            writers.push(writer);
            files.push(path);
        }
        Ok(CsvExporter {
            writers,
            stats: TableStats {
                rows: [0; 5],
                files,
            },
            line: String::new(),
        })
    }

    /// Adds the rows of one trace file.
    pub fn add_path(&mut self, path: &Path) -> Result<(), ExportError> {
        read_rows(path, self)
    }

    /// Flushes the files; returns the row counts.
    pub fn finish(mut self) -> io::Result<TableStats> {
        for writer in &mut self.writers {
            writer.flush()?;
        }
        Ok(self.stats)
    }
}

impl RowSink for CsvExporter {
    fn row(&mut self, table: usize, cells: &[Cell]) -> io::Result<()> {
        self.line.clear();
        for (index, cell) in cells.iter().enumerate() {
            if index > 0 {
                self.line.push(',');
            }
            match cell {
                Cell::Int(Some(n)) => self.line.push_str(&n.to_string()),
                Cell::Text(Some(text)) => self.line.push_str(&csv_field(text)),
                Cell::Int(None) | Cell::Text(None) => {}
            }
        }
        self.line.push('\n');
        self.writers[table].write_all(self.line.as_bytes())?;
        self.stats.rows[table] += 1;
        Ok(())
    }
}

/// Quotes a CSV field when it holds a comma, quote or line break (RFC 4180).
pub fn csv_field(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\"")).into()
    } else {
        text.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_quoted_only_when_needed() {
        assert_eq!(csv_field("matmul"), "matmul");
        assert_eq!(csv_field("a, b"), "\"a, b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
