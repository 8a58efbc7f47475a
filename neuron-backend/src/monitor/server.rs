//! The endpoint's thread: answers each client with one report (the connections are
//! `clients`' work), and samples the publishers while clients are attached.

use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use runtime_hooks::clock::monotonic_ns;
use serde::Deserialize;

use super::clients::{Clients, Incoming, MAX_REQUEST_BYTES};
use super::cpu;
use super::endpoint::{self, EndpointError};
use super::registry::{self, Entry, EntryKind, HISTORY_SAMPLES, SAMPLE_INTERVAL_NS};
use super::report::{self, InFlightIndex, ReportContext};
use crate::DeviceProfile;

/// After this long without a client the sampler stops (and forgets its history).
const CLIENT_IDLE_NS: u64 = 60_000_000_000;

/// The longest period a report can cover, s.
pub const MAX_PERIOD_S: f64 = (SAMPLE_INTERVAL_NS as f64 * HISTORY_SAMPLES as f64) / 1e9;

#[derive(Debug)]
struct Server {
    path: PathBuf,
    /// The process that bound the socket: a forked child (a PyTorch DataLoader worker)
    /// inherits the exit handler but must not remove its parent's socket.
    pid: u32,
}

static SERVER: OnceLock<Result<Server, String>> = OnceLock::new();
static STARTED_NS: OnceLock<u64> = OnceLock::new();
static LAST_CLIENT_NS: AtomicU64 = AtomicU64::new(0);

fn started_ns() -> u64 {
    *STARTED_NS.get_or_init(monotonic_ns)
}

extern "C" fn remove_socket_at_exit() {
    if let Some(Ok(server)) = SERVER.get() {
        if server.pid == std::process::id() {
            let _ = std::fs::remove_file(&server.path);
        }
    }
}

/// Starts the endpoint thread once per process; later calls return the first
/// outcome.
pub(crate) fn ensure_started() -> Result<PathBuf, String> {
    SERVER
        .get_or_init(|| {
            let _ = started_ns();
            bind()
                .map_err(|e| e.to_string())
                .and_then(|(path, listener)| {
                    std::thread::Builder::new()
                        .name("neuronprof-monitor".into())
                        .spawn(move || serve(listener))
                        .map_err(|e| format!("starting the live-monitor thread: {e}"))?;
                    // SAFETY: registering a plain extern "C" function with no captured state.
                    unsafe { libc::atexit(remove_socket_at_exit) };
                    Ok(Server {
                        path,
                        pid: std::process::id(),
                    })
                })
        })
        .as_ref()
        .map(|s| s.path.clone())
        .map_err(Clone::clone)
}

fn bind() -> Result<(PathBuf, UnixListener), EndpointError> {
    let dir = endpoint::endpoint_dir();
    endpoint::ensure_private_dir(&dir, endpoint::current_uid())?;
    let path = endpoint::socket_path_in(&dir, std::process::id());
    let listener = endpoint::bind_private_socket(&path)?;
    listener
        .set_nonblocking(true)
        .map_err(|source| EndpointError::Io {
            what: format!("configuring {}", path.display()),
            source,
        })?;
    Ok((path, listener))
}

/// The socket this process publishes on, once started.
pub(crate) fn socket_path() -> Option<&'static Path> {
    match SERVER.get() {
        Some(Ok(server)) => Some(&server.path),
        _ => None,
    }
}

fn client_active(now_ns: u64) -> bool {
    let last = LAST_CLIENT_NS.load(Ordering::Relaxed);
    last != 0 && now_ns.saturating_sub(last) < CLIENT_IDLE_NS
}

fn serve(listener: UnixListener) {
    let mut clients = Clients::new(listener);
    let mut next_sample_ns = 0u64;
    let mut sampling = false;
    loop {
        let now_ns = monotonic_ns();
        let active = client_active(now_ns);
        if sampling && !active {
            registry::entries().iter().for_each(|e| e.clear_history());
        }
        sampling = active;
        if active && now_ns >= next_sample_ns {
            // A finished publisher's counters stand still: its history ends with it.
            for entry in registry::entries() {
                if !entry.finished() {
                    entry.push_sample(entry.sample());
                }
            }
            next_sample_ns = now_ns + SAMPLE_INTERVAL_NS;
        }
        let wake_at = active.then(|| {
            Instant::now() + Duration::from_nanos(next_sample_ns.saturating_sub(monotonic_ns()))
        });
        clients.turn(wake_at, &mut |incoming| {
            if !client_active(monotonic_ns()) {
                // The first request after a quiet spell: start the history.
                for entry in registry::entries() {
                    entry.push_sample(entry.sample());
                }
                next_sample_ns = monotonic_ns() + SAMPLE_INTERVAL_NS;
                sampling = true;
            }
            LAST_CLIENT_NS.store(monotonic_ns(), Ordering::Relaxed);
            answer(incoming)
        });
    }
}

