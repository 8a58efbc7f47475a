//! The live endpoint under clients that hold on: 1,000 idle connections, one that
//! trickles its request a byte a second, and one that sends 1 MiB without a newline.
//! A client asking for a report meanwhile gets it within [`BOUND`] every time, and
//! the endpoint keeps one thread and a bounded resident set. The server this replaced
//! read one connection at a time with a 2 s timeout per read: behind 1,000 idle
//! connections a request waited about half an hour.

#[path = "support/proc_status.rs"]
mod proc_status;
#[path = "../../tests/support/skip.rs"]
mod skip;

use std::io::{Read as _, Write as _};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use neuron_backend::monitor;

/// How long a request may take while the slow clients are connected.
const BOUND: Duration = Duration::from_millis(100);
/// Idle connections opened before asking.
const IDLE: usize = 1000;
/// How long the asking goes on: past the 2 s deadline of the first slow clients.
const ASKING: Duration = Duration::from_secs(4);
/// What the resident set may grow by while the slow clients are connected.
const RSS_GROWTH_BYTES: u64 = 32 << 20;

fn ask(path: &Path) -> (Duration, String) {
    let started = Instant::now();
    let mut stream = UnixStream::connect(path).expect("connecting to the endpoint");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(b"{\"period_s\": 0.5}\n").unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("a whole answer");
    (started.elapsed(), answer)
}

/// Sends `{"period_s": 1}` one byte a second, reconnecting when dropped, until `stop`.
fn trickle(path: PathBuf, stop: &AtomicBool) -> usize {
    let mut dropped = 0;
    while !stop.load(Ordering::Relaxed) {
        let mut stream = UnixStream::connect(&path).unwrap();
        for byte in b"{\"period_s\": 1}".iter().cycle() {
            if stop.load(Ordering::Relaxed) {
                return dropped;
            }
            if stream.write_all(&[*byte]).is_err() {
                dropped += 1;
                break;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    dropped
}

/// Sends 1 MiB without a newline; returns what the endpoint answered.
fn oversized(path: &Path) -> String {
    let mut stream = UnixStream::connect(path).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    // The endpoint stops reading at 4 KiB, answers and closes: the write fails then.
    let _ = stream.write_all(&vec![b'x'; 1 << 20]);
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
}

#[test]
fn idle_trickling_and_oversized_clients_do_not_delay_a_request() {
    if !monitor::enabled() {
        skip::skipped(
            "neuron-backend: idle_trickling_and_oversized_clients_do_not_delay_a_request",
            "NEURONPROF_MONITOR=0 switches the endpoint off",
        );
        return;
    }
    let path = monitor::start().expect("the endpoint starts");
    // Warm up (the first answer starts the history), then take the baseline.
    ask(&path);
    let rss_before = proc_status::rss_bytes();
    let threads_before = proc_status::threads();

    let idle: Vec<UnixStream> = (0..IDLE)
        .map(|_| UnixStream::connect(&path).expect("connecting an idle client"))
        .collect();
    // Connected, not yet accepted: let the endpoint take them off its queue before
    // timing requests behind them.
    std::thread::sleep(Duration::from_millis(300));
    let stop = AtomicBool::new(false);
    let (slowest, answers, oversized_answer) = std::thread::scope(|scope| {
        let trickler = scope.spawn(|| trickle(path.clone(), &stop));
        let big = scope.spawn(|| oversized(&path));
        let started = Instant::now();
        let mut slowest = Duration::ZERO;
        let mut answers = 0;
        while started.elapsed() < ASKING {
            let (took, answer) = ask(&path);
            let doc: serde_json::Value = serde_json::from_str(&answer).expect("a JSON answer");
            assert!(doc["neuron_hardware_info"].is_object(), "{answer}");
            slowest = slowest.max(took);
            answers += 1;
            assert!(
                proc_status::threads_named("neuronprof-moni") == 1,
                "the endpoint has one thread"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        stop.store(true, Ordering::Relaxed);
        let big = big.join().unwrap();
        assert!(trickler.join().unwrap() >= 1, "the trickler was dropped");
        (slowest, answers, big)
    });
    eprintln!("slowest of {answers} requests: {slowest:?}");
    assert!(
        slowest < BOUND,
        "the slowest of {answers} requests took {slowest:?} with {IDLE} idle clients, a \
         trickling one and an oversized one connected"
    );
    assert!(
        oversized_answer.contains("longer than 4096 bytes"),
        "{oversized_answer}"
    );
    // The test's own two threads have ended; the endpoint started none.
    assert_eq!(proc_status::threads(), threads_before);
    let rss_after = proc_status::rss_bytes();
    assert!(
        rss_after < rss_before + RSS_GROWTH_BYTES,
        "resident set grew from {rss_before} to {rss_after} bytes"
    );
    drop(idle);
}
