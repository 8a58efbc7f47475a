//! Recorded windows as Kineto activities for the plugin.

use std::collections::HashMap;
use std::ffi::{c_char, CString};
use std::sync::Arc;
use std::time::Duration;

use profiler::{PluginActivityKind, PluginWindow};

use crate::collector;
use crate::error::{guard, NPC_OK};

/// `NpcActivity::kind`: a runtime call (`privateuse1_runtime`).
pub const NPC_ACTIVITY_RUNTIME: u32 = 1;
/// `NpcActivity::kind`: a kernel launch runtime call (the start of an `ac2g` flow).
pub const NPC_ACTIVITY_RUNTIME_LAUNCH: u32 = 2;
/// `NpcActivity::kind`: a kernel (`kernel`).
pub const NPC_ACTIVITY_KERNEL: u32 = 3;
/// `NpcActivity::kind`: a copy (`gpu_memcpy`).
pub const NPC_ACTIVITY_MEMCPY: u32 = 4;
/// `NpcActivity::kind`: a memset (`gpu_memset`).
pub const NPC_ACTIVITY_MEMSET: u32 = 5;
/// `NpcActivity::kind`: an event's mark on its queue (`cuda_event`, zero long).
pub const NPC_ACTIVITY_EVENT_RECORD: u32 = 6;
/// `NpcActivity::kind`: a queue's wait for another queue's event (`cuda_sync`).
pub const NPC_ACTIVITY_STREAM_WAIT: u32 = 7;

/// `NpcActivity::flow`: not part of a flow.
pub const NPC_FLOW_NONE: u32 = 0;
/// `NpcActivity::flow`: starts the flow whose id is its `corr_id`.
pub const NPC_FLOW_START: u32 = 1;
/// `NpcActivity::flow`: ends the flow whose id is its `corr_id`.
pub const NPC_FLOW_END: u32 = 2;

/// One activity (see `profiler::PluginActivity`); `name` lives as long as its window.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NpcActivity {
    /// `NPC_ACTIVITY_*`.
    pub kind: u32,
    /// Device (a runtime call's target device).
    pub device: u16,
    /// Execution queue (device activities; 0 for runtime calls).
    pub queue: u16,
    /// NUL-terminated name, owned by the window.
    pub name: *const c_char,
    /// Start, ns since the Unix epoch.
    pub start_unix_ns: i64,
    /// End, ns since the Unix epoch.
    pub end_unix_ns: i64,
    /// Runtime calls: the OS thread id. Device activities: 0.
    pub os_tid: u64,
    /// Correlation id shared by a launch and its kernel.
    pub corr_id: u64,
    /// FLOPs.
    pub flops: u64,
    /// Bytes.
    pub bytes: u64,
    /// `NPC_FLOW_*`: the activity's part in a flow (id `corr_id`).
    pub flow: u32,
    /// A wait (`NPC_ACTIVITY_STREAM_WAIT`): the queue of the event it waited for, -1 when
    /// unknown (the event's record is not in the window).
    pub wait_on_queue: i32,
    /// A wait: the device of that event.
    pub wait_on_device: u16,
    /// Zero.
    pub reserved: [u16; 3],
    /// A kernel launched by `npc_launch_op`: its lowering in words (NUL-terminated, owned
    /// by the window); null otherwise.
    pub lowering: *const c_char,
    /// 1 when the default rule costed the kernel (the op was not in the table), else 0.
    pub costed_by_default: u32,
    /// Zero.
    pub reserved2: u32,
}

/// A converted window (opaque to C).
#[derive(Debug)]
pub struct NpcWindow {
    activities: Vec<NpcActivity>,
    dropped_records: u64,
    unpaired_records: u64,
    /// Owns the strings `activities` point to.
    _names: HashMap<Arc<str>, CString>,
}

