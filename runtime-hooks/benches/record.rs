//! Overhead of the recording path, against a do-nothing baseline and the timestamp read
//! that is its physical floor, plus a `tracing` span under a no-op subscriber for scale.
//!
//! Run: `cargo bench -p runtime-hooks` (about two minutes). Per-record numbers are per
//! call on one thread; the "per thread" group runs the same loop on one and on two
//! threads at once and reports the CPU time per record per thread (thread CPU time, so
//! that a thread preempted by other work on a busy machine does not count the wait).

use std::hint::black_box;
use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use runtime_hooks::{clock, OperatorPayload, OperatorScope};

/// Records timed between two drains; well below the ring size, so nothing is dropped.
const BATCH: u64 = 16 * 1024;
const RING_RECORDS: usize = 64 * 1024;

fn payload() -> OperatorPayload {
    OperatorPayload {
        name_id: runtime_hooks::name!("bench::op"),
        corr_id: 1,
        ..Default::default()
    }
}

/// Times `iters` calls of `record` on this thread (wall clock), draining (untimed)
/// between batches.
fn timed_records(iters: u64, record: &impl Fn()) -> Duration {
    timed_records_with(iters, record, wall_ns)
}

fn wall_ns() -> u64 {
    clock::monotonic_ns()
}

/// CPU time of the calling thread: unaffected by the thread being preempted, which on a
/// small shared machine would otherwise dominate a multi-thread measurement.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_THREAD_CPUTIME_ID exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Times `iters` calls of `record` in batches with the clock `now_ns`, draining
/// (untimed) between batches so the ring never fills.
fn timed_records_with(iters: u64, record: &impl Fn(), now_ns: impl Fn() -> u64) -> Duration {
    let mut total_ns = 0;
    let mut left = iters;
    while left > 0 {
        let n = left.min(BATCH);
        let start_ns = now_ns();
        for _ in 0..n {
            record();
        }
        total_ns += now_ns() - start_ns;
        left -= n;
        runtime_hooks::drain_with(usize::MAX, |_| {});
    }
    Duration::from_nanos(total_ns)
}

fn record_op() {
    runtime_hooks::operator_begin(black_box(payload()));
}

fn timestamps(c: &mut Criterion) {
    let mut group = c.benchmark_group("timestamp");
    group.bench_function("baseline (empty loop)", |b| b.iter(|| black_box(())));
    #[cfg(target_arch = "x86_64")]
    group.bench_function("rdtsc", |b| {
        // SAFETY: RDTSC is available on every x86_64 CPU and has no preconditions.
        b.iter(|| black_box(unsafe { std::arch::x86_64::_rdtsc() }))
    });
    group.bench_function("clock_gettime (monotonic_ns)", |b| {
        b.iter(|| black_box(clock::monotonic_ns()))
    });
    group.bench_function("Instant::now", |b| b.iter(|| black_box(Instant::now())));
    group.bench_function("host clock (now_ns)", |b| {
        b.iter(|| black_box(clock::now_ns()))
    });
    clock::follow_cpu_time(true);
    group.bench_function("host clock, CPU-time thread (now_ns)", |b| {
        b.iter(|| black_box(clock::now_ns()))
    });
    group.bench_function("CPU-time boundary (clock::sync)", |b| {
        b.iter(|| black_box(clock::sync()))
    });
    clock::follow_cpu_time(false);
    group.bench_function("thread CPU time read (clock_gettime)", |b| {
        b.iter(|| black_box(clock::thread_cpu_ns()))
    });
    group.finish();
}

fn records(c: &mut Criterion) {
    runtime_hooks::set_ring_capacity(RING_RECORDS);
    let mut group = c.benchmark_group("record");
    runtime_hooks::set_enabled(false);
    group.bench_function("disabled", |b| b.iter(record_op));
    runtime_hooks::set_enabled(true);
    group.bench_function("enabled", |b| {
        b.iter_custom(|iters| timed_records(iters, &record_op))
    });
    clock::follow_cpu_time(true);
    group.bench_function("enabled, CPU-time clock", |b| {
        b.iter_custom(|iters| timed_records(iters, &record_op))
    });
    clock::follow_cpu_time(false);
    group.bench_function("enabled, ring full (dropped)", |b| {
        // Fill the ring, then time the drop path; drain afterwards.
        b.iter_custom(|iters| {
            for _ in 0..RING_RECORDS {
                record_op();
            }
            let start = Instant::now();
            for _ in 0..iters {
                record_op();
            }
            let elapsed = start.elapsed();
            runtime_hooks::drain_with(usize::MAX, |_| {});
            elapsed
        })
    });
    group.bench_function("operator scope (begin + end)", |b| {
        b.iter_custom(|iters| {
            timed_records(iters, &|| drop(OperatorScope::new(black_box(payload()))))
        })
    });
    group.finish();
    runtime_hooks::drain_with(usize::MAX, |_| {});
}

