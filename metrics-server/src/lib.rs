//! Serves Prometheus metrics over HTTP: `GET /metrics` (and `HEAD`) answers the latest
//! exposition text, other paths 404, other methods 405.
//!
//! The HTTP side is [`tiny_http`]: its acceptor hands each connection to a pool of
//! threads that grows while all are busy, and only complete requests reach the answering
//! threads, so a client that connects and sends nothing (or trickles bytes) holds one
//! connection thread and delays nobody else's scrape. The answering threads only copy
//! the current text, which the writer replaces as a whole ([`Exposition::set`]).
//!
//! Key types: [`Exposition`] (the text, shared between whoever renders it and the
//! server) and [`MetricsServer`] (the listening server; dropping it stops it).
//!
//! ```
//! use std::io::{Read as _, Write as _};
//!
//! let exposition = metrics_server::Exposition::default();
//! exposition.set("# TYPE up gauge\nup 1\n".to_owned());
//! let server = metrics_server::MetricsServer::bind("127.0.0.1:0", exposition.clone()).unwrap();
//! let mut stream = std::net::TcpStream::connect(server.local_addr()).unwrap();
//! stream.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
//! let mut response = String::new();
//! stream.read_to_string(&mut response).unwrap();
//! assert!(response.starts_with("HTTP/1.0 200"));
//! assert!(response.ends_with("up 1\n"));
//! ```

#![warn(missing_docs)]

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::{Arc, RwLock};
use std::thread::JoinHandle;

/// The content type of Prometheus' text exposition format, version 0.0.4.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The path the metrics are served at.
pub const METRICS_PATH: &str = "/metrics";

/// Threads answering complete requests (reading them is tiny_http's pool's work).
const ANSWERING_THREADS: usize = 2;
/// How long dropping a server waits for its port to refuse connections.
const CLOSE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// The exposition text being served; clones share it.
#[derive(Debug, Clone, Default)]
pub struct Exposition {
    text: Arc<RwLock<Arc<str>>>,
}

impl Exposition {
    /// Replaces the text every later scrape gets.
    pub fn set(&self, text: String) {
        *self.text.write().unwrap_or_else(|p| p.into_inner()) = text.into();
    }

    /// The current text.
    pub fn get(&self) -> Arc<str> {
        Arc::clone(&self.text.read().unwrap_or_else(|p| p.into_inner()))
    }
}

/// Why the server could not start.
#[derive(Debug)]
pub struct BindError {
    /// The address asked for, as given.
    pub addr: String,
    /// What went wrong.
    pub reason: String,
}

impl std::fmt::Display for BindError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot serve metrics on {}: {}", self.addr, self.reason)
    }
}

impl std::error::Error for BindError {}

/// A listening metrics server; dropping it stops it.
pub struct MetricsServer {
    /// `None` once dropped.
    server: Option<Arc<tiny_http::Server>>,
    local_addr: SocketAddr,
    answering: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for MetricsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsServer")
            .field("local_addr", &self.local_addr)
            .field("answering_threads", &self.answering.len())
            .finish_non_exhaustive()
    }
}

impl MetricsServer {
    /// Listens on `addr` (port 0 picks a free port) and serves `exposition`.
    pub fn bind(addr: &str, exposition: Exposition) -> Result<Self, BindError> {
        let error = |reason: String| BindError {
            addr: addr.to_owned(),
            reason,
        };
        // Resolve first, so a bad address is reported as such rather than as a bind error.
        let resolved: Vec<SocketAddr> = addr
            .to_socket_addrs()
            .map_err(|e| error(e.to_string()))?
            .collect();
        let server = tiny_http::Server::http(&resolved[..]).map_err(|e| error(e.to_string()))?;
        let local_addr = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| error("not an IP listener".to_owned()))?;
        let server = Arc::new(server);
        let mut answering = Vec::with_capacity(ANSWERING_THREADS);
        for index in 0..ANSWERING_THREADS {
            let server = Arc::clone(&server);
            let exposition = exposition.clone();
            let thread = std::thread::Builder::new()
                .name(format!("metrics-http-{index}"))
                .spawn(move || answer_requests(&server, &exposition))
                .map_err(|e| error(format!("cannot start a server thread: {e}")))?;
            answering.push(thread);
        }
        Ok(MetricsServer {
            server: Some(server),
            local_addr,
            answering,
        })
    }

    /// The address it listens on (with the port chosen when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        let Some(server) = self.server.take() else {
            return;
        };
        // Each `unblock` wakes one thread blocked in `recv`, which then returns.
        for _ in &self.answering {
            server.unblock();
        }
        for thread in self.answering.drain(..) {
            let _ = thread.join();
        }
        // The last reference: tiny_http's drop tells its accept thread to stop, and that
        // thread closes the listener afterwards, on its own. Wait (a bounded time) until
        // the port refuses connections, so that a dropped server is not listening (and
        // its port can be bound again) when drop returns; a CI run saw it still accept
        // right after the drop.
        drop(server);
        let deadline = std::time::Instant::now() + CLOSE_WAIT;
        while std::time::Instant::now() < deadline
            && std::net::TcpStream::connect_timeout(
                &self.local_addr,
                std::time::Duration::from_millis(100),
            )
            .is_ok()
        {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}

/// Answers complete requests until the server is unblocked.
fn answer_requests(server: &tiny_http::Server, exposition: &Exposition) {
    while let Ok(request) = server.recv() {
        // A client that went away mid-answer is its own problem, not the server's.
        let response = answer(request.method(), request.url(), exposition);
        let _ = request.respond(response);
    }
}

/// The response to one request: the metrics, 404 or 405.
fn answer(
    method: &tiny_http::Method,
    url: &str,
    exposition: &Exposition,
) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
    use tiny_http::{Method, Response};
    let path = url.split(['?', '#']).next().unwrap_or("");
    let (status, content_type, body, allow) = match (method, path) {
        (Method::Get | Method::Head, METRICS_PATH) => (
            200,
            CONTENT_TYPE,
            exposition.get().as_bytes().to_vec(),
            false,
        ),
        (Method::Get | Method::Head, _) => (
            404,
            "text/plain; charset=utf-8",
            format!("not found: metrics are at {METRICS_PATH}\n").into_bytes(),
            false,
        ),
        _ => (
            405,
            "text/plain; charset=utf-8",
            b"only GET and HEAD are served\n".to_vec(),
            true,
        ),
    };
    // tiny_http leaves the body out of answers to HEAD and keeps its Content-Length. It
    // would send a body of 32 KiB or more chunked; the body is already whole in memory,
    // so it always goes with its length (a fleet's exposition is larger than that).
    let mut response = Response::from_data(body)
        .with_chunked_threshold(usize::MAX)
        .with_status_code(status)
        .with_header(header("Content-Type", content_type));
    if allow {
        response.add_header(header("Allow", "GET, HEAD"));
    }
    response
}

fn header(name: &str, value: &str) -> tiny_http::Header {
    // Both are ASCII literals of this file, which `from_bytes` accepts.
    tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes())
        .unwrap_or_else(|()| unreachable!("{name}: {value} is a valid header"))
}
