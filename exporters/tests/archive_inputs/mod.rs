//! Inputs of the Perfetto archive tests: the two ranks of a recorded GPT run
//! (`analysis/tests/data/gpt-2ranks-4steps`, one process, no `host_name`), rewritten to
//! say which host each ran on and with a host's clock ahead.

#![allow(dead_code)]

use std::io::Read as _;
use std::path::{Path, PathBuf};

/// The recorded run's `baseTimeNanoseconds` (both ranks).
const BASE_NS: i64 = 1_790_857_026_000_000_000;

/// The recorded run's rank files.
pub fn recorded_ranks() -> Vec<PathBuf> {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../analysis/tests/data/gpt-2ranks-4steps");
    (0..2)
        .map(|r| dir.join(format!("rank{r}.pt.trace.json.gz")))
        .collect()
}

/// The recorded ranks written into `dir` as `rank<R>.json`, rank `r` with `host_name`
/// `hosts[r]` (none: no key) and every time `ahead_ns[r]` later (its host's clock ahead
/// of true time by that much).
pub fn ranks_on_hosts(dir: &Path, hosts: [Option<&str>; 2], ahead_ns: [i64; 2]) -> Vec<PathBuf> {
    std::fs::create_dir_all(dir).unwrap();
    let base = format!("\"baseTimeNanoseconds\": {BASE_NS}");
    recorded_ranks()
        .iter()
        .enumerate()
        .map(|(r, input)| {
            let mut text = String::new();
            flate2::read::GzDecoder::new(std::fs::File::open(input).unwrap())
                .read_to_string(&mut text)
                .unwrap();
            assert_eq!(text.matches(&base).count(), 1, "{}", input.display());
            text = text.replace(
                &base,
                &format!("\"baseTimeNanoseconds\": {}", BASE_NS + ahead_ns[r]),
            );
            if let Some(host) = hosts[r] {
                let head = "\"schemaVersion\": 1,";
                assert!(text.contains(head));
                text = text.replacen(head, &format!("{head}\n  \"host_name\": \"{host}\","), 1);
            }
            let out = dir.join(format!("rank{r}.json"));
            std::fs::write(&out, text).unwrap();
            out
        })
        .collect()
}

/// A fresh directory under the target folder's tmp.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
