//! CPU cost of neuron-top at a 1 s refresh (issue 8: < 2 % of a core).
//!
//! Runs `neuron-top` in a detached tmux session (a real terminal, 120×40) and reads its
//! CPU time (every thread's run time from `/proc/<pid>/task/*/schedstat`) over a
//! window, as a share of one core. Modes:
//! - `stdin`: neuron-top `--stdin`, fed one report per second through a FIFO (an
//!   8-rank neuronprof report whose figures change every second);
//! - `live`: neuron-top attached (`--refresh 1`) to a running
//!   `neuronprof run gpt --ranks 2` (pass `--neuronprof PATH`).
//!
//! Baseline, measured in the same run: the same neuron-top and stream with the display
//! frozen (`f`), i.e. reading and queueing reports without applying or drawing them.
//!
//! ```text
//! cargo build --release -p tui -p neuronprof
//! cargo run --release -p tui --example neuron_top_cost -- \
//!     --neuron-top target/release/neuron-top --neuronprof target/release/neuronprof \
//!     --seconds 20 --runs 3
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use analysis::live::{fixtures, parse_document, MonitorDocument};

struct Options {
    neuron_top: PathBuf,
    neuronprof: Option<PathBuf>,
    seconds: u64,
    runs: usize,
}

fn parse_args() -> Options {
    let mut o = Options {
        neuron_top: PathBuf::from("target/release/neuron-top"),
        neuronprof: None,
        seconds: 20,
        runs: 3,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut v = || args.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--neuron-top" => o.neuron_top = v().into(),
            "--neuronprof" => o.neuronprof = Some(v().into()),
            "--seconds" => o.seconds = v().parse().expect("seconds"),
            "--runs" => o.runs = v().parse().expect("runs"),
            other => panic!("unknown argument {other}"),
        }
    }
    o
}

/// CPU seconds of `pid` so far: the sum over its threads of the time they ran
/// (`/proc/<pid>/task/*/schedstat`, nanoseconds), else utime + stime from
/// `/proc/<pid>/stat` (clock ticks, usually 10 ms: too coarse for 20 s windows).
fn cpu_seconds(pid: u32) -> f64 {
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        let mut ns = 0u64;
        let mut any = false;
        for task in tasks.flatten() {
            if let Ok(text) = std::fs::read_to_string(task.path().join("schedstat")) {
                if let Some(v) = text
                    .split_whitespace()
                    .next()
                    .and_then(|v| v.parse::<u64>().ok())
                {
                    ns += v;
                    any = true;
                }
            }
        }
        if any {
            return ns as f64 / 1e9;
        }
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("process alive");
    // Fields after the command name (which may hold spaces) closing parenthesis.
    let rest = &stat[stat.rfind(')').expect("stat format") + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of stat, i.e. 11 and 12 after the name.
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    ticks / hz
}

struct Session {
    socket: String,
}

impl Session {
    fn start(name: &str, command: &str) -> (Session, u32) {
        let socket = format!("neuron-top-cost-{}-{name}", std::process::id());
        let ok = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-s",
                "s",
            ])
            .args([
                "-x",
                "120",
                "-y",
                "40",
                "sh",
                "-c",
                &format!("exec {command}"),
            ])
            .env("TERM", "xterm-256color")
            .status()
            .expect("tmux")
            .success();
        assert!(ok, "tmux new-session");
        let out = Command::new("tmux")
            .args(["-L", &socket, "list-panes", "-t", "s", "-F", "#{pane_pid}"])
            .output()
            .expect("tmux list-panes");
        let pid = String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .expect("pane pid");
        (Session { socket }, pid)
    }

    fn keys(&self, keys: &str) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", "-t", "s", keys])
            .status();
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}

/// An 8-rank report (4 copies of the 2-rank fixture with other tags) whose figures
/// depend on `second`.
fn report(base: &MonitorDocument, second: u64) -> String {
    let mut doc = base.clone();
    let mut entries = Vec::new();
    for copy in 0..4u32 {
        for (r, e) in base.neuron_runtime_data.iter().enumerate() {
            let mut e = e.clone();
            let rank = copy * 2 + r as u32;
            e.neuron_runtime_tag = format!("9001/rank{rank}");
            if let Some(c) = e.report.neuroncore_counters.as_mut() {
                for (core, u) in c.neuroncores_in_use.iter_mut() {
                    u.neuroncore_utilization =
                        ((second * 7 + u64::from(*core) * 13 + u64::from(rank)) % 100) as f64;
                }
            }
            entries.push(e);
        }
    }
    doc.neuron_runtime_data = entries;
    serde_json::to_string(&doc).unwrap() + "\n"
}

