//! Where a process's live endpoint lives, and who may reach it.
//!
//! - Directory: `$XDG_RUNTIME_DIR/neuronprof` when `XDG_RUNTIME_DIR` is set (systemd
//!   makes that directory per user, mode 0700), else `/tmp/neuronprof-<uid>`. Created
//!   with mode 0700; an existing one must be a real directory (not a symbolic link)
//!   owned by this user with no group or other permission bits, else it is refused with
//!   an error naming the path, its owner and its mode (another user could otherwise
//!   read our sockets or plant one of theirs).
//! - Socket: `<pid>.sock`, mode 0600 (set on the path right after `bind`; the
//!   directory's 0700 already keeps other users out during that instant).
//! - Stale sockets: a socket file whose process is gone (a crash skips the exit-time
//!   removal) is removed by a server starting over the same path and by the clients'
//!   discovery (`analysis::live_client`).

use std::ffi::OsString;
use std::fmt;
use std::io;
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, PermissionsExt as _};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

/// Why the endpoint could not be set up.
#[derive(Debug)]
pub enum EndpointError {
    /// The directory exists but is not safe to use.
    UnsafeDirectory {
        /// The directory.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A file-system or socket call failed.
    Io {
        /// What was being done, with the path.
        what: String,
        /// The error.
        source: io::Error,
    },
    /// Publishing is switched off (`NEURONPROF_MONITOR=0`).
    Disabled,
}

impl fmt::Display for EndpointError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EndpointError::UnsafeDirectory { path, reason } => write!(
                f,
                "refusing the live-monitor directory {}: {reason}",
                path.display()
            ),
            EndpointError::Io { what, source } => write!(f, "{what}: {source}"),
            EndpointError::Disabled => {
                write!(f, "live monitoring is disabled (NEURONPROF_MONITOR=0)")
            }
        }
    }
}

impl std::error::Error for EndpointError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            EndpointError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

fn io_error(what: String) -> impl FnOnce(io::Error) -> EndpointError {
    move |source| EndpointError::Io { what, source }
}

/// The calling user's id.
pub fn current_uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

/// The endpoint directory for `xdg_runtime_dir` (the value of `XDG_RUNTIME_DIR`, if
/// set and non-empty) and user `uid`.
pub fn endpoint_dir_for(xdg_runtime_dir: Option<OsString>, uid: u32) -> PathBuf {
    match xdg_runtime_dir.filter(|d| !d.is_empty()) {
        Some(dir) => PathBuf::from(dir).join("neuronprof"),
        None => std::env::temp_dir().join(format!("neuronprof-{uid}")),
    }
}

/// This user's endpoint directory (not created).
pub fn endpoint_dir() -> PathBuf {
    endpoint_dir_for(std::env::var_os("XDG_RUNTIME_DIR"), current_uid())
}

/// The socket path of process `pid` in `dir`.
pub fn socket_path_in(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("{pid}.sock"))
}

/// Creates `dir` with mode 0700 if it is missing (its parent too, as a plain
/// directory), then checks that it is a directory owned by `uid` that nobody else can
/// enter.
pub fn ensure_private_dir(dir: &Path, uid: u32) -> Result<(), EndpointError> {
    match std::fs::symlink_metadata(dir) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            if let Some(parent) = dir.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(io_error(format!("creating {}", parent.display())))?;
            }
            match std::fs::DirBuilder::new().mode(0o700).create(dir) {
                Ok(()) => {}
                // Another process created it in between: check what it made.
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
                Err(err) => return Err(io_error(format!("creating {}", dir.display()))(err)),
            }
        }
        Err(err) => return Err(io_error(format!("reading {}", dir.display()))(err)),
        Ok(_) => {}
    }
    check_private_dir(dir, uid)
}

