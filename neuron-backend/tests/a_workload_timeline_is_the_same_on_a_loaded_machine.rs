//! The timeline of a built-in workload is a function of its configuration alone: the
//! same program gives the same device trace (and host trace) on a quiet machine and
//! on one where busy threads compete for every core, with numerics on and off.
//! Numerics on and off are compared with each other with the optimizer named (by
//! default the `gpt` workload uses AdamW with numerics and a stateless SGD without, a
//! different program; the demo names AdamW, so `demo --numerics off` gives the
//! demo's traces).
//!
//! Each run records every hook record of a 4-rank `gpt` with a 2x slower rank; the
//! records are put in a canonical form (times from the run's first record, names
//! resolved, correlation and sequence ids dropped: those are handed out process-wide
//! in whatever order the rank threads get there) and compared exactly.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use neuron_backend::dist::rank_of_thread;
use neuron_backend::workloads::{run, Optimizer, Workload, WorkloadConfig};
use runtime_hooks::{Event, Record};

fn name(id: runtime_hooks::NameId) -> String {
    runtime_hooks::resolve(id)
        .map(|n| n.to_string())
        .unwrap_or_default()
}

/// One record in canonical form, with times from `origin_ns`; `None` for records of
/// threads that are not ranks.
fn canonical(record: &Record, origin_ns: u64) -> Option<(usize, bool, String)> {
    let rank = rank_of_thread(record.thread_id)?.rank;
    let (start, end) = (record.start_ns - origin_ns, record.end_ns - origin_ns);
    let (device_side, what) = match record.event()? {
        Event::Operator(p) => (
            false,
            format!("op {} {}", name(p.name_id), name(p.input_sig_id)),
        ),
        Event::UserRange(p) => (false, format!("range {} {}", name(p.name_id), p.value)),
        Event::RuntimeCall(kind, p) => (
            false,
            format!(
                "call {kind:?} {} q{} {}B",
                name(p.name_id),
                p.queue,
                p.bytes
            ),
        ),
        Event::Memory(action, p) => (
            false,
            format!(
                "mem {action:?} {} {:#x} {}B {} {}",
                name(p.category_id),
                p.addr,
                p.bytes,
                p.total_allocated_bytes,
                p.total_reserved_bytes
            ),
        ),
        Event::Flow(kind, _) => (false, format!("flow {kind:?}")),
        Event::Counter(p) => (false, format!("counter {} {}", name(p.name_id), p.value)),
        Event::Kernel(p) => (
            true,
            format!(
                "kernel {} d{} q{} {}F {}B",
                name(p.name_id),
                p.device,
                p.queue,
                p.flops,
                p.bytes
            ),
        ),
        Event::Instruction(p) => (
            true,
            format!(
                "instr {} d{} c{} e{} {}F",
                name(p.name_id),
                p.device,
                p.core,
                p.engine,
                p.flops
            ),
        ),
        Event::Dma(direction, p) => (
            true,
            format!("dma {direction:?} d{} q{} {}B", p.device, p.queue, p.bytes),
        ),
        Event::Collective(op, p) => (
            true,
            format!(
                "coll {op:?} {} d{} q{} {}B r{}/{}",
                name(p.group_name_id),
                p.device,
                p.queue,
                p.bytes,
                p.rank,
                p.group_size
            ),
        ),
    };
    Some((
        rank,
        device_side,
        format!("{:?} {start} {end} {what}", record.phase()),
    ))
}

/// Per rank: (device records, host records), canonical, in recording order.
type Timeline = BTreeMap<usize, (Vec<String>, Vec<String>)>;

fn record_run(numerics: bool, load: bool) -> Timeline {
    record_run_with(numerics, load, None)
}

fn record_run_with(numerics: bool, load: bool, optimizer: Option<Optimizer>) -> Timeline {
    let stop = Arc::new(AtomicBool::new(false));
    // Busy threads on every core: each rank thread has to share its CPU.
    let hogs: Vec<_> = (0..if load { 2 } else { 0 })
        .map(|_| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut x = 1u64;
                while !stop.load(Ordering::Relaxed) {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                    std::hint::black_box(x);
                }
            })
        })
        .collect();
    let mut config = WorkloadConfig::new(Workload::Gpt);
    config.ranks = 4;
    config.steps = 3;
    config.numerics = numerics;
    config.optimizer = optimizer;
    config.straggler = Some((2, 2.0));
    runtime_hooks::drain_with(usize::MAX, |_| {});
    runtime_hooks::set_enabled(true);
    let report = run(&config, |_| {}).unwrap();
    runtime_hooks::set_enabled(false);
    stop.store(true, Ordering::Relaxed);
    for hog in hogs {
        hog.join().unwrap();
    }
    assert_eq!(report.steps.len(), 3);
    assert_eq!(runtime_hooks::dropped_total(), 0, "records were dropped");
    let mut records = Vec::new();
    runtime_hooks::drain(&mut records);
    let ranked: Vec<&Record> = records
        .iter()
        .filter(|r| rank_of_thread(r.thread_id).is_some())
        .collect();
    let origin_ns = ranked.iter().map(|r| r.start_ns).min().unwrap();
    let mut timeline = Timeline::new();
    for record in ranked {
        let Some((rank, device_side, line)) = canonical(record, origin_ns) else {
            continue;
        };
        let entry = timeline.entry(rank).or_default();
        if device_side {
            entry.0.push(line);
        } else {
            entry.1.push(line);
        }
    }
    timeline
}

fn first_difference(a: &[String], b: &[String]) -> String {
    match a.iter().zip(b).position(|(x, y)| x != y) {
        Some(i) => format!("record {i}: {:?} vs {:?}", a[i], b[i]),
        None => format!("lengths {} vs {}", a.len(), b.len()),
    }
}

fn assert_same(quiet: &Timeline, loaded: &Timeline, label: &str) {
    assert_eq!(quiet.len(), 4, "one timeline per rank");
    for (rank, (device, host)) in quiet {
        assert!(
            device.len() > 100,
            "rank {rank}: {} device records",
            device.len()
        );
        let (other_device, other_host) = &loaded[rank];
        assert!(
            device == other_device,
            "rank {rank} device trace differs ({label}): {}",
            first_difference(device, other_device)
        );
        assert!(
            host == other_host,
            "rank {rank} host trace differs ({label}): {}",
            first_difference(host, other_host)
        );
    }
}

/// Both tests record, so they must not overlap.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn with_numerics_the_traces_are_identical_quiet_and_loaded() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    assert_same(
        &record_run(true, false),
        &record_run(true, true),
        "numerics on",
    );
}

#[test]
fn timing_only_the_traces_are_identical_quiet_and_loaded() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    assert_same(
        &record_run(false, false),
        &record_run(false, true),
        "timing only",
    );
}

#[test]
fn with_one_optimizer_numerics_on_and_off_give_the_same_traces() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let adamw = Some(Optimizer::AdamW);
    assert_same(
        &record_run_with(true, false, adamw),
        &record_run_with(false, false, adamw),
        "AdamW, numerics on vs off",
    );
    // And the default's SGD without numerics is a different program (so the
    // comparison above can tell programs apart).
    let sgd = record_run(false, false);
    let adamw_off = record_run_with(false, false, adamw);
    assert_ne!(
        sgd[&0].0, adamw_off[&0].0,
        "SGD and AdamW gave the same trace"
    );
}
