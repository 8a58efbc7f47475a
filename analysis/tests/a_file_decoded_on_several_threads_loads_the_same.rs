//! Loading a file with its events decoded on worker threads (`LoadOptions::read_threads`,
//! the default for a single file on a machine with several cores) gives the same model
//! as reading it on one thread: every shared trace, with and without host operators,
//! and damaged copies in lenient mode (same rows, counts and damage texts).

#[path = "support/traces.rs"]
mod traces;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use analysis::{load_paths, LoadOptions};

/// The whole model as text (every field of every rank; the one hash map sorted), or
/// the error.
fn load(paths: &[&Path], options: &LoadOptions) -> String {
    match load_paths(paths, options) {
        Ok(mut set) => {
            let mut device_ns = Vec::new();
            for rank in &mut set.ranks {
                if let Some(host) = &mut rank.host_ops {
                    let sorted: BTreeMap<i64, i64> =
                        host.device_ns_by_external_id.drain().collect();
                    device_ns.push(sorted);
                }
            }
            format!("{set:#?}\ndevice ns by External id: {device_ns:#?}")
        }
        Err(e) => format!("error: {e}"),
    }
}

fn assert_same(what: &str, paths: &[&Path], options: LoadOptions) {
    let one = load(paths, &options.clone().with_read_threads(Some(0)));
    for threads in [1, 2] {
        let many = load(paths, &options.clone().with_read_threads(Some(threads)));
        if one != many {
            let line = one
                .lines()
                .zip(many.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            panic!(
                "{what}, {threads} read threads: models differ from line {line}:\n\
                 one thread: {:?}\n{threads} threads: {:?}",
                one.lines().nth(line),
                many.lines().nth(line)
            );
        }
    }
}

#[test]
fn every_shared_trace_loads_the_same_on_several_threads() {
    let dir = traces::traces_dir();
    let paths = traces::shared_trace_files(&dir);
    assert!(!paths.is_empty(), "no traces in {}", dir.display());
    for path in &paths {
        let name = path.display().to_string();
        assert_same(&name, &[path], LoadOptions::default());
        if name.contains("nccl_data") || name.contains("gloo_2rank-rank0") {
            assert_same(
                &format!("{name} without host operators"),
                &[path],
                LoadOptions::default().with_host_ops(false),
            );
        }
    }
    // Two ranks at once: each file on its own thread, or each decoded on workers.
    let rank0 = dir.join("hta/two_rank-rank0.json.gz");
    let rank1 = dir.join("hta/two_rank-rank1.json.gz");
    assert_same("two ranks", &[&rank0, &rank1], LoadOptions::default());
}

#[test]
fn damaged_files_load_the_same_on_several_threads() {
    let dir = traces::traces_dir();
    // The trace as plain JSON text (read, then written back by trace-format's writer).
    let mut events = trace_format::CollectSink::default();
    trace_format::read_path(dir.join("hta/nccl_data.json.gz"), &mut events).unwrap();
    let options = trace_format::WriteOptions::default().with_record_window_end(false);
    let mut writer =
        trace_format::TraceWriter::with_options(Vec::new(), &events.meta, options).expect("writer");
    for event in &events.events {
        writer.write_event(event).unwrap();
    }
    let text = writer.finish().unwrap();
    let tmp = std::env::temp_dir().join(format!("analysis-parallel-load-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    // Cut mid-event, and with a string `ts` and a NaN `dur` in the middle.
    let cut = tmp.join("cut.json");
    std::fs::write(&cut, &text[..text.len() * 3 / 5]).unwrap();
    let mut damaged_text = String::from_utf8(text.clone()).unwrap();
    for (from, to) in [
        ("\"ts\": 4", "\"ts\": \"4"),
        ("\"dur\": 1", "\"dur\": NaN, \"x\": 1"),
    ] {
        let at =
            damaged_text.len() / 2 + damaged_text[damaged_text.len() / 2..].find(from).unwrap();
        damaged_text.replace_range(at..at + from.len(), to);
    }
    let damaged = tmp.join("damaged.json");
    std::fs::File::create(&damaged)
        .unwrap()
        .write_all(damaged_text.as_bytes())
        .unwrap();
    for path in [&cut, &damaged] {
        let name = path.display().to_string();
        let set = load_paths(&[path], &LoadOptions::default().with_lenient(true)).unwrap();
        assert!(
            !set.ranks[0].damage.is_empty(),
            "{name}: the damage is seen"
        );
        assert_same(&name, &[path], LoadOptions::default().with_lenient(true));
        assert_same(&format!("{name} strict"), &[path], LoadOptions::default());
    }
    std::fs::remove_dir_all(&tmp).unwrap();
}
