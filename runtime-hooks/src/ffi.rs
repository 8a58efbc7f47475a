//! The C ABI: `nph_*` functions declared in `include/neuronprof_hooks.h`.
//!
//! Same semantics as the Rust functions they wrap. Every function is safe to call from
//! any thread at any time; the pointer arguments' requirements are in the header and in
//! each function's `# Safety` section. Nothing here panics across the boundary in normal
//! use (a panic in an `extern "C"` function aborts the process).

use std::ffi::c_char;

use crate::Record;
use crate::{clock, collector, hooks, names, NameId, OperatorPayload, Payload, RangePayload};

/// Turns recording on (non-zero) or off (zero).
#[no_mangle]
pub extern "C" fn nph_set_enabled(enabled: i32) {
    hooks::set_enabled(enabled != 0);
}

/// 1 if recording is on, else 0.
#[no_mangle]
pub extern "C" fn nph_is_enabled() -> i32 {
    i32::from(hooks::is_enabled())
}

/// Interns `len` bytes at `name` (UTF-8; invalid sequences become U+FFFD) and returns the
/// name id; 0 if `name` is null. Takes a lock: call once per distinct name.
///
/// # Safety
///
/// `name` must be null or point to `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn nph_intern(name: *const c_char, len: usize) -> u32 {
    if name.is_null() {
        return 0;
    }
    // SAFETY: the caller guarantees `name` points to `len` readable bytes.
    let bytes = unsafe { std::slice::from_raw_parts(name.cast::<u8>(), len) };
    names::intern(&String::from_utf8_lossy(bytes)).as_u32()
}

/// Copies the name of `name_id` into `buf` (at most `buf_len - 1` bytes, then a NUL) and
/// returns the name's full length in bytes; 0 for an unknown id. With `buf_len == 0`
/// nothing is written (use it to ask for the length).
///
/// # Safety
///
/// `buf` must be null with `buf_len == 0`, or point to `buf_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn nph_resolve_name(name_id: u32, buf: *mut c_char, buf_len: usize) -> usize {
    let Some(name) = names::resolve(NameId::from_u32(name_id)) else {
        return 0;
    };
    if !buf.is_null() && buf_len > 0 {
        let copied = name.len().min(buf_len - 1);
        // SAFETY: the caller guarantees `buf_len` writable bytes at `buf`; we write
        // `copied + 1 <= buf_len` bytes, from a separate allocation (no overlap).
        unsafe {
            std::ptr::copy_nonoverlapping(name.as_ptr(), buf.cast::<u8>(), copied);
            buf.add(copied).write(0);
        }
    }
    name.len()
}

/// A new correlation id (never 0).
#[no_mangle]
pub extern "C" fn nph_next_corr_id() -> u64 {
    hooks::next_corr_id()
}

/// The calling thread's host clock in ns (monotonic clock minus emulation time).
#[no_mangle]
pub extern "C" fn nph_now_ns() -> u64 {
    clock::now_ns()
}

/// The process's monotonic clock in ns, without emulation offset.
#[no_mangle]
pub extern "C" fn nph_monotonic_ns() -> u64 {
    clock::monotonic_ns()
}

/// Writes the process clock anchor (monotonic ns and Unix-epoch ns of the same instant).
///
/// # Safety
///
/// Each pointer must be null (skipped) or valid for writing a `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn nph_clock_anchor(monotonic_ns: *mut u64, unix_ns: *mut u64) {
    let anchor = clock::anchor();
    if !monotonic_ns.is_null() {
        // SAFETY: non-null, and the caller guarantees it is valid for writes.
        unsafe { monotonic_ns.write_unaligned(anchor.monotonic_ns) };
    }
    if !unix_ns.is_null() {
        // SAFETY: non-null, and the caller guarantees it is valid for writes.
        unsafe { unix_ns.write_unaligned(anchor.unix_ns) };
    }
}

/// Begins emulation work on this thread (its host clock stands still until the end).
#[no_mangle]
pub extern "C" fn nph_emulation_begin() {
    clock::emulation_begin();
}

/// Ends emulation work; the time since the begin is subtracted from the host clock.
#[no_mangle]
pub extern "C" fn nph_emulation_end() {
    clock::emulation_end();
}

/// Moves this thread's host clock forward to `target_ns` if behind; returns the clock.
#[no_mangle]
pub extern "C" fn nph_advance_to(target_ns: u64) -> u64 {
    clock::advance_to(target_ns)
}

/// Makes this thread's host clock follow its CPU time (`on != 0`) or not.
#[no_mangle]
pub extern "C" fn nph_follow_cpu_time(on: i32) {
    clock::follow_cpu_time(on != 0);
}

/// A CPU-time boundary on this thread (see `clock::sync`); returns the host clock.
#[no_mangle]
pub extern "C" fn nph_clock_sync() -> u64 {
    clock::sync()
}

/// Begins a process-wide cut on this thread: every thread's host clock stands still
/// until the matching `nph_cut_end` (and every other thread's cut) ends; cuts nest.
#[no_mangle]
pub extern "C" fn nph_cut_begin() {
    clock::cut_begin();
}

/// Ends this thread's cut; the cut time is subtracted from the process timeline.
#[no_mangle]
pub extern "C" fn nph_cut_end() {
    clock::cut_end();
}

