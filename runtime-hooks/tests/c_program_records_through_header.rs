//! Compiles `tests/c/records_from_c.c` against `include/neuronprof_hooks.h`, links it to
//! the crate's static library, runs it, and checks the layout it reports and the records
//! it drained.
//!
//! Needs a C compiler (`cc`, or the one named by `CC`): without one the test fails with
//! a message saying so rather than passing.

use std::mem::{offset_of, size_of};
use std::path::{Path, PathBuf};
use std::process::Command;

use runtime_hooks::*;

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The `libruntime_hooks.a` that cargo built for this test run: cargo builds the lib
/// (crate types rlib + staticlib) before the tests and puts the archive in `deps/`
/// beside this test binary and in its parent; take the newest.
fn static_lib() -> PathBuf {
    let exe = std::env::current_exe().expect("path of the test binary");
    let deps = exe.parent().expect("test binary has a folder");
    let mut candidates = vec![deps.join("../libruntime_hooks.a")];
    for entry in std::fs::read_dir(deps)
        .expect("read the deps folder")
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("libruntime_hooks-") && name.ends_with(".a") {
            candidates.push(entry.path());
        }
    }
    candidates
        .into_iter()
        .filter_map(|path| Some((path.metadata().ok()?.modified().ok()?, path)))
        .max()
        .map(|(_, path)| path)
        .unwrap_or_else(|| {
            panic!(
                "libruntime_hooks.a not found near {}: the crate must keep crate-type \
                 `staticlib` and be built by `cargo test`",
                deps.display()
            )
        })
}

