//! Helpers shared by the CLI's integration tests.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The shared real traces (`../shared/traces/` beside the repository), or `None` with a
/// printed notice when that folder is absent, so the calling test can skip.
pub fn shared_traces() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/traces");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "skipping: {} is absent (the shared real traces)",
            dir.display()
        );
        None
    }
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
