//! The progress callback of `LoadOptions`: bytes read per file, for a progress bar.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use analysis::{load_paths, LoadOptions, LoadProgress};

#[test]
fn progress_counts_file_bytes_until_done() {
    let dir = std::env::temp_dir().join(format!("analysis-progress-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A plain JSON over two report intervals (4 MiB each), with the time base after
    // the events as Kineto writes it.
    let big = dir.join("big.json");
    let mut json = String::from(r#"{"traceEvents": ["#);
    let mut i = 0;
    while json.len() < 9 << 20 {
        if i > 0 {
            json.push(',');
        }
        json.push_str(&format!(
            r#"{{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": {}, "dur": 1, "args": {{"stream": 7, "correlation": {i}}}}}"#,
            i * 2 + 5
        ));
        i += 1;
    }
    json.push_str(r#"], "baseTimeNanoseconds": 1000000000}"#);
    std::fs::write(&big, &json).unwrap();
    let small = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/gpt-2ranks-4steps/rank1.pt.trace.json.gz");
    let reports: Arc<Mutex<Vec<LoadProgress>>> = Arc::default();
    let sink = Arc::clone(&reports);
    let options = LoadOptions::default().with_progress(move |p: &LoadProgress| {
        sink.lock().unwrap().push(p.clone());
    });
    let set = load_paths(&[&big, &small], &options).unwrap();
    let reports = reports.lock().unwrap();
    for (index, path) in [&big, &small].into_iter().enumerate() {
        let size = std::fs::metadata(path).unwrap().len();
        let of_file: Vec<_> = reports.iter().filter(|p| p.file_index == index).collect();
        let last = of_file.last().unwrap();
        assert!(last.done && !of_file[..of_file.len() - 1].iter().any(|p| p.done));
        assert_eq!((last.bytes_read, last.total_bytes), (size, Some(size)));
        assert!(of_file
            .windows(2)
            .all(|w| w[0].bytes_read <= w[1].bytes_read));
        assert_eq!(&last.path, path);
    }
    let big_reports = reports.iter().filter(|p| p.file_index == 0).count();
    assert!(big_reports >= 3, "two interval reports and the last one");
    assert_eq!(reports.iter().filter(|p| p.file_index == 1).count(), 1);
    // The late `baseTimeNanoseconds` is known and times are relative to it.
    let rank = &set.ranks[0];
    assert_eq!(rank.base_ns, 1_000_000_000);
    assert_eq!(rank.rows[0].ts_rel_ns, 5_000);
    std::fs::remove_dir_all(&dir).unwrap();
}
