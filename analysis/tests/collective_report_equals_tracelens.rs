//! The collective report against AMD TraceLens's multi-rank collective report on the
//! same four rank traces (`tests/data/tracelens-demo-4rank/README.md`): per instance the
//! transfer (TraceLens's `comm_latency`), start and end skew, each rank's wait, the mean
//! wait, algorithm and bus bandwidth; per rank the total wait, the total duration and
//! how often it arrived last.
//!
//! Two definitions differ on purpose (`analysis::analyses::collectives`): TraceLens's
//! "GB/s" are GiB/s (MiB / µs / 1024), ours are NCCL's 10⁹ bytes/s, so the test converts;
//! and TraceLens names one of several ranks that started at the same instant as "arrived
//! last" (the first by rank) or "first" (the last by rank), where we name none.

use std::collections::BTreeMap;
use std::path::PathBuf;

use analysis::analyses::collectives::{collectives, Collectives};
use analysis::{load_paths, Frames, LoadOptions, Mode};

fn data() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/tracelens-demo-4rank")
}

fn report() -> Collectives {
    let paths: Vec<PathBuf> = (0..4)
        .map(|r| data().join(format!("rank{r}.pt.trace.json.gz")))
        .collect();
    let traces = load_paths(&paths, &LoadOptions::default()).unwrap();
    collectives(&Frames::build_with(&traces, Mode::Default, false), None)
}

/// TraceLens's CSV as rows of column → text (quoted fields hold commas).
fn csv(name: &str) -> Vec<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(data().join(name)).unwrap();
    let split = |line: &str| {
        let mut fields = Vec::new();
        let mut field = String::new();
        let mut quoted = false;
        for c in line.chars() {
            match c {
                '"' => quoted = !quoted,
                ',' if !quoted => fields.push(std::mem::take(&mut field)),
                _ => field.push(c),
            }
        }
        fields.push(field);
        fields
    };
    let mut lines = text.lines();
    let header = split(lines.next().unwrap());
    lines
        .map(|l| header.iter().cloned().zip(split(l)).collect())
        .collect()
}

fn num(row: &BTreeMap<String, String>, column: &str) -> f64 {
    row[column]
        .parse()
        .unwrap_or_else(|e| panic!("{column}={:?}: {e}", row[column]))
}

/// Equal within 1 % (and 2 ns, TraceLens's float µs).
fn close(ours: f64, theirs: f64, what: &str) {
    let tolerance = (0.01 * theirs.abs()).max(0.002);
    assert!(
        (ours - theirs).abs() <= tolerance,
        "{what}: ours {ours}, TraceLens {theirs}"
    );
}

#[test]
fn every_instance_has_tracelens_transfer_skews_waits_and_bandwidth() {
    let report = report();
    let rows = csv("nccl_implicit_sync.csv");
    assert_eq!(rows.len(), 92);
    assert_eq!(report.instances.len(), rows.len());
    // TraceLens numbers a group's instances from 0 in order (`dp0_K`); ours are in order
    // of first arrival, and the trace's `Seq` is that same number.
    for row in &rows {
        let id = &row["collective_id"];
        let seq: i64 = id.rsplit('_').next().unwrap().parse().unwrap();
        let inst = report
            .instances
            .iter()
            .find(|i| i.process_group == row["Process Group Name"] && i.seq == Some(seq))
            .unwrap_or_else(|| panic!("{id} not matched"));
        assert_eq!(inst.collective, row["Collective name"], "{id}");
        assert_eq!(inst.ranks.len(), 4, "{id}");
        close(
            inst.transfer_us,
            num(row, "comm_latency"),
            &format!("{id} transfer"),
        );
        close(
            inst.arrival_skew_us,
            num(row, "skew in start time"),
            &format!("{id} start skew"),
        );
        close(
            inst.end_skew_us,
            num(row, "skew in end time"),
            &format!("{id} end skew"),
        );
        close(
            inst.mean_wait_us,
            num(row, "avg_wait_time"),
            &format!("{id} mean wait"),
        );
        for r in &inst.ranks {
            close(
                r.wait_us,
                num(row, &format!("rank_{}_wait_time", r.rank)),
                &format!("{id} rank {} wait", r.rank),
            );
            close(
                r.dur_us,
                num(row, &format!("rank_{}_dur", r.rank)),
                &format!("{id} rank {} duration", r.rank),
            );
        }
        let gib = (1u64 << 30) as f64 / 1e9;
        close(
            inst.algbw_gbps.unwrap() / gib,
            num(row, "algo bw (GB/s)"),
            &format!("{id} algbw"),
        );
        close(
            inst.bus_bandwidth_gbps.unwrap() / gib,
            num(row, "bus bw (GB/s)"),
            &format!("{id} busbw"),
        );
        assert_eq!(
            inst.bytes.unwrap() as f64,
            num(row, "Full msg size (MB)") * (1u64 << 20) as f64,
            "{id} bytes"
        );
    }
}

#[test]
fn straggler_summary_is_tracelenss_except_for_ties() {
    let report = report();
    let rows = csv("straggler_summary.csv");
    assert_eq!(rows.len(), 4);
    for row in &rows {
        let rank = num(row, "rank") as i64;
        let ours = report.per_rank.iter().find(|t| t.rank == rank).unwrap();
        assert_eq!(
            ours.instances as f64,
            num(row, "num_collectives"),
            "rank {rank}"
        );
        close(ours.wait_us, num(row, "total_wait_time_us"), "total wait");
        close(ours.dur_us, num(row, "total_nccl_dur_us"), "total duration");
        let ties = report
            .instances
            .iter()
            .filter(|i| i.arrived_last.is_none())
            .count() as f64;
        match rank {
            // Rank 2 (the slow device) alone started last in 84 of 92: TraceLens's count.
            2 => assert_eq!(ours.times_waited_for as f64, num(row, "times_arrived_last")),
            // TraceLens's other 8 "last" arrivals of rank 0 are instances where every rank
            // started at the same instant: ours names nobody there.
            0 => {
                assert_eq!(ties, num(row, "times_arrived_last"));
                assert_eq!(ours.times_waited_for, 0);
            }
            _ => assert_eq!(ours.times_waited_for, 0),
        }
        // Ranks 0, 1 and 3 start together in every instance: no one rank alone first
        // (TraceLens names rank 3, the last of the tied ones, 92 times).
        assert_eq!(ours.times_arrived_first, 0, "rank {rank}");
    }
    assert_eq!(report.bottleneck_rank, Some(2));
    let group = &report.groups[0];
    assert_eq!(
        (group.process_group.as_str(), group.collective.as_str()),
        ("dp0", "allreduce")
    );
    assert_eq!(group.instances, 92);
    assert_eq!(group.ranks, [0, 1, 2, 3]);
    let waits: f64 = report.per_rank.iter().map(|t| t.wait_us).sum();
    close(group.wait_us, waits, "the group's wait is its ranks'");
    assert_eq!(
        group
            .size_histogram
            .iter()
            .map(|b| b.instances)
            .sum::<u64>(),
        92
    );
}
