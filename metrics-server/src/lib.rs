//! Serves Prometheus metrics over HTTP: `GET /metrics` (and `HEAD`) answers the latest
//! exposition text, other paths 404, other methods 405.
//!
//! The HTTP side is hyper's HTTP/1 server on a single-threaded tokio runtime: one
//! thread (`metrics-http`) serves every connection, whatever the clients do. Its
//! limits, each an answer to a client that holds on or sends too much:
//!
//! - a request head (request line and headers) of at most [`MAX_HEAD_BYTES`] and
//!   [`MAX_HEADERS`] headers (hyper answers 431 past either, and closes);
//! - [`HEAD_DEADLINE`] to send the head and [`REQUEST_DEADLINE`] for the whole
//!   connection, answer included (one request per connection: no keep-alive), after
//!   which it is closed: a client trickling bytes holds a connection that long, and
//!   no thread;
//! - at most [`MAX_CONNECTIONS`] open: a new connection beyond that closes the oldest
//!   one still sending its request, so idle connections cannot lock a scraper out;
//! - an `accept` error (EMFILE) pauses accepting for 10 ms, doubling up to 1 s while
//!   the errors go on, rather than spinning.
//!
//! Answering copies nothing: the text is shared ([`Exposition::set`] replaces it as a
//! whole).
//!
//! # Who can read it
//!
//! The metrics name the host, the pids, the workload and the operators of every
//! process publishing on the host, which the processes' own endpoint sockets show only
//! to their owner. [`reach`] decides where the server may listen: loopback unless the
//! user names a non-loopback IP address or allows it ([`Exposure::Public`],
//! `neuronprof monitor --listen-public`), and [`reach::audience`] says who can read
//! the address in the end (on loopback, every local user).
//!
//! Key types: [`Exposition`] (the text, shared between whoever renders it and the
//! server) and [`MetricsServer`] (the listening server; dropping it stops it).
//!
//! # Pushing to an OpenTelemetry collector
//!
//! [`push::OtlpPusher`] posts OTLP/HTTP protobuf bodies (`exporters::otlp` encodes them)
//! to a collector's `/v1/metrics`, with the same hyper, on a one-thread runtime of its
//! own; [`push::endpoint_from`] picks the URL from `--otlp-endpoint` or OpenTelemetry's
//! standard `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`.
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

pub mod push;
pub mod reach;
mod serve;

use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;

pub use reach::Exposure;

/// The content type of Prometheus' text exposition format, version 0.0.4.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The path the metrics are served at.
pub const METRICS_PATH: &str = "/metrics";

/// The longest request head (request line and headers) read, bytes (hyper's smallest
/// buffer; a scraper's request is a few hundred bytes).
pub const MAX_HEAD_BYTES: usize = 8192;
/// The most headers a request may carry.
pub const MAX_HEADERS: usize = 32;
/// The most connections open at once.
pub const MAX_CONNECTIONS: usize = 256;
/// How long a client has to send its request head.
pub const HEAD_DEADLINE: Duration = Duration::from_secs(2);
/// How long a connection may stay open, from its accept to the end of its answer.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(5);

/// The exposition text being served; clones share it.
#[derive(Debug, Clone, Default)]
pub struct Exposition {
    text: Arc<RwLock<Bytes>>,
}

impl Exposition {
    /// Replaces the text every later scrape gets.
    pub fn set(&self, text: String) {
        *self.text.write().unwrap_or_else(|p| p.into_inner()) = Bytes::from(text);
    }

    /// The current text.
    pub fn get(&self) -> String {
        String::from_utf8_lossy(&self.bytes()).into_owned()
    }

    /// The current text's bytes, shared (a scrape copies nothing).
    fn bytes(&self) -> Bytes {
        self.text.read().unwrap_or_else(|p| p.into_inner()).clone()
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

/// A listening metrics server; dropping it stops it (and closes its connections).
#[derive(Debug)]
pub struct MetricsServer {
    local_addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// Listens on `addr` (port 0 picks a free port) and serves `exposition`; a host
    /// name must resolve to loopback addresses ([`reach::resolve`] with
    /// [`Exposure::Loopback`]).
    pub fn bind(addr: &str, exposition: Exposition) -> Result<Self, BindError> {
        Self::bind_with(addr, Exposure::Loopback, exposition)
    }

    /// Listens on `addr` as [`reach::resolve`] allows it under `exposure`.
    pub fn bind_with(
        addr: &str,
        exposure: Exposure,
        exposition: Exposition,
    ) -> Result<Self, BindError> {
        let error = |reason: String| BindError {
            addr: addr.to_owned(),
            reason,
        };
        let resolved = reach::resolve(addr, exposure)?;
        let listener =
            std::net::TcpListener::bind(&resolved[..]).map_err(|e| error(e.to_string()))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| error(e.to_string()))?;
        let local_addr = listener.local_addr().map_err(|e| error(e.to_string()))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| error(format!("cannot start the server's runtime: {e}")))?;
        let listener = {
            let _context = runtime.enter();
            tokio::net::TcpListener::from_std(listener).map_err(|e| error(e.to_string()))?
        };
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let thread = std::thread::Builder::new()
            .name("metrics-http".to_owned())
            .spawn(move || runtime.block_on(serve::serve(listener, exposition, stopped)))
            .map_err(|e| error(format!("cannot start the server thread: {e}")))?;
        Ok(MetricsServer {
            local_addr,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The address it listens on (with the port chosen when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        // The thread drops the listener and its runtime (every connection) before it
        // ends: once joined, the port refuses connections.
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
