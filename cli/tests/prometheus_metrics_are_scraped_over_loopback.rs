//! `neuronprof monitor --prometheus`: a live 2-rank world in this process, its
//! documents fed to the metrics server, scraped over loopback HTTP and parsed; and where
//! the command serves them: a bare port on loopback, saying who can read the metrics
//! there, off the loopback only with `--listen-public` (or a non-loopback IP named) and
//! then with a warning; a name it cannot resolve is an error naming it. (A name resolving
//! off the loopback is refused: `metrics_server::reach`'s tests; the limits under hostile
//! clients: `metrics-server/tests`.)

#[path = "../../tests/support/skip.rs"]
mod skip;

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt as _;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use metrics_server::{Exposition, MetricsServer};
use neuron_backend::workloads::{run_with_hooks, FnHooks, Workload, WorkloadConfig};
use neuronprof::monitor::{Collector, PrometheusFeed};

fn get(addr: std::net::SocketAddr, path: &str) -> (String, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    // The server keeps HTTP/1.1 connections alive unless asked to close.
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    (head.to_owned(), body.to_owned())
}

/// `(name, labels, value)` of every sample line.
fn samples(text: &str) -> Vec<(String, String, f64)> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|line| {
            let (head, value) = line
                .rsplit_once(' ')
                .unwrap_or_else(|| panic!("not `name{{labels}} value`: {line:?}\n{text}"));
            let (name, labels) = head.split_once('{').unwrap_or((head, ""));
            (
                name.to_owned(),
                labels.to_owned(),
                value
                    .parse()
                    .unwrap_or_else(|_| panic!("not a number: {line:?}")),
            )
        })
        .collect()
}

#[test]
fn metrics_of_each_rank_are_served_over_http() {
    if !neuron_backend::monitor::enabled() {
        skip::skipped(
            "neuronprof: metrics_of_each_rank_are_served_over_http",
            "NEURONPROF_MONITOR=0 switches the endpoint off",
        );
        return;
    }
    let socket = neuron_backend::monitor::start().expect("the endpoint starts");
    let pid = std::process::id();
    let mut config = WorkloadConfig::new(Workload::Gpt);
    config.ranks = 2;
    config.steps = 400;
    config.numerics = false;
    config.detail = neuron_backend::RecordDetail::Kernels;
    let done = AtomicBool::new(false);
    let exposition = Exposition::default();
    let server = MetricsServer::bind("127.0.0.1:0", exposition.clone()).unwrap();
    let addr = server.local_addr();
    let mut feed = PrometheusFeed::new(exposition);

    let body = std::thread::scope(|scope| {
        let run = scope.spawn(|| {
            let hooks = FnHooks {
                on_start: |_rank| {},
                on_step: |_step: &_| {
                    if !done.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                },
            };
            run_with_hooks(&config, &hooks)
        });
        // Wait for both ranks to be published, then two periods of documents.
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while neuron_backend::monitor::report_json(0.0)
            .matches("/rank")
            .count()
            < 2
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut collector = Collector::new(socket.parent().unwrap(), Duration::from_millis(300));
        collector.prime().unwrap();
        for _ in 0..2 {
            std::thread::sleep(Duration::from_millis(300));
            let line = collector.collect().unwrap();
            feed.update(&line).unwrap();
        }
        let (head, body) = get(addr, "/metrics");
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(head.contains("text/plain; version=0.0.4"), "{head}");
        let (head, _) = get(addr, "/nothing");
        assert!(head.starts_with("HTTP/1.1 404"), "{head}");
        done.store(true, Ordering::Relaxed);
        run.join().unwrap().expect("the workload runs");
        body
    });

    assert!(body.contains("# HELP neuroncore_utilization_ratio "));
    assert!(body.contains("# TYPE neuroncore_utilization_ratio gauge"));
    assert!(body.contains("# TYPE execution_status_total counter"));
    let all = samples(&body);
    for rank in 0..2 {
        let tag = format!("runtime_tag=\"{pid}/rank{rank}\"");
        let find = |name: &str| {
            all.iter()
                .filter(|(n, l, _)| n == name && l.contains(&tag))
                .map(|(_, _, v)| *v)
                .collect::<Vec<f64>>()
        };
        let util = find("neuroncore_utilization_ratio");
        assert_eq!(util.len(), 1, "rank {rank}: one core\n{body}");
        assert!(util[0] > 0.0 && util[0] <= 1.0, "a ratio: {}", util[0]);
        let memory = find("neuron_runtime_memory_used_bytes");
        assert!(memory.iter().any(|&m| m > 0.0), "rank {rank}: {memory:?}");
        assert!(find("neuronprof_hbm_used_bytes")[0] > 0.0);
        assert!(find("neuronprof_engine_utilization_ratio")
            .iter()
            .any(|&v| v > 0.0));
        assert!(find("execution_status_total").iter().any(|&v| v > 0.0));
        assert_eq!(find("neuronprof_collectives_in_flight").len(), 1);
        assert!(!find("neuronprof_collective_latency_seconds").is_empty());
    }
    assert!(all
        .iter()
        .any(|(n, _, v)| n == "system_memory_total_bytes" && *v > 0.0));
}

/// `neuronprof monitor ARGS` with an empty endpoint folder of its own.
fn monitor(args: &[&str]) -> Output {
    let dir = std::env::temp_dir().join(format!("neuronprof-monitor-reach-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    Command::new(env!("CARGO_BIN_EXE_neuronprof"))
        .arg("monitor")
        .args(args)
        .env("XDG_RUNTIME_DIR", &dir)
        .output()
        .expect("running neuronprof monitor")
}

#[test]
fn a_bare_port_is_served_on_loopback_saying_who_can_read_it() {
    let output = monitor(&["--prometheus", "0", "--count", "1", "--period", "100ms"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("serving http://127.0.0.1:"), "{stderr}");
    assert!(
        stderr.contains("every user and process of this host can read them"),
        "{stderr}"
    );
    assert!(!stderr.contains("warning"), "{stderr}");
}

#[test]
fn listen_public_serves_every_interface_with_a_warning() {
    let output = monitor(&[
        "--prometheus",
        "0",
        "--listen-public",
        "--count",
        "1",
        "--period",
        "100ms",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "warning: serving the metrics of every process on this host at http://0.0.0.0:"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("on any of its network interfaces"),
        "{stderr}"
    );
}

#[test]
fn bad_addresses_and_a_lone_listen_public_are_errors() {
    let output = monitor(&["--prometheus", "no-such-host.invalid:9464", "--count", "1"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("no-such-host.invalid:9464"), "{stderr}");

    let output = monitor(&["--listen-public", "--count", "1"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("--prometheus"), "{stderr}");
}
