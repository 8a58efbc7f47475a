//! The real traces vendored in the repository (`tests/data/traces`).

#![allow(dead_code)]

use std::path::PathBuf;

/// The real traces vendored in the repository (`tests/data/traces`, provenance in
/// `tests/data/README.md`).
pub fn traces_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/traces");
    assert!(
        dir.is_dir(),
        "{} is missing: the vendored test data",
        dir.display()
    );
    dir
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
