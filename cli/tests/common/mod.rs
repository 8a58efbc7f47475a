//! Helpers shared by the CLI's integration tests.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The real traces vendored in the repository (`tests/data/traces`, provenance in
/// `tests/data/README.md`).
pub fn shared_traces() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/traces");
    assert!(
        dir.is_dir(),
        "{} is missing: the vendored test data",
        dir.display()
    );
    dir
}

/// Decompresses a `.gz` file with the system `gzip` (the tests need no gzip crate).
#[allow(dead_code)] // not every test crate reads compressed traces itself
pub fn gunzip(path: &Path) -> Vec<u8> {
    let out = Command::new("gzip")
        .arg("-dc")
        .arg(path)
        .output()
        .expect("gzip is installed");
    assert!(out.status.success(), "gzip -dc {}", path.display());
    out.stdout
}
