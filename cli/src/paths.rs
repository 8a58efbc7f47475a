//! Turning the paths a user gives into the list of trace files to read.

use std::path::PathBuf;

/// Expands the given paths ([`analysis::inputs::find_traces`]): files are kept as given;
/// directories contribute the trace files directly in them, sorted by name. Each entry
/// of a directory that is not a trace (a `key_averages.json`, TensorBoard's event files,
/// a subfolder) is reported on standard error, one line each, and skipped.
pub fn collect_trace_files(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let found = analysis::inputs::find_traces(paths)?;
    report_skipped(&found.skipped);
    for pair in &found.paired {
        eprintln!("neuronprof: {pair}");
    }
    Ok(found.files)
}

/// Prints one line per skipped directory entry on standard error.
pub fn report_skipped(skipped: &[analysis::inputs::Skipped]) {
    for entry in skipped {
        eprintln!("neuronprof: {entry}");
    }
}
