//! `retime` on every vendored real trace (`tests/data/traces`): with the identity map the output is the input
//! byte for byte (plus the marker member); with a compressing map exactly the `ts`/`dur`
//! of the events outside the kept categories change, to the mapped values, and every
//! other event, key and argument reads back the same.

#[path = "support/shared.rs"]
mod shared;

use trace_format::{retime, CollectSink, RetimeOptions, TraceReader};

const MARKER: &str = "retimed_by_test";

fn marker(_: &trace_format::RetimeStats) -> String {
    "{\"test\": true}".to_owned()
}

fn options(keep: &[&str], base_time_ns: Option<i64>) -> RetimeOptions<'static> {
    RetimeOptions {
        keep_categories: keep.iter().map(|s| s.to_string()).collect(),
        marker: Some((MARKER.to_owned(), &marker)),
        base_time_ns,
        append: None,
        drop: None,
    }
}

fn read(name: &str, bytes: &[u8]) -> CollectSink {
    let mut sink = CollectSink::default();
    TraceReader::from_slice(name, bytes)
        .read(&mut sink)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    sink
}

#[test]
fn retime_changes_only_the_chosen_times() {
    let traces = shared::all_traces(&shared::traces_dir());
    assert!(traces.len() >= 10, "{traces:?}");
    for path in traces {
        let name = path.display().to_string();
        let text = shared::gunzip(&path);
        if text.len() > 10 << 20 {
            // The two traces over 10 MB (35 and 53 MB) would add most of a minute to a
            // debug test run and hold nothing the others do not.
            println!("{name}: skipped, {} MB", text.len() >> 20);
            continue;
        }
        let before = read(&name, &text);
        let base = before.meta.base_time_ns();

        // Identity: the same bytes, plus the marker before the closing brace.
        let mut out = Vec::new();
        let stats = retime(text.as_slice(), &mut out, &name, &options(&[], base), |t| t).unwrap();
        assert_eq!(stats.bytes_in, text.len() as u64, "{name}");
        assert_eq!(stats.events as usize, before.events.len(), "{name}");
        let marker = format!(",\n  \"{MARKER}\": {{\"test\": true}}");
        let at = out
            .windows(marker.len())
            .rposition(|w| w == marker.as_bytes())
            .unwrap_or_else(|| panic!("{name}: no marker"));
        let mut unmarked = out.clone();
        unmarked.drain(at..at + marker.len());
        if unmarked != text {
            let first = unmarked
                .iter()
                .zip(&text)
                .position(|(a, b)| a != b)
                .unwrap_or(unmarked.len().min(text.len()));
            let context = |t: &[u8]| {
                String::from_utf8_lossy(&t[first.saturating_sub(80)..(first + 80).min(t.len())])
                    .into_owned()
            };
            panic!(
                "{name}: identity retime changed byte {first}:\n got {}\nwant {}",
                context(&unmarked),
                context(&text)
            );
        }

        // A compressing map from the middle of the trace on.
        let mut times: Vec<i64> = before.events.iter().filter_map(|e| e.ts_ns).collect();
        times.sort_unstable();
        let t0 = times[times.len() / 2];
        let map = |t: i64| if t > t0 { t0 + (t - t0) / 2 } else { t };
        let keep = ["kernel", "gpu_memcpy", "Kernel", "Memcpy"];
        let mut out = Vec::new();
        let stats = retime(text.as_slice(), &mut out, &name, &options(&keep, base), map).unwrap();
        let after = read(&name, &out);
        assert_eq!(after.events.len(), before.events.len(), "{name}");
        let mut kept = 0;
        for (index, (b, a)) in before.events.iter().zip(&after.events).enumerate() {
            let kept_category = b
                .category
                .as_ref()
                .is_some_and(|c| keep.contains(&c.as_str()));
            if kept_category {
                kept += 1;
                assert_eq!(a, b, "{name} #{index}: a kept event changed");
                continue;
            }
            assert_eq!(a.ts_ns, b.ts_ns.map(map), "{name} #{index}: ts");
            if let (Some(ts_ns), Some(dur_ns)) = (b.ts_ns, b.dur_ns) {
                let want = (map(ts_ns + dur_ns) - map(ts_ns)).max(0);
                assert_eq!(a.dur_ns, Some(want), "{name} #{index}: dur");
            }
            let mut same = a.clone();
            same.ts_ns = b.ts_ns;
            same.dur_ns = b.dur_ns;
            assert_eq!(&same, b, "{name} #{index}: more than the times changed");
        }
        assert_eq!(stats.kept, kept, "{name}");
        assert_eq!(
            after.meta.unknown_entries().count(),
            before.meta.unknown_entries().count() + 1,
            "{name}: the marker is the one new top-level key"
        );
    }
}
