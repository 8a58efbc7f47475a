//! The warp: PyTorch's own host events onto the emulator's cut timeline.
//!
//! The extension computes the device's numerics on the host threads inside process-wide
//! cuts (`runtime_hooks::clock::cut_scope`), so the process timeline — our records, and
//! the device activities the timing model places — runs at `monotonic − cut`. PyTorch's
//! profiler stamps its events with the real clock, which includes the cuts. After
//! PyTorch writes a trace (or parses its results for `key_averages()`), its host times
//! go through `warped(t) = t − (cut before t)` (an instant inside a cut maps to the
//! cut's start), using the cut log ([`runtime_hooks::clock::cut_log`]) and the clock
//! anchor to convert between PyTorch's Unix-epoch nanoseconds and the monotonic clock.
//!
//! In a trace file ([`npc_warp_trace_file`], streaming, in place): every event keeps
//! its bytes except the `ts`/`dur` of events outside [`PLUGIN_CATEGORIES`] (PyTorch's
//! `cpu_op`, `user_annotation`, `python_function`, `cpu_instant_event` (`[memory]`),
//! `fwdbwd` flows, `Trace` spans, metadata and markers), and one top-level member,
//! `neuronprof_cut`, says what was done. The plugin's own activities (runtime calls,
//! kernels, copies, memsets, stream synchronization marks (`gpu_user_annotation`) and
//! their `ac2g` flows) are already on the cut timeline and stay. A trace with `neuronprof_cut` is never warped twice.
//!
//! Host ops inside a cut are left out: the ops PyTorch recorded while the extension
//! computed a device's values on the host (a fallback's CPU `aten::mm` under the neuron
//! `aten::mm`, a compiled graph's nodes run by ATen's CPU kernels, their `aten::empty`s)
//! are the emulator's, not the program's — a real device runs none of them — and on the
//! cut timeline each would last 0 µs, so `key_averages()`, `analyze` and `diff` would
//! count calls that take no time. An event of [`HOST_OP_CATEGORIES`] whose whole
//! interval lies inside one whole cut ([`CutLog::covers`]) is not written; the marker
//! counts them (`host_ops_in_cuts`), as [`NpcWarpStats::host_ops_in_cuts`] does, and
//! `key_averages()`' events leave out the same ones ([`npc_warp_unix_intervals`]). A
//! host op that began before a cut or ends after it is the program's and stays.
//!
//! Engine rows: with `NEURONPROF_DETAIL=instructions` the device records each kernel's
//! engine instructions and DMA transfers, which Kineto has no activity type for. The
//! last collected window's rows are kept here ([`keep_engine_rows`], at most
//! [`MAX_ENGINE_ROWS`]; more are counted, not kept) and the warp appends to the file's
//! `traceEvents` those that start within the span of the file's own plugin activities:
//! `neuron_instruction` rows on the device's engine tracks (tid 1000 + 100 × core +
//! engine) and `neuron_dma` rows on its DMA-queue tracks (tid 10000 + queue), each with
//! its kernel's correlation (`kernel correlation`) and named tracks, as the profiler
//! crate's own traces have them. `neuronprof_cut` then also says how many rows were
//! written (`engine_rows`) and how many the window could not keep
//! (`engine_rows_dropped`), and the warp's statistics carry both.

use std::cell::Cell;
use std::ffi::{c_char, CStr};
use std::path::Path;
use std::sync::Mutex;

use profiler::PluginEngineRows;
use runtime_hooks::clock::{self, ClockAnchor, CutLog};
use trace_format::{retime_path, AppendContext, Event, RetimeOptions, RetimeStats};

use crate::error::{fail, guard, NPC_ERR_ARGUMENT, NPC_OK};

/// Status of [`npc_warp_trace_file`] for a trace that was warped before.
pub const NPC_ERR_ALREADY_WARPED: i32 = 5;
/// Status of [`npc_warp_trace_file`] for a file that cannot be read or written, or is
/// not a trace.
pub const NPC_ERR_TRACE: i32 = 6;

