//! Finding the shared real traces (`../../shared/traces` from this crate).

#![allow(dead_code)]

use std::path::PathBuf;

/// The shared traces folder, or `None` (with a printed notice) when it is absent.
pub fn traces_dir(test: &str) -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/traces");
    if dir.is_dir() {
        Some(dir)
    } else {
        println!(
            "SKIPPED {test}: shared traces not found at {} (they live outside the repository)",
            dir.display()
        );
        None
    }
}

/// Every shared trace: `hta/*`, `kineto-legacy/*`, `torch-2.15/*` (`.json.gz`), sorted.
pub fn all_traces(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for sub in ["hta", "kineto-legacy", "torch-2.15"] {
        let Ok(entries) = std::fs::read_dir(dir.join(sub)) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.to_string_lossy().ends_with(".json.gz") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The decompressed JSON text of a shared trace.
pub fn gunzip(path: &std::path::Path) -> Vec<u8> {
    use std::io::Read;
    let file = std::fs::File::open(path).expect("open trace");
    let mut text = Vec::new();
    flate2::read::MultiGzDecoder::new(file)
        .read_to_end(&mut text)
        .expect("gunzip trace");
    text
}
