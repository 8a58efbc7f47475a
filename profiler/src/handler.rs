//! `on_trace_ready` handlers, and `tensorboard_trace_handler`: one trace file per
//! window in a directory.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::error::ProfilerError;
use crate::result::ProfileResult;

/// Receives each finished window, like torch's `on_trace_ready` callable.
///
/// Implemented for closures `FnMut(&ProfileResult) -> Result<(), ProfilerError>` and
/// for [`TensorboardTraceHandler`].
pub trait OnTraceReady: Send {
    /// Handles one finished window.
    fn on_trace_ready(&mut self, result: &ProfileResult) -> Result<(), ProfilerError>;
}

impl<F> OnTraceReady for F
where
    F: FnMut(&ProfileResult) -> Result<(), ProfilerError> + Send,
{
    fn on_trace_ready(&mut self, result: &ProfileResult) -> Result<(), ProfilerError> {
        self(result)
    }
}

/// Writes each window to `{dir}/{worker}.{timestamp_ms}.pt.trace.json` (`.gz` added
/// with `use_gzip`), like `torch.profiler.tensorboard_trace_handler`.
///
/// `worker` defaults to torch's `{hostname}_{pid}`, with `_rank{rank}` added for
/// results of a rank (see [`crate::ProfilerBuilder::split_by_rank`]); a `{rank}` in a
/// given worker name is replaced by the result's rank (`rank{rank}` → `rank3`). The
/// directory is created if needed.
/// `timestamp_ms` is the wall clock when the window is handed over, moved on by a
/// millisecond if that name is taken. Clones share the list of [`files`](TensorboardTraceHandler::files)
/// written, so keep a clone to learn where the traces went.
pub fn tensorboard_trace_handler(
    dir: impl AsRef<Path>,
    worker: Option<&str>,
    use_gzip: bool,
) -> TensorboardTraceHandler {
    TensorboardTraceHandler {
        dir: dir.as_ref().to_path_buf(),
        worker: worker.map(str::to_owned),
        use_gzip,
        written: Arc::default(),
    }
}

/// See [`tensorboard_trace_handler`].
#[derive(Debug, Clone)]
pub struct TensorboardTraceHandler {
    dir: PathBuf,
    worker: Option<String>,
    use_gzip: bool,
    written: Arc<Mutex<Vec<PathBuf>>>,
}

impl TensorboardTraceHandler {
    /// Writes `result` to a new file and returns its path.
    pub fn write(&self, result: &ProfileResult) -> Result<PathBuf, ProfilerError> {
        let path = trace_path(&self.dir, &self.worker_for(result), self.use_gzip)?;
        result
            .export_chrome_trace(&path)
            .map_err(|source| ProfilerError::Write {
                path: path.clone(),
                source,
            })?;
        self.written
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(path.clone());
        Ok(path)
    }

    /// Every file written so far (by this handler or its clones), in order.
    pub fn files(&self) -> Vec<PathBuf> {
        self.written
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The worker name in the file name of `result`.
    pub fn worker_for(&self, result: &ProfileResult) -> String {
        let rank = result.rank();
        match (&self.worker, rank) {
            (Some(worker), Some(rank)) => worker.replace("{rank}", &rank.to_string()),
            (Some(worker), None) => worker.replace("{rank}", "0"),
            (None, Some(rank)) => format!("{}_rank{rank}", default_worker()),
            (None, None) => default_worker(),
        }
    }
}

impl OnTraceReady for TensorboardTraceHandler {
    fn on_trace_ready(&mut self, result: &ProfileResult) -> Result<(), ProfilerError> {
        self.write(result).map(|_| ())
    }
}

/// torch's default worker name: `{hostname}_{pid}`.
fn default_worker() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned());
    format!("{host}_{}", std::process::id())
}

/// A new file name in `dir` for `worker`.
fn trace_path(dir: &Path, worker: &str, use_gzip: bool) -> Result<PathBuf, ProfilerError> {
    std::fs::create_dir_all(dir).map_err(|source| ProfilerError::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut timestamp_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let suffix = if use_gzip {
        ".pt.trace.json.gz"
    } else {
        ".pt.trace.json"
    };
    loop {
        let path = dir.join(format!("{worker}.{timestamp_ms}{suffix}"));
        if !path.exists() {
            return Ok(path);
        }
        timestamp_ms += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_worker_is_host_and_pid() {
        assert!(default_worker().ends_with(&format!("_{}", std::process::id())));
        let handler = tensorboard_trace_handler("/nonexistent", None, false);
        assert!(handler.files().is_empty());
    }
}
