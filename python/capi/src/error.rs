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
        Err(panic) => fail(
            NPC_ERR_PANIC,
            format!("neuronprof_capi panicked: {}", panic_message(&*panic)),
        ),
    }
}

/// Names an entry point that panics on purpose (tests: `npc_memory_blocks` makes a
/// memory snapshot panic inside the C ABI, which must reach Python as an exception).
/// Read once; only entry points under [`guard_value`] look at it.
pub const PANIC_ENV: &str = "NEURONPROF_CAPI_PANIC";

/// Runs the body of entry point `name` that is not a runtime boundary (getters, frees,
/// clock conversions: no cut of the run delay, no thread registration, unlike
/// [`guard`]): a panic returns `on_panic` and leaves its message as the thread's last
/// error ([`npc_last_error`]) rather than unwind into C, which aborts the process.
pub(crate) fn guard_value<T>(name: &'static str, on_panic: T, body: impl FnOnce() -> T) -> T {
    let run = || {
        if panic_asked_of(name) {
            panic!("{PANIC_ENV}={name} asked it to panic");
        }
        body()
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
        Ok(value) => value,
        Err(panic) => {
            fail(
                NPC_ERR_PANIC,
                format!(
                    "neuronprof_capi panicked in {name}: {}",
                    panic_message(&*panic)
                ),
            );
            on_panic
        }
    }
}

fn panic_asked_of(name: &str) -> bool {
    static ASKED: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    ASKED
        .get_or_init(|| std::env::var(PANIC_ENV).ok())
        .as_deref()
        == Some(name)
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned())
}

/// Copies this thread's last error message into `buf` (at most `buf_len - 1` bytes and a
/// NUL) and returns its full length; 0 when there is none.
///
/// # Safety
///
/// `buf` must be null with `buf_len == 0`, or point to `buf_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn npc_last_error(buf: *mut c_char, buf_len: usize) -> usize {
    crate::error::guard_value("npc_last_error", 0, || {
        // SAFETY: forwarded from the caller.
        LAST_ERROR
            .with(|last| unsafe { crate::describe::write_c_string(&last.borrow(), buf, buf_len) })
    })
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

    #[test]
    fn a_panic_under_guard_value_returns_the_fallback_and_a_message() {
        let value = guard_value("npc_example", 7u64, || panic!("boom"));
        assert_eq!(value, 7);
        let mut buf = [0 as c_char; 128];
        // SAFETY: `buf` has 128 writable bytes.
        unsafe { npc_last_error(buf.as_mut_ptr(), buf.len()) };
        // SAFETY: npc_last_error wrote a NUL-terminated string into `buf`.
        let text = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) };
        assert_eq!(
            text.to_str().unwrap(),
            "neuronprof_capi panicked in npc_example: boom"
        );
        assert_eq!(guard_value("npc_example", 7u64, || 3), 3);
    }

    // Every `extern "C"` function of the C ABI runs its work under a panic guard
    // (`guard`, or `guard_value` for calls that are not runtime boundaries): a panic that
    // unwound into C would abort the user's Python process. Twenty-five entry points
    // (`npc_memory_blocks`, `npc_window_*`, `npc_warp_unix_*`, …) had none. Read from the
    // source, so a new entry point without a guard fails here.

    /// `(file, function)` of every entry point whose body calls no guard.
    fn unguarded() -> (usize, Vec<String>) {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut count = 0;
        let mut missing = Vec::new();
        let mut files: Vec<_> = std::fs::read_dir(&src)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "rs"))
            .collect();
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let mut rest = text.as_str();
            while let Some(at) = rest.find("extern \"C\" fn ") {
                let after = &rest[at + "extern \"C\" fn ".len()..];
                let name: String = after
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                let open = after.find('{').expect("a body");
                let mut depth = 0;
                let mut end = open;
                for (i, c) in after[open..].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = open + i;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                let body = &after[open..end];
                count += 1;
                if !(body.contains("guard(") || body.contains("guard_value(")) {
                    missing.push(format!(
                        "{}: {name}",
                        file.file_name().unwrap().to_string_lossy()
                    ));
                }
                rest = &after[end..];
            }
        }
        (count, missing)
    }

    #[test]
    fn every_entry_point_is_under_the_panic_guard() {
        let (count, missing) = unguarded();
        assert!(
            count >= 47,
            "only {count} entry points found: the scan is broken"
        );
        assert!(
            missing.is_empty(),
            "entry points without a panic guard: {missing:#?}"
        );
    }
}