/// The answer to one request: a report, or an error document saying what is wrong.
fn answer(incoming: Incoming<'_>) -> String {
    match incoming {
        Incoming::Line(line) => match parse_request(line) {
            Ok(period_s) => report_json(period_s),
            Err(message) => error_document(&message),
        },
        Incoming::TooLong => error_document(&format!(
            "bad request: longer than {MAX_REQUEST_BYTES} bytes without a newline"
        )),
        Incoming::Unreadable(why) => error_document(&format!("bad request: {why}")),
    }
}

/// A client's request: one JSON object on one line.
#[derive(Debug, Deserialize)]
struct Request {
    /// The window the rates and percentiles cover, s (default 1).
    #[serde(default = "default_period")]
    period_s: f64,
}

fn default_period() -> f64 {
    1.0
}

/// Parses a request line; the error says what is wrong and where.
fn parse_request(line: &str) -> Result<f64, String> {
    let request: Request = serde_json::from_str(line.trim()).map_err(|e| {
        format!(
            "bad request (line 1, column {}): {e}; expected one JSON object such as \
             {{\"period_s\": 1.0}}",
            e.column()
        )
    })?;
    let period = request.period_s;
    if !(period.is_finite() && period >= 0.0) {
        return Err(format!(
            "bad request: period_s {period} must be a number of seconds ≥ 0"
        ));
    }
    Ok(period.min(MAX_PERIOD_S))
}

fn error_document(message: &str) -> String {
    serde_json::json!({ "error": message }).to_string()
}

/// The tags of `entries`: `<pid>/rank<N>` for ranks of a multi-rank world and for the
/// runtime of a process that is rank N of a multi-process job, `<pid>` otherwise; a tag
/// that would repeat (two worlds alive at once, or a runtime beside a single-rank
/// world) gets `/<n>` (the entry's position) on all but the newest.
fn tags(pid: u32, entries: &[Arc<Entry>]) -> Vec<String> {
    let process_rank = registry::process_rank();
    let base: Vec<String> = entries
        .iter()
        .map(|e| match (e.kind, process_rank) {
            (
                EntryKind::Rank {
                    rank, world_size, ..
                },
                _,
            )
            | (EntryKind::Runtime, Some((rank, world_size)))
                if world_size > 1 =>
            {
                format!("{pid}/rank{rank}")
            }
            _ => pid.to_string(),
        })
        .collect();
    base.iter()
        .enumerate()
        .map(|(i, tag)| {
            if base[i + 1..].contains(tag) {
                format!("{tag}/{i}")
            } else {
                tag.clone()
            }
        })
        .collect()
}

/// The document this process answers for a window of `period_s` seconds ending now.
pub(crate) fn report_json(period_s: f64) -> String {
    let entries = registry::entries();
    let pid = std::process::id();
    let address = socket_path().map_or(String::new(), |p| p.display().to_string());
    let tags = tags(pid, &entries);
    let in_flight = InFlightIndex::new(&entries);
    let thread_dropped: Vec<(u32, u64)> = runtime_hooks::thread_stats()
        .iter()
        .map(|s| (s.thread_id, s.dropped))
        .collect();
    let dropped_total = runtime_hooks::dropped_total();
    let online_cpus = cpu::online_cpus();
    let host_rss_bytes = cpu::process_rss_bytes();
    let period_ns = (period_s.min(MAX_PERIOD_S) * 1e9) as u64;
    let neuron_runtime_data = entries
        .iter()
        .zip(tags)
        .map(|(entry, tag)| {
            let now = entry.sample();
            if !entry.finished() {
                entry.offer_sample(&now);
            }
            let before = entry
                .window_start(&now, period_ns)
                .unwrap_or_else(|| now.clone());
            let ctx = ReportContext {
                pid,
                address: &address,
                tag,
                started_ns: started_ns(),
                in_flight: &in_flight,
                thread_dropped: &thread_dropped,
                dropped_total,
                online_cpus,
                host_rss_bytes,
            };
            report::build(entry, &before, &now, &ctx)
        })
        .collect();
    let profile = entries
        .first()
        .and_then(|e| e.devices.first())
        .map_or_else(DeviceProfile::trn2, |d| d.profile().clone());
    let document = monitor_schema::MonitorDocument {
        neuron_runtime_data,
        neuron_hardware_info: Some(report::hardware_info(&profile)),
        ..monitor_schema::MonitorDocument::default()
    };
    serde_json::to_string(&document).unwrap_or_else(|e| error_document(&e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_checked() {
        assert_eq!(parse_request("{\"period_s\": 0.5}\n"), Ok(0.5));
        assert_eq!(parse_request("{}"), Ok(1.0));
        assert_eq!(parse_request("{\"period_s\": 1e9}"), Ok(MAX_PERIOD_S));
        let err = parse_request("{\"period_s\": -1}").unwrap_err();
        assert!(err.contains("≥ 0"), "{err}");
        let err = parse_request("period please").unwrap_err();
        assert!(err.contains("column 1"), "{err}");
        let err = parse_request("{\"period_s\": \"1s\"}").unwrap_err();
        assert!(err.contains("bad request"), "{err}");
    }
}