/// neuron-top --stdin fed one report a second; returns its CPU share over the window.
fn stdin_run(o: &Options, frozen: bool) -> f64 {
    let dir = std::env::temp_dir().join(format!("neuron-top-cost-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join(if frozen { "frozen.fifo" } else { "stream.fifo" });
    let _ = std::fs::remove_file(&fifo);
    let path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0, "mkfifo");
    let cmd = format!("{} --stdin < {}", o.neuron_top.display(), fifo.display());
    let (session, pid) = Session::start(if frozen { "frozen" } else { "stdin" }, &cmd);
    let mut writer = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    let base = parse_document(fixtures::NEURONPROF_TWO_RANKS).unwrap();
    if frozen {
        std::thread::sleep(Duration::from_millis(500));
        session.keys("f");
    }
    let warmup = 2;
    let start = Instant::now();
    let mut measured_from = None;
    for second in 0..(warmup + o.seconds) {
        if second == warmup {
            measured_from = Some((Instant::now(), cpu_seconds(pid)));
        }
        writer.write_all(report(&base, second).as_bytes()).unwrap();
        writer.flush().unwrap();
        let next = start + Duration::from_secs(second + 1);
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    let (t0, c0) = measured_from.unwrap();
    let share = (cpu_seconds(pid) - c0) / t0.elapsed().as_secs_f64();
    drop(writer);
    drop(session);
    share
}

/// neuron-top attached to a live `neuronprof run`; returns its CPU share.
fn live_run(o: &Options, neuronprof: &Path, frozen: bool) -> f64 {
    let dir = std::env::temp_dir().join(format!("neuron-top-cost-live-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let xdg = dir.join("xdg");
    std::fs::create_dir_all(&xdg).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&xdg, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let mut workload: Child = Command::new(neuronprof)
        .args([
            "run",
            "gpt",
            "--ranks",
            "2",
            "--steps",
            "1000000",
            "--numerics",
            "off",
        ])
        .args(["--profile", "wait=1000000,warmup=0,active=1"])
        .arg("--out")
        .arg(dir.join("traces"))
        .env("XDG_RUNTIME_DIR", &xdg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("neuronprof run");
    std::thread::sleep(Duration::from_secs(2));
    let cmd = format!(
        "env XDG_RUNTIME_DIR={} {} --refresh 1",
        xdg.display(),
        o.neuron_top.display()
    );
    let (session, pid) = Session::start(if frozen { "live-frozen" } else { "live" }, &cmd);
    if frozen {
        std::thread::sleep(Duration::from_millis(500));
        session.keys("f");
    }
    std::thread::sleep(Duration::from_secs(2));
    let (t0, c0) = (Instant::now(), cpu_seconds(pid));
    std::thread::sleep(Duration::from_secs(o.seconds));
    let share = (cpu_seconds(pid) - c0) / t0.elapsed().as_secs_f64();
    drop(session);
    let _ = workload.kill();
    let _ = workload.wait();
    share
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let o = parse_args();
    assert!(
        o.neuron_top.exists(),
        "{} is missing: cargo build --release -p tui",
        o.neuron_top.display()
    );
    let pct = |x: f64| format!("{:.3} %", x * 100.0);
    let mut rows: Vec<(&str, Vec<f64>, Vec<f64>)> =
        vec![("stdin, 8 ranks", Vec::new(), Vec::new())];
    if o.neuronprof.is_some() {
        rows.push(("live, gpt 2 ranks", Vec::new(), Vec::new()));
    }
    for run in 0..o.runs {
        for row in rows.iter_mut() {
            let (full, frozen) = if row.0.starts_with("stdin") {
                (stdin_run(&o, false), stdin_run(&o, true))
            } else {
                let np = o.neuronprof.as_ref().unwrap();
                (live_run(&o, np, false), live_run(&o, np, true))
            };
            eprintln!(
                "run {run}: {}: {} (frozen {})",
                row.0,
                pct(full),
                pct(frozen)
            );
            row.1.push(full);
            row.2.push(frozen);
        }
    }
    println!(
        "neuron-top CPU share of one core at 1 s refresh, {} s windows, median of {}:",
        o.seconds, o.runs
    );
    for (name, full, frozen) in rows {
        let (f, b) = (median(full), median(frozen));
        let ratio = if b > 0.0 {
            format!("{:.1}x", f / b)
        } else {
            "-".into()
        };
        println!(
            "  {name:<18} {:>8}   baseline (display frozen) {:>8}   ratio {ratio}",
            pct(f),
            pct(b)
        );
    }
}