/// Categories of the plugin's activities, already on the cut timeline (its stream
/// synchronization marks are `gpu_user_annotation`s: Kineto makes none for a plugin).
pub const PLUGIN_CATEGORIES: [&str; 6] = [
    "privateuse1_runtime",
    "kernel",
    "gpu_memcpy",
    "gpu_memset",
    "gpu_user_annotation",
    "ac2g",
];

/// Categories of PyTorch's host ops, left out when they lie inside one cut (see the
/// module docs).
pub const HOST_OP_CATEGORIES: [&str; 2] = ["cpu_op", "python_function"];

/// The top-level key a warped trace gets.
pub const WARP_MARKER: &str = "neuronprof_cut";

/// What [`npc_warp_trace_file`] did.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NpcWarpStats {
    /// Events in the trace.
    pub events: u64,
    /// Events whose times were warped.
    pub warped: u64,
    /// Events kept as they were (the plugin's).
    pub kept: u64,
    /// Times older than the oldest cut the log still holds, warped approximately.
    pub inexact: u64,
    /// Cut time between the first and the last instant warped, ns.
    pub cut_ns: u64,
    /// Engine instruction and DMA rows appended (`NEURONPROF_DETAIL=instructions`).
    pub engine_rows: u64,
    /// Engine rows of the last window that were not kept ([`MAX_ENGINE_ROWS`]).
    pub engine_rows_dropped: u64,
    /// Host ops left out because they lie inside a cut (the emulator's own).
    pub host_ops_in_cuts: u64,
    /// Of `cut_ns`, the time host threads spent off the CPU although they could have run
    /// (run delay, steal time: `runtime_hooks::clock::cut_run_delay`), ns.
    pub off_cpu_ns: u64,
}

/// Engine rows kept from one window: about 56 bytes each, so at most ~56 MB.
pub const MAX_ENGINE_ROWS: usize = 1_000_000;

/// The last collected window's engine rows, and how many it could not keep.
static ENGINE_ROWS: Mutex<Option<(PluginEngineRows, u64)>> = Mutex::new(None);

/// Keeps a collected window's engine rows for the trace PyTorch writes next (replacing
/// the previous window's), at most [`MAX_ENGINE_ROWS`].
pub(crate) fn keep_engine_rows(mut rows: PluginEngineRows) {
    let dropped = rows.truncate(MAX_ENGINE_ROWS);
    let kept = (!rows.is_empty() || dropped > 0).then_some((rows, dropped));
    *ENGINE_ROWS.lock().unwrap_or_else(|p| p.into_inner()) = kept;
}

/// A snapshot of the cut log with the clock anchor: Unix-epoch instants (PyTorch's) onto
/// the cut timeline.
pub(crate) struct Warp {
    log: CutLog,
    anchor: ClockAnchor,
    inexact: Cell<u64>,
    first_ns: Cell<Option<u64>>,
    last_ns: Cell<Option<u64>>,
}

impl Warp {
    pub(crate) fn now() -> Self {
        Warp {
            log: clock::cut_log(),
            anchor: clock::anchor(),
            inexact: Cell::new(0),
            first_ns: Cell::new(None),
            last_ns: Cell::new(None),
        }
    }

    /// `unix_ns` (ns since the epoch, on the real clock) on the monotonic clock.
    fn monotonic(&self, unix_ns: i64) -> Option<u64> {
        let mono = i128::from(unix_ns) - i128::from(self.anchor.unix_ns)
            + i128::from(self.anchor.monotonic_ns);
        u64::try_from(mono).ok()
    }

    /// Whether the Unix-epoch interval `[start_ns, end_ns]` lies inside one whole cut.
    pub(crate) fn covers(&self, start_ns: i64, end_ns: i64) -> bool {
        match (self.monotonic(start_ns), self.monotonic(end_ns)) {
            (Some(start), Some(end)) => self.log.is_exact(start) && self.log.covers(start, end),
            _ => false,
        }
    }

