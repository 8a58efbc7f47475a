//! Data-parallel gradient buckets are all-reduced on the collective queue while the
//! backward still runs on the compute queue.

use std::sync::Mutex;

use neuron_backend::workloads::{run, Workload, WorkloadConfig};
use runtime_hooks::{CollectiveOp, Event, Phase};

#[test]
fn the_first_bucket_is_reduced_before_the_backward_ends() {
    let mut config = WorkloadConfig::new(Workload::Gpt);
    config.ranks = 2;
    config.steps = 1;
    config.numerics = false;
    config.bucket_bytes = 16 * 1024;
    let rank0_thread = Mutex::new(None);
    runtime_hooks::set_enabled(true);
    let mut scratch = Vec::new();
    runtime_hooks::drain(&mut scratch);
    let report = run(&config, |step| {
        if step.rank == 0 {
            *rank0_thread.lock().unwrap() = runtime_hooks::current_thread_id();
        }
    })
    .unwrap();
    runtime_hooks::set_enabled(false);
    let thread = rank0_thread.lock().unwrap().unwrap();
    let mut records = Vec::new();
    runtime_hooks::drain(&mut records);
    let mine: Vec<_> = records.iter().filter(|r| r.thread_id == thread).collect();
    // The last backward op is the embedding's (its forward ran first).
    let embedding_bwd = mine
        .iter()
        .find_map(|r| match r.event() {
            Some(Event::Operator(op))
                if r.phase() == Some(Phase::Begin)
                    && runtime_hooks::resolve(op.name_id).as_deref()
                        == Some("aten::embedding_dense_backward") =>
            {
                Some(op.corr_id)
            }
            _ => None,
        })
        .expect("an embedding backward");
    let backward_end_ns = mine
        .iter()
        .find_map(|r| match r.event() {
            Some(Event::Kernel(k)) if k.corr_id == embedding_bwd => Some(r.end_ns),
            _ => None,
        })
        .unwrap();
    let bucket_starts: Vec<u64> = mine
        .iter()
        .filter(|r| {
            r.phase() == Some(Phase::Complete)
                && matches!(r.event(), Some(Event::Collective(CollectiveOp::AllReduce, p))
                    if runtime_hooks::resolve(p.group_name_id).as_deref() == Some("dp0"))
        })
        .map(|r| r.start_ns)
        .collect();
    let buckets = report.steps[0].buckets;
    eprintln!(
        "{buckets} buckets; first starts {} ns before the backward ends",
        backward_end_ns as i64 - bucket_starts[0] as i64
    );
    assert!(buckets >= 3, "{buckets}");
    // Every bucket plus the loss average.
    assert_eq!(bucket_starts.len(), buckets + 1);
    assert!(bucket_starts[0] < backward_end_ns);
}
