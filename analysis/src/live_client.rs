//! Finding the processes that publish live metrics on this machine, and asking them
//! for a report: the client side of `neuron_backend::monitor`'s endpoint, shared by
//! `neuronprof monitor` and `neuron-top`.
//!
//! # Endpoint (as the backend publishes it)
//!
//! - Directory ([`endpoint_dir`]): `$XDG_RUNTIME_DIR/neuronprof` when that variable is
//!   set and non-empty, else `<temp dir>/neuronprof-<uid>`; mode 0700, owned by the
//!   user. [`discover`] refuses a directory owned by another user or open to group or
//!   others ([`LiveClientError::UnsafeDirectory`]): a socket there could be anyone's.
//! - One socket per process, `<pid>.sock`, mode 0600.
//! - Protocol: connect, write one line `{"period_s": <seconds>}`, read one JSON
//!   document until the server closes. The document is the process's part of a
//!   neuron-monitor report (`neuron_runtime_data` and `neuron_hardware_info`), or
//!   `{"error": "..."}` when the request was bad.
//!
//! # Stale sockets
//!
//! A process that crashed leaves its socket file. [`discover`] removes a socket
//! whose process no longer exists (`/proc/<pid>` is gone) or that refuses
//! connections (the pid was reused by a process that does not publish), and lists
//! what it removed.
//!
//! ```no_run
//! use std::time::Duration;
//! use analysis::live_client::{discover, endpoint_dir, fetch_document};
//!
//! let found = discover(&endpoint_dir())?;
//! for endpoint in &found.endpoints {
//!     let doc = fetch_document(&endpoint.path, 1.0, Duration::from_secs(5))?;
//!     println!("{}: {} runtime(s)", endpoint.pid, doc.neuron_runtime_data.len());
//! }
//! # Ok::<(), analysis::live_client::LiveClientError>(())
//! ```

use std::ffi::OsString;
use std::fmt;
use std::io::{self, Read as _, Write as _};
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::live::{parse_document, LiveError, MonitorDocument, MAX_DOCUMENT_BYTES};

/// One publishing process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Its process id (from the socket's name).
    pub pid: u32,
    /// The socket.
    pub path: PathBuf,
}

/// What [`discover`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Discovery {
    /// Live endpoints, by pid.
    pub endpoints: Vec<Endpoint>,
    /// Stale sockets removed.
    pub removed_stale: Vec<PathBuf>,
}

/// What went wrong talking to an endpoint.
#[derive(Debug)]
pub enum LiveClientError {
    /// The endpoint directory is not private to this user.
    UnsafeDirectory {
        /// The directory.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A file-system or socket operation failed.
    Io {
        /// What was being done.
        what: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// The endpoint answered with an error document (a bad request).
    Endpoint {
        /// The socket.
        path: PathBuf,
        /// The endpoint's message.
        message: String,
    },
    /// The answer was not a valid document.
    Parse {
        /// The socket.
        path: PathBuf,
        /// The parser's error (with the byte offset).
        source: LiveError,
    },
    /// The answer was longer than [`MAX_DOCUMENT_BYTES`].
    TooLong {
        /// The socket.
        path: PathBuf,
    },
}

impl fmt::Display for LiveClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LiveClientError::UnsafeDirectory { path, reason } => {
                write!(
                    f,
                    "refusing live-monitor directory {}: {reason}",
                    path.display()
                )
            }
            LiveClientError::Io { what, path, source } => {
                write!(f, "{what} {}: {source}", path.display())
            }
            LiveClientError::Endpoint { path, message } => {
                write!(f, "endpoint {} answered: {message}", path.display())
            }
            LiveClientError::Parse { path, source } => {
                write!(
                    f,
                    "endpoint {} sent a bad document: {source}",
                    path.display()
                )
            }
            LiveClientError::TooLong { path } => write!(
                f,
                "endpoint {} sent more than {MAX_DOCUMENT_BYTES} bytes",
                path.display()
            ),
        }
    }
}

