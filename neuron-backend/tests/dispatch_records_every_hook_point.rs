//! What the dispatcher records, the clock contract, and full queues blocking the host.
//!
//! Recording is process-wide and `drain` takes every thread's records, so the tests in
//! this file run one at a time (a lock) and pick their records by correlation id.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use neuron_backend::{DType, Device, RecordDetail, Runtime, Tensor};
use runtime_hooks::{Event, Phase, Record, RuntimeCallKind};

static SERIAL: Mutex<()> = Mutex::new(());

fn fresh_device(numerics: bool) -> Device {
    // Take the one-time ring setup (~1 ms) out of the first recorded op.
    runtime_hooks::register_thread();
    // The test thread's host clock counts only its own CPU time (as a rank's does), so
    // a busy machine that deschedules it does not change what it records.
    runtime_hooks::clock::follow_cpu_time(true);
    let runtime = Runtime::trn2();
    runtime.set_numerics(numerics);
    runtime.device(0).unwrap()
}

fn drain() -> Vec<Record> {
    let mut records = Vec::new();
    runtime_hooks::drain(&mut records);
    records
}

fn name(id: runtime_hooks::NameId) -> String {
    runtime_hooks::resolve(id)
        .map(|s| s.to_string())
        .unwrap_or_default()
}

#[test]
fn an_op_records_operator_allocation_launch_submit_kernel_instructions_and_dma() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let device = fresh_device(true);
    let a = device.ones(&[64, 64], DType::BF16).unwrap();
    runtime_hooks::set_enabled(true);
    drain();
    let c = a.matmul(&a).unwrap();
    let corr_id = device.last_kernel().unwrap().corr_id;
    runtime_hooks::set_enabled(false);
    let records = drain();
    let mut seen = Vec::new();
    for record in &records {
        match record.event() {
            Some(Event::Operator(op)) if op.corr_id == corr_id => {
                assert_eq!(name(op.name_id), "aten::matmul");
                assert!(op.seq_nr > 0);
                assert_eq!(op.flops, 2 * 64 * 64 * 64);
                seen.push(if record.phase() == Some(Phase::Begin) {
                    "op begin"
                } else {
                    "op end"
                });
            }
            Some(Event::Memory(_, mem)) if mem.addr == c.addr() => {
                assert_eq!(mem.bytes, 64 * 64 * 2);
                assert!(mem.total_allocated_bytes >= 2 * 64 * 64 * 2);
                seen.push("allocate");
            }
            Some(Event::RuntimeCall(RuntimeCallKind::KernelLaunch, call))
                if call.corr_id == corr_id =>
            {
                seen.push("launch")
            }
            Some(Event::RuntimeCall(RuntimeCallKind::QueueSubmit, call))
                if call.corr_id == corr_id =>
            {
                seen.push("submit")
            }
            Some(Event::Kernel(kernel)) if kernel.corr_id == corr_id => {
                assert_eq!(name(kernel.name_id), "matmul_bf16");
                assert_eq!(kernel.queue, 0);
                seen.push("kernel");
            }
            Some(Event::Instruction(instr))
                if instr.corr_id == corr_id && name(instr.name_id) == "matmul" =>
            {
                seen.push("instruction")
            }
            Some(Event::Dma(_, dma)) if dma.corr_id == corr_id => seen.push("dma"),
            Some(Event::Flow(_, flow)) if flow.flow_id == corr_id => seen.push("flow"),
            _ => {}
        }
    }
    for expected in [
        "op begin",
        "allocate",
        "submit",
        "launch",
        "kernel",
        "instruction",
        "dma",
        "flow",
        "op end",
    ] {
        assert!(seen.contains(&expected), "no {expected} record in {seen:?}");
    }
    assert_eq!(
        seen.iter().filter(|s| **s == "flow").count(),
        2,
        "flow start and end"
    );
}

#[test]
fn device_durations_are_identical_with_numerics_on_and_off() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let run = |numerics: bool| -> Vec<u64> {
        let device = fresh_device(numerics);
        let x = device.randn(&[96, 128], DType::F32, 1).unwrap();
        let w = device.randn(&[64, 128], DType::F32, 2).unwrap();
        let mut durations = Vec::new();
        let mut record = |t: Tensor| {
            durations.push(device.last_kernel().unwrap().dur_ns());
            device.synchronize();
            // A host gap past TensorE's 3 µs idle threshold, so every kernel starts from
            // the same engine state whatever the host's speed.
            std::thread::sleep(Duration::from_micros(50));
            t
        };
        let h = record(x.linear(&w, None).unwrap());
        let h = record(h.gelu().unwrap());
        let h = record(h.softmax().unwrap());
        let h = record(h.add(&h).unwrap());
        record(h.sum(-1, false).unwrap());
        durations
    };
    assert_eq!(run(true), run(false));
}

