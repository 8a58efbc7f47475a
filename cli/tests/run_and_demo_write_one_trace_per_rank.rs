//! `neuronprof run` and `neuronprof demo` through the binary: one trace per rank that
//! `inspect` and `analyze` read, and a summary that names every rank.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The runs of this file one at a time: concurrent runs would compete for the cores
/// and blur the timings the demo's summary reports.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

fn neuronprof(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neuronprof"))
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("neuronprof-run-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn demo_profiles_four_ranks_and_says_where_the_traces_are() {
    let _serial = serial();
    let cwd = scratch("demo");
    // Timing only (the default computes values): the same program and traces without
    // the arithmetic a debug build takes minutes over.
    let out = neuronprof(&["demo", "--numerics", "off"], &cwd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("skipped"),
        "the demo reads back only its own rank traces:\n{stderr}"
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("ran 6 step(s)"), "{text}");
    assert!(text.contains(" (timing only)\n"), "{text}");
    for rank in 0..4 {
        assert!(
            text.contains(&format!("\n   {rank}               4 ")),
            "rank {rank}: {text}"
        );
    }
    // The run is deterministic in any build (host costs modeled, rank threads on their
    // CPU-time clocks): rank 2's device is 2x slower and the analysis names it.
    assert!(text.contains("\nslow rank: 2 "), "{text}");
    demo_tells_working_from_waiting_for_the_slow_rank(&text);
    let runs: Vec<PathBuf> = std::fs::read_dir(cwd.join("neuronprof-traces"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 1, "one fresh directory per run: {runs:?}");
    assert!(runs[0]
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .starts_with("demo-"));
    // Beside the traces, one Perfetto archive: the manifest and a trace per rank.
    let archive = runs[0].join("perfetto.tar");
    assert!(text.contains("/perfetto.tar  (a trace per rank"), "{text}");
    let listed = Command::new("tar")
        .arg("-tf")
        .arg(&archive)
        .output()
        .unwrap();
    assert!(listed.status.success(), "tar reads {}", archive.display());
    assert_eq!(
        String::from_utf8(listed.stdout).unwrap(),
        "perfetto_manifest.json\nrank0.pftrace\nrank1.pftrace\nrank2.pftrace\nrank3.pftrace\n"
    );

    // The directory is what inspect and analyze take.
    let inspect = neuronprof(&["inspect", "--json", runs[0].to_str().unwrap()], &cwd);
    assert!(
        inspect.status.success(),
        "{}",
        String::from_utf8_lossy(&inspect.stdout)
    );
    let report: serde_json::Value = serde_json::from_slice(&inspect.stdout).unwrap();
    assert_eq!(report["ranks"], serde_json::json!([0, 1, 2, 3]));
    assert_eq!(report["world_size"], 4);
    for file in report["files"].as_array().unwrap() {
        assert_eq!(file["dropped_records"], 0, "the profiler states its drops");
        assert!(file["memory_events_by_device_type"]["20"].as_u64().unwrap() > 0);
        assert!(file["flows"]["ac2g"]["matched"].as_u64().unwrap() > 0);
        assert_eq!(file["flows"]["ac2g"]["unmatched_starts"], 0);
        assert!(file["by_category"]["kernel"].as_u64().unwrap() > 0);
        assert!(file["by_category"]["privateuse1_runtime"].as_u64().unwrap() > 0);
        assert!(file["damage"].is_null());
    }
    let analyze = neuronprof(&["analyze", "--json", runs[0].to_str().unwrap()], &cwd);
    assert!(
        analyze.status.success(),
        "{}",
        String::from_utf8_lossy(&analyze.stderr)
    );
    let analysis: serde_json::Value = serde_json::from_slice(&analyze.stdout).unwrap();
    assert_eq!(analysis["ranks"], serde_json::json!([0, 1, 2, 3]));
    assert!(!analysis["collectives"]["instances"]
        .as_array()
        .unwrap()
        .is_empty());
    assert_eq!(analysis["collectives"]["bottleneck_rank"], 2);
    // Each group is judged against the link the emulator moved its bytes over: the
    // traces' `neuron_topology` read by the emulator's own rule (`Topology::link`), and no
    // collective beats it.
    let topology =
        neuron_backend::dist::Topology::for_profile(&neuron_backend::DeviceProfile::trn2());
    let groups = analysis["collectives"]["groups"].as_array().unwrap();
    assert!(!groups.is_empty());
    for g in groups {
        let ranks: Vec<usize> = g["ranks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_u64().unwrap() as usize)
            .collect();
        let (bytes_per_ns, _) = topology.link(&ranks);
        assert_eq!(g["peak_bus_gbps"].as_f64(), Some(bytes_per_ns), "{g}");
        assert_eq!(
            g["link"], "intra-chip",
            "4 ranks of LNC=2 share one trn2 chip: {g}"
        );
        assert_eq!(
            (g["nodes"].as_u64(), g["inter_node"].as_bool()),
            (Some(1), Some(false))
        );
        let max_busbw = g["bus_bandwidth_gbps"][3].as_f64().unwrap();
        assert!(max_busbw > 0.0 && max_busbw <= bytes_per_ns, "{g}");
    }
    demo_ends_with_the_critical_path_and_what_if(&text, &runs[0], &cwd);
}

/// The demo's last lines are what `critical-path --instance 1` and `what-if --instance
/// 1 --scale rank:2=0.5` say about its traces, number for number.
fn demo_ends_with_the_critical_path_and_what_if(text: &str, dir: &Path, cwd: &Path) {
    let dir = dir.to_str().unwrap();
    let json = |args: &[&str]| -> serde_json::Value {
        let out = neuronprof(args, cwd);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let path = json(&["critical-path", "--instance", "1", "--json", dir]);
    let answer = json(&[
        "what-if",
        "--instance",
        "1",
        "--scale",
        "rank:2=0.5",
        "--json",
        dir,
    ]);
    let ms = |v: &serde_json::Value| format!("{:.2}", v.as_f64().unwrap() / 1000.0);
    let heading = "\ncritical path of the second recorded step \
                   (neuronprof critical-path --instance 1):\n  ";
    let at = text.find(heading).unwrap_or_else(|| panic!("{text}")) + heading.len();
    let ending = &text[at..];
    assert!(
        ending.starts_with(&format!("{} ms: ", ms(&path["length_us"]))),
        "{ending}\n{path}"
    );
    // Every class of at least 0.05 % is listed with its share, in the summary's order.
    let summary_line = ending.lines().next().unwrap();
    for share in path["summary"].as_array().unwrap() {
        let (class, percent) = (share["bound_by"].as_str().unwrap(), &share["percent"]);
        if class.is_empty() || percent.as_f64().unwrap() < 0.05 {
            continue;
        }
        let listed = format!("{class} {:.1}%", percent.as_f64().unwrap());
        assert!(summary_line.contains(&listed), "{listed}: {summary_line}");
    }
    let ranks = path["ranks_on_path"].as_array().unwrap();
    if ranks.len() > 1 {
        let through: Vec<String> = ranks
            .iter()
            .map(|r| format!("rank {} {} ms", r[0], ms(&r[1])))
            .collect();
        assert!(
            ending.contains(&format!("\n  through {}\n", through.join(", "))),
            "{ending}"
        );
    }
    let (step, predicted) = (&answer["step_us"], &answer["predicted_step_us"]);
    let what_if = format!(
        "\nwhat-if (neuronprof what-if --instance 1 --scale rank:2=0.5): at 1x speed, rank 2 \
         would cut the step from {} to {} ms\n",
        ms(step),
        ms(predicted)
    );
    assert!(ending.ends_with(&what_if), "{ending}\nexpected {what_if}");
    // Rank 2's device bounds the step (above): halving its work shortens the step by
    // much of its extra device time.
    let (step, predicted) = (step.as_f64().unwrap(), predicted.as_f64().unwrap());
    assert!(predicted < 0.9 * step, "{predicted} vs {step}");
}

/// The summary table splits each rank's steps as `analyze` does, into shares that add
/// up: device working, collective transfer, waiting for peers, idle. The ranks that
/// waited for rank 2 show their waiting apart, and only rank 2 is called device-bound.
fn demo_tells_working_from_waiting_for_the_slow_rank(text: &str) {
    let header = "\nrank  recorded steps  mean step  device working  collective transfer  \
                  waiting for peers  device idle  peak HBM allocated\n";
    let at = text.find(header).unwrap_or_else(|| panic!("{text}")) + header.len();
    let rows: Vec<Vec<f64>> = text[at..]
        .lines()
        .take(4)
        .map(|line| {
            line.split_whitespace()
                .filter_map(|cell| cell.strip_suffix('%'))
                .map(|p| p.parse().unwrap())
                .collect()
        })
        .collect();
    for (rank, shares) in rows.iter().enumerate() {
        assert_eq!(shares.len(), 4, "rank {rank}: {text}");
        let sum: f64 = shares.iter().sum();
        assert!(
            (sum - 100.0).abs() <= 0.2,
            "rank {rank} adds up to {sum}: {text}"
        );
    }
    let waiting = |rank: usize| rows[rank][2];
    assert_eq!(waiting(2), 0.0, "the slow rank waits for nobody: {text}");
    for rank in [0, 1, 3] {
        assert!(waiting(rank) > 1.0, "rank {rank} waited for rank 2: {text}");
        assert!(
            text.contains(&format!("\nrank {rank}: its collectives waited ")),
            "rank {rank}: {text}"
        );
    }
    let insights = &text[text.find("\ninsights").unwrap_or_else(|| panic!("{text}"))..];
    for line in insights.lines().filter(|l| l.contains("device-bound")) {
        assert!(
            line.contains(" rank 2, "),
            "only rank 2 is device-bound: {line}"
        );
    }
}

#[test]
fn run_mlp_kernels_only_and_refuses_a_used_directory() {
    let _serial = serial();
    let cwd = scratch("mlp");
    let args = [
        "run", "mlp", "--steps", "3", "--detail", "kernels", "--out", "traces",
    ];
    let out = neuronprof(&args, &cwd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let files: Vec<PathBuf> = std::fs::read_dir(cwd.join("traces"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1);
    assert!(files[0].to_str().unwrap().ends_with(".pt.trace.json.gz"));
    let inspect = neuronprof(&["inspect", "--json", files[0].to_str().unwrap()], &cwd);
    let report: serde_json::Value = serde_json::from_slice(&inspect.stdout).unwrap();
    let categories = &report["files"][0]["by_category"];
    assert!(categories["kernel"].as_u64().unwrap() > 0);
    assert!(
        categories["neuron_instruction"].is_null(),
        "kernels only: {categories}"
    );

    // --profile: torch.profiler's schedule and options.
    let spec = [
        "run",
        "mlp",
        "--steps",
        "4",
        "--profile",
        "wait=1,active=2,memory=off",
    ];
    let out = neuronprof(&[&spec[..], &["--out", "profiled"]].concat(), &cwd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("\n   0               2 "));
    let inspect = neuronprof(&["inspect", "--json", "profiled"], &cwd);
    let report: serde_json::Value = serde_json::from_slice(&inspect.stdout).unwrap();
    assert_eq!(report["files"][0]["memory_events"], 0, "memory=off");

    let again = neuronprof(&args, &cwd);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already holds 1 trace file"));
}

#[test]
fn bad_run_arguments_are_usage_errors() {
    let cwd = scratch("bad");
    for (args, expected) in [
        (vec!["run", "resnet"], "unknown workload \"resnet\""),
        (
            vec!["run", "gpt", "--ranks", "2", "--straggler", "5:2"],
            "not one of the 2 ranks",
        ),
        (
            vec!["run", "gpt", "--straggler", "1"],
            "expected RANK:FACTOR",
        ),
        (vec!["run", "gpt", "--lnc", "3"], "--lnc 3"),
        (
            vec!["run", "gpt", "--profile", "active=0"],
            "records nothing",
        ),
        (
            vec!["run", "mlp", "--optimizer", "sgd"],
            "--optimizer applies to the gpt workload only",
        ),
        (
            vec!["run", "gpt", "--optimizer", "adam"],
            "invalid value 'adam'",
        ),
    ] {
        let out = neuronprof(&args, &cwd);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(expected), "{args:?}: {err}");
    }
}