impl std::error::Error for LiveClientError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LiveClientError::Io { source, .. } => Some(source),
            LiveClientError::Parse { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The calling process's effective user id, read from the owner of `/proc/self`
/// (std only; `None` without procfs).
pub fn current_uid() -> Option<u32> {
    std::fs::metadata("/proc/self").ok().map(|m| m.uid())
}

/// The endpoint directory for `xdg_runtime_dir` (the value of `XDG_RUNTIME_DIR`) and
/// user `uid`: the same rule as the publisher's.
pub fn endpoint_dir_for(xdg_runtime_dir: Option<OsString>, uid: u32) -> PathBuf {
    match xdg_runtime_dir.filter(|d| !d.is_empty()) {
        Some(dir) => PathBuf::from(dir).join("neuronprof"),
        None => std::env::temp_dir().join(format!("neuronprof-{uid}")),
    }
}

/// This user's endpoint directory.
pub fn endpoint_dir() -> PathBuf {
    endpoint_dir_for(
        std::env::var_os("XDG_RUNTIME_DIR"),
        current_uid().unwrap_or(0),
    )
}

fn check_dir(dir: &Path) -> Result<(), LiveClientError> {
    let meta = std::fs::symlink_metadata(dir).map_err(|source| LiveClientError::Io {
        what: "reading",
        path: dir.to_path_buf(),
        source,
    })?;
    let unsafe_dir = |reason: String| LiveClientError::UnsafeDirectory {
        path: dir.to_path_buf(),
        reason,
    };
    if !meta.file_type().is_dir() {
        return Err(unsafe_dir(
            "not a directory (a symbolic link or a file)".into(),
        ));
    }
    if let Some(uid) = current_uid() {
        if meta.uid() != uid {
            return Err(unsafe_dir(format!(
                "owned by uid {}, not by this user (uid {uid})",
                meta.uid()
            )));
        }
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(unsafe_dir(format!(
            "mode {mode:04o} lets group or others in (expected 0700)"
        )));
    }
    Ok(())
}

/// The pid in a socket name `<pid>.sock`.
pub fn pid_of_socket(path: &Path) -> Option<u32> {
    let name = path.file_name()?.to_str()?;
    let pid = name.strip_suffix(".sock")?;
    if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok()
}

fn process_exists(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

/// Lists the live endpoints in `dir` (none when it does not exist), removing stale
/// sockets. Files that are not `<pid>.sock` are left alone.
pub fn discover(dir: &Path) -> Result<Discovery, LiveClientError> {
    let mut found = Discovery::default();
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(found),
        Err(source) => {
            return Err(LiveClientError::Io {
                what: "listing",
                path: dir.to_path_buf(),
                source,
            })
        }
    };
    check_dir(dir)?;
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(pid) = pid_of_socket(&path) else {
            continue;
        };
        let stale = if !process_exists(pid) {
            true
        } else {
            match UnixStream::connect(&path) {
                Ok(_) => false,
                Err(err) => err.kind() == io::ErrorKind::ConnectionRefused,
            }
        };
        if stale {
            if std::fs::remove_file(&path).is_ok() {
                found.removed_stale.push(path);
            }
        } else {
            found.endpoints.push(Endpoint { pid, path });
        }
    }
    found.endpoints.sort_by_key(|e| e.pid);
    Ok(found)
}

/// Asks the endpoint at `path` for a report over the last `period_s` seconds and
/// returns the document's text (one JSON document). `timeout` bounds each read and
/// write.
pub fn fetch(path: &Path, period_s: f64, timeout: Duration) -> Result<String, LiveClientError> {
    let io_err = |what: &'static str| {
        let path = path.to_path_buf();
        move |source| LiveClientError::Io { what, path, source }
    };
    let mut stream = UnixStream::connect(path).map_err(io_err("connecting to"))?;
    stream
        .set_read_timeout(Some(timeout))
        .and_then(|()| stream.set_write_timeout(Some(timeout)))
        .map_err(io_err("configuring"))?;
    let request = format!("{{\"period_s\": {}}}\n", period_s.max(0.0));
    stream
        .write_all(request.as_bytes())
        .map_err(io_err("writing to"))?;
    let mut text = String::new();
    let read = (&mut stream)
        .take(MAX_DOCUMENT_BYTES as u64 + 1)
        .read_to_string(&mut text)
        .map_err(io_err("reading from"))?;
    if read > MAX_DOCUMENT_BYTES {
        return Err(LiveClientError::TooLong {
            path: path.to_path_buf(),
        });
    }
    if let Some(message) = error_message(&text) {
        return Err(LiveClientError::Endpoint {
            path: path.to_path_buf(),
            message,
        });
    }
    Ok(text)
}

