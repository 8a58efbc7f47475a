//! Two ranks with different `baseTimeNanoseconds`: collectives matched by (group, Seq),
//! waiting versus transfer time, who was waited for, bus bandwidth and the bottleneck.

use analysis::analyses::collectives::collectives;
use analysis::{load_paths, Frames, LoadOptions, Mode};

fn trace(rank: i64, base_ns: i64, kernels: &[(i64, f64, f64)]) -> String {
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
        r#"{{"distributedInfo": {{"backend": "neuron", "rank": {rank}, "world_size": 2}},
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