/// Checks that `dir` is a directory (not a link) owned by `uid` with no group or other
/// permissions.
pub fn check_private_dir(dir: &Path, uid: u32) -> Result<(), EndpointError> {
    let meta =
        std::fs::symlink_metadata(dir).map_err(io_error(format!("reading {}", dir.display())))?;
    let unsafe_dir = |reason: String| EndpointError::UnsafeDirectory {
        path: dir.to_path_buf(),
        reason,
    };
    if !meta.file_type().is_dir() {
        return Err(unsafe_dir(
            "it is not a directory (a symbolic link or a file)".into(),
        ));
    }
    if meta.uid() != uid {
        return Err(unsafe_dir(format!(
            "it is owned by uid {}, not by this user (uid {uid})",
            meta.uid()
        )));
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(unsafe_dir(format!(
            "its mode is {mode:04o}: group or others have access (expected 0700; \
             fix with chmod 700)"
        )));
    }
    Ok(())
}

/// Whether process `pid` exists (a signal-0 probe; a process of another user counts as
/// existing).
pub fn pid_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: kill with signal 0 only checks whether the process exists.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Binds the socket at `path` with mode 0600. A file already there is removed first
/// when no process listens on it (a stale socket of a dead process, or of an earlier
/// process that had our pid); a live listener is an error.
pub fn bind_private_socket(path: &Path) -> Result<UnixListener, EndpointError> {
    if std::fs::symlink_metadata(path).is_ok() {
        match UnixStream::connect(path) {
            Ok(_) => {
                return Err(EndpointError::Io {
                    what: format!("binding {}", path.display()),
                    source: io::Error::new(
                        io::ErrorKind::AddrInUse,
                        "another live process listens there",
                    ),
                })
            }
            Err(_) => std::fs::remove_file(path).map_err(io_error(format!(
                "removing stale socket {}",
                path.display()
            )))?,
        }
    }
    let listener =
        UnixListener::bind(path).map_err(io_error(format!("binding {}", path.display())))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(io_error(format!("setting mode 0600 on {}", path.display())))?;
    Ok(listener)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "neuronprof-endpoint-test-{}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn directory_prefers_xdg_runtime_dir() {
        assert_eq!(
            endpoint_dir_for(Some("/run/user/7".into()), 7),
            PathBuf::from("/run/user/7/neuronprof")
        );
        assert_eq!(
            endpoint_dir_for(Some("".into()), 7),
            std::env::temp_dir().join("neuronprof-7")
        );
        assert_eq!(
            endpoint_dir_for(None, 7),
            std::env::temp_dir().join("neuronprof-7")
        );
    }

    #[test]
    fn directory_is_created_0700_and_a_socket_0600() {
        let dir = scratch("create");
        ensure_private_dir(&dir, current_uid()).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        let path = socket_path_in(&dir, 12345);
        let _listener = bind_private_socket(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // A second bind while the first listens is refused, not stolen.
        let err = bind_private_socket(&path).unwrap_err().to_string();
        assert!(err.contains("another live process"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn group_or_world_accessible_directory_is_refused() {
        let dir = scratch("open");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let err = ensure_private_dir(&dir, current_uid())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("0755") && err.contains(&dir.display().to_string()),
            "{err}"
        );
        // Owned by someone else (as seen from this uid).
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        let other = current_uid().wrapping_add(1);
        let err = check_private_dir(&dir, other).unwrap_err().to_string();
        assert!(err.contains("owned by uid"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn symlinked_directory_is_refused() {
        let dir = scratch("link");
        let target = scratch("link-target");
        std::fs::create_dir_all(&target).unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::symlink(&target, &dir).unwrap();
        let err = ensure_private_dir(&dir, current_uid())
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a directory"), "{err}");
        std::fs::remove_file(&dir).unwrap();
        std::fs::remove_dir_all(&target).unwrap();
    }

    #[test]
    fn stale_socket_is_replaced() {
        let dir = scratch("stale");
        ensure_private_dir(&dir, current_uid()).unwrap();
        let path = socket_path_in(&dir, 4242);
        drop(bind_private_socket(&path).unwrap());
        assert!(path.exists(), "a dropped listener leaves its file behind");
        let _listener = bind_private_socket(&path).unwrap();
        assert!(UnixStream::connect(&path).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn own_pid_is_alive_and_pid_zero_is_not() {
        assert!(pid_alive(std::process::id()));
        assert!(!pid_alive(0));
        assert!(!pid_alive(u32::MAX));
    }
}