/// Long-lived recording threads, so ring registration and first-touch page faults stay
/// out of the measurement.
struct Workers {
    start: Vec<mpsc::Sender<u64>>,
    done: mpsc::Receiver<Duration>,
}

impl Workers {
    fn spawn(threads: usize) -> Self {
        let (done_tx, done) = mpsc::channel();
        let barrier = Arc::new(Barrier::new(threads));
        let start = (0..threads)
            .map(|_| {
                let (tx, rx) = mpsc::channel::<u64>();
                let done_tx = done_tx.clone();
                let barrier = Arc::clone(&barrier);
                std::thread::spawn(move || {
                    timed_records(2 * BATCH, &record_op); // register and warm the ring
                    while let Ok(iters) = rx.recv() {
                        barrier.wait();
                        let cpu = timed_records_with(iters, &record_op, thread_cpu_ns);
                        let _ = done_tx.send(cpu);
                    }
                });
                tx
            })
            .collect();
        Workers { start, done }
    }

    /// Average per-thread CPU time for `iters` records on every thread at once.
    fn run(&self, iters: u64) -> Duration {
        for tx in &self.start {
            tx.send(iters).unwrap();
        }
        let total: Duration = (0..self.start.len())
            .map(|_| self.done.recv().unwrap())
            .sum();
        total / self.start.len() as u32
    }
}

fn threads(c: &mut Criterion) {
    runtime_hooks::set_enabled(true);
    let mut group = c.benchmark_group("record per thread");
    for threads in [1, 2] {
        let workers = Workers::spawn(threads);
        group.bench_function(format!("{threads} thread(s) recording"), |b| {
            b.iter_custom(|iters| workers.run(iters))
        });
    }
    group.finish();
}

/// The one-time cost of registering a thread's ring (what a thread's first record pays
/// unless the runtime called `register_thread` earlier).
fn registration(c: &mut Criterion) {
    runtime_hooks::set_enabled(true);
    runtime_hooks::set_ring_capacity(runtime_hooks::DEFAULT_RING_CAPACITY);

    // Cold: fresh ring memory each time (rings are kept until all are measured). Too
    // slow and memory-hungry for criterion's iteration counts, so timed by hand.
    let mut cold: Vec<Duration> = (0..16)
        .map(|_| std::thread::spawn(time_registration).join().unwrap())
        .collect();
    cold.sort();
    println!(
        "thread registration/cold (fresh 2 MiB ring), median of 16: {:?}",
        cold[8]
    );
    runtime_hooks::drain_with(usize::MAX, |_| {});

    let mut group = c.benchmark_group("thread registration");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(2));
    group.bench_function("warm (ring memory reused from a retired thread)", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                total += std::thread::spawn(time_registration).join().unwrap();
                // Retire the ring so the next thread reuses its memory.
                runtime_hooks::drain_with(usize::MAX, |_| {});
            }
            total
        })
    });
    group.finish();
}

fn time_registration() -> Duration {
    let start = Instant::now();
    runtime_hooks::register_thread();
    let elapsed = start.elapsed();
    record_op();
    elapsed
}

/// A subscriber that enables everything and does nothing.
struct NopSubscriber;

impl tracing::Subscriber for NopSubscriber {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

fn tracing_span(c: &mut Criterion) {
    let _default = tracing::subscriber::set_default(NopSubscriber);
    let mut group = c.benchmark_group("tracing");
    group.bench_function("span create + enter + exit (no-op subscriber)", |b| {
        b.iter(|| {
            let span = tracing::info_span!("bench::op");
            let _entered = span.enter();
        })
    });
    let span = tracing::info_span!("bench::op");
    group.bench_function("enter + exit of an existing span (no-op subscriber)", |b| {
        b.iter(|| drop(black_box(&span).enter()))
    });
    group.finish();
}

/// The process-wide cut (the PyTorch path's clock): the clock read and a record once the
/// process has seen cuts (a sequence-lock read instead of the no-cut fast path), and one
/// cut begin + end (what each launch of the PyTorch extension pays). Runs last: after
/// the first cut every clock read in the process takes the sequence-lock path.
fn cuts(c: &mut Criterion) {
    drop(clock::cut_scope());
    assert!(clock::cuts_seen());
    runtime_hooks::set_ring_capacity(RING_RECORDS);
    runtime_hooks::set_enabled(true);
    let mut group = c.benchmark_group("process cut");
    group.bench_function("host clock (now_ns), cuts seen", |b| {
        b.iter(|| black_box(clock::now_ns()))
    });
    group.bench_function("record, enabled, cuts seen", |b| {
        b.iter_custom(|iters| timed_records(iters, &record_op))
    });
    group.bench_function("cut begin + end", |b| {
        b.iter(|| drop(black_box(clock::cut_scope())))
    });
    group.finish();
    runtime_hooks::drain_with(usize::MAX, |_| {});
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(40)
}

criterion_group! {
    name = benches;
    config = config();
    targets = timestamps, records, threads, registration, tracing_span, cuts
}
criterion_main!(benches);
