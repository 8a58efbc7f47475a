//! A few ops on the emulated device under the profiler: the trace reads back through
//! `trace-format` with Kineto's categories, args, flows, tracks and memory totals, and
//! `key_averages` agrees with it.

mod common;

use std::collections::{HashMap, HashSet};

use neuron_backend::{DType, Runtime, Tensor};
use profiler::{Activity, DeviceDetail, DistributedConfig, Profiler, SortBy};
use trace_format::{CollectSink, Event, FlowEnd, Phase};

fn cat<'e>(e: &'e Event<'_>) -> &'e str {
    e.category.as_ref().map_or("", |c| c.as_str())
}

fn i64_arg(e: &Event<'_>, key: &str) -> i64 {
    e.arg(key)
        .and_then(|v| v.as_i64())
        .unwrap_or_else(|| panic!("{key} missing on {}", common::describe(e)))
}

struct Run {
    trace: CollectSink,
    result: profiler::ProfileResult,
    allocated_after: u64,
}

fn profile_a_few_ops() -> Run {
    let runtime = Runtime::trn2();
    let device = runtime.device(0).unwrap();
    let host_a = Tensor::from_f32(&[32, 64], (0..2048).map(|i| i as f32 * 1e-3).collect()).unwrap();
    let mut prof = Profiler::builder()
        .activities(&[Activity::Cpu, Activity::Neuron])
        .record_shapes(true)
        .profile_memory(true)
        .with_flops(true)
        .device_detail(DeviceDetail::Instructions)
        .device(common::device_info(&device))
        .distributed(DistributedConfig::new("nccom", 0, 1))
        .start();
    for _ in 0..2 {
        let fwd = profiler::record_function("forward");
        let a = host_a.to_device(&device).unwrap();
        let w = device.randn(&[64, 32], DType::F32, 7).unwrap();
        let y = a.matmul(&w).unwrap().relu().unwrap();
        let s = y.sum(1, false).unwrap();
        let back = s.to_host().unwrap();
        assert_eq!(back.shape(), &[32]);
        drop((a, w, y, s, fwd));
        prof.step().unwrap();
    }
    let result = prof.stop().unwrap().expect("a window");
    let allocated_after = device.memory_stats().allocated_bytes;
    let dir = common::temp_dir("kineto-conventions");
    let path = dir.join("trace.pt.trace.json.gz");
    result.export_chrome_trace(&path).unwrap();
    let trace = common::read_back(&path);
    Run {
        trace,
        result,
        allocated_after,
    }
}