impl NpcWindow {
    fn from_plugin(
        window: PluginWindow,
        dropped_records: u64,
        notes: &HashMap<u64, crate::ops::KernelNote>,
    ) -> Self {
        let mut names: HashMap<Arc<str>, CString> = HashMap::new();
        let mut c_name = |name: &Arc<str>| -> *const c_char {
            names
                .entry(Arc::clone(name))
                .or_insert_with(|| CString::new(name.replace('\0', " ")).unwrap_or_default())
                .as_ptr()
        };
        let activities = window
            .activities
            .iter()
            .map(|a| {
                let note = (a.kind == PluginActivityKind::Kernel)
                    .then(|| notes.get(&a.corr_id))
                    .flatten();
                let lowering = note
                    .and_then(|n| runtime_hooks::resolve(n.lowering))
                    .map_or(std::ptr::null(), |text| c_name(&text));
                let name = c_name(&a.name);
                NpcActivity {
                    kind: match a.kind {
                        PluginActivityKind::Runtime { launch: true } => NPC_ACTIVITY_RUNTIME_LAUNCH,
                        PluginActivityKind::Runtime { launch: false } => NPC_ACTIVITY_RUNTIME,
                        PluginActivityKind::Kernel => NPC_ACTIVITY_KERNEL,
                        PluginActivityKind::Memcpy => NPC_ACTIVITY_MEMCPY,
                        PluginActivityKind::Memset => NPC_ACTIVITY_MEMSET,
                        PluginActivityKind::EventRecord => NPC_ACTIVITY_EVENT_RECORD,
                        PluginActivityKind::StreamWait => NPC_ACTIVITY_STREAM_WAIT,
                    },
                    device: a.device,
                    queue: a.queue,
                    name,
                    start_unix_ns: a.start_unix_ns,
                    end_unix_ns: a.end_unix_ns,
                    os_tid: a.os_tid,
                    corr_id: a.corr_id,
                    flops: a.flops,
                    bytes: a.bytes,
                    flow: match a.flow_start {
                        None => NPC_FLOW_NONE,
                        Some(true) => NPC_FLOW_START,
                        Some(false) => NPC_FLOW_END,
                    },
                    wait_on_queue: a.wait_on.map_or(-1, |(_, queue)| i32::from(queue)),
                    wait_on_device: a.wait_on.map_or(0, |(device, _)| device),
                    reserved: [0; 3],
                    lowering,
                    costed_by_default: u32::from(note.is_some_and(|n| n.costed_by_default)),
                    reserved2: 0,
                }
            })
            .collect();
        NpcWindow {
            activities,
            dropped_records,
            unpaired_records: window.unpaired_records,
            _names: names,
        }
    }
}

/// Opens a window: drops what was recorded so far and drains every thread's ring every
/// `interval_us` microseconds from then on (a background thread), so a window longer
/// than a ring loses nothing. `npc_collect` closes it.
#[no_mangle]
pub extern "C" fn npc_window_begin(interval_us: u64) -> i32 {
    guard(|| {
        collector::begin(Duration::from_micros(interval_us.max(100)));
        crate::ops::clear_notes();
        NPC_OK
    })
}

/// Closes the window `npc_window_begin` opened (without one: takes what the rings
/// hold) and converts its records (runtime calls and device activities, wall-clock
/// times). Free it with `npc_window_free`. Null only if the conversion panicked (a
/// bug; see `npc_last_error`).
#[no_mangle]
pub extern "C" fn npc_collect() -> *mut NpcWindow {
    let mut window = std::ptr::null_mut();
    let _ = guard(|| {
        let (records, dropped_records) = collector::end();
        let threads = runtime_hooks::thread_stats();
        let anchor = runtime_hooks::clock::anchor();
        let detail = match crate::device::record_detail() {
            neuron_backend::RecordDetail::Instructions => profiler::DeviceDetail::Instructions,
            neuron_backend::RecordDetail::Kernels => profiler::DeviceDetail::Kernels,
        };
        let mut plugin = profiler::plugin_window(&records, &threads, &anchor, detail);
        crate::warp::keep_engine_rows(std::mem::take(&mut plugin.engine_rows));
        let notes = crate::ops::take_notes();
        window = Box::into_raw(Box::new(NpcWindow::from_plugin(
            plugin,
            dropped_records,
            &notes,
        )));
        NPC_OK
    });
    window
}

/// Drops every record recorded so far; returns how many.
#[no_mangle]
pub extern "C" fn npc_discard() -> u64 {
    crate::error::guard_value("npc_discard", 0, || {
        runtime_hooks::drain_with(usize::MAX, |_| {}) as u64
    })
}

/// Records lost in `window` (full rings; 0 for null): the trace's `dropped_records`.
///
/// # Safety
///
/// `window` must be null or from `npc_collect` and not yet freed.
#[no_mangle]
pub unsafe extern "C" fn npc_window_dropped(window: *const NpcWindow) -> u64 {
    crate::error::guard_value("npc_window_dropped", 0, || {
        // SAFETY: the caller guarantees a live window or null.
        unsafe { window.as_ref() }.map_or(0, |w| w.dropped_records)
    })
}

