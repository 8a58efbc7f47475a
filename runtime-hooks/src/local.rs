//! Per-thread state: the thread's ring pointer, its emulation-time offset and CPU-time
//! clock, plus the one-time registration of a thread's ring.
//!
//! The hot state lives in one `const`-initialized thread local without a destructor, so
//! reaching it is a single TLS address computation with no lazy-init check. A second
//! thread local, touched only at registration, owns a handle to the ring and marks it
//! exited when the thread ends, so the collector can drain and then retire it.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use crate::collector;
use crate::ring::Ring;
use crate::Record;

/// A registered thread's ring and identity, shared by the thread and the registry.
#[derive(Debug)]
pub(crate) struct ThreadRing {
    pub(crate) ring: Ring,
    pub(crate) thread_id: u32,
    pub(crate) os_tid: u64,
    pub(crate) thread_name: Option<String>,
    /// Set (Release) after the thread's last push.
    pub(crate) exited: AtomicBool,
}

/// Hot per-thread state.
pub(crate) struct Local {
    /// Null: not registered yet; [`exited_marker`]: thread is exiting; else its ring.
    pub(crate) ring: Cell<*const ThreadRing>,
    /// Host clock = monotonic clock - offset (wrapping: negative after `advance_to`).
    pub(crate) offset_ns: Cell<u64>,
    /// Nesting depth of emulation spans.
    pub(crate) emulation_depth: Cell<u32>,
    /// Process timeline ([`crate::clock::process_ns`]) when the outermost emulation span
    /// began.
    pub(crate) emulation_start_ns: Cell<u64>,
    /// The last host-clock value handed out (the CPU-time clock never goes below it).
    pub(crate) last_ns: Cell<u64>,
    /// The thread's CPU-time clock (`crate::clock::cpu`), when it follows one.
    pub(crate) cpu: crate::clock::cpu::CpuClock,
    /// Nesting depth of this thread's process-wide cuts ([`crate::clock::cut_begin`]).
    pub(crate) cut_depth: Cell<u32>,
    /// Monotonic instant of the thread's latest run-delay boundary
    /// ([`crate::clock::cut_run_delay`]); 0: the thread has never been one.
    pub(crate) boundary_ns: Cell<u64>,
}

thread_local! {
    pub(crate) static LOCAL: Local = const {
        Local {
            ring: Cell::new(std::ptr::null()),
            offset_ns: Cell::new(0),
            emulation_depth: Cell::new(0),
            emulation_start_ns: Cell::new(0),
            last_ns: Cell::new(0),
            cpu: crate::clock::cpu::CpuClock::off(),
            cut_depth: Cell::new(0),
            boundary_ns: Cell::new(0),
        }
    };
    static EXIT_GUARD: ExitGuard = const { ExitGuard { ring: Cell::new(None) } };
}

/// Next registry index for a thread; 0 is never handed out.
static NEXT_THREAD_ID: AtomicU32 = AtomicU32::new(1);
/// Records attempted by a thread after its exit guard ran (during TLS destruction).
pub(crate) static LOST_AT_EXIT: AtomicU64 = AtomicU64::new(0);

/// The `ring` value of a thread whose exit guard has run.
fn exited_marker() -> *const ThreadRing {
    std::ptr::without_provenance(1)
}

/// Owns the thread's handle on its ring; dropping it (thread exit) retires the ring.
struct ExitGuard {
    ring: Cell<Option<Arc<ThreadRing>>>,
}

impl Drop for ExitGuard {
    fn drop(&mut self) {
        // `LOCAL` has no destructor, so it is still reachable here.
        LOCAL.with(|local| local.ring.set(exited_marker()));
        if let Some(ring) = self.ring.take() {
            // After this store the thread never pushes again; the collector may retire
            // the ring once it has drained it.
            ring.exited.store(true, Ordering::Release);
        }
    }
}

impl Local {
    /// Pushes `record` into this thread's ring, registering the ring on first use.
    #[inline]
    pub(crate) fn push(&self, record: &mut Record) {
        let ring = self.ring.get();
        if ring.addr() <= 1 {
            return self.push_slow(record);
        }
        // SAFETY: a pointer other than null/marker was set by `register` from an Arc
        // that this thread's exit guard keeps alive until it resets the pointer to the
        // marker, so it is valid here.
        let ring = unsafe { &*ring };
        record.thread_id = ring.thread_id;
        // SAFETY: a thread's ring is pushed to only by that thread (this one).
        unsafe { ring.ring.push(record) };
    }

    /// Registers this thread's ring now if it has none; false if the thread is exiting.
    pub(crate) fn ensure_registered(&self) -> bool {
        if self.ring.get().is_null() {
            self.register().is_some()
        } else {
            self.ring.get().addr() > 1
        }
    }

    /// This thread's registry index, registering its ring if needed.
    pub(crate) fn thread_id(&self) -> Option<u32> {
        if !self.ensure_registered() {
            return None;
        }
        // SAFETY: registered and not exiting (checked above), so the pointer was set by
        // `register` from an Arc that this thread's exit guard keeps alive.
        Some(unsafe { &*self.ring.get() }.thread_id)
    }

    #[cold]
    #[inline(never)]
    fn push_slow(&self, record: &mut Record) {
        if self.ring.get().is_null() {
            if let Some(ring) = self.register() {
                record.thread_id = ring.thread_id;
                // SAFETY: this thread just registered the ring and is its only producer.
                unsafe { ring.ring.push(record) };
                return;
            }
        }
        LOST_AT_EXIT.fetch_add(1, Ordering::Relaxed);
    }

    /// Creates this thread's ring and registers it with the collector. Runs once per
    /// thread: allocates the ring and takes the registry lock. Returns `None` when the
    /// thread is already tearing down its thread locals.
    #[cold]
    fn register(&self) -> Option<Arc<ThreadRing>> {
        // Fails while thread locals are being destroyed: register nothing then.
        EXIT_GUARD.try_with(|_| ()).ok()?;
        let ring = Arc::new(ThreadRing {
            ring: Ring::with_capacity(collector::ring_capacity()),
            thread_id: NEXT_THREAD_ID.fetch_add(1, Ordering::Relaxed),
            os_tid: os_tid(),
            thread_name: std::thread::current().name().map(str::to_owned),
            exited: AtomicBool::new(false),
        });
        EXIT_GUARD
            .try_with(|guard| guard.ring.set(Some(Arc::clone(&ring))))
            .ok()?;
        collector::register(Arc::clone(&ring));
        self.ring.set(Arc::as_ptr(&ring));
        Some(ring)
    }
}

/// The kernel's id of the calling thread (what Kineto traces use as `tid`).
fn os_tid() -> u64 {
    #[cfg(all(target_os = "linux", not(miri)))]
    {
        // SAFETY: gettid has no preconditions and cannot fail.
        (unsafe { libc::gettid() }) as u64
    }
    #[cfg(not(all(target_os = "linux", not(miri))))]
    {
        0
    }
}
