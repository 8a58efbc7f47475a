//! `neuronprof monitor` against a real `neuronprof run gpt --ranks 4` child process:
//! every rank is its own entry with its own utilization and memory, and the values
//! move from one period to the next. A long run (`--steps 100000`, the way to watch a
//! job in `neuron-top`) holds bounded memory while its live metrics keep flowing.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use analysis::live::{parse_document, RuntimeEntry};

struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("neuronprof-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

fn rank_entries(line: &str, pid: u32) -> Vec<RuntimeEntry> {
    let doc = parse_document(line).expect("each line is a neuron-monitor document");
    assert!(doc.system_data.is_some() && doc.instance_info.is_some());
    let mut ranks: Vec<RuntimeEntry> = doc
        .neuron_runtime_data
        .into_iter()
        .filter(|e| e.pid == pid)
        .collect();
    ranks.sort_by_key(|e| e.report.neuronprof.as_ref().and_then(|x| x.rank));
    ranks
}

fn wait_for_ranks(endpoints: &Path, pid: u32) {
    let socket = endpoints.join("neuronprof").join(format!("{pid}.sock"));
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        if let Ok(doc) = analysis::live_client::fetch_document(&socket, 0.0, Duration::from_secs(5))
        {
            // Past the profiled step (its trace is written on the rank threads), so
            // every window below sees training steps.
            let stepping = doc
                .neuron_runtime_data
                .iter()
                .filter(|e| e.report.neuronprof.as_ref().and_then(|x| x.step) >= Some(2))
                .count();
            if stepping == 4 {
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!(
        "the run never published its 4 ranks at {}",
        socket.display()
    );
}

#[test]
fn monitor_lists_the_four_ranks_of_a_run_with_their_own_values() {
    let exe = env!("CARGO_BIN_EXE_neuronprof");
    let runtime_dir = scratch("monitor-xdg");
    let out = scratch("monitor-run");
    let run = Command::new(exe)
        .args([
            "run", "gpt", "--ranks", "4", "--steps", "5000", "--detail", "kernels",
        ])
        .args(["--numerics", "off", "--profile", "active=1", "--out"])
        .arg(&out)
        .env("XDG_RUNTIME_DIR", &runtime_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting neuronprof run");
    let run = KillOnDrop(run);
    let pid = run.0.id();
    wait_for_ranks(&runtime_dir, pid);

    let monitor = Command::new(exe)
        .args(["monitor", "--period", "400ms", "--count", "3"])
        .env("XDG_RUNTIME_DIR", &runtime_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("running neuronprof monitor");
    assert!(
        monitor.status.success(),
        "{}",
        String::from_utf8_lossy(&monitor.stderr)
    );
    let stdout = String::from_utf8(monitor.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "one document per period:\n{stdout}");
    let docs: Vec<Vec<RuntimeEntry>> = lines.iter().map(|l| rank_entries(l, pid)).collect();
    for (d, ranks) in docs.iter().enumerate() {
        assert_eq!(ranks.len(), 4, "document {d}: one entry per rank");
        for (r, entry) in ranks.iter().enumerate() {
            assert_eq!(entry.neuron_runtime_tag, format!("{pid}/rank{r}"));
            assert!(entry.error.is_empty(), "{}", entry.error);
            let counters = entry.report.neuroncore_counters.as_ref().unwrap();
            // At least the period; more when the rank made no progress for a while
            // (the window then skips back over that stretch), at most the history.
            assert!(
                counters.period > 0.2
                    && counters.period <= neuron_backend::monitor::MAX_PERIOD_S + 1.0,
                "period {}",
                counters.period
            );
            let util: f64 = counters
                .neuroncores_in_use
                .values()
                .map(|c| c.neuroncore_utilization)
                .sum();
            assert!(util > 0.0, "document {d} rank {r}: utilization {util}");
            let ext = entry.report.neuronprof.as_ref().unwrap();
            assert_eq!((ext.rank, ext.world_size), (Some(r as u32), Some(4)));
            assert!(ext.hbm.as_ref().unwrap().used_bytes > 0);
            assert_eq!(ext.topology, "trn2.48xlarge", "document {d} rank {r}");
            // The publisher's memory categories survive the typed model: the rank's
            // core lists every category, and its allocations are somewhere in them.
            let categories = &ext.memory_categories;
            assert_eq!(categories.len(), 1, "document {d} rank {r}: {categories:?}");
            let core = categories.values().next().unwrap();
            let names: Vec<&str> = core.keys().map(String::as_str).collect();
            assert_eq!(
                names,
                [
                    "activations",
                    "gradients",
                    "optimizer_state",
                    "other",
                    "parameters"
                ]
            );
            assert!(
                core.values().sum::<u64>() > 0,
                "document {d} rank {r}: {core:?}"
            );
            let used = &entry
                .report
                .memory_used
                .as_ref()
                .unwrap()
                .neuron_runtime_used_bytes;
            assert!(used.neuron_device > 0);
        }
    }
    // Values change between periods: every rank advanced its steps.
    for (r, (first, last)) in docs[0].iter().zip(&docs[2]).enumerate() {
        let step = |e: &RuntimeEntry| e.report.neuronprof.as_ref().unwrap().step;
        assert!(
            step(last) > step(first),
            "rank {r}: {:?} -> {:?}",
            step(first),
            step(last)
        );
    }
    // A killed run leaves its socket behind (no exit handler ran): discovery removes it
    // and lists nothing.
    drop(run);
    let endpoints = runtime_dir.join("neuronprof");
    let socket = endpoints.join(format!("{pid}.sock"));
    assert!(socket.exists(), "SIGKILL skips the exit-time removal");
    let found = analysis::live_client::discover(&endpoints).unwrap();
    assert!(found.endpoints.is_empty(), "{found:?}");
    assert_eq!(found.removed_stale, vec![socket.clone()]);
    assert!(!socket.exists());
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_dir_all(&runtime_dir);
}

/// Resident memory of process `pid`, in KiB (`VmRSS` of `/proc/PID/status`).
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmRSS in /proc/{pid}/status"))
}

/// Every rank's step as the live endpoint publishes it.
fn live_steps(runtime_dir: &Path, pid: u32) -> Vec<Option<u64>> {
    let socket = runtime_dir.join("neuronprof").join(format!("{pid}.sock"));
    let doc = analysis::live_client::fetch_document(&socket, 0.0, Duration::from_secs(5))
        .expect("the run answers on its endpoint");
    let mut steps: Vec<(Option<u32>, Option<u64>)> = doc
        .neuron_runtime_data
        .iter()
        .filter(|e| e.pid == pid)
        .filter_map(|e| e.report.neuronprof.as_ref().map(|x| (x.rank, x.step)))
        .collect();
    steps.sort();
    steps.into_iter().map(|(_, step)| step).collect()
}

/// Before, the default schedule recorded every step after the warm-up into one window
/// kept in memory until the run ended: about 190 MiB a second in a release build (debug,
/// on the 2-core development VM under load: 55 MiB at 5 s, 133 MiB at 30 s, still
/// growing). Now it records steps 2-11, writes their traces then, and says so.
#[test]
fn a_long_run_holds_bounded_memory_and_keeps_publishing_live_metrics() {
    let exe = env!("CARGO_BIN_EXE_neuronprof");
    let runtime_dir = scratch("long-run-xdg");
    let out = scratch("long-run");
    let stderr_path = runtime_dir.join("stderr.txt");
    let started = Instant::now();
    let run = Command::new(exe)
        .args(["run", "gpt", "--ranks", "4", "--steps", "100000"])
        .args(["--numerics", "off", "--out"])
        .arg(&out)
        .env("XDG_RUNTIME_DIR", &runtime_dir)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .expect("starting neuronprof run");
    let run = KillOnDrop(run);
    let pid = run.0.id();
    let at = |seconds: u64| {
        let left = Duration::from_secs(seconds).saturating_sub(started.elapsed());
        std::thread::sleep(left);
        (rss_kib(pid), live_steps(&runtime_dir, pid))
    };
    let (early_kib, early_steps) = at(10);
    let (late_kib, late_steps) = at(60);
    eprintln!("RSS {early_kib} KiB at 10 s (steps {early_steps:?}), {late_kib} KiB at 60 s (steps {late_steps:?})");
    assert!(
        late_steps.len() == 4 && late_steps.iter().all(|s| s.is_some_and(|s| s > 12)),
        "every rank is past the recorded window at 60 s: {late_steps:?}"
    );
    assert!(
        late_steps.iter().zip(&early_steps).all(|(l, e)| l > e),
        "the live metrics move on: {early_steps:?} -> {late_steps:?}"
    );
    assert!(
        late_kib <= 2 * early_kib,
        "RSS grew from {early_kib} KiB at 10 s to {late_kib} KiB at 60 s"
    );
    // The window's traces were written when it ended, not at the end of the run.
    let traces = std::fs::read_dir(&out)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".pt.trace.json.gz")
        })
        .count();
    assert_eq!(traces, 4, "one trace per rank in {}", out.display());
    drop(run);
    let stderr = std::fs::read_to_string(&stderr_path).unwrap();
    assert!(
        stderr.contains("the traces keep steps 2-11 of 100000"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_dir_all(&runtime_dir);
}
