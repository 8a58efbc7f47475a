//! The server's thread: a single-threaded tokio runtime accepting connections and
//! answering each with hyper's HTTP/1 server, under the limits of the crate docs.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, ALLOW, CONTENT_LENGTH, CONTENT_TYPE as CONTENT_TYPE_HEADER};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, Notify};

use crate::{
    Exposition, CONTENT_TYPE, HEAD_DEADLINE, MAX_CONNECTIONS, MAX_HEADERS, MAX_HEAD_BYTES,
    METRICS_PATH, REQUEST_DEADLINE,
};

/// The first pause after an `accept` error (EMFILE: out of file descriptors).
const ACCEPT_BACKOFF_MIN: Duration = Duration::from_millis(10);
/// The longest pause after `accept` errors in a row.
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// Accepts and serves connections until `stop` fires (or its sender is dropped).
pub(crate) async fn serve(
    listener: TcpListener,
    exposition: Exposition,
    mut stop: oneshot::Receiver<()>,
) {
    let connections = Arc::new(Connections::default());
    let mut backoff = ACCEPT_BACKOFF_MIN;
    loop {
        let accepted = tokio::select! {
            _ = &mut stop => return,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, _)) => {
                backoff = ACCEPT_BACKOFF_MIN;
                // None: every open connection is being answered; this one is closed.
                if let Some(slot) = connections.admit() {
                    let connections = Arc::clone(&connections);
                    let exposition = exposition.clone();
                    tokio::spawn(async move {
                        serve_connection(stream, &slot, exposition).await;
                        connections.close(slot.id);
                    });
                }
            }
            // The client gave up before the accept: nothing to wait for.
            Err(err) if err.kind() == std::io::ErrorKind::ConnectionAborted => {}
            Err(_) => {
                // A listener whose accept fails (EMFILE) stays readable: pause rather
                // than spin, longer while the errors go on.
                tokio::select! {
                    _ = &mut stop => return,
                    () = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(ACCEPT_BACKOFF_MAX);
            }
        }
    }
}

/// One connection: one request (no keep-alive), within [`REQUEST_DEADLINE`], unless it
/// is evicted first.
async fn serve_connection(stream: TcpStream, slot: &Slot, exposition: Exposition) {
    let _ = stream.set_nodelay(true);
    let service = hyper::service::service_fn(|request: Request<hyper::body::Incoming>| {
        // The head is complete: this connection is being answered, not waiting.
        slot.answering.store(true, Ordering::Relaxed);
        let response = answer(request.method(), request.uri().path(), &exposition);
        async move { Ok::<_, Infallible>(response) }
    });
    let mut http = hyper::server::conn::http1::Builder::new();
    http.keep_alive(false)
        .max_buf_size(MAX_HEAD_BYTES)
        .max_headers(MAX_HEADERS)
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_DEADLINE);
    let connection = http.serve_connection(TokioIo::new(stream), service);
    tokio::select! {
        // An error (a malformed or oversized request: hyper has answered 400 or 431
        // where it could) or the deadline ends the connection the same way.
        _ = tokio::time::timeout(REQUEST_DEADLINE, connection) => {}
        () = slot.evict.notified() => {}
    }
}

/// The response to one request: the metrics, 404 or 405.
fn answer(method: &Method, path: &str, exposition: &Exposition) -> Response<Full<Bytes>> {
    let (status, content_type, body, allow) = match (method, path) {
        (&Method::GET | &Method::HEAD, METRICS_PATH) => {
            (StatusCode::OK, CONTENT_TYPE, exposition.bytes(), false)
        }
        (&Method::GET | &Method::HEAD, _) => (
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            Bytes::from(format!("not found: metrics are at {METRICS_PATH}\n")),
            false,
        ),
        _ => (
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain; charset=utf-8",
            Bytes::from_static(b"only GET and HEAD are served\n"),
            true,
        ),
    };
    let length = body.len();
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE_HEADER, HeaderValue::from_static(content_type));
    // Explicit, so that an answer to HEAD carries the length of the body it leaves out.
    headers.insert(CONTENT_LENGTH, HeaderValue::from(length));
    if allow {
        headers.insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
    }
    response
}

/// One open connection.
#[derive(Debug)]
struct Slot {
    /// The order of acceptance.
    id: u64,
    /// Fired to close the connection early.
    evict: Notify,
    /// Whether its request has been read (it is being answered).
    answering: AtomicBool,
}

/// The open connections, to keep them within [`MAX_CONNECTIONS`].
#[derive(Debug, Default)]
struct Connections {
    open: Mutex<BTreeMap<u64, Arc<Slot>>>,
    next_id: AtomicU64,
}

impl Connections {
    /// A place for a new connection: at the limit, the oldest one still sending its
    /// request is closed for it (a flood of idle connections cannot lock scrapers
    /// out); `None` when every open connection is being answered.
    fn admit(&self) -> Option<Arc<Slot>> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if open.len() >= MAX_CONNECTIONS {
            let oldest = open
                .values()
                .find(|slot| !slot.answering.load(Ordering::Relaxed))
                .map(|slot| slot.id)?;
            if let Some(slot) = open.remove(&oldest) {
                // Stored if the connection is not waiting yet: it ends when it does.
                slot.evict.notify_one();
            }
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let slot = Arc::new(Slot {
            id,
            evict: Notify::new(),
            answering: AtomicBool::new(false),
        });
        open.insert(id, Arc::clone(&slot));
        Some(slot)
    }

    fn close(&self, id: u64) {
        self.open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_the_limit_the_oldest_waiting_connection_makes_room() {
        let connections = Connections::default();
        let slots: Vec<Arc<Slot>> = (0..MAX_CONNECTIONS)
            .map(|_| connections.admit().unwrap())
            .collect();
        slots[0].answering.store(true, Ordering::Relaxed);
        let newest = connections.admit().expect("room is made");
        let open = connections.open.lock().unwrap();
        assert_eq!(open.len(), MAX_CONNECTIONS);
        assert!(open.contains_key(&0), "the connection being answered stays");
        assert!(!open.contains_key(&1), "the oldest waiting one is closed");
        assert!(open.contains_key(&newest.id));
        drop(open);
        for slot in &slots {
            slot.answering.store(true, Ordering::Relaxed);
        }
        newest.answering.store(true, Ordering::Relaxed);
        assert!(
            connections.admit().is_none(),
            "all are being answered: no room"
        );
    }
}