fn compile_and_run() -> String {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    if let Err(err) = Command::new(&cc).arg("--version").output() {
        panic!(
            "the C ABI test needs a C compiler, but `{cc}` could not be run ({err}); \
             install one (for example `apt-get install gcc`) or set CC"
        );
    }
    let exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join("records_from_c");
    let output = Command::new(&cc)
        .args([
            "-std=c11",
            "-O1",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            "-I",
        ])
        .arg(crate_dir().join("include"))
        .arg(crate_dir().join("tests/c/records_from_c.c"))
        .arg(static_lib())
        .args(["-lpthread", "-ldl", "-lm", "-lrt", "-lutil", "-o"])
        .arg(&exe)
        .output()
        .expect("run the C compiler");
    assert!(
        output.status.success(),
        "compiling the C program failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let run = Command::new(&exe).output().expect("run the C program");
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(
        run.status.success(),
        "the C program failed ({}):\n{}\n{stdout}",
        run.status,
        String::from_utf8_lossy(&run.stderr)
    );
    stdout
}

/// Size of the field a projection points to.
fn field_size<T, F>(_: fn(&T) -> &F) -> usize {
    size_of::<F>()
}

macro_rules! expect_fields {
    ($out:ident, $c_name:literal, $ty:ty { $($field:ident),+ $(,)? }) => {
        $out.push(format!(
            "type {} {} {}",
            $c_name,
            size_of::<$ty>(),
            std::mem::align_of::<$ty>()
        ));
        $(
            $out.push(format!(
                "field {}.{} {} {}",
                $c_name,
                stringify!($field),
                offset_of!($ty, $field),
                field_size(|value: &$ty| &value.$field)
            ));
        )+
    };
}

fn expected_layout() -> Vec<String> {
    let mut out = Vec::new();
    expect_fields!(
        out,
        "nph_record",
        Record {
            kind,
            phase,
            op,
            thread_id,
            start_ns,
            end_ns,
            payload
        }
    );
    out.push(format!("type nph_payload {} {}", size_of::<Payload>(), 8));
    for member in [
        "host_op",
        "range",
        "runtime_call",
        "kernel",
        "instruction",
        "dma",
        "memory",
        "collective",
        "counter",
        "flow",
        "words",
    ] {
        // Every member of the union starts at 0 and fills it.
        out.push(format!("field nph_payload.{member} 0 {PAYLOAD_BYTES}"));
    }
    expect_fields!(
        out,
        "nph_operator_payload",
        OperatorPayload {
            name_id,
            input_sig_id,
            corr_id,
            seq_nr,
            flops,
            bytes
        }
    );
    expect_fields!(
        out,
        "nph_range_payload",
        RangePayload {
            name_id,
            reserved0,
            corr_id,
            value,
            reserved1
        }
    );
    expect_fields!(
        out,
        "nph_runtime_call_payload",
        RuntimeCallPayload {
            name_id,
            device,
            queue,
            corr_id,
            bytes,
            reserved1
        }
    );
    expect_fields!(
        out,
        "nph_kernel_payload",
        KernelPayload {
            name_id,
            device,
            queue,
            corr_id,
            flops,
            bytes,
            reserved1
        }
    );
    expect_fields!(
        out,
        "nph_instruction_payload",
        InstructionPayload {
            name_id,
            device,
            core,
            engine,
            corr_id,
            flops,
            bytes,
            reserved1
        }
    );
    expect_fields!(
        out,
        "nph_dma_payload",
        DmaPayload {
            name_id,
            device,
            queue,
            corr_id,
            bytes,
            src_addr,
            dst_addr
        }
    );
    expect_fields!(
        out,
        "nph_memory_payload",
        MemoryPayload {
            category_id,
            device,
            reserved0,
            addr,
            bytes,
            total_allocated_bytes,
            total_reserved_bytes
        }
    );
    expect_fields!(
        out,
        "nph_collective_payload",
        CollectivePayload {
            group_name_id,
            device,
            queue,
            corr_id,
            bytes,
            group_size,
            rank,
            algorithm,
            dtype,
            group_ranks_id
        }
    );
    expect_fields!(
        out,
        "nph_counter_payload",
        CounterPayload {
            name_id,
            device,
            reserved0,
            value,
            reserved1
        }
    );
    expect_fields!(
        out,
        "nph_flow_payload",
        FlowPayload {
            name_id,
            reserved0,
            flow_id,
            reserved1
        }
    );
    fn raws<T: Copy>(all: &[T], raw: impl Fn(T) -> u16) -> String {
        all.iter()
            .map(|v| raw(*v).to_string())
            .collect::<Vec<_>>()
            .join(" ")
    }
    out.push(format!(
        "const kinds {}",
        raws(RecordKind::ALL, |k| k.raw().into())
    ));
    out.push(format!(
        "const phases {}",
        raws(Phase::ALL, |k| k.raw().into())
    ));
    out.push(format!(
        "const runtime {}",
        raws(RuntimeCallKind::ALL, |k| k.raw())
    ));
    out.push(format!(
        "const dma {}",
        raws(DmaDirection::ALL, |k| k.raw())
    ));
    out.push(format!(
        "const memory {}",
        raws(MemoryAction::ALL, |k| k.raw())
    ));
    out.push(format!(
        "const collective {}",
        raws(CollectiveOp::ALL, |k| k.raw())
    ));
    out.push(format!(
        "const algorithm {}",
        raws(CollectiveAlgorithm::ALL, |k| k.raw())
    ));
    out.push(format!("const flow {}", raws(FlowKind::ALL, |k| k.raw())));
    out
}

fn parse_record(line: &str) -> Record {
    let numbers: Vec<u64> = line
        .split(' ')
        .skip(1)
        .map(|n| n.parse().unwrap())
        .collect();
    let words: [u64; 5] = numbers[6..11].try_into().unwrap();
    Record {
        kind: numbers[0] as u8,
        phase: numbers[1] as u8,
        op: numbers[2] as u16,
        thread_id: numbers[3] as u32,
        start_ns: numbers[4],
        end_ns: numbers[5],
        payload: words.into(),
    }
}

#[test]
#[cfg_attr(miri, ignore = "runs a C compiler and a child process")]
fn c_program_records_through_header() {
    let stdout = compile_and_run();
    let lines: Vec<&str> = stdout.lines().collect();

    // The header's layout and constants are the crate's, field by field.
    let reported: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("type ") || l.starts_with("field ") || l.starts_with("const "))
        .collect();
    let expected = expected_layout();
    assert_eq!(
        reported,
        expected.iter().map(String::as_str).collect::<Vec<_>>()
    );

    let records: Vec<Record> = lines
        .iter()
        .filter(|l| l.starts_with("record "))
        .map(|l| parse_record(l))
        .collect();
    // The main thread's 64-record ring keeps its last 8 slots for user ranges and flow
    // ends: 56 of its records are kept, 48 counters dropped.
    assert!(lines.contains(&"drained 66"), "{stdout}");
    assert!(lines.contains(&"dropped 48"), "{stdout}");
    assert_eq!(lines.last(), Some(&"ok"));
    assert_eq!(records.len(), 66);

    let main_thread = records[0].thread_id;
    assert_ne!(main_thread, 0);
    let (main, worker): (Vec<Record>, Vec<Record>) =
        records.iter().partition(|r| r.thread_id == main_thread);
    assert_eq!((main.len(), worker.len()), (56, 10));

    let Some(Event::Operator(begin)) = main[0].event() else {
        panic!("{:?}", main[0])
    };
    assert_eq!(main[0].phase(), Some(Phase::Begin));
    assert_eq!(
        (begin.seq_nr, begin.corr_id),
        (7, records[1].payload.kernel().corr_id)
    );
    assert_eq!(
        main[1].event(),
        Some(Event::Kernel(KernelPayload {
            name_id: main[1].payload.kernel().name_id,
            device: 1,
            queue: 2,
            corr_id: begin.corr_id,
            flops: 123,
            bytes: 456,
            ..Default::default()
        }))
    );
    assert_eq!((main[1].start_ns, main[1].end_ns), (1000, 2000));
    assert_eq!(main[2].phase(), Some(Phase::End));
    assert!(main[2].start_ns >= main[0].start_ns);
    let Some(Event::Memory(MemoryAction::Allocate, memory)) = main[3].event() else {
        panic!("{:?}", main[3])
    };
    assert_eq!((memory.bytes, memory.total_allocated_bytes), (4096, 8192));
    // Counters 0..60 fit, and were stamped after the advance_to (a second ahead).
    for (i, counter) in main[4..].iter().enumerate() {
        assert_eq!(counter.payload.counter().value, i as f64);
        assert!(counter.start_ns > main[3].start_ns + 900_000_000);
    }
    // The worker exited before the drain; its records were kept, in order.
    let steps: Vec<(Option<Phase>, u64)> = worker
        .iter()
        .map(|r| (r.phase(), r.payload.range().value))
        .collect();
    let expected_steps: Vec<(Option<Phase>, u64)> = (0..5)
        .flat_map(|s| [(Some(Phase::Begin), s), (Some(Phase::End), s)])
        .collect();
    assert_eq!(steps, expected_steps);

    let matmul_line = lines
        .iter()
        .find(|l| l.starts_with("name ") && l.ends_with(" c::matmul"));
    assert_eq!(
        matmul_line.map(|l| l.split(' ').nth(1).unwrap().parse::<u32>().unwrap()),
        Some(begin.name_id.as_u32())
    );
}