    /// `unix_ns` (ns since the epoch, on the real clock) on the cut timeline.
    pub(crate) fn unix(&self, unix_ns: i64) -> i64 {
        let Some(mono) = self.monotonic(unix_ns) else {
            return unix_ns;
        };
        if !self.log.is_exact(mono) {
            self.inexact.set(self.inexact.get() + 1);
        }
        self.first_ns
            .set(Some(self.first_ns.get().map_or(mono, |f| f.min(mono))));
        self.last_ns
            .set(Some(self.last_ns.get().map_or(mono, |l| l.max(mono))));
        unix_ns - self.log.cut_before_ns(mono) as i64
    }

    fn cut_ns(&self) -> u64 {
        match (self.first_ns.get(), self.last_ns.get()) {
            (Some(first), Some(last)) => {
                self.log.cut_before_ns(last) - self.log.cut_before_ns(first)
            }
            _ => 0,
        }
    }

    /// Of [`cut_ns`](Self::cut_ns), the time off the CPU.
    fn off_cpu_ns(&self) -> u64 {
        match (self.first_ns.get(), self.last_ns.get()) {
            (Some(first), Some(last)) => self.log.off_cpu_between_ns(first, last),
            _ => 0,
        }
    }
}

/// Warps the trace file at `path` in place (see the module docs); plain JSON or gzip.
pub(crate) fn warp_trace_file(path: &Path) -> Result<NpcWarpStats, trace_format::RetimeError> {
    let warp = Warp::now();
    let engine = ENGINE_ROWS.lock().unwrap_or_else(|p| p.into_inner());
    let engine_dropped = engine.as_ref().map_or(0, |(_, dropped)| *dropped);
    let engine_rows = Cell::new(0u64);
    let append = |context: &AppendContext, sink: &mut dyn FnMut(&Event<'_>)| {
        if let (Some((rows, _)), Some((from, to))) = (engine.as_ref(), context.kept_span_ns) {
            engine_rows.set(rows.events_between(from, to, |e| sink(e)));
        }
    };
    // Launches whose host time is the modeled launch call (process-wide so far).
    let modeled = neuron_backend::modeled_launches();
    let marker = |stats: &RetimeStats| {
        let engine = if engine.is_some() {
            format!(
                ", \"engine_rows\": {}, \"engine_rows_dropped\": {engine_dropped}",
                engine_rows.get()
            )
        } else {
            String::new()
        };
        format!(
            "{{\"cut_us\": {:.3}, \"off_cpu_us\": {:.3}, \"off_cpu_uncut_us\": {:.3}, \
             \"host_events_warped\": {}, \"plugin_events_kept\": {}, \
             \"host_ops_in_cuts\": {}, \"inexact_times\": {}, \"modeled_launches\": {}, \
             \"modeled_launch_us\": {:.3}{engine}}}",
            warp.cut_ns() as f64 / 1e3,
            warp.off_cpu_ns() as f64 / 1e3,
            clock::off_cpu_left_ns() as f64 / 1e3,
            stats.retimed,
            stats.kept,
            stats.dropped,
            warp.inexact.get(),
            modeled.0,
            modeled.1 as f64 / 1e3
        )
    };
    let drop = |cat: &[u8], start: i64, end: i64| {
        HOST_OP_CATEGORIES.iter().any(|c| c.as_bytes() == cat) && warp.covers(start, end)
    };
    let options = RetimeOptions {
        keep_categories: PLUGIN_CATEGORIES.iter().map(|c| c.to_string()).collect(),
        marker: Some((WARP_MARKER.to_owned(), &marker)),
        base_time_ns: None,
        append: Some(&append),
        drop: Some(&drop),
    };
    let stats = retime_path(path, &options, |t| warp.unix(t))?;
    Ok(NpcWarpStats {
        events: stats.events,
        warped: stats.retimed,
        kept: stats.kept,
        inexact: warp.inexact.get(),
        cut_ns: warp.cut_ns(),
        engine_rows: engine_rows.get(),
        engine_rows_dropped: engine_dropped,
        host_ops_in_cuts: stats.dropped,
        off_cpu_ns: warp.off_cpu_ns(),
    })
}