#[test]
fn emulated_ops_trace_reads_back_with_kineto_conventions() {
    let _serial = common::serial();
    let run = profile_a_few_ops();
    let events = &run.trace.events;
    let meta = &run.trace.meta;

    // Metadata.
    assert_eq!(
        meta.get("dropped_records")
            .unwrap()
            .deserialize::<i64>()
            .unwrap(),
        0
    );
    assert_eq!(meta.rank(), Some(0));
    assert!(meta
        .get("distributedInfo")
        .unwrap()
        .as_str()
        .contains("\"rank\": 0"));
    let props = meta.device_properties();
    assert_eq!(props.len(), 1);
    assert_eq!(props[0].device_id, Some(0));
    assert_eq!(props[0].name.as_deref(), Some("NeuronCore 0 (trn2, LNC=2)"));
    assert!(props[0].total_global_mem_bytes.unwrap() > 0);
    assert_eq!(props[0].raw["lnc"], 2);
    assert!(props[0].raw["peakTflops"]["bf16"].as_f64().unwrap() > 100.0);
    assert!(meta.base_time_ns().unwrap() > 0);

    // Categories.
    let cats: HashSet<&str> = events.iter().map(cat).collect();
    for wanted in [
        "cpu_op",
        "user_annotation",
        "gpu_user_annotation",
        "privateuse1_runtime",
        "kernel",
        "gpu_memcpy",
        "neuron_instruction",
        "neuron_dma",
        "cpu_instant_event",
        "ac2g",
        "neuron_counters",
        "Trace",
    ] {
        assert!(cats.contains(wanted), "no {wanted} in {cats:?}");
    }
    let steps: Vec<&str> = events
        .iter()
        .filter(|e| cat(e) == "user_annotation" && e.name().starts_with("ProfilerStep#"))
        .map(|e| e.name())
        .collect();
    assert_eq!(
        steps,
        ["ProfilerStep#0", "ProfilerStep#1", "ProfilerStep#2"]
    );
    // Ranges that launched device work have a device-side twin on the queues it ran
    // on, with the range's External id, enclosing that work.
    let annotations: Vec<&Event<'_>> = events
        .iter()
        .filter(|e| cat(e) == "gpu_user_annotation")
        .collect();
    assert!(!annotations.is_empty(), "no gpu_user_annotation");
    for a in &annotations {
        let host = events
            .iter()
            .find(|h| {
                cat(h) == "user_annotation"
                    && h.name() == a.name()
                    && h.arg("External id") == a.arg("External id")
            })
            .unwrap_or_else(|| panic!("no host range for {}", common::describe(a)));
        assert_eq!(
            host.pid,
            Some(trace_format::Ident::Num(i64::from(std::process::id())))
        );
        assert_eq!(a.pid, Some(trace_format::Ident::Num(0)), "on device 0");
        let (start, end) = (a.ts_ns.unwrap(), a.end_ns().unwrap());
        let inside = events
            .iter()
            .filter(|k| {
                matches!(cat(k), "kernel" | "gpu_memcpy")
                    && k.tid == a.tid
                    && start <= k.ts_ns.unwrap()
                    && k.end_ns().unwrap() <= end
            })
            .count();
        assert!(
            inside > 0,
            "{} encloses no device work",
            common::describe(a)
        );
    }

    // Host operators: Kineto's args.
    let pid = i64::from(std::process::id());
    let ops: Vec<&Event<'_>> = events.iter().filter(|e| cat(e) == "cpu_op").collect();
    let matmul = ops
        .iter()
        .find(|e| e.name() == "aten::matmul")
        .expect("aten::matmul");
    assert_eq!(matmul.pid.as_ref().and_then(|p| p.as_i64()), Some(pid));
    for key in [
        "External id",
        "Record function id",
        "Sequence number",
        "Fwd thread id",
        "flops",
    ] {
        assert!(matmul.arg(key).is_some(), "{key} missing on aten::matmul");
    }
    let dims = matmul
        .arg("Input Dims")
        .expect("record_shapes writes Input Dims");
    let trace_format::ArgValue::Array(dims) = dims else {
        panic!("Input Dims is an array")
    };
    assert_eq!(dims.to_value(), serde_json::json!([[32, 64], [64, 32]]));
    let Some(trace_format::ArgValue::Array(types)) = matmul.arg("Input type") else {
        panic!("Input type is an array")
    };
    assert_eq!(types.to_value(), serde_json::json!(["float", "float"]));
    let op_ids: HashSet<i64> = ops.iter().map(|e| i64_arg(e, "External id")).collect();
    assert_eq!(op_ids.len(), ops.len(), "External ids are unique");

    // Device activity: args, External id links, queue tracks.
    let device_events: Vec<&Event<'_>> = events
        .iter()
        .filter(|e| matches!(cat(e), "kernel" | "gpu_memcpy"))
        .collect();
    assert!(device_events
        .iter()
        .any(|e| e.name() == "Memcpy HtoD (Host -> Neuron)"));
    assert!(device_events
        .iter()
        .any(|e| e.name() == "Memcpy DtoH (Neuron -> Host)"));
    for e in &device_events {
        assert_eq!(e.pid.as_ref().and_then(|p| p.as_i64()), Some(0));
        assert_eq!(i64_arg(e, "device"), 0);
        assert_eq!(
            Some(i64_arg(e, "stream")),
            e.tid.as_ref().and_then(|t| t.as_i64())
        );
        assert!(i64_arg(e, "correlation") > 0);
        assert!(
            op_ids.contains(&i64_arg(e, "External id")),
            "unlinked {}",
            common::describe(e)
        );
    }
    let matmul_kernel = device_events
        .iter()
        .find(|e| e.name().starts_with("matmul"))
        .expect("a matmul kernel");
    assert!(i64_arg(matmul_kernel, "flops") > 0);
    assert!(i64_arg(matmul_kernel, "TensorE busy (ns)") > 0);

    // Every launch pairs with its kernel through an ac2g flow at both starts.
    let launches: HashMap<i64, &Event<'_>> = events
        .iter()
        .filter(|e| cat(e) == "privateuse1_runtime" && e.name() == "nrt_execute")
        .map(|e| (i64_arg(e, "correlation"), e))
        .collect();
    let kernels: HashMap<i64, &&Event<'_>> = device_events
        .iter()
        .map(|e| (i64_arg(e, "correlation"), e))
        .collect();
    let mut starts = HashMap::new();
    let mut finishes = HashMap::new();
    for e in events.iter().filter(|e| cat(e) == "ac2g") {
        let id = e.flow_id.as_ref().and_then(|i| i.as_i64()).unwrap();
        match e.flow_end() {
            Some(FlowEnd::Start) => assert!(starts.insert(id, e).is_none()),
            Some(FlowEnd::Finish) => {
                assert_eq!(e.binding_point.as_deref(), Some("e"));
                assert!(finishes.insert(id, e).is_none());
            }
            other => panic!("unexpected flow phase {other:?}"),
        }
    }
    assert_eq!(starts.len(), finishes.len());
    assert_eq!(starts.len(), kernels.len(), "one flow per device activity");
    for (id, s) in &starts {
        let launch = launches[id];
        assert_eq!(
            (&s.pid, &s.tid, s.ts_ns),
            (&launch.pid, &launch.tid, launch.ts_ns)
        );
        let f = finishes[id];
        let kernel = kernels[id];
        assert_eq!(
            (&f.pid, &f.tid, f.ts_ns),
            (&kernel.pid, &kernel.tid, kernel.ts_ns)
        );
        assert!(
            launch.ts_ns < kernel.ts_ns,
            "a kernel starts after its launch"
        );
    }

    // Instructions and DMA on their own tracks, never with a `stream` arg.
    for e in events
        .iter()
        .filter(|e| matches!(cat(e), "neuron_instruction" | "neuron_dma"))
    {
        assert!(e.arg("stream").is_none());
        let tid = e.tid.as_ref().and_then(|t| t.as_i64()).unwrap();
        assert!(tid >= profiler::ENGINE_TID_BASE as i64);
        assert!(kernels.contains_key(&i64_arg(e, "kernel correlation")));
    }

    // Tracks never overlap without nesting.
    assert!(common::assert_tracks_nest(events) > 5);

    // Names of processes and threads, in order.
    let names: Vec<(i64, i64, String)> = events
        .iter()
        .filter(|e| {
            e.phase == Phase::Metadata && matches!(e.name(), "process_name" | "thread_name")
        })
        .map(|e| {
            (
                e.pid.as_ref().and_then(|p| p.as_i64()).unwrap(),
                e.tid.as_ref().and_then(|t| t.as_i64()).unwrap(),
                e.arg("name").unwrap().as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let device_names: Vec<&str> = names
        .iter()
        .filter(|n| n.0 == 0)
        .map(|n| n.2.as_str())
        .collect();
    assert_eq!(device_names[0], "NeuronCore 0 (trn2, LNC=2)");
    assert_eq!(device_names[1], "stream 0 (compute)");
    assert!(device_names.iter().any(|n| n.starts_with("TensorE")));
    assert!(device_names.iter().any(|n| n.starts_with("DMA queue ")));
    let first_dma = device_names
        .iter()
        .position(|n| n.starts_with("DMA"))
        .unwrap();
    let last_engine = device_names
        .iter()
        .rposition(|n| n.contains("E (") || n.ends_with('E'))
        .unwrap();
    assert!(
        last_engine < first_dma,
        "engines before DMA queues: {device_names:?}"
    );
    assert!(names
        .iter()
        .any(|n| n.0 == pid && n.2.starts_with("thread ")));

    // [memory]: PrivateUse1, and each total is the previous one plus the change.
    let memory: Vec<&Event<'_>> = events.iter().filter(|e| e.is_memory_event()).collect();
    assert!(memory.len() >= 8);
    for pair in memory.windows(2) {
        assert_eq!(i64_arg(pair[0], "Device Type"), 20);
        assert_eq!(
            i64_arg(pair[1], "Total Allocated"),
            i64_arg(pair[0], "Total Allocated") + i64_arg(pair[1], "Bytes"),
            "totals follow the changes"
        );
    }
    let last = memory.last().unwrap();
    assert_eq!(i64_arg(last, "Total Allocated") as u64, run.allocated_after);
    assert!(
        memory.iter().any(|e| i64_arg(e, "Bytes") < 0),
        "frees are negative"
    );

    // key_averages agrees with the trace.
    let averages = run.result.key_averages();
    let matmuls: Vec<&&Event<'_>> = ops.iter().filter(|e| e.name() == "aten::matmul").collect();
    let row = averages.get("aten::matmul").unwrap();
    assert_eq!(row.count, matmuls.len() as u64);
    let cpu_total: i64 = matmuls.iter().map(|e| e.dur_ns.unwrap()).sum();
    assert_eq!(row.cpu_total_ns as i64, cpu_total);
    let ids: HashSet<i64> = matmuls.iter().map(|e| i64_arg(e, "External id")).collect();
    let device_ns: i64 = device_events
        .iter()
        .filter(|e| ids.contains(&i64_arg(e, "External id")))
        .map(|e| e.dur_ns.unwrap())
        .sum();
    assert_eq!(row.self_device_ns as i64, device_ns);
    assert!(row.self_cpu_ns <= row.cpu_total_ns);
    assert!(row.flops > 0);
    let kernel_total: i64 = device_events.iter().map(|e| e.dur_ns.unwrap()).sum();
    assert_eq!(averages.self_device_total_ns() as i64, kernel_total);
    let step = averages.get("ProfilerStep#1").unwrap();
    assert!(
        step.device_total_ns > 0,
        "steps hold their ops' device time"
    );
    let by_shape = run.result.key_averages_by_input_shape();
    let copies: Vec<_> = by_shape
        .rows()
        .iter()
        .filter(|r| r.key == "aten::_to_copy")
        .map(|r| r.input_shapes.as_str())
        .collect();
    assert_eq!(
        copies.len(),
        2,
        "host->device [32, 64] and device->host [32]: {copies:?}"
    );
    assert!(copies.contains(&"[[32, 64]]") && copies.contains(&"[[32]]"));
    assert!(by_shape.table(SortBy::Count, 5).contains("Input Shapes"));
    let table = averages.table(SortBy::SelfDevice, 8);
    assert!(table.contains("Self NEURON"), "{table}");
    assert!(table.contains("Total MFLOPs"), "{table}");
    assert_eq!(
        table.lines().filter(|l| !l.starts_with('-')).count(),
        1 + 8 + 2,
        "{table}"
    );
    assert_eq!(run.result.steps(), vec![0, 1, 2]);

    // The summary agrees with the trace.
    let summary = run.result.summary();
    assert_eq!(summary.steps, 3);
    let step_ns: Vec<i64> = events
        .iter()
        .filter(|e| cat(e) == "user_annotation" && e.name().starts_with("ProfilerStep#"))
        .map(|e| e.dur_ns.unwrap())
        .collect();
    assert_eq!(summary.mean_step_ns as i64, step_ns.iter().sum::<i64>() / 3);
    assert_eq!(summary.device_busy_ns.len(), 1);
    let busy = summary.device_busy_ns[0].1 as i64;
    assert!(
        busy > 0 && busy <= kernel_total,
        "busy {busy} of {kernel_total}"
    );
    assert!(summary.device_utilization() > 0.0 && summary.device_utilization() <= 1.0);
    let peak = memory
        .iter()
        .map(|e| i64_arg(e, "Total Allocated"))
        .max()
        .unwrap();
    assert_eq!(summary.peak_allocated_bytes, Some(peak as u64));
}

#[test]
fn autograd_links_forward_and_backward_ops_with_fwdbwd_flows() {
    let _serial = common::serial();
    let device = Runtime::trn2().device(0).unwrap();
    let tape = neuron_backend::autograd::Tape::new();
    let w = tape.param(device.ones(&[8, 4], DType::F32).unwrap());
    let x = tape.constant(device.ones(&[2, 8], DType::F32).unwrap());
    let prof = Profiler::builder().start();
    let loss = x.matmul(&w).unwrap().sum_all().unwrap();
    let grads = tape.backward(&loss).unwrap();
    assert!(grads.get(&w).is_some());
    let result = prof.stop().unwrap().unwrap();
    let json = result.write_trace(Vec::new(), None).unwrap();
    let mut trace = CollectSink::default();
    trace_format::TraceReader::from_slice("t.json", &json)
        .read(&mut trace)
        .unwrap();
    let events = &trace.events;
    let flows: Vec<&Event<'_>> = events.iter().filter(|e| cat(e) == "fwdbwd").collect();
    assert!(
        flows.len() >= 4,
        "matmul and sum each link forward to backward"
    );
    let ops: Vec<&Event<'_>> = events.iter().filter(|e| cat(e) == "cpu_op").collect();
    let enclosing = |f: &Event<'_>| -> Vec<&Event<'_>> {
        ops.iter()
            .copied()
            .filter(|o| o.tid == f.tid && o.ts_ns <= f.ts_ns && f.ts_ns <= o.end_ns())
            .collect()
    };
    for pair in flows.chunks(2) {
        let (s, f) = (pair[0], pair[1]);
        assert_eq!(s.flow_id, f.flow_id);
        assert_eq!(s.flow_end(), Some(FlowEnd::Start));
        let seq = s.flow_id.as_ref().and_then(|i| i.as_i64()).unwrap();
        let with_seq =
            |e: &&Event<'_>| e.arg("Sequence number").and_then(|v| v.as_i64()) == Some(seq);
        let forward = enclosing(s)
            .into_iter()
            .find(with_seq)
            .expect("s in its forward op");
        let backward = enclosing(f)
            .into_iter()
            .find(with_seq)
            .expect("f in its backward op");
        assert!(backward
            .name()
            .starts_with("autograd::engine::evaluate_function: "));
        assert_eq!(
            forward.arg("Fwd thread id").and_then(|v| v.as_i64()),
            Some(0)
        );
        assert_eq!(
            backward.arg("Fwd thread id").and_then(|v| v.as_i64()),
            forward.tid.as_ref().and_then(|t| t.as_i64())
        );
    }
    common::assert_tracks_nest(events);
}
