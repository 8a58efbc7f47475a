//! The writer: a Kineto trace written as a profile folder (documented layout, tables,
//! columns and types) reads back as the same device work, launches and host operators.

use std::path::Path;

use neuron_explorer::{open_trace, write_profile};
use trace_format::{Category, CollectSink, Event, FlowEnd, Phase, TraceMeta, TraceWriter};

const BASE: i64 = 1_790_857_026_000_000_000;

fn kineto_trace(path: &Path) {
    let mut meta = TraceMeta::kineto(Some(BASE));
    meta.set_distributed("gloo", 1, 2);
    let mut w = TraceWriter::new(std::fs::File::create(path).unwrap(), &meta).unwrap();
    let events = vec![
        Event::complete(
            Category::UserAnnotation,
            "ProfilerStep#3",
            100,
            100,
            BASE,
            50_000,
        ),
        Event::complete(Category::CpuOp, "aten::mm", 100, 100, BASE + 1_000, 9_000)
            .with_arg("External id", 11i64),
        Event::complete(
            Category::PrivateUse1Runtime,
            "launch",
            100,
            100,
            BASE + 2_000,
            1_000,
        )
        .with_arg("External id", 11i64)
        .with_arg("correlation", 5i64),
        Event::flow(FlowEnd::Start, Category::Ac2g, 5, 100, 100, BASE + 2_000),
        Event::complete(Category::Kernel, "matmul", 0, 7, BASE + 4_000, 12_500)
            .with_arg("External id", 11i64)
            .with_arg("device", 0i64)
            .with_arg("stream", 7i64)
            .with_arg("correlation", 5i64)
            .with_arg("flops", 4096i64),
        Event::flow(FlowEnd::Finish, Category::Ac2g, 5, 0, 7, BASE + 4_000),
        Event::complete(
            Category::GpuMemcpy,
            "Memcpy HtoD",
            0,
            7,
            BASE + 17_000,
            2_000,
        )
        .with_arg("device", 0i64)
        .with_arg("stream", 7i64)
        .with_arg("correlation", 6i64)
        .with_arg("bytes", 65536i64),
        Event::complete(Category::Kernel, "allreduce", 0, 1, BASE + 20_000, 5_000)
            .with_arg("device", 0i64)
            .with_arg("stream", 1i64)
            .with_arg("correlation", 8i64)
            .with_arg("Collective name", "allreduce")
            .with_arg("In msg nelems", 1024i64)
            .with_arg("Out msg nelems", 1024i64)
            .with_arg("Group size", 2i64)
            .with_arg("dtype", "Float")
            .with_arg("Process Group Name", "0")
            .with_arg("Process Group Ranks", "[0, 1]")
            .with_arg("Seq", 0i64)
            .with_arg("bytes", 4096i64),
        Event::complete(
            Category::Other("neuron_instruction".into()),
            "matmul",
            0,
            1_000,
            BASE + 4_100,
            3_000,
        )
        .with_arg("device", 0i64)
        .with_arg("core", 0i64)
        .with_arg("engine", "TensorE")
        .with_arg("kernel correlation", 5i64)
        .with_arg("flops", 4096i64),
        Event::complete(
            Category::Other("neuron_dma".into()),
            "dma load",
            0,
            10_003,
            BASE + 4_000,
            400,
        )
        .with_arg("device", 0i64)
        .with_arg("dma queue", 3i64)
        .with_arg("kernel correlation", 5i64)
        .with_arg("bytes", 8192i64),
        Event::instant(
            Some(Category::CpuInstantEvent),
            "[memory]",
            "t",
            100,
            100,
            BASE + 1_500,
        )
        .with_arg("Bytes", 64i64),
    ];
    for e in &events {
        w.write_event(e).unwrap();
    }
    w.finish().unwrap();
}

/// Complete events as comparable text: category, name, pid, tid, ts, dur and some args.
fn summary(events: &[Event<'_>]) -> Vec<String> {
    let mut out: Vec<String> = events
        .iter()
        .filter(|e| e.phase == Phase::Complete)
        .map(|e| {
            let args: Vec<String> = [
                "device",
                "stream",
                "correlation",
                "External id",
                "flops",
                "bytes",
                "engine",
                "core",
                "dma queue",
                "Collective name",
                "In msg nelems",
                "Group size",
                "Process Group Name",
                "Process Group Ranks",
            ]
            .iter()
            .filter_map(|k| e.arg(k).map(|v| format!("{k}={v:?}")))
            .collect();
            let correlation_kept = e.arg("Collective name").is_none();
            format!(
                "{} {} {:?} {:?} {:?} {:?} {}",
                e.category.as_ref().unwrap().as_str(),
                e.name(),
                e.pid,
                if correlation_kept {
                    e.tid.clone()
                } else {
                    None
                },
                e.ts_ns,
                e.dur_ns,
                args.into_iter()
                    .filter(|a| correlation_kept
                        || !a.starts_with("correlation") && !a.starts_with("stream"))
                    .collect::<Vec<_>>()
                    .join(" ")
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn a_kineto_trace_written_as_a_profile_reads_back_as_the_same_work() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = tmp.path().join("rank1.pt.trace.json");
    kineto_trace(&trace);
    let dir = tmp.path().join("profiles/global/rank1@latest");
    let report = write_profile(&trace, &dir).unwrap();
    let tables: Vec<&str> = report.rows.keys().map(String::as_str).collect();
    assert_eq!(
        tables,
        [
            "CcOp",
            "DmaPacketAggregated",
            "Instruction",
            "Metadata",
            "SchemaFields",
            "SystemProfileEvents",
            "SystemProfileMetadata"
        ]
    );
    assert_eq!(report.rows["SystemProfileEvents"], 5);
    assert_eq!(report.dropped.get("memory instant"), Some(&1));

    let mut original = CollectSink::default();
    trace_format::read_path(&trace, &mut original).unwrap();
    let mut back = CollectSink::default();
    let read = open_trace(&dir, false).unwrap().read(&mut back).unwrap();
    assert_eq!(read.meta.rank(), Some(1));
    let profile = read
        .meta
        .get(neuron_explorer::PROFILE_KEY)
        .unwrap()
        .to_value();
    assert_eq!(
        profile["schema_version"],
        neuron_explorer::schema::WRITTEN_VERSION
    );
    let findings = read
        .meta
        .get(neuron_explorer::FINDINGS_KEY)
        .unwrap()
        .to_value();
    assert_eq!(findings["problems"], serde_json::json!([]));
    assert_eq!(
        findings["unknown"],
        serde_json::json!([]),
        "every column written is declared"
    );
    assert_eq!(summary(&back.events), summary(&original.events));
    let flows = |events: &[Event<'_>]| {
        events
            .iter()
            .filter(|e| matches!(e.phase, Phase::FlowStart | Phase::FlowFinish))
            .count()
    };
    // The launch → kernel flow, and the finishes of the memcpy and the collective
    // (their launches are not in this trace).
    assert_eq!(flows(&back.events), 4);
}