/// Warps the trace file `path` (NUL-terminated) in place and writes what was done to
/// `stats` (may be null). Returns `NPC_OK`, [`NPC_ERR_ALREADY_WARPED`] (the file is
/// unchanged) or [`NPC_ERR_TRACE`] (with the file, byte offset and event in
/// `npc_last_error`; the file is unchanged).
///
/// # Safety
///
/// `path` must be a NUL-terminated string; `stats` null or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn npc_warp_trace_file(path: *const c_char, stats: *mut NpcWarpStats) -> i32 {
    if path.is_null() {
        return fail(NPC_ERR_ARGUMENT, "npc_warp_trace_file: null path");
    }
    // SAFETY: the caller guarantees a NUL-terminated string.
    let path = unsafe { CStr::from_ptr(path) }
        .to_string_lossy()
        .into_owned();
    guard(|| match warp_trace_file(Path::new(&path)) {
        Ok(done) => {
            if !stats.is_null() {
                // SAFETY: non-null; the caller guarantees it is valid for writes.
                unsafe { stats.write(done) };
            }
            NPC_OK
        }
        Err(e @ trace_format::RetimeError::AlreadyRetimed { .. }) => {
            fail(NPC_ERR_ALREADY_WARPED, e.to_string())
        }
        Err(e) => fail(NPC_ERR_TRACE, format!("warping {path}: {e}")),
    })
}

/// Warps `len` Unix-epoch nanosecond instants at `values` in place (PyTorch's times for
/// `key_averages()`); returns how many were older than the cut log and warped
/// approximately.
///
/// # Safety
///
/// `values` must be null with `len == 0`, or point to `len` writable `int64_t`s.
#[no_mangle]
pub unsafe extern "C" fn npc_warp_unix_ns(values: *mut i64, len: usize) -> u64 {
    crate::error::guard_value("npc_warp_unix_ns", 0, || {
        if values.is_null() || len == 0 {
            return 0;
        }
        // SAFETY: the caller guarantees `len` writable values.
        let values = unsafe { std::slice::from_raw_parts_mut(values, len) };
        let warp = Warp::now();
        for v in values.iter_mut() {
            *v = warp.unix(*v);
        }
        warp.inexact.get()
    })
}

/// Warps `len` Unix-epoch intervals, `values[2i]` (start) and `values[2i + 1]` (end), in
/// place, as [`npc_warp_unix_ns`] does, and sets `inside[i]` to 1 where the interval lay
/// inside one whole cut (a host op of the emulator's, which the trace file leaves out:
/// see the module docs), else 0; returns how many instants were warped approximately.
///
/// # Safety
///
/// `values` must point to `2 * len` writable `int64_t`s and `inside` to `len` writable
/// bytes (either may be null with `len == 0`).
#[no_mangle]
pub unsafe extern "C" fn npc_warp_unix_intervals(
    values: *mut i64,
    inside: *mut u8,
    len: usize,
) -> u64 {
    crate::error::guard_value("npc_warp_unix_intervals", 0, || {
        if values.is_null() || inside.is_null() || len == 0 {
            return 0;
        }
        // SAFETY: the caller guarantees `2 * len` writable values and `len` writable bytes.
        let (values, inside) = unsafe {
            (
                std::slice::from_raw_parts_mut(values, 2 * len),
                std::slice::from_raw_parts_mut(inside, len),
            )
        };
        let warp = Warp::now();
        for (pair, inside) in values.chunks_exact_mut(2).zip(inside.iter_mut()) {
            *inside = u8::from(warp.covers(pair[0], pair[1]));
            pair[0] = warp.unix(pair[0]);
            pair[1] = warp.unix(pair[1]);
        }
        warp.inexact.get()
    })
}