#[test]
fn a_host_op_excludes_its_kernels_numerics() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    // 2048³ in release; debug builds of the gemm crate are too slow, so 512³ there.
    let size = if cfg!(debug_assertions) { 512 } else { 2048 };
    let device = fresh_device(true);
    let a = device.randn(&[size, size], DType::F32, 3).unwrap();
    runtime_hooks::set_enabled(true);
    drain();
    let started = Instant::now();
    a.matmul(&a).unwrap();
    let real = started.elapsed();
    let corr_id = device.last_kernel().unwrap().corr_id;
    runtime_hooks::set_enabled(false);
    let ops: Vec<u64> = drain()
        .iter()
        .filter(|r| matches!(r.event(), Some(Event::Operator(op)) if op.corr_id == corr_id))
        .map(|r| r.start_ns)
        .collect();
    let host_ns = ops[1] - ops[0];
    eprintln!("{size}³ matmul: host op {host_ns} ns, real time {real:?}");
    assert!(host_ns < 1_000_000, "host op took {host_ns} ns");
    assert!(
        real.as_nanos() as u64 > 5 * host_ns,
        "numerics {real:?} vs host {host_ns} ns"
    );
}

#[test]
fn a_full_queue_blocks_the_host_in_a_long_submit() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let device = fresh_device(false);
    device.set_detail(RecordDetail::Kernels);
    // Each op costs the host eager PyTorch's modeled figures, not what this debug build's
    // dispatch takes (hundreds of µs, more on a loaded machine): the host stays far
    // ahead of the 3.8 ms kernels.
    let previous =
        neuron_backend::set_thread_host_cost(Some(neuron_backend::HostCost::eager_pytorch()));
    let a = device.zeros(&[4096, 4096], DType::F32).unwrap();
    runtime_hooks::set_enabled(true);
    drain();
    let mut kernels = Vec::new();
    for _ in 0..16 {
        a.matmul(&a).unwrap();
        kernels.push(device.last_kernel().unwrap());
    }
    runtime_hooks::set_enabled(false);
    neuron_backend::set_thread_host_cost(previous);
    let records = drain();
    let mut long_submits = 0;
    let mut submits = Vec::new();
    for record in &records {
        if let Some(Event::RuntimeCall(RuntimeCallKind::QueueSubmit, call)) = record.event() {
            let Some(index) = kernels.iter().position(|k| k.corr_id == call.corr_id) else {
                continue;
            };
            let in_flight = kernels[..index]
                .iter()
                .filter(|k| k.end_ns > record.end_ns)
                .count();
            assert!(
                in_flight < 8,
                "submission {index} found {in_flight} in flight"
            );
            if index >= 8 {
                submits.push((record.start_ns, record.dur_ns()));
                if record.dur_ns() > kernels[0].dur_ns() / 2 {
                    long_submits += 1;
                }
            }
        }
    }
    // Submissions 9 to 16 find the queue full.
    assert_eq!(
        long_submits, 8,
        "only {long_submits} of 8 submissions blocked: (start, duration) {submits:?}, \
         kernels {kernels:?}"
    );
}

#[test]
fn device_tracks_never_overlap() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let device = fresh_device(false);
    let x = device.zeros(&[512, 768], DType::BF16).unwrap();
    let w = device.zeros(&[3072, 768], DType::BF16).unwrap();
    let side = device
        .stream(neuron_backend::QueueKind::TensorOp, 0)
        .unwrap();
    runtime_hooks::set_enabled(true);
    drain();
    let h = x.linear(&w, None).unwrap().gelu().unwrap();
    side.make_current();
    let copy = x.copy().unwrap();
    device.default_stream().make_current();
    let s = h.softmax().unwrap().sum(-1, false).unwrap();
    let _ = (copy.add(&x).unwrap(), s.to_host());
    runtime_hooks::set_enabled(false);
    let mut tracks: std::collections::HashMap<(u8, u16, u16), Vec<(u64, u64)>> = Default::default();
    for record in drain() {
        let key = match record.event() {
            Some(Event::Kernel(k)) => (0, k.device, k.queue),
            Some(Event::Instruction(i)) => {
                (1, i.device, u16::from(i.core) << 8 | u16::from(i.engine))
            }
            Some(Event::Dma(_, d)) => (2, d.device, d.queue),
            _ => continue,
        };
        tracks
            .entry(key)
            .or_default()
            .push((record.start_ns, record.end_ns));
    }
    assert!(
        tracks
            .keys()
            .any(|k| k.0 == 0 && k.2 == side.queue() as u16),
        "the side stream ran"
    );
    for (track, mut spans) in tracks {
        spans.sort();
        for pair in spans.windows(2) {
            assert!(
                pair[0].1 <= pair[1].0,
                "track {track:?}: {:?} overlaps {:?}",
                pair[0],
                pair[1]
            );
        }
    }
}
