//! How a trace describes a device: its `deviceProperties` entry, process name and
//! queue names, as the `profiler` crate's own traces write them (`profiler::DeviceInfo`),
//! so PyTorch's traces of the neuron device carry the same labels and peak figures
//! (which `neuronprof analyze` uses for its device label and MFU).

use std::ffi::c_char;

use neuron_backend::DeviceProfile;
use profiler::DeviceInfo;

use crate::device::runtime;

/// The description of logical core `index` of `profile`. The same figures as
/// `neuronprof run` states (cli/src/run.rs, `device_info`): peak TFLOPs of the logical
/// core per dtype from the profile's TensorE rate, its HBM share, its queues.
pub(crate) fn device_info(profile: &DeviceProfile, index: u16) -> DeviceInfo {
    DeviceInfo {
        core_version: profile.core_version().to_owned(),
        lnc: profile.lnc,
        hbm_bytes: profile.hbm_bytes_per_core(),
        peak_tflops: profile
            .peak_tflops_per_core()
            .iter()
            .map(|&(dtype, tflops)| (dtype.to_owned(), tflops))
            .collect(),
        compute_queues: profile.compute_queues,
        collective_queues: profile.collective_queues,
        tensor_op_queues: profile.tensor_op_queues,
        ..DeviceInfo::new(index, &profile.name)
    }
}

/// Copies `text` into `buf` (at most `buf_len - 1` bytes and a NUL); returns its length.
///
/// # Safety
///
/// `buf` must be null with `buf_len == 0`, or point to `buf_len` writable bytes.
pub(crate) unsafe fn write_c_string(text: &str, buf: *mut c_char, buf_len: usize) -> usize {
    if !buf.is_null() && buf_len > 0 {
        let copied = text.len().min(buf_len - 1);
        // SAFETY: the caller guarantees `buf_len` writable bytes; we write
        // `copied + 1 <= buf_len` bytes from a separate allocation.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), copied);
            buf.add(copied).write(0);
        }
    }
    text.len()
}

fn describe(device: u16, what: impl FnOnce(&DeviceInfo) -> String) -> Option<String> {
    let runtime = runtime().ok()?;
    (usize::from(device) < runtime.device_count())
        .then(|| what(&device_info(runtime.profile(), device)))
}

/// Writes device `device`'s `deviceProperties` entry (a JSON object) into `buf`;
/// returns its length, 0 for a device that does not exist.
///
/// # Safety
///
/// `buf` must be null with `buf_len == 0`, or point to `buf_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn npc_device_properties(
    device: u16,
    buf: *mut c_char,
    buf_len: usize,
) -> usize {
    crate::error::guard_value("npc_device_properties", 0, || {
        let text = describe(device, |d| d.properties().to_string()).unwrap_or_default();
        // SAFETY: forwarded from the caller.
        unsafe { write_c_string(&text, buf, buf_len) }
    })
}

/// Writes the process name of device `device`'s rows (`NeuronCore 0 (trn2, LNC=2)`);
/// returns its length, 0 for a device that does not exist.
///
/// # Safety
///
/// `buf` must be null with `buf_len == 0`, or point to `buf_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn npc_device_name(device: u16, buf: *mut c_char, buf_len: usize) -> usize {
    crate::error::guard_value("npc_device_name", 0, || {
        let text = describe(device, DeviceInfo::process_name).unwrap_or_default();
        // SAFETY: forwarded from the caller.
        unsafe { write_c_string(&text, buf, buf_len) }
    })
}

/// Writes the name of execution queue `queue` of device `device` (`stream 0
/// (compute)`); returns its length, 0 for a device that does not exist.
///
/// # Safety
///
/// `buf` must be null with `buf_len == 0`, or point to `buf_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn npc_queue_name(
    device: u16,
    queue: u16,
    buf: *mut c_char,
    buf_len: usize,
) -> usize {
    crate::error::guard_value("npc_queue_name", 0, || {
        let text = describe(device, |d| d.queue_name(queue)).unwrap_or_default();
        // SAFETY: forwarded from the caller.
        unsafe { write_c_string(&text, buf, buf_len) }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(f: impl FnOnce(*mut c_char, usize) -> usize) -> String {
        let mut buf = vec![0 as c_char; 1024];
        let len = f(buf.as_mut_ptr(), buf.len());
        // SAFETY: the callee wrote a NUL-terminated string.
        let s = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) };
        assert_eq!(s.to_bytes().len(), len);
        s.to_string_lossy().into_owned()
    }

    #[test]
    fn devices_are_described_like_the_profilers_own_traces() {
        // SAFETY: valid buffers throughout.
        let properties = text(|b, n| unsafe { npc_device_properties(1, b, n) });
        let json: serde_json::Value = serde_json::from_str(&properties).unwrap();
        assert_eq!(json["id"], 1);
        assert_eq!(json["deviceType"], "neuron");
        assert!(json["peakTflops"]["bf16"].as_f64().unwrap() > 100.0);
        assert_eq!(json["name"], "NeuronCore 1 (trn2, LNC=2)");
        // SAFETY: valid buffers.
        let name = text(|b, n| unsafe { npc_device_name(0, b, n) });
        assert_eq!(name, "NeuronCore 0 (trn2, LNC=2)");
        // SAFETY: valid buffers.
        let queue = text(|b, n| unsafe { npc_queue_name(0, 0, b, n) });
        assert_eq!(queue, "stream 0 (compute)");
        // SAFETY: valid buffers.
        assert_eq!(text(|b, n| unsafe { npc_device_name(999, b, n) }), "");
    }
}
