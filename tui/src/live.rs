//! Live attach: a poller thread that discovers this user's publishing processes
//! ([`analysis::live_client`]) every refresh, asks each for a report over the last
//! period, and sends one merged document (every process's runtimes) to the UI.
//!
//! A process whose endpoint disappears (it exited, or its socket went stale) is reported
//! with [`Event::Exited`]; the merged document also leaves it out, which marks it exited.
//! Any other failure to talk to an endpoint is an input error line; polling goes on.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::mpsc::Sender;
use std::thread;
use std::time::{Duration, Instant};

use analysis::live::MonitorDocument;
use analysis::live_client::{discover, endpoint_dir, fetch_document, LiveClientError};
use anyhow::Result;

use crate::app::{App, Event};

/// How long one endpoint may take to answer before it counts as failed.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// One poll: the merged document (if any endpoint answered), the pids that answered,
/// and the errors met.
#[derive(Debug, Default)]
pub(crate) struct Poll {
    pub document: Option<MonitorDocument>,
    pub pids: BTreeSet<u32>,
    pub errors: Vec<String>,
}

/// Polls every endpoint in `dir` (or only `pid`'s) once, for a window of `period_s`.
pub(crate) fn poll_once(dir: &std::path::Path, pid: Option<u32>, period_s: f64) -> Poll {
    let mut poll = Poll::default();
    let found = match discover(dir) {
        Ok(found) => found,
        Err(e) => {
            poll.errors.push(e.to_string());
            return poll;
        }
    };
    let mut merged = MonitorDocument::default();
    let mut any = false;
    for endpoint in found
        .endpoints
        .iter()
        .filter(|e| pid.is_none_or(|p| p == e.pid))
    {
        match fetch_document(&endpoint.path, period_s, FETCH_TIMEOUT) {
            Ok(doc) => {
                any = true;
                poll.pids.insert(endpoint.pid);
                merged.neuron_runtime_data.extend(doc.neuron_runtime_data);
                if merged.neuron_hardware_info.is_none() {
                    merged.neuron_hardware_info = doc.neuron_hardware_info;
                }
                if merged.instance_info.is_none() {
                    merged.instance_info = doc.instance_info;
                }
                if merged.system_data.is_none() {
                    merged.system_data = doc.system_data;
                }
            }
            // A process that exits between discovery and fetch: not an error.
            Err(LiveClientError::Io { source, .. })
                if matches!(
                    source.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
                ) => {}
            Err(e) => poll.errors.push(format!("pid {}: {e}", endpoint.pid)),
        }
    }
    if any || pid.is_none() {
        // With no process at all, an empty report still tells the UI that the ones it
        // knew are gone.
        poll.document = Some(merged);
    }
    poll
}

/// Starts the poller for all processes or `pid`, every `refresh`; returns the state the
/// UI starts from.
pub(crate) fn spawn(pid: Option<u32>, refresh: Duration, tx: Sender<Event>) -> Result<App> {
    let dir = endpoint_dir();
    let label = match pid {
        Some(p) => format!("live pid {p}"),
        None => "live".to_string(),
    };
    let app = App::new(label);
    thread::Builder::new()
        .name("neuron-top-poll".into())
        .spawn(move || poll_loop(dir, pid, refresh, tx))?;
    Ok(app)
}

fn poll_loop(dir: PathBuf, pid: Option<u32>, refresh: Duration, tx: Sender<Event>) {
    let period_s = refresh.as_secs_f64();
    let mut known: BTreeSet<u32> = BTreeSet::new();
    let mut said_nothing_found = false;
    let start = Instant::now();
    for tick in 1u32.. {
        let poll = poll_once(&dir, pid, period_s);
        for gone in known.difference(&poll.pids) {
            let event = Event::Exited {
                pid: *gone,
                reason: "its endpoint went away".into(),
            };
            if tx.send(event).is_err() {
                return;
            }
        }
        if poll.pids.is_empty() && known.is_empty() && !said_nothing_found {
            said_nothing_found = true;
            let who = pid.map_or("no neuronprof process".to_string(), |p| {
                format!("process {p} does not")
            });
            let note = format!("{who} publishing in {} (yet)", dir.display());
            if tx.send(Event::InputEnded(note)).is_err() {
                return;
            }
        }
        known = poll.pids;
        for error in poll.errors {
            if tx.send(Event::InputError(error)).is_err() {
                return;
            }
        }
        if let Some(doc) = poll.document {
            if tx.send(Event::Document(Box::new(doc))).is_err() {
                return;
            }
        }
        let next = start + refresh * tick;
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            thread::sleep(wait);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Write};
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::net::UnixListener;

    /// A private endpoint directory with one fake publisher (this process's pid, so the
    /// client's liveness check passes) answering `answers` connections with `text`.
    fn fake_endpoint(
        name: &str,
        text: String,
        answers: usize,
    ) -> (PathBuf, thread::JoinHandle<Vec<String>>) {
        let dir = std::env::temp_dir().join(format!("tui-live-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        let listener =
            UnixListener::bind(dir.join(format!("{}.sock", std::process::id()))).unwrap();
        let server = thread::spawn(move || {
            let mut requests = Vec::new();
            // discover() also connects once per poll to test liveness; those connections
            // send nothing and are skipped.
            while requests.len() < answers {
                let (stream, _) = listener.accept().unwrap();
                let mut line = String::new();
                let mut reader = BufReader::new(&stream);
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    continue;
                }
                requests.push(line.trim().to_string());
                (&stream).write_all(text.as_bytes()).unwrap();
            }
            requests
        });
        (dir, server)
    }

    #[test]
    fn poll_merges_every_publisher_and_filters_by_pid() {
        let text = analysis::live::fixtures::NEURONPROF_TWO_RANKS.to_string();
        let (dir, server) = fake_endpoint("merge", text, 1);
        let me = std::process::id();
        let poll = poll_once(&dir, None, 0.5);
        assert!(poll.errors.is_empty(), "{:?}", poll.errors);
        assert_eq!(poll.pids.iter().copied().collect::<Vec<_>>(), [me]);
        let doc = poll.document.unwrap();
        assert_eq!(doc.neuron_runtime_data.len(), 2);
        assert_eq!(doc.neuron_runtime_data[1].neuron_runtime_tag, "9001/rank1");
        assert_eq!(server.join().unwrap(), ["{\"period_s\": 0.5}"]);
        // Another pid: nothing answered, no document.
        let poll = poll_once(&dir, Some(me.wrapping_add(1)), 0.5);
        assert!(poll.document.is_none() && poll.pids.is_empty());
    }

    #[test]
    fn bad_answer_is_an_error_line_and_gone_endpoint_is_not() {
        let (dir, server) = fake_endpoint("bad", "{\"neuron_runtime_data\": [".into(), 1);
        let poll = poll_once(&dir, None, 1.0);
        server.join().unwrap();
        assert_eq!(poll.errors.len(), 1, "{:?}", poll.errors);
        assert!(
            poll.errors[0].contains("bad document"),
            "{}",
            poll.errors[0]
        );
        // The listener is gone now: the socket is stale, removed, and no error.
        let poll = poll_once(&dir, None, 1.0);
        assert!(poll.errors.is_empty(), "{:?}", poll.errors);
        assert!(poll.pids.is_empty());
        assert_eq!(poll.document.unwrap().neuron_runtime_data.len(), 0);
    }
}
