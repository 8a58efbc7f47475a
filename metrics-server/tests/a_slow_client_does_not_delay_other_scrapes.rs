//! Clients that connect and send nothing, or trickle a request byte by byte, must not
//! hold up anyone else's scrape. The serial loop this server replaced read each
//! connection in turn with a 2 s read timeout, so one silent client delayed every other
//! scrape by about 2 s; here a scrape behind several slow clients must finish within
//! [`BOUND`], which that loop could not meet.

mod common;

use std::io::Write as _;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::request;
use metrics_server::{Exposition, MetricsServer};

/// How long a scrape may take while slow clients are connected (loopback, tiny body;
/// generous for a loaded 2-core machine, well under the old loop's 2 s per client).
const BOUND: Duration = Duration::from_millis(750);

/// Slow clients connected at once.
const SLOW_CLIENTS: usize = 6;

fn server() -> MetricsServer {
    let exposition = Exposition::default();
    exposition.set("up 1\n".to_owned());
    MetricsServer::bind("127.0.0.1:0", exposition).expect("binds")
}

/// Three scrapes, each within [`BOUND`], while `slow` describes who else is connected.
fn scrapes_are_quick(server: &MetricsServer, slow: &str) {
    for attempt in 0..3 {
        let started = Instant::now();
        let answer = request(server.local_addr(), "GET", "/metrics");
        let took = started.elapsed();
        assert_eq!((answer.status, answer.body.as_str()), (200, "up 1\n"));
        assert!(took < BOUND, "scrape {attempt} took {took:?} with {slow}");
    }
}

#[test]
fn silent_clients_do_not_delay_a_scrape() {
    let server = server();
    let silent: Vec<TcpStream> = (0..SLOW_CLIENTS)
        .map(|_| TcpStream::connect(server.local_addr()).unwrap())
        .collect();
    // Let the server accept them (and block reading them) before scraping.
    std::thread::sleep(Duration::from_millis(100));
    scrapes_are_quick(&server, &format!("{SLOW_CLIENTS} silent clients connected"));
    drop(silent);
}

#[test]
fn trickling_clients_do_not_delay_a_scrape() {
    let server = server();
    let addr = server.local_addr();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let tricklers: Vec<_> = (0..SLOW_CLIENTS)
        .map(|_| {
            let stop = std::sync::Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut stream = TcpStream::connect(addr).unwrap();
                // A header line that never ends, one byte every 50 ms, for at most 3 s.
                let request = b"GET /metrics HTTP/1.1\r\nX-Slow: "
                    .iter()
                    .chain([b'a'; 60].iter());
                for byte in request {
                    if stop.load(std::sync::atomic::Ordering::Relaxed) {
                        break;
                    }
                    if stream.write_all(&[*byte]).is_err() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    scrapes_are_quick(&server, &format!("{SLOW_CLIENTS} clients trickling bytes"));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for trickler in tricklers {
        trickler.join().unwrap();
    }
}

#[test]
fn concurrent_scrapes_all_get_the_metrics() {
    let server = server();
    let addr = server.local_addr();
    let scrapers: Vec<_> = (0..8)
        .map(|_| std::thread::spawn(move || request(addr, "GET", "/metrics")))
        .collect();
    for scraper in scrapers {
        let answer = scraper.join().unwrap();
        assert_eq!((answer.status, answer.body.as_str()), (200, "up 1\n"));
    }
}