/// The message of an `{"error": "..."}` answer.
fn error_message(text: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct ErrorOnly {
        error: String,
    }
    if !text.trim_start().starts_with("{\"error\"") {
        return None;
    }
    serde_json::from_str::<ErrorOnly>(text.trim())
        .ok()
        .map(|e| e.error)
}

/// [`fetch`], parsed.
pub fn fetch_document(
    path: &Path,
    period_s: f64,
    timeout: Duration,
) -> Result<MonitorDocument, LiveClientError> {
    let text = fetch(path, period_s, timeout)?;
    parse_document(&text).map_err(|source| LiveClientError::Parse {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "neuronprof-client-test-{}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        dir
    }

    #[test]
    fn socket_names_give_pids() {
        assert_eq!(pid_of_socket(Path::new("/x/1234.sock")), Some(1234));
        assert_eq!(pid_of_socket(Path::new("/x/12a.sock")), None);
        assert_eq!(pid_of_socket(Path::new("/x/.sock")), None);
        assert_eq!(pid_of_socket(Path::new("/x/1234.txt")), None);
    }

    #[test]
    fn directory_rule_matches_the_publisher() {
        assert_eq!(
            endpoint_dir_for(Some("/run/user/5".into()), 5),
            PathBuf::from("/run/user/5/neuronprof")
        );
        assert_eq!(
            endpoint_dir_for(None, 5),
            std::env::temp_dir().join("neuronprof-5")
        );
    }

    #[test]
    fn stale_sockets_are_removed_and_live_ones_listed() {
        let dir = scratch("discover");
        // A socket file nobody listens on, under our own (live) pid: refused, stale.
        let own = dir.join(format!("{}.sock", std::process::id()));
        drop(UnixListener::bind(&own).unwrap());
        // A socket of a pid that cannot exist.
        let dead = dir.join("4294967290.sock");
        drop(UnixListener::bind(&dead).unwrap());
        // Something else entirely.
        std::fs::write(dir.join("notes.txt"), b"keep me").unwrap();
        let found = discover(&dir).unwrap();
        assert!(found.endpoints.is_empty());
        assert_eq!(found.removed_stale.len(), 2);
        assert!(!own.exists() && !dead.exists());
        assert!(dir.join("notes.txt").exists());

        // A listening socket is live.
        let _listener = UnixListener::bind(&own).unwrap();
        let found = discover(&dir).unwrap();
        assert_eq!(
            found.endpoints,
            vec![Endpoint {
                pid: std::process::id(),
                path: own.clone()
            }]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn open_directory_is_refused_and_missing_one_is_empty() {
        let dir = scratch("open");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = discover(&dir).unwrap_err().to_string();
        assert!(err.contains("0777"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(discover(&dir).unwrap(), Discovery::default());
    }

    #[test]
    fn error_answers_become_errors() {
        let dir = scratch("answer");
        let path = dir.join("1.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let server = std::thread::spawn(move || {
            for answer in [
                "{\"error\":\"bad request: period_s -1\"}\n",
                "{\"neuron_runtime_data\": []}\n",
                "{\"neuron_runtime_data\": [\n",
            ] {
                let (mut stream, _) = listener.accept().unwrap();
                let mut line = [0u8; 64];
                let _ = stream.read(&mut line).unwrap();
                stream.write_all(answer.as_bytes()).unwrap();
            }
        });
        let timeout = Duration::from_secs(5);
        let err = fetch_document(&path, 1.0, timeout).unwrap_err().to_string();
        assert!(err.contains("period_s -1"), "{err}");
        let doc = fetch_document(&path, 1.0, timeout).unwrap();
        assert!(doc.neuron_runtime_data.is_empty());
        let err = fetch_document(&path, 1.0, timeout).unwrap_err();
        assert!(matches!(err, LiveClientError::Parse { .. }), "{err}");
        server.join().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
