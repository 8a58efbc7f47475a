//! The tables as CSV files (RFC 4180).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use super::{
    analysis_rows, read_rows, Cell, RowSink, TableStats, Value, ANALYSIS_SCHEMAS, ANALYSIS_TABLES,
    SCHEMAS, TABLES, TABLE_COUNT,
};
use crate::ExportError;

/// Writes the tables of one or more traces as `TABLE.csv` files in a directory.
#[derive(Debug)]
pub struct CsvExporter {
    writers: Vec<BufWriter<File>>,
    dir: std::path::PathBuf,
    stats: TableStats,
    line: String,
    files: i64,
}

impl CsvExporter {
    /// Creates (or truncates) `events.csv` … `flows.csv` in `dir` (created if missing).
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
            dir: dir.to_owned(),
            stats: TableStats {
                rows: [0; TABLE_COUNT],
                files,
                ..TableStats::default()
            },
            line: String::new(),
            files: 0,
        })
    }

    /// Adds the rows of one trace file (its rank from `distributedInfo`, else the
    /// number of files added before it).
    pub fn add_path(&mut self, path: &Path) -> Result<(), ExportError> {
        let fallback = self.files;
        self.files += 1;
        read_rows(path, fallback, false, self).map(|_| ())
    }

    /// Writes the analysis tables (`analysis_temporal.csv` …, see
    /// [`super::analysis`]) of `report` into the same directory.
    pub fn add_analysis(&mut self, report: &analysis::Report) -> io::Result<()> {
        let tables = analysis_rows(report);
        for (index, rows) in tables.iter().enumerate() {
            let path = self.dir.join(format!("{}.csv", ANALYSIS_TABLES[index]));
            let mut writer = BufWriter::new(File::create(&path)?);
            let header: Vec<&str> = ANALYSIS_SCHEMAS[index].iter().map(|c| c.name).collect();
            writeln!(writer, "{}", header.join(","))?;
            for row in rows {
                write_line(&mut self.line, row);
                writer.write_all(self.line.as_bytes())?;
            }
            writer.flush()?;
            self.stats.analysis_rows[index] = rows.len() as u64;
            self.stats.files.push(path);
        }
        Ok(())
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
    fn wants(&self, _table: usize) -> bool {
        true
    }

    fn row(&mut self, table: usize, values: &[Value<'_>]) -> io::Result<()> {
        self.line.clear();
        for (index, value) in values.iter().enumerate() {
            if index > 0 {
                self.line.push(',');
            }
            match value {
                Value::Int(Some(n)) => self.line.push_str(&n.to_string()),
                Value::Text(Some(text)) => self.line.push_str(&csv_field(text)),
                Value::Int(None) | Value::Text(None) => {}
            }
        }
        self.line.push('\n');
        self.writers[table].write_all(self.line.as_bytes())?;
        self.stats.rows[table] += 1;
        Ok(())
    }
}

/// One CSV record (with its line break) into `line`.
fn write_line(line: &mut String, cells: &[Cell]) {
    line.clear();
    for (index, cell) in cells.iter().enumerate() {
        if index > 0 {
            line.push(',');
        }
        match cell {
            Cell::Int(Some(n)) => line.push_str(&n.to_string()),
            Cell::Float(Some(x)) if x.is_finite() => line.push_str(&x.to_string()),
            Cell::Text(Some(text)) => line.push_str(&csv_field(text)),
            Cell::Int(None) | Cell::Text(None) | Cell::Float(_) => {}
        }
    }
    line.push('\n');
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
