//! Turning the paths a user gives into the list of trace files to read.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};

/// Expands the given paths: files are kept as given; directories contribute their
/// `.json` and `.json.gz` files (not recursing), sorted by name.
pub fn collect_trace_files(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for path in paths {
        let meta = std::fs::metadata(path).with_context(|| format!("{}", path.display()))?;
        if !meta.is_dir() {
            files.push(path.clone());
            continue;
        }
        let mut found: Vec<PathBuf> = std::fs::read_dir(path)
            .with_context(|| format!("listing {}", path.display()))?
            .map(|entry| entry.map(|e| e.path()))
            .collect::<Result<_, _>>()
            .with_context(|| format!("listing {}", path.display()))?;
        found.retain(|p| p.is_file() && is_trace_name(p));
        if found.is_empty() {
            bail!(
                "{}: directory holds no .json or .json.gz trace",
                path.display()
            );
        }
        found.sort();
        files.extend(found);
    }
    Ok(files)
}

fn is_trace_name(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.ends_with(".json") || name.ends_with(".json.gz")
}
