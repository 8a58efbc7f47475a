//! The vendored test data (`tests/data/`) is what its README says: every file under
//! `tests/data/traces/` has a row with its SHA-256, every row names a file that exists
//! with that sum, and the whole stays small.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// At most this much vendored data (bytes): "a few MB" that every clone carries.
const BUDGET_BYTES: u64 = 8 << 20;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data")
}

/// `path relative to traces/` → SHA-256, from the README's table rows: the first cell
/// names one or more files in backticks, the last cell their sums in the same order.
fn listed(readme: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (line_no, line) in readme.lines().enumerate() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 4 || !line.starts_with('|') {
            continue;
        }
        let sums = backticked(cells[cells.len() - 2]);
        if sums.is_empty() || !sums.iter().all(|s| is_sha256(s)) {
            continue;
        }
        let files = backticked(cells[1]);
        assert_eq!(
            files.len(),
            sums.len(),
            "README line {}: {} files but {} sums",
            line_no + 1,
            files.len(),
            sums.len()
        );
        for (file, sum) in files.into_iter().zip(sums) {
            let previous = out.insert(file.to_owned(), sum.to_owned());
            assert!(
                previous.is_none(),
                "README line {}: {file} listed twice",
                line_no + 1
            );
        }
    }
    out
}

fn backticked(cell: &str) -> Vec<&str> {
    cell.split('`').skip(1).step_by(2).collect()
}

fn is_sha256(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

fn files_under(dir: &Path, root: &Path, out: &mut Vec<(String, u64)>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, root, out);
        } else {
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            out.push((rel, path.metadata().unwrap().len()));
        }
    }
}

fn sha256(path: &Path) -> String {
    let out = Command::new("sha256sum")
        .arg(path)
        .output()
        .expect("sha256sum (coreutils) runs");
    assert!(out.status.success(), "sha256sum {}", path.display());
    String::from_utf8(out.stdout).unwrap()[..64].to_owned()
}

#[test]
fn vendored_test_data_matches_its_provenance() {
    let readme =
        std::fs::read_to_string(data_dir().join("README.md")).expect("tests/data/README.md");
    let listed = listed(&readme);
    let traces = data_dir().join("traces");
    let mut present = Vec::new();
    files_under(&traces, &traces, &mut present);
    present.sort();
    assert!(present.len() >= 19, "vendored files: {present:?}");

    let total: u64 = present.iter().map(|(_, bytes)| bytes).sum();
    assert!(
        total <= BUDGET_BYTES,
        "tests/data/traces holds {total} bytes, over the {BUDGET_BYTES}-byte budget"
    );
    for (file, _) in &present {
        let Some(expected) = listed.get(file) else {
            panic!(
                "tests/data/traces/{file} has no row (with its SHA-256) in tests/data/README.md"
            );
        };
        assert_eq!(
            &sha256(&traces.join(file)),
            expected,
            "tests/data/traces/{file} differs from the SHA-256 in tests/data/README.md"
        );
    }
    for file in listed.keys() {
        assert!(
            present.iter().any(|(p, _)| p == file),
            "tests/data/README.md lists {file}, which is not in tests/data/traces"
        );
    }
}