/// Total time cut from the process timeline so far, ns.
#[no_mangle]
pub extern "C" fn npc_cut_total_ns() -> u64 {
    crate::error::guard_value("npc_cut_total_ns", 0, clock::cut_total_ns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn host_instants_after_a_cut_move_back_by_it() {
        let anchor = clock::anchor();
        let unix_now = || anchor.to_unix_ns(clock::monotonic_ns()) as i64;
        let before = unix_now();
        {
            let _cut = clock::cut_scope();
            std::thread::sleep(Duration::from_millis(5));
        }
        let after = unix_now();
        let mut values = [before, after];
        // SAFETY: two writable values.
        assert_eq!(unsafe { npc_warp_unix_ns(values.as_mut_ptr(), 2) }, 0);
        assert!(values[0] <= before && values[1] <= after);
        let moved = (after - before) - (values[1] - values[0]);
        assert!(moved >= 5_000_000, "the 5 ms cut is removed: {moved}");
    }

    #[test]
    fn host_ops_inside_a_cut_are_found_and_warped() {
        let anchor = clock::anchor();
        let unix_now = || anchor.to_unix_ns(clock::monotonic_ns()) as i64;
        let before = unix_now();
        let (inner_start, inner_end) = {
            let _cut = clock::cut_scope();
            std::thread::sleep(Duration::from_millis(2));
            let start = unix_now();
            std::thread::sleep(Duration::from_millis(2));
            (start, unix_now())
        };
        std::thread::sleep(Duration::from_millis(1));
        let after = unix_now();
        // The emulator's op inside the cut, and the program's op around it.
        let mut values = [inner_start, inner_end, before, after];
        let mut inside = [9u8; 2];
        // SAFETY: four writable values, two writable flags.
        let inexact =
            unsafe { npc_warp_unix_intervals(values.as_mut_ptr(), inside.as_mut_ptr(), 2) };
        assert_eq!(inexact, 0);
        assert_eq!(inside, [1, 0]);
        assert_eq!(values[0], values[1], "inside a cut, an op lasts nothing");
        assert!(values[3] - values[2] <= after - before - 4_000_000);
    }

    #[test]
    fn a_trace_file_is_warped_once() {
        let dir = std::env::temp_dir().join(format!("npc-warp-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.json");
        std::fs::write(
            &path,
            r#"{"baseTimeNanoseconds": 0, "traceEvents": [{"ph": "X", "cat": "cpu_op", "ts": 1, "dur": 1}, {"ph": "X", "cat": "kernel", "ts": 1, "dur": 1}]}"#,
        )
        .unwrap();
        let c_path = std::ffi::CString::new(path.to_string_lossy().as_bytes()).unwrap();
        let mut stats = NpcWarpStats::default();
        // SAFETY: valid path and out-pointer.
        let status = unsafe { npc_warp_trace_file(c_path.as_ptr(), &mut stats) };
        assert_eq!(status, NPC_OK);
        assert_eq!((stats.events, stats.warped, stats.kept), (2, 1, 1));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"neuronprof_cut\": {\"cut_us\""), "{text}");
        // SAFETY: valid path; null stats.
        let again = unsafe { npc_warp_trace_file(c_path.as_ptr(), std::ptr::null_mut()) };
        assert_eq!(again, NPC_ERR_ALREADY_WARPED);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        std::fs::write(&path, "{\"traceEvents\": [{\"ph\": ").unwrap();
        // SAFETY: valid path; null stats.
        let bad = unsafe { npc_warp_trace_file(c_path.as_ptr(), std::ptr::null_mut()) };
        assert_eq!(bad, NPC_ERR_TRACE);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
