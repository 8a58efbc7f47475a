//! What live publishing costs a workload: step time with the endpoint off, and on with
//! a client polling at 1 Hz and at 10 Hz (pessimistic), interleaved round by round.
//!
//! ```text
//! cargo run --release -p neuron-backend --example live_overhead -- [rounds] [steps] [ranks]
//! ```
//!
//! Prints, per mode, the median over the rounds of rank 0's wall time per step and of
//! the process's CPU time per step (all threads: ranks, the endpoint, the client),
//! and their ratios to "off"; on a shared machine both move by several percent from
//! run to run. So it also measures publishing directly: the CPU time of the endpoint
//! thread (`neuronprof-monitor`: sampling and answering) and of the client thread
//! during the run, per step, as a share of the workload's CPU time per step with
//! publishing off. (The recording path's own counters are measured per op by
//! `cargo bench -p neuron-backend -- dispatch`.)
//! The client runs in this process (a thread connecting to the socket like
//! `neuronprof monitor` does), so its own CPU time is counted against the workload.

use std::io::{Read as _, Write as _};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use neuron_backend::monitor;
use neuron_backend::workloads::{run_with_hooks, FnHooks, Workload, WorkloadConfig};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    Off,
    Poll(Duration),
}

impl Mode {
    fn name(self) -> String {
        match self {
            Mode::Off => "publishing off".into(),
            Mode::Poll(every) => format!("on, client every {every:?}"),
        }
    }
}

fn thread_cpu_ns() -> u64 {
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable rusage; RUSAGE_THREAD is Linux's.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    let ns = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1_000;
    ns(usage.ru_utime) + ns(usage.ru_stime)
}

/// CPU ns of this process's thread named `name`: the first field of
/// `/proc/self/task/<tid>/schedstat` (time on a CPU, in ns).
fn named_thread_cpu_ns(name: &str) -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    for task in tasks.flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.trim() == name {
            let stat = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
            return stat
                .split_ascii_whitespace()
                .next()
                .and_then(|f| f.parse().ok())
                .unwrap_or(0);
        }
    }
    0
}

/// Polls until stopped; returns the answers received and the thread's CPU ns.
fn poll(socket: &Path, every: Duration, stop: &AtomicBool) -> (usize, u64) {
    let cpu_start = thread_cpu_ns();
    let mut answers = 0;
    let mut next = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now < next {
            // Like `neuronprof monitor`: sleep to the next request, waking at most every
            // 50 ms to notice the end.
            std::thread::sleep((next - now).min(Duration::from_millis(50)));
            continue;
        }
        next += every;
        let Ok(mut stream) = UnixStream::connect(socket) else {
            continue;
        };
        let request = format!("{{\"period_s\": {}}}\n", every.as_secs_f64());
        let mut answer = Vec::new();
        if stream.write_all(request.as_bytes()).is_ok()
            && stream.read_to_end(&mut answer).is_ok()
            && !answer.is_empty()
        {
            answers += 1;
        }
    }
    (answers, thread_cpu_ns() - cpu_start)
}

fn process_cpu_ns() -> u64 {
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable rusage.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let ns = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1_000;
    ns(usage.ru_utime) + ns(usage.ru_stime)
}

/// Wall ns per step on rank 0, process CPU ns per step (between rank 0's first and
/// last step), and publishing CPU ns (endpoint thread and client) per step.
fn run_once(config: &WorkloadConfig, mode: Mode, socket: &Path) -> (f64, f64, f64) {
    // Only this run's ranks are published (not the previous runs' finished ones).
    monitor::forget_finished();
    monitor::set_enabled(mode != Mode::Off);
    // Thread names are cut to 15 bytes: "neuronprof-monitor" reads "neuronprof-moni".
    let server_start = named_thread_cpu_ns("neuronprof-moni");
    let mut client_ns = 0;
    let stop = AtomicBool::new(false);
    let marks: Mutex<Vec<(Instant, u64)>> = Mutex::new(Vec::with_capacity(config.steps));
    std::thread::scope(|scope| {
        let client = match mode {
            Mode::Poll(every) => {
                let stop = &stop;
                Some(scope.spawn(move || poll(socket, every, stop)))
            }
            Mode::Off => None,
        };
        let hooks = FnHooks {
            on_start: |_rank| {},
            on_step: |step: &_| {
                let step: &neuron_backend::workloads::StepReport = step;
                if step.rank == 0 {
                    marks
                        .lock()
                        .unwrap()
                        .push((Instant::now(), process_cpu_ns()));
                }
            },
        };
        run_with_hooks(config, &hooks).expect("the workload runs");
        stop.store(true, Ordering::Relaxed);
        if let Some(client) = client {
            let (answers, cpu_ns) = client.join().unwrap();
            assert!(answers > 0, "the client got answers");
            client_ns = cpu_ns;
        }
    });
    let marks = marks.into_inner().unwrap();
    let (first, last) = (marks[0], marks[marks.len() - 1]);
    let steps = (marks.len() - 1) as f64;
    let server_ns = named_thread_cpu_ns("neuronprof-moni") - server_start;
    (
        (last.0 - first.0).as_nanos() as f64 / steps,
        (last.1 - first.1) as f64 / steps,
        (server_ns + client_ns) as f64 / marks.len() as f64,
    )
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("numbers: rounds steps ranks"))
        .collect();
    let rounds = args.first().copied().unwrap_or(5);
    let mut config = WorkloadConfig::new(Workload::Gpt);
    config.steps = args.get(1).copied().unwrap_or(600);
    config.ranks = args.get(2).copied().unwrap_or(4);
    config.batch = 8 * config.ranks;
    let socket = monitor::start().expect("the endpoint starts");
    println!(
        "gpt (tiny, numerics on) on {} ranks, {} steps per run, {rounds} rounds; endpoint {}",
        config.ranks,
        config.steps,
        socket.display()
    );
    let modes = [
        Mode::Off,
        Mode::Poll(Duration::from_secs(1)),
        Mode::Poll(Duration::from_millis(100)),
    ];
    let mut wall: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
    let mut cpu: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
    let mut publishing: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
    // Warm-up run (caches, page faults, thread start-up), not counted.
    run_once(&config, Mode::Off, &socket);
    for round in 0..rounds {
        for k in 0..modes.len() {
            let m = (round + k) % modes.len();
            let (wall_ns, cpu_ns, publishing_ns) = run_once(&config, modes[m], &socket);
            wall[m].push(wall_ns);
            cpu[m].push(cpu_ns);
            publishing[m].push(publishing_ns);
            println!(
                "round {round}: {:<28} {:>8.1} µs/step wall {:>8.1} µs/step CPU {:>6.2} µs/step publishing",
                modes[m].name(),
                wall_ns / 1e3,
                cpu_ns / 1e3,
                publishing_ns / 1e3
            );
        }
    }
    let wall_base = median(&mut wall[0].clone());
    let cpu_base = median(&mut cpu[0].clone());
    println!(
        "\nmode                          wall µs/step  ratio   CPU µs/step  ratio   publishing µs/step  share of off CPU"
    );
    for (((mode, w), c), p) in modes
        .iter()
        .zip(&mut wall)
        .zip(&mut cpu)
        .zip(&mut publishing)
    {
        let (w, c, p) = (median(w), median(c), median(p));
        println!(
            "{:<28} {:>13.1} {:>6.3} {:>13.1} {:>6.3} {:>20.2} {:>16.3}%",
            mode.name(),
            w / 1e3,
            w / wall_base,
            c / 1e3,
            c / cpu_base,
            p / 1e3,
            p / cpu_base * 100.0
        );
    }
}
