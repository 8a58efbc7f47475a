//! neuron-top end to end in a real terminal (tmux): replaying traces recorded by
//! `neuronprof run`, reading a neuron-monitor stream on stdin, and attaching to a live
//! `neuronprof run`; checks from `capture-pane` that utilization and memory appear and
//! change, that bad input shows an error line, and that `q` restores the terminal.
//!
//! Needs tmux (skipped with a message when missing and `CI` is unset; fails under CI)
//! and the `neuron-top` and `neuronprof` binaries of this build, which
//! `cargo test --workspace` builds next to this test (target/<profile>/).

#[path = "../support/skip.rs"]
mod skip;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `target/<profile>/<name>`, next to this test's own executable's `deps/`.
fn binary(name: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let path = exe.parent()?.parent()?.join(name);
    path.exists().then_some(path)
}

/// The binaries, or `None` after saying why this test is skipped (a failure under CI).
fn setup() -> Option<(PathBuf, PathBuf)> {
    let tmux = Command::new("tmux").arg("-V").output();
    if !tmux.is_ok_and(|o| o.status.success()) {
        skip::skipped(
            "neuronprof-tests: neuron_top_tmux",
            "tmux is not installed (apt-get install tmux; .ci/run installs it)",
        );
        return None;
    }
    match (binary("neuron-top"), binary("neuronprof")) {
        (Some(top), Some(np)) => Some((top, np)),
        _ => {
            skip::skipped(
                "neuronprof-tests: neuron_top_tmux",
                "the neuron-top and neuronprof binaries are not built next to this test: \
                 cargo build -p tui -p neuronprof (cargo test --workspace does)",
            );
            None
        }
    }
}

/// A private tmux server with one session running a command.
struct Tmux {
    socket: String,
    session: String,
}

impl Tmux {
    /// Runs `command` (a shell command line) in a `width`×`height` session; after it
    /// exits the pane shows `neuron-top exited with <status>` and stays for a minute.
    fn start(name: &str, command: &str, width: u16, height: u16) -> Tmux {
        let tmux = Tmux {
            socket: format!("neuron-top-e2e-{}-{name}", std::process::id()),
            session: name.to_string(),
        };
        let wrapped = format!("{command}; echo \"neuron-top exited with $?\"; sleep 60");
        let status = Command::new("tmux")
            .args(["-L", &tmux.socket, "-f", "/dev/null", "new-session", "-d"])
            .args([
                "-s",
                &tmux.session,
                "-x",
                &width.to_string(),
                "-y",
                &height.to_string(),
            ])
            .args(["sh", "-c", &wrapped])
            .env("TERM", "xterm-256color")
            .status()
            .expect("tmux runs");
        assert!(status.success(), "tmux new-session failed");
        tmux
    }