/// Records of `window` that could not be paired (a begin without its end); 0 for null.
///
/// # Safety
///
/// `window` must be null or from `npc_collect` and not yet freed.
#[no_mangle]
pub unsafe extern "C" fn npc_window_unpaired(window: *const NpcWindow) -> u64 {
    crate::error::guard_value("npc_window_unpaired", 0, || {
        // SAFETY: the caller guarantees a live window or null.
        unsafe { window.as_ref() }.map_or(0, |w| w.unpaired_records)
    })
}

/// Number of activities in `window` (0 for null).
///
/// # Safety
///
/// `window` must be null or from `npc_collect` and not yet freed.
#[no_mangle]
pub unsafe extern "C" fn npc_window_len(window: *const NpcWindow) -> usize {
    crate::error::guard_value("npc_window_len", 0, || {
        // SAFETY: the caller guarantees a live window or null.
        unsafe { window.as_ref() }.map_or(0, |w| w.activities.len())
    })
}

/// Activity `index` of `window`; null when out of range.
///
/// # Safety
///
/// `window` must be null or from `npc_collect` and not yet freed; the result lives as
/// long as the window.
#[no_mangle]
pub unsafe extern "C" fn npc_window_get(
    window: *const NpcWindow,
    index: usize,
) -> *const NpcActivity {
    crate::error::guard_value("npc_window_get", std::ptr::null(), || {
        // SAFETY: the caller guarantees a live window or null.
        unsafe { window.as_ref() }
            .and_then(|w| w.activities.get(index))
            .map_or(std::ptr::null(), |a| a as *const NpcActivity)
    })
}

/// Frees a window from `npc_collect` (null is ignored).
///
/// # Safety
///
/// `window` must be null or from `npc_collect`, freed at most once.
#[no_mangle]
pub unsafe extern "C" fn npc_window_free(window: *mut NpcWindow) {
    crate::error::guard_value("npc_window_free", (), || {
        if !window.is_null() {
            // SAFETY: the caller guarantees it came from Box::into_raw in npc_collect and
            // is freed once.
            drop(unsafe { Box::from_raw(window) });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{npc_launch, NpcKernelSpan, NpcLaunch, NPC_DTYPE_F32, NPC_KERNEL_COPY_H2D};

    #[test]
    fn a_copy_comes_back_as_a_launch_and_a_memcpy_with_one_correlation() {
        let _recording = crate::tests::recording();
        runtime_hooks::set_enabled(true);
        assert_eq!(npc_window_begin(1_000), crate::NPC_OK);
        let corr_id = runtime_hooks::next_corr_id();
        let launch = NpcLaunch {
            name_id: runtime_hooks::intern("Memcpy HtoD (Host -> Neuron)").as_u32(),
            kind: NPC_KERNEL_COPY_H2D,
            corr_id,
            bytes: 1 << 16,
            dtype: NPC_DTYPE_F32,
            ..Default::default()
        };
        let mut span = NpcKernelSpan::default();
        // SAFETY: valid launch and span.
        assert_eq!(unsafe { npc_launch(&launch, &mut span) }, crate::NPC_OK);
        let window = npc_collect();
        // SAFETY: `window` is live until freed below.
        let activities: Vec<NpcActivity> = (0..unsafe { npc_window_len(window) })
            .map(|i| unsafe { *npc_window_get(window, i) })
            .filter(|a| a.corr_id == corr_id)
            .collect();
        let kinds: Vec<u32> = activities.iter().map(|a| a.kind).collect();
        assert!(kinds.contains(&NPC_ACTIVITY_RUNTIME_LAUNCH), "{kinds:?}");
        assert!(kinds.contains(&NPC_ACTIVITY_MEMCPY), "{kinds:?}");
        let copy = activities
            .iter()
            .find(|a| a.kind == NPC_ACTIVITY_MEMCPY)
            .unwrap();
        // SAFETY: names live as long as the window.
        let name = unsafe { std::ffi::CStr::from_ptr(copy.name) };
        assert_eq!(name.to_str().unwrap(), "Memcpy HtoD (Host -> Neuron)");
        assert!(copy.start_unix_ns > 1_577_836_800_000_000_000);
        // SAFETY: `window` is live.
        assert_eq!(unsafe { npc_window_dropped(window) }, 0);
        // SAFETY: freed once.
        unsafe { npc_window_free(window) };
        runtime_hooks::set_enabled(false);
    }
}