/// A runtime boundary: cuts the time this thread waited for a CPU since its previous
/// boundary, retroactively (see `clock::cut_run_delay`); returns the ns cut.
#[no_mangle]
pub extern "C" fn nph_cut_run_delay() -> u64 {
    clock::cut_run_delay()
}

/// Total length of the process-wide cuts so far, ns.
#[no_mangle]
pub extern "C" fn nph_cut_total_ns() -> u64 {
    clock::cut_total_ns()
}

/// Records `*record` as given (its `thread_id` is filled in), if recording is on.
///
/// # Safety
///
/// `record` must be null (ignored) or point to a readable `nph_record`.
#[no_mangle]
pub unsafe extern "C" fn nph_record_raw(record: *const Record) {
    if !hooks::is_enabled() || record.is_null() {
        return;
    }
    // SAFETY: non-null and readable per the caller; every bit pattern is a valid Record
    // (plain integers and a union of plain data), and read_unaligned tolerates a buffer
    // that is not 64-byte aligned.
    let record = unsafe { record.read_unaligned() };
    hooks::record(record);
}

/// Records a record of raw `kind`/`phase`/`op` stamped now on this thread's host clock,
/// with `*payload` (all zero if null), if recording is on.
///
/// # Safety
///
/// `payload` must be null or point to a readable `nph_payload`.
#[no_mangle]
pub unsafe extern "C" fn nph_record_now(kind: u8, phase: u8, op: u16, payload: *const Payload) {
    if !hooks::is_enabled() {
        return;
    }
    let payload = if payload.is_null() {
        Payload::default()
    } else {
        // SAFETY: non-null and readable per the caller; any bit pattern is a valid Payload.
        unsafe { payload.read_unaligned() }
    };
    let now_ns = clock::now_ns();
    let record = Record {
        kind,
        phase,
        op,
        thread_id: 0,
        start_ns: now_ns,
        end_ns: now_ns,
        payload,
    };
    hooks::record(record);
}

/// Host operator `name_id` begins now.
#[no_mangle]
pub extern "C" fn nph_operator_begin(name_id: u32, corr_id: u64, seq_nr: u64) {
    hooks::operator_begin(operator(name_id, corr_id, seq_nr));
}

/// Host operator `name_id` ends now.
#[no_mangle]
pub extern "C" fn nph_operator_end(name_id: u32, corr_id: u64, seq_nr: u64) {
    hooks::operator_end(operator(name_id, corr_id, seq_nr));
}

fn operator(name_id: u32, corr_id: u64, seq_nr: u64) -> OperatorPayload {
    OperatorPayload {
        name_id: NameId::from_u32(name_id),
        corr_id,
        seq_nr,
        ..Default::default()
    }
}

/// User range `name_id` (with a user value, the step for `ProfilerStep`) begins now.
#[no_mangle]
pub extern "C" fn nph_range_begin(name_id: u32, value: u64) {
    hooks::range_begin(RangePayload {
        name_id: NameId::from_u32(name_id),
        value,
        ..Default::default()
    });
}

/// User range `name_id` ends now.
#[no_mangle]
pub extern "C" fn nph_range_end(name_id: u32, value: u64) {
    hooks::range_end(RangePayload {
        name_id: NameId::from_u32(name_id),
        value,
        ..Default::default()
    });
}

/// Copies up to `capacity` unread records of all threads into `out` and returns how many.
///
/// # Safety
///
/// `out` must be null with `capacity == 0`, or point to `capacity` writable `nph_record`s.
#[no_mangle]
pub unsafe extern "C" fn nph_drain(out: *mut Record, capacity: usize) -> usize {
    if out.is_null() {
        return 0;
    }
    let mut written = 0;
    collector::drain_with(capacity, |record| {
        // SAFETY: drain_with hands over at most `capacity` records, so `written <
        // capacity` and the caller guarantees room for `capacity` records at `out`.
        unsafe { out.add(written).write_unaligned(*record) };
        written += 1;
    });
    written
}

/// Registers the calling thread's ring now rather than at its first record (see
/// `runtime_hooks::register_thread`). Returns 1 on success, 0 if the thread is exiting.
#[no_mangle]
pub extern "C" fn nph_register_thread() -> i32 {
    i32::from(collector::register_thread())
}

/// Records lost so far (dropped on full rings and lost at thread exit).
#[no_mangle]
pub extern "C" fn nph_dropped_total() -> u64 {
    collector::dropped_total()
}

/// Sets the ring size in records for threads that start recording from now on.
#[no_mangle]
pub extern "C" fn nph_set_ring_capacity(records: usize) {
    collector::set_ring_capacity(records);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_name_truncates_and_terminates() {
        let text = b"ffi::tests::a_long_name";
        // SAFETY: pointer and length describe `text`.
        let name_id = unsafe { nph_intern(text.as_ptr().cast(), text.len()) };
        assert_ne!(name_id, 0);
        let mut buf = [0x7f_u8; 8];
        // SAFETY: `buf` has 8 writable bytes.
        let len = unsafe { nph_resolve_name(name_id, buf.as_mut_ptr().cast(), buf.len()) };
        assert_eq!(len, text.len());
        assert_eq!(&buf[..8], b"ffi::te\0");
        // SAFETY: null buffer with zero length asks for the length only.
        let len_only = unsafe { nph_resolve_name(name_id, std::ptr::null_mut(), 0) };
        assert_eq!(len_only, len);
        // SAFETY: null name.
        assert_eq!(unsafe { nph_intern(std::ptr::null(), 3) }, 0);
    }
}
