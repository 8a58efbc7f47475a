//! The record-cost target as one ratio: an enabled record against one clock read,
//! measured in the same run, interleaved, as medians of many short trials (a trial that
//! the scheduler preempted lands in the tail, not in the median).
//!
//! Run: `cargo bench -p runtime-hooks --bench record_ratio` (about 10 s). Each trial
//! times 16,384 clock reads and then 16,384 records into a ring that is drained
//! (untimed) after every trial, as the collector drains it during a run: every record
//! writes a slot that the drain read last. Printed for a plain thread and for a thread
//! that follows its CPU time (the rank threads' clock): the median clock read, the
//! median record, their ratio, and the 10th percentiles.

use std::hint::black_box;

use runtime_hooks::{clock, OperatorPayload};

const RECORDS_PER_TRIAL: usize = 16 * 1024;
const TRIALS: usize = 600;

fn per_call_ns(start_ns: u64, end_ns: u64) -> f64 {
    (end_ns - start_ns) as f64 / RECORDS_PER_TRIAL as f64
}

fn median_and_p10(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[v.len() / 10])
}

fn measure(label: &str) {
    let payload = OperatorPayload {
        name_id: runtime_hooks::name!("bench::op"),
        corr_id: 1,
        ..Default::default()
    };
    let mut clock_reads = Vec::with_capacity(TRIALS);
    let mut records = Vec::with_capacity(TRIALS);
    for _ in 0..TRIALS {
        let t0 = clock::monotonic_ns();
        for _ in 0..RECORDS_PER_TRIAL {
            black_box(clock::now_ns());
        }
        let t1 = clock::monotonic_ns();
        for _ in 0..RECORDS_PER_TRIAL {
            runtime_hooks::operator_begin(black_box(payload));
        }
        let t2 = clock::monotonic_ns();
        runtime_hooks::drain_with(usize::MAX, |_| {});
        clock_reads.push(per_call_ns(t0, t1));
        records.push(per_call_ns(t1, t2));
    }
    let (clock_median, clock_p10) = median_and_p10(clock_reads);
    let (record_median, record_p10) = median_and_p10(records);
    println!(
        "{label}: clock read {clock_median:.2} ns, record {record_median:.2} ns, \
         record / clock read {:.2}x (10th percentiles {clock_p10:.2} / {record_p10:.2} ns)",
        record_median / clock_median
    );
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this once too.
    runtime_hooks::set_ring_capacity(4 * RECORDS_PER_TRIAL);
    runtime_hooks::set_enabled(true);
    measure("plain thread");
    clock::follow_cpu_time(true);
    measure("CPU-time thread");
    clock::follow_cpu_time(false);
    runtime_hooks::set_enabled(false);
    if runtime_hooks::dropped_total() != 0 {
        eprintln!("records were dropped: the ring is too small for a trial");
        std::process::exit(1);
    }
}
