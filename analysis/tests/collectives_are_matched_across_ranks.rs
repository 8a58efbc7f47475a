//! Two ranks with different `baseTimeNanoseconds`: collectives matched by (group, Seq),
//! waiting versus transfer time, who was waited for, bus bandwidth and the bottleneck.

#[path = "support/traces.rs"]
mod traces;

use analysis::analyses::collectives::collectives;
use analysis::{load_paths, Frames, LoadOptions, Mode};

fn trace(rank: i64, base_ns: i64, kernels: &[(i64, f64, f64)]) -> String {
    trace_on(rank, base_ns, kernels, "")
}

/// `trace` with more top-level members (`extra` ends with a comma).
fn trace_on(rank: i64, base_ns: i64, kernels: &[(i64, f64, f64)], extra: &str) -> String {
    let events: Vec<String> = kernels
        .iter()
        .map(|(seq, ts, dur)| {
            format!(
                r#"{{"ph": "X", "cat": "kernel", "name": "all_reduce", "pid": 0, "tid": 3, "ts": {ts:.3}, "dur": {dur:.3},
 "args": {{"device": 0, "stream": 3, "correlation": {seq}, "Collective name": "allreduce",
 "Process Group Name": "0", "Seq": {seq}, "In msg nelems": 1000000, "Out msg nelems": 1000000,
 "Group size": 2, "dtype": "Float"}}}}"#
            )
        })
        .collect();
    format!(
        r#"{{{extra} "distributedInfo": {{"backend": "neuron", "rank": {rank}, "world_size": 2}},
 "baseTimeNanoseconds": {base_ns}, "traceEvents": [{}]}}"#,
        events.join(",\n")
    )
}

