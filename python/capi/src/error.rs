//! Status codes and the per-thread last error message.

use std::cell::RefCell;
use std::ffi::c_char;

/// Success.
pub const NPC_OK: i32 = 0;
/// A device index out of range (or the runtime failed to start).
pub const NPC_ERR_NO_DEVICE: i32 = 1;
/// The device's HBM cannot hold the request.
pub const NPC_ERR_OUT_OF_MEMORY: i32 = 2;
/// A malformed argument (unknown kernel kind, dtype or engine; null pointer).
pub const NPC_ERR_ARGUMENT: i32 = 3;
/// A bug: the call panicked (caught at the boundary).
pub const NPC_ERR_PANIC: i32 = 4;

thread_local! {
    static LAST_ERROR: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Stores `message` as this thread's last error and returns `status`.
pub(crate) fn fail(status: i32, message: impl Into<String>) -> i32 {
    LAST_ERROR.with(|last| *last.borrow_mut() = message.into());
    status
}

thread_local! {
    static REGISTERED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// While recording is on, a thread's first record registers its ring (allocating and
/// touching 2 MiB, about 0.7 ms): set-up of the recorder, which would show in the first
/// call the thread makes. Every call registers a thread that has not been, inside a
/// process-wide cut, before it records anything.
fn register_thread_once() {
    if runtime_hooks::is_enabled() && !REGISTERED.with(std::cell::Cell::get) {
        let _cut = runtime_hooks::clock::cut_scope();
        runtime_hooks::register_thread();
        REGISTERED.with(|r| r.set(true));
    }
}

/// Runs `body`, turning a panic into [`NPC_ERR_PANIC`] with its message. Every call is
/// a runtime boundary: the time the calling thread waited for a CPU since its previous
/// one is cut from the process timeline first (`clock::cut_run_delay`), so PyTorch's
/// host events do not show preemption by other threads and processes.
pub(crate) fn guard(body: impl FnOnce() -> i32) -> i32 {
    runtime_hooks::clock::cut_run_delay();
    register_thread_once();
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(status) => status,
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_owned());
            fail(
                NPC_ERR_PANIC,
                format!("neuronprof_capi panicked: {message}"),
            )
        }
    }
}

/// Copies this thread's last error message into `buf` (at most `buf_len - 1` bytes and a
/// NUL) and returns its full length; 0 when there is none.
///
/// # Safety
///
/// `buf` must be null with `buf_len == 0`, or point to `buf_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn npc_last_error(buf: *mut c_char, buf_len: usize) -> usize {
    // SAFETY: forwarded from the caller.
    LAST_ERROR.with(|last| unsafe { crate::describe::write_c_string(&last.borrow(), buf, buf_len) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_a_status_and_a_message() {
        let status = guard(|| panic!("boom"));
        assert_eq!(status, NPC_ERR_PANIC);
        let mut buf = [0 as c_char; 64];
        // SAFETY: `buf` has 64 writable bytes.
        let len = unsafe { npc_last_error(buf.as_mut_ptr(), buf.len()) };
        // SAFETY: npc_last_error wrote a NUL-terminated string into `buf`.
        let text = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) };
        assert_eq!(text.to_str().unwrap().len(), len);
        assert!(text.to_str().unwrap().ends_with("boom"));
    }
}
