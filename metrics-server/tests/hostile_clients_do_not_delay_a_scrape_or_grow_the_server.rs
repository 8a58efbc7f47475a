//! While 1,000 connections sit idle, one client trickles a request a byte a second and
//! another sends a 1 MiB header, a scraper gets `/metrics` within [`BOUND`] every time,
//! and the server keeps one thread and a bounded resident set. The tiny_http server
//! this replaced started a thread for each waiting connection (1,000 idle connections:
//! about 1,000 threads) and read a header of any size.

mod common;

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::{request, rss_bytes, threads};
use metrics_server::{Exposition, MetricsServer, HEAD_DEADLINE};

/// How long a scrape may take while the hostile clients are connected.
const BOUND: Duration = Duration::from_millis(100);
/// Idle connections opened before scraping.
const IDLE: usize = 1000;
/// How long the scraping goes on: past the head deadline of the first slow clients.
const SCRAPING: Duration = Duration::from_secs(4);
/// Threads this test runs besides its own while scraping (trickler and big header).
const TEST_THREADS: u64 = 2;
/// What the resident set may grow by while the hostile clients are connected.
const RSS_GROWTH_BYTES: u64 = 32 << 20;

/// Sends a request head a byte a second until the server closes the connection;
/// returns how long that took.
fn trickle(addr: SocketAddr, stop: &AtomicBool) -> Option<Duration> {
    let started = Instant::now();
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_millis(1000)))
        .unwrap();
    let head = b"GET /metrics HTTP/1.1\r\nX-Slow: ";
    for byte in head.iter().chain(std::iter::repeat(&b'a')) {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        if stream.write_all(&[*byte]).is_err() {
            return Some(started.elapsed());
        }
        // Waits the second for a byte from the server: 0 (closed) or an error ends it.
        let mut answer = [0u8; 256];
        match stream.read(&mut answer) {
            Ok(0) => return Some(started.elapsed()),
            Ok(_) => {}
            Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => return Some(started.elapsed()),
        }
    }
    None
}

/// Sends a request with a 1 MiB header; returns the status line answered, if any.
fn big_header(addr: SocketAddr) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut request = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ".to_vec();
    request.extend(std::iter::repeat_n(b'a', 1 << 20));
    request.extend(b"\r\n\r\n");
    // The server stops reading at its limit and answers 431: the write may fail.
    let _ = stream.write_all(&request);
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer)
        .lines()
        .next()
        .unwrap_or("")
        .to_owned()
}

fn server_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.trim_end() == "metrics-http")
        .count()
}

#[test]
fn idle_trickling_and_oversized_clients_do_not_delay_a_scrape() {
    let exposition = Exposition::default();
    exposition.set("up 1\n".to_owned());
    let server = MetricsServer::bind("127.0.0.1:0", exposition).expect("binds");
    let addr = server.local_addr();
    assert_eq!(request(addr, "GET", "/metrics").status, 200);
    let threads_before = threads();
    let rss_before = rss_bytes();

    let idle: Vec<TcpStream> = (0..IDLE)
        .map(|_| TcpStream::connect(addr).expect("an idle connection"))
        .collect();
    // Connected, not yet accepted: let the server take them off its queue (a debug
    // build takes tens of ms for 1,000) before timing scrapes behind them.
    std::thread::sleep(Duration::from_millis(300));
    let stop = AtomicBool::new(false);
    let (slowest, scrapes, trickled, big) = std::thread::scope(|scope| {
        let trickler = scope.spawn(|| trickle(addr, &stop));
        let big = scope.spawn(|| big_header(addr));
        let started = Instant::now();
        let mut slowest = Duration::ZERO;
        let mut scrapes = 0;
        while started.elapsed() < SCRAPING {
            let asked = Instant::now();
            let answer = request(addr, "GET", "/metrics");
            slowest = slowest.max(asked.elapsed());
            scrapes += 1;
            assert_eq!((answer.status, answer.body.as_str()), (200, "up 1\n"));
            assert_eq!(server_threads(), 1, "the server runs on one thread");
            let threads = threads();
            assert!(
                threads <= threads_before + TEST_THREADS,
                "{threads} threads, {threads_before} before the clients came"
            );
            let rss = rss_bytes();
            assert!(
                rss < rss_before + RSS_GROWTH_BYTES,
                "resident set {rss} bytes, {rss_before} before the clients came"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        stop.store(true, Ordering::Relaxed);
        (
            slowest,
            scrapes,
            trickler.join().unwrap(),
            big.join().unwrap(),
        )
    });
    eprintln!(
        "slowest of {scrapes} scrapes: {slowest:?}; trickler closed on after {trickled:?}; \
         1 MiB header answered {big:?}"
    );
    assert!(
        slowest < BOUND,
        "the slowest of {scrapes} scrapes took {slowest:?} with {IDLE} idle connections, a \
         trickling client and a 1 MiB header"
    );
    let trickled = trickled.expect("the trickling client is closed on");
    assert!(
        trickled < HEAD_DEADLINE + Duration::from_millis(1500),
        "the trickling client was closed on after {trickled:?}"
    );
    assert!(
        big.is_empty() || big.starts_with("HTTP/1.1 431"),
        "the 1 MiB header got {big:?}"
    );
    drop(idle);
}