#[test]
fn waits_transfers_and_bottleneck() {
    let dir = std::env::temp_dir().join(format!("analysis-coll-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let base = 1_700_000_000_000_000_000i64;
    let r0 = dir.join("rank0.json");
    let r1 = dir.join("rank1.json");
    std::fs::write(&r0, trace(0, base, &[(1, 10.0, 20.0), (2, 50.0, 10.0)])).unwrap();
    std::fs::write(
        &r1,
        trace(1, base + 2_000, &[(1, 13.0, 15.0), (2, 40.0, 18.0)]),
    )
    .unwrap();
    let traces = load_paths(&[&r1, &r0], &LoadOptions::default()).unwrap();
    let result = collectives(
        &Frames::build_with(&traces, Mode::Default, false),
        Some(400.0),
    );
    assert_eq!(result.instances.len(), 2);
    let first = &result.instances[0];
    assert_eq!(
        (first.seq, first.arrival_skew_us, first.waited_for_rank),
        (Some(1), 5.0, 1)
    );
    let waits: Vec<(f64, f64)> = first
        .ranks
        .iter()
        .map(|r| (r.wait_us, r.transfer_us))
        .collect();
    assert_eq!(waits, [(5.0, 15.0), (0.0, 15.0)]);
    assert_eq!(first.bytes, Some(4_000_000));
    let busbw = first.bus_bandwidth_gbps.unwrap();
    assert!((busbw - 4_000_000.0 / 15_000.0).abs() < 1e-9, "{busbw}");
    assert!((first.fraction_of_peak.unwrap() - busbw / 400.0).abs() < 1e-12);
    let second = &result.instances[1];
    assert_eq!((second.arrival_skew_us, second.waited_for_rank), (8.0, 0));
    let totals: Vec<(i64, f64, f64, u64, f64)> = result
        .per_rank
        .iter()
        .map(|t| {
            (
                t.rank,
                t.wait_us,
                t.transfer_us,
                t.times_waited_for,
                t.others_waited_us,
            )
        })
        .collect();
    assert_eq!(totals, [(0, 5.0, 25.0, 1, 8.0), (1, 8.0, 25.0, 1, 5.0)]);
    assert_eq!(result.bottleneck_rank, Some(0));
    assert_eq!(
        result.per_step.len(),
        2,
        "no ProfilerStep: one (rank, -1) entry each"
    );
}

/// The link a group is judged against comes from the traces: H100s on one host
/// (`host_name`, `deviceProperties`) are judged against NVLink 4's 450 GB/s a direction;
/// on two hosts there is no nominal figure (no network card in a trace) until
/// `--ranks-per-node` puts them on one node or `--peak-bus-gbps` names one.
#[test]
fn the_link_of_a_group_follows_its_hosts_and_devices() {
    let dir = std::env::temp_dir().join(format!("analysis-coll-link-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let base = 1_700_000_000_000_000_000i64;
    let h100 = r#""deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "numSms": 132, "totalGlobalMem": 85520809984}],"#;
    let analyze = |hosts: [&str; 2], options: analysis::ReportOptions| {
        let paths: Vec<_> = (0..2)
            .map(|rank| {
                let path = dir.join(format!("rank{rank}.json"));
                let extra = format!(r#"{h100} "host_name": "{}","#, hosts[rank as usize]);
                let kernels = [(1, 10.0 + rank as f64, 20.0 - rank as f64)];
                std::fs::write(&path, trace_on(rank, base, &kernels, &extra)).unwrap();
                path
            })
            .collect();
        let traces = load_paths(&paths, &LoadOptions::default()).unwrap();
        analysis::analyze(&traces, &options).collectives
    };
    let one = analyze(["node-a", "node-a"], Default::default());
    let g = &one.groups[0];
    assert_eq!((g.link.nodes, g.link.inter_node), (Some(1), Some(false)));
    assert_eq!(
        (g.link.link.as_str(), g.link.peak_bus_gbps),
        ("NVLink 4", Some(450.0))
    );
    // 4 MB in the 19 us transfer, all-reduce of 2 ranks: busbw = algbw × 2(n−1)/n.
    let busbw = 4_000_000.0 / 19_000.0;
    let fraction = one.instances[0].fraction_of_peak.unwrap();
    assert!((fraction - busbw / 450.0).abs() < 1e-12, "{fraction}");
    assert!((g.median_fraction_of_peak.unwrap() - busbw / 450.0).abs() < 1e-12);

    let two = analyze(["node-a", "node-b"], Default::default());
    let g = &two.groups[0];
    assert_eq!((g.link.nodes, g.link.inter_node), (Some(2), Some(true)));
    assert_eq!(g.link.peak_bus_gbps, None, "{g:?}");
    assert!(g.link.link.starts_with("inter-node"), "{}", g.link.link);
    assert_eq!(two.instances[0].fraction_of_peak, None);

    let per_node = analysis::ReportOptions::default().with_ranks_per_node(Some(2));
    let g = &analyze(["node-a", "node-b"], per_node).groups[0];
    assert_eq!((g.link.nodes, g.link.peak_bus_gbps), (Some(1), Some(450.0)));
    let named = analysis::ReportOptions::default().with_peak_bus_gbps(Some(25.0));
    let g = &analyze(["node-a", "node-b"], named).groups[0];
    assert_eq!(
        (g.link.link.as_str(), g.link.peak_bus_gbps),
        ("--peak-bus-gbps", Some(25.0))
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// "Communication is slow" only where transfer is slow against the link, "rank R is late"
/// only where waiting dominates: two H100s on one host moving 4 MB in 1 ms (4 GB/s of
/// NVLink's 450) at the same instant get the first and not the second; the same with
/// rank 1 starting 5 ms late gets the second and not the first.
#[test]
fn slow_transfers_and_late_ranks_are_told_apart() {
    let dir = std::env::temp_dir().join(format!("analysis-coll-slow-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let base = 1_700_000_000_000_000_000i64;
    let extra = r#""deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "numSms": 132}], "host_name": "a","#;
    let findings = |late_us: f64| {
        let paths: Vec<_> = (0..2)
            .map(|rank| {
                let path = dir.join(format!("rank{rank}.json"));
                let (ts, dur) = if rank == 1 {
                    (10.0 + late_us, 1000.0)
                } else {
                    (10.0, 1000.0 + late_us)
                };
                std::fs::write(&path, trace_on(rank, base, &[(1, ts, dur)], extra)).unwrap();
                path
            })
            .collect();
        let traces = load_paths(&paths, &LoadOptions::default()).unwrap();
        let report = analysis::analyze(&traces, &Default::default());
        report
            .insights
            .iter()
            .map(|f| (f.kind, f.summary.clone()))
            .collect::<Vec<_>>()
    };
    use analysis::insights::FindingKind::{CollectiveBottleneck, SlowCollectives};
    let slow = findings(0.0);
    let kinds: Vec<_> = slow.iter().map(|f| f.0).collect();
    assert!(kinds.contains(&SlowCollectives), "{slow:?}");
    assert!(!kinds.contains(&CollectiveBottleneck), "{slow:?}");
    let text = &slow.iter().find(|f| f.0 == SlowCollectives).unwrap().1;
    assert!(text.contains("NVLink 4's 450 GB/s"), "{text}");

    let late = findings(5000.0);
    let kinds: Vec<_> = late.iter().map(|f| f.0).collect();
    assert!(kinds.contains(&CollectiveBottleneck), "{late:?}");
    assert!(!kinds.contains(&SlowCollectives), "{late:?}");
    std::fs::remove_dir_all(&dir).ok();
}

/// PyTorch 2.15's gloo pair (CPU collectives: each is a `gloo:all_reduce` annotation on
/// a gloo worker thread): the instances, transfers, waits and bandwidths computed here
/// from the raw rows (the n-th annotation of each size on each rank is one instance;
/// transfer = the shorter of the two, wait = the rest; an all-reduce of 2 ranks has
/// busbw = algbw) equal the report's, and the rank that started last is named.
#[test]
fn gloo_collectives_of_the_torch_pair_equal_a_computation_from_the_raw_rows() {
    use std::collections::BTreeMap;
    let dir = traces::traces_dir().join("torch-2.15");
    let paths: Vec<_> = (0..2)
        .map(|r| dir.join(format!("gloo_2rank-rank{r}.pt.trace.json.gz")))
        .collect();
    // (size, n-th) -> per rank (start ns absolute, dur ns)
    let mut by_hand: BTreeMap<(i64, usize), Vec<(f64, f64)>> = BTreeMap::new();
    let mut first_base: Option<i64> = None;
    for path in &paths {
        let text = {
            use std::io::Read;
            let mut s = String::new();
            flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
                .read_to_string(&mut s)
                .unwrap();
            s
        };
        let trace: serde_json::Value = serde_json::from_str(&text).unwrap();
        // Relative to the first file's base (absolute µs since 1970 lose sub-µs in f64).
        let base_ns = trace["baseTimeNanoseconds"].as_i64().unwrap_or(0);
        let first_base = *first_base.get_or_insert(base_ns);
        let base_us = (base_ns - first_base) as f64 / 1e3;
        let mut rows: Vec<(f64, f64, i64)> = trace["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["cat"] == "user_annotation" && e["name"] == "gloo:all_reduce")
            .map(|e| {
                let n = e["args"]["Input Dims"][0][0].as_i64().unwrap();
                (
                    e["ts"].as_f64().unwrap() + base_us,
                    e["dur"].as_f64().unwrap(),
                    n,
                )
            })
            .collect();
        rows.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut nth: BTreeMap<i64, usize> = BTreeMap::new();
        for (ts, dur, n) in rows {
            let k = nth.entry(n).or_default();
            by_hand.entry((n, *k)).or_default().push((ts, dur));
            *k += 1;
        }
    }
    assert_eq!(by_hand.len(), 6, "3 all-reduces of each of 2 sizes");
    let traces = load_paths(&paths, &LoadOptions::default()).unwrap();
    let report = analysis::analyze(&traces, &Default::default());
    let c = &report.collectives;
    assert_eq!(c.instances.len(), 6);
    let mut last_counts = [0u64; 2];
    for inst in &c.instances {
        assert_eq!(
            (inst.collective.as_str(), inst.dtype.as_str()),
            ("allreduce", "Float")
        );
        let n = inst.in_nelems;
        let start = inst
            .ranks
            .iter()
            .map(|r| r.arrival_us)
            .fold(f64::MAX, f64::min);
        assert_eq!(start, 0.0);
        // The instance is the by-hand pair of its size whose durations it has.
        let pair = by_hand
            .iter()
            .filter(|((size, _), _)| *size == n)
            .map(|(_, v)| v)
            .find(|v| (0..2).all(|r| (v[r].1 - inst.ranks[r].dur_us).abs() < 1e-3))
            .unwrap_or_else(|| panic!("no raw pair for {inst:?}"));
        let transfer = pair[0].1.min(pair[1].1);
        assert!((inst.transfer_us - transfer).abs() < 1e-3, "{inst:?}");
        for (part, raw) in inst.ranks.iter().zip(pair) {
            assert!((part.wait_us - (raw.1 - transfer)).abs() < 1e-3);
        }
        let skew = (pair[0].0 - pair[1].0).abs();
        assert!((inst.arrival_skew_us - skew).abs() < 1e-3, "{inst:?}");
        let bytes = 4.0 * n as f64;
        assert_eq!(inst.bytes, Some(4 * n));
        let busbw = bytes / (transfer * 1e3); // GB/s; factor 2(n-1)/n = 1 for 2 ranks
        assert!((inst.bus_bandwidth_gbps.unwrap() - busbw).abs() < 1e-6 * busbw);
        let last = if pair[0].0 > pair[1].0 { 0 } else { 1 };
        assert_eq!(inst.arrived_last, Some(last as i64));
        last_counts[last] += 1;
    }
    let named: Vec<u64> = c.per_rank.iter().map(|r| r.times_waited_for).collect();
    assert_eq!(named, last_counts);
}

/// An all-to-all(v) of 3 ranks with uneven `In split size`s: the report's rank × rank
/// matrix, totals and imbalance equal the splits; the text prints the matrix; a split
/// size that is not a list of integers is reported as damage naming the event.
#[test]
fn all_to_all_splits_make_a_rank_by_rank_matrix() {
    let dir = std::env::temp_dir().join(format!("analysis-coll-a2a-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let splits = [[0, 100, 200], [300, 0, 0], [50, 50, 50]];
    let write = |rank: usize, split: &str| {
        let path = dir.join(format!("rank{rank}.json"));
        let n: i64 = splits[rank].iter().sum();
        let text = format!(
            r#"{{"distributedInfo": {{"backend": "nccl", "rank": {rank}, "world_size": 3}},
 "traceEvents": [{{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_SendRecv", "pid": 0, "tid": 7,
 "ts": {}, "dur": 50, "args": {{"device": 0, "stream": 7, "correlation": 1,
 "Collective name": "all_to_allv", "Process Group Name": "0", "Process Group Ranks": "[0, 1, 2]",
 "Seq": 1, "In msg nelems": {n}, "Out msg nelems": {n}, "Group size": 3, "dtype": "Float",
 "In split size": "{split}", "Out split size": "[]"}}}}]}}"#,
            10 + rank
        );
        std::fs::write(&path, text).unwrap();
        path
    };
    let paths: Vec<_> = (0..3)
        .map(|r| write(r, &format!("{:?}", splits[r])))
        .collect();
    let traces = load_paths(&paths, &LoadOptions::default()).unwrap();
    let report = analysis::analyze(&traces, &Default::default());
    let a = &report.collectives.all_to_all;
    assert_eq!(a.len(), 1, "{a:?}");
    let a = &a[0];
    assert_eq!(
        (a.ranks.as_slice(), a.instances, a.recorded_splits),
        (&[0, 1, 2][..], 1, true)
    );
    let by_hand: Vec<Vec<i64>> = splits
        .iter()
        .map(|r| r.iter().map(|e| e * 4).collect())
        .collect();
    assert_eq!(a.bytes, by_hand);
    assert_eq!(a.send_bytes, [1200, 1200, 600]);
    assert_eq!(a.recv_bytes, [1400, 600, 1000]);
    assert!((a.send_imbalance.unwrap() - 1200.0 / 1000.0).abs() < 1e-12);
    let text = analysis::render::render_report(&report);
    assert!(
        text.contains("All-to-all, group 0 all_to_allv (1 instances)"),
        "{text}"
    );
    assert!(
        text.contains("imbalance (largest / mean): sent 1.20, received 1.40"),
        "{text}"
    );

    let bad = write(1, "[300, x]");
    let traces = load_paths(&[&paths[0], &bad, &paths[2]], &LoadOptions::default()).unwrap();
    let report = analysis::analyze(&traces, &Default::default());
    let errors = report.errors.join("\n");
    assert!(
        errors.contains("`In split size` is not a list of integers: [300, x]"),
        "{errors}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