    fn capture(&self) -> String {
        let out = Command::new("tmux")
            .args([
                "-L",
                &self.socket,
                "capture-pane",
                "-p",
                "-t",
                &self.session,
            ])
            .output()
            .expect("tmux capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn keys(&self, keys: &[&str]) {
        for key in keys {
            let status = Command::new("tmux")
                .args(["-L", &self.socket, "send-keys", "-t", &self.session, key])
                .status()
                .expect("tmux send-keys");
            assert!(status.success());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Captures until `ready` holds (or panics with the last screen after `timeout`).
    fn wait_for(&self, what: &str, timeout: Duration, ready: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.capture();
            if ready(&screen) {
                return screen;
            }
            assert!(
                start.elapsed() < timeout,
                "timed out waiting for {what}; screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// `q`, then checks neuron-top exited 0 and left the alternate screen.
    fn quit(&self) {
        self.keys(&["q"]);
        let screen = self.wait_for("exit", Duration::from_secs(10), |s| {
            s.contains("neuron-top exited with")
        });
        assert!(screen.contains("neuron-top exited with 0"), "{screen}");
        assert!(
            !screen.contains("Utilization"),
            "the alternate screen is gone after exit:\n{screen}"
        );
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("neuron-top-e2e-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The first line containing `needle`, trimmed.
fn line_with<'a>(screen: &'a str, needle: &str) -> Option<&'a str> {
    screen.lines().find(|l| l.contains(needle)).map(str::trim)
}

/// The pane text from the column where `needle` starts: its line and the `rows` below,
/// 40 columns each (e.g. the HBM pane: its figures and history).
fn pane_below(screen: &str, needle: &str, rows: usize) -> String {
    let lines: Vec<&str> = screen.lines().collect();
    let Some(row) = lines.iter().position(|l| l.contains(needle)) else {
        return String::new();
    };
    let byte = lines[row].find(needle).unwrap_or(0);
    let column = lines[row][..byte].chars().count();
    lines[row..(row + 1 + rows).min(lines.len())]
        .iter()
        .map(|l| l.chars().skip(column).take(40).collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}

fn sh_quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', "'\\''"))
}

#[test]
fn replay_of_a_recorded_run_shows_utilization_and_memory_changing() {
    let Some((top, neuronprof)) = setup() else {
        return;
    };
    let dir = scratch("replay");
    let traces = dir.join("traces");
    let out = Command::new(&neuronprof)
        .args([
            "run",
            "gpt",
            "--ranks",
            "2",
            "--steps",
            "3",
            "--numerics",
            "off",
            "--out",
        ])
        .arg(&traces)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cmd = format!("{} --replay {}", sh_quote(&top), sh_quote(&traces));
    let tmux = Tmux::start("replay", &cmd, 120, 40);
    let first = tmux.wait_for("the first report", Duration::from_secs(30), |s| {
        s.contains("NeuronCore") && s.contains(" 1/")
    });
    for needle in [
        "rank0",
        "rank1",
        "HBM Usage",
        "used ",
        "Engine Utilization",
        "Top Operators",
    ] {
        assert!(first.contains(needle), "missing {needle:?}:\n{first}");
    }
    // Step to the middle of the run: utilization and memory differ from the start.
    let mut screens = vec![first];
    for _ in 0..4 {
        tmux.keys(&[
            "Right", "Right", "Right", "Right", "Right", "Right", "Right", "Right", "Right",
            "Right",
        ]);
        std::thread::sleep(Duration::from_millis(300));
        screens.push(tmux.capture());
    }
    let nc0: Vec<Option<&str>> = screens.iter().map(|s| line_with(s, "NC0 ")).collect();
    let hbm: Vec<Option<&str>> = screens.iter().map(|s| line_with(s, "used ")).collect();
    assert!(
        nc0.iter().all(Option::is_some) && hbm.iter().all(Option::is_some),
        "{screens:#?}"
    );
    assert!(
        nc0.windows(2).any(|w| w[0] != w[1]),
        "utilization never changed: {nc0:?}"
    );
    assert!(
        hbm.windows(2).any(|w| w[0] != w[1]),
        "memory never changed: {hbm:?}"
    );
    assert!(!screens.last().unwrap().contains(" 1/"), "the cursor moved");
    // The last report: the ranks finished.
    tmux.keys(&["End"]);
    tmux.wait_for("the end of the run", Duration::from_secs(10), |s| {
        s.contains("(finished)")
    });
    tmux.quit();
}

#[test]
fn stdin_stream_with_a_bad_line_updates_and_shows_the_error() {
    let Some((top, _)) = setup() else {
        return;
    };
    let dir = scratch("stdin");
    let first = analysis_fixture(91.25, 17179869184);
    let second = analysis_fixture(12.5, 25769803776);
    std::fs::write(dir.join("1.json"), first).unwrap();
    std::fs::write(dir.join("2.json"), second).unwrap();
    // The writer runs in the background on a FIFO, so the shell reports neuron-top's
    // exit without waiting for the writer (a pipe would wait for both sides).
    let fifo = dir.join("stream.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success(), "mkfifo");
    let cmd = format!(
        "(cat {a}; sleep 2; echo 'this is not json'; cat {b}; sleep 20) > {f} & {top} --stdin < {f}",
        a = sh_quote(&dir.join("1.json")),
        b = sh_quote(&dir.join("2.json")),
        f = sh_quote(&fifo),
        top = sh_quote(&top),
    );
    let tmux = Tmux::start("stdin", &cmd, 80, 24);
    let before = tmux.wait_for("the first report", Duration::from_secs(20), |s| {
        s.contains("91.2%")
    });
    assert!(before.contains("Memory Usage Summary"), "{before}");
    let device_before = line_with(&before, "Device").map(str::to_string);
    let after = tmux.wait_for("the second report", Duration::from_secs(20), |s| {
        s.contains("12.5%")
    });
    assert!(
        after.contains("error #1: document 1 (byte offset"),
        "the bad line is reported:\n{after}"
    );
    assert_ne!(
        device_before.as_deref(),
        line_with(&after, "Device"),
        "{after}"
    );
    // Keys still work while the stream is open: the activity view, then help.
    tmux.keys(&["Tab", "Tab"]);
    tmux.wait_for("the activity view", Duration::from_secs(5), |s| {
        s.contains("Top Operators")
    });
    tmux.keys(&["?"]);
    tmux.wait_for("help", Duration::from_secs(5), |s| {
        s.contains("freeze / unfreeze")
    });
    tmux.keys(&["Escape"]);
    tmux.quit();
}

/// A private endpoint directory (`XDG_RUNTIME_DIR`) and a long `neuronprof run gpt`
/// publishing in it (profiling nothing: its schedule waits past the end).
/// Runs the checks, then kills and reaps the workload whether they passed or panicked
/// (the panic goes on afterwards), so no workload outlives its test.
fn checking_then_kill(mut workload: Child, checks: impl FnOnce(&mut Child)) {
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| checks(&mut workload)));
    let _ = workload.kill();
    let _ = workload.wait();
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

fn start_workload(dir: &Path, neuronprof: &Path) -> (PathBuf, Child) {
    let runtime_dir = dir.join("xdg");
    std::fs::create_dir_all(&runtime_dir).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&runtime_dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let steps = ["--steps", "100000", "--numerics", "off"];
    let workload = Command::new(neuronprof)
        .args(["run", "gpt", "--ranks", "2"])
        .args(steps)
        .arg("--out")
        .arg(dir.join("traces"))
        .args(["--profile", "wait=100000,warmup=0,active=1"])
        .env("XDG_RUNTIME_DIR", &runtime_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    (runtime_dir, workload)
}

#[test]
fn neuronprof_monitor_piped_into_stdin_shows_the_workload() {
    let Some((top, neuronprof)) = setup() else {
        return;
    };
    let dir = scratch("monitor");
    let (runtime_dir, workload) = start_workload(&dir, &neuronprof);
    let cmd = format!(
        "XDG_RUNTIME_DIR={x} {np} monitor --period 500ms | {top} --stdin",
        x = sh_quote(&runtime_dir),
        np = sh_quote(&neuronprof),
        top = sh_quote(&top)
    );
    let tmux = Tmux::start("monitor", &cmd, 120, 40);
    let pid = workload.id();
    checking_then_kill(workload, |_| {
        let screen = tmux.wait_for("the workload's ranks", Duration::from_secs(60), |s| {
            s.contains(&format!("{pid}/rank1")) && s.contains("NC0 ") && s.contains("used ")
        });
        // neuronprof monitor adds the machine's vCPU use (system_data) to the stream.
        let system = line_with(&screen, "system  user").unwrap_or_default();
        assert!(system.contains('%'), "{screen}");
        tmux.quit();
    });
}

#[test]
fn live_attach_to_a_running_workload_shows_it_and_then_its_exit() {
    let Some((top, neuronprof)) = setup() else {
        return;
    };
    let dir = scratch("live");
    let (runtime_dir, workload) = start_workload(&dir, &neuronprof);
    let cmd = format!(
        "XDG_RUNTIME_DIR={} {} --refresh 0.5",
        sh_quote(&runtime_dir),
        sh_quote(&top)
    );
    let tmux = Tmux::start("live", &cmd, 120, 40);
    checking_then_kill(workload, |workload| {
        let pid = workload.id();
        // The whole screen: a capture can land while tmux is still drawing the lower
        // panes (the HBM pane's "used" line comes last).
        let first = tmux.wait_for("the workload's ranks", Duration::from_secs(60), |s| {
            s.contains(&format!("{pid}/rank1")) && s.contains("NC0 ") && s.contains("used ")
        });
        // Over a few refreshes the figures move.
        let mut screens = vec![first];
        for _ in 0..6 {
            std::thread::sleep(Duration::from_millis(700));
            screens.push(tmux.capture());
        }
        // Utilization: NC0's row (value and history); memory: the HBM pane (figures and
        // history). Both must change over the refreshes.
        let nc0: Vec<Option<&str>> = screens.iter().map(|s| line_with(s, "NC0 ")).collect();
        let hbm: Vec<String> = screens.iter().map(|s| pane_below(s, "used ", 6)).collect();
        assert!(nc0.iter().all(Option::is_some), "{screens:#?}");
        assert!(
            nc0.windows(2).any(|w| w[0] != w[1]),
            "utilization never changed: {nc0:#?}"
        );
        assert!(
            hbm.windows(2).any(|w| w[0] != w[1]),
            "memory never changed: {hbm:#?}"
        );
        // Kill the workload: its ranks are shown as exited, neuron-top keeps running.
        workload.kill().unwrap();
        workload.wait().unwrap();
        let gone = tmux.wait_for("the exit", Duration::from_secs(20), |s| {
            s.contains("(exited)")
        });
        assert!(gone.contains("NeuronCore"), "{gone}");
        tmux.quit();
    });
}

#[test]
fn a_panic_restores_the_terminal_and_prints_the_message() {
    let Some((top, _)) = setup() else {
        return;
    };
    let dir = scratch("panic");
    std::fs::write(dir.join("1.json"), analysis_fixture(50.0, 1 << 30)).unwrap();
    let cmd = format!(
        "NEURON_TOP_TEST_PANIC=1 {} --stdin < {}",
        sh_quote(&top),
        sh_quote(&dir.join("1.json"))
    );
    let tmux = Tmux::start("panic", &cmd, 80, 24);
    let screen = tmux.wait_for("the exit", Duration::from_secs(20), |s| {
        s.contains("neuron-top exited with")
    });
    assert!(screen.contains("NEURON_TOP_TEST_PANIC is set"), "{screen}");
    assert!(!screen.contains("exited with 0"), "{screen}");
    assert!(
        !screen.contains("Utilization"),
        "the alternate screen is gone:\n{screen}"
    );
    // Raw mode is off again: the terminal echoes what is typed (raw mode would not).
    tmux.keys(&["typed-after-panic"]);
    tmux.wait_for("the echo", Duration::from_secs(5), |s| {
        s.contains("typed-after-panic")
    });
}

#[test]
fn sigterm_restores_the_terminal() {
    let Some((top, _)) = setup() else {
        return;
    };
    let dir = scratch("sigterm");
    std::fs::write(dir.join("1.json"), analysis_fixture(50.0, 1 << 30)).unwrap();
    // `timeout` sends SIGTERM after 3 s (--foreground: neuron-top keeps the terminal);
    // neuron-top ends its loop and restores the terminal.
    let cmd = format!(
        "timeout --foreground 3 {} --stdin < {}",
        sh_quote(&top),
        sh_quote(&dir.join("1.json"))
    );
    let tmux = Tmux::start("sigterm", &cmd, 80, 24);
    tmux.wait_for("the report", Duration::from_secs(20), |s| {
        s.contains("50.0%")
    });
    let screen = tmux.wait_for("the exit", Duration::from_secs(20), |s| {
        s.contains("neuron-top exited with")
    });
    assert!(
        !screen.contains("Utilization"),
        "the alternate screen is gone:\n{screen}"
    );
    tmux.keys(&["typed-after-sigterm"]);
    tmux.wait_for("the echo", Duration::from_secs(5), |s| {
        s.contains("typed-after-sigterm")
    });
}

/// A two-rank neuronprof report with rank 0's NC0 at `util` % and `hbm` bytes in use.
fn analysis_fixture(util: f64, hbm: u64) -> String {
    let mut doc: serde_json::Value = serde_json::from_str(include_str!(
        "../../analysis/src/live/fixtures/neuronprof-2ranks.json"
    ))
    .unwrap();
    let report = &mut doc["neuron_runtime_data"][0]["report"];
    report["neuroncore_counters"]["neuroncores_in_use"]["0"]["neuroncore_utilization"] =
        util.into();
    report["memory_used"]["neuron_runtime_used_bytes"]["neuron_device"] = hbm.into();
    report["neuronprof"]["hbm"]["used_bytes"] = hbm.into();
    // One document per line, as neuron-monitor writes them.
    serde_json::to_string(&doc).unwrap() + "\n"
}
