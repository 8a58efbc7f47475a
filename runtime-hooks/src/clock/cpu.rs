//! The CPU-time host clock: a thread's host clock that advances only while the thread
//! runs.
//!
//! A thread that follows its CPU time ([`follow_cpu_time`]) keeps the host clock of
//! [`super`] (monotonic time minus emulation time, plus modeled waits) and removes from
//! it, in addition, the time the thread was not running: descheduled by the kernel
//! because other threads (other ranks, numerics workers, other processes) had the CPU,
//! or blocked outside an emulation span. Host records are then the same whether the
//! machine is quiet or loaded.
//!
//! # How it is read, and what it costs
//!
//! The thread's CPU time (`clock_gettime(CLOCK_THREAD_CPUTIME_ID)`) is a system call on
//! Linux (no vDSO path): about 0.35 µs on the development VM, more than ten times the
//! monotonic read a record takes. So records never read it. A record still reads the
//! monotonic clock and subtracts the thread's offset, exactly as without this mode (one
//! extra thread-local store: the value handed out). The CPU time is read at the
//! runtime's *boundaries* — [`emulation_begin`](super::emulation_begin) and
//! [`emulation_end`](super::emulation_end) at depth 0, [`advance_to`](super::advance_to)
//! (a host wait), user-range begin and end (`ProfilerStep#N`, annotations), and
//! [`sync`] for a runtime that has other boundaries — and each read ("sync") compares
//! the CPU time the thread used since the previous read with the monotonic time that
//! passed: the difference is time off the CPU, and the host clock drops it.
//!
//! A sync never moves the clock below a value already handed out (a record stamped
//! after the thread was descheduled keeps its stamp), so the clock stays monotonic, and
//! time lost before a record that precedes the next sync stays in. A runtime gets exact
//! exclusion by placing its records where no off-CPU time can precede them unseen:
//! neuron-backend runs every op of a CPU-time thread as emulation (its host cost is
//! modeled), so between two syncs a rank thread runs only the caller's own code, which
//! records nothing, and the next op's emulation begin drops whatever time it was
//! descheduled there. The sync's own system call is not host time either: the clock
//! stands still while it runs, and a read that took long (the thread was preempted
//! inside it) is retried.
//!
//! Time inside emulation spans is already excluded whatever happens in it, so syncs
//! happen only at depth 0. Threads that do not follow their CPU time (the default) pay
//! one flag test at emulation begin, end and waits.
//!
//! [`descheduled_ns`] reports how much time the clock dropped on this thread.

use crate::local::{Local, LOCAL};

use super::process_ns;

/// A CPU-time read that took longer than this (the thread was preempted inside the
/// system call) is retried, up to [`READ_ATTEMPTS`] times.
const TIGHT_READ_NS: u64 = 20_000;
const READ_ATTEMPTS: usize = 4;

/// Per-thread state of the CPU-time clock (part of the thread's hot state).
#[derive(Debug)]
pub(crate) struct CpuClock {
    on: std::cell::Cell<bool>,
    /// Monotonic time of the last read (the end of its system call).
    base_mono_ns: std::cell::Cell<u64>,
    /// The thread's CPU time at `base_mono_ns` (estimated: the read's midpoint plus
    /// half of its duration).
    base_cpu_ns: std::cell::Cell<u64>,
    /// Time the clock dropped: the thread was not running.
    descheduled_ns: std::cell::Cell<u64>,
    /// CPU-time reads done (syncs and re-bases).
    reads: std::cell::Cell<u64>,
}

impl CpuClock {
    /// Off, as a thread starts (a `const fn` so the thread local needs no lazy init).
    pub(crate) const fn off() -> CpuClock {
        CpuClock {
            on: std::cell::Cell::new(false),
            base_mono_ns: std::cell::Cell::new(0),
            base_cpu_ns: std::cell::Cell::new(0),
            descheduled_ns: std::cell::Cell::new(0),
            reads: std::cell::Cell::new(0),
        }
    }

    #[inline]
    pub(crate) fn is_on(&self) -> bool {
        self.on.get()
    }
}

/// The calling thread's CPU time in ns (user and system), `CLOCK_THREAD_CPUTIME_ID`:
/// one system call. Falls back to the monotonic clock where the clock does not exist
/// (then a CPU-time clock removes nothing).
pub fn thread_cpu_ns() -> u64 {
    #[cfg(all(unix, not(miri)))]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec; the call only writes it.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        if rc == 0 {
            return ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
        }
    }
    process_ns()
}

/// One tight read: `(monotonic before, CPU time, monotonic after)`.
/// The two bracketing reads are of the process timeline ([`process_ns`]: monotonic
/// minus the process-wide cuts), the base every host clock builds on.
fn read() -> (u64, u64, u64) {
    let mut best = (0, 0, u64::MAX);
    for _ in 0..READ_ATTEMPTS {
        let before = process_ns();
        let cpu = thread_cpu_ns();
        let after = process_ns();
        if after - before < best.2.wrapping_sub(best.0) || best.2 == u64::MAX {
            best = (before, cpu, after);
        }
        if after - before <= TIGHT_READ_NS {
            break;
        }
    }
    best
}

impl Local {
    /// Sets the CPU-time base to now (no correction).
    fn cpu_rebase(&self) -> u64 {
        let (before, cpu, after) = read();
        let clock = &self.cpu;
        clock.reads.set(clock.reads.get() + 1);
        clock.base_mono_ns.set(after);
        clock.base_cpu_ns.set(cpu + (after - before) / 2);
        after
    }

    /// The sync at a boundary (depth 0, CPU-time clock on): drops the time the thread
    /// was off the CPU since the last read, and the read itself. Returns the monotonic
    /// time after the read, at which the host clock reads what it read before it.
    pub(crate) fn cpu_sync(&self) -> u64 {
        let (before, cpu, after) = read();
        let clock = &self.cpu;
        clock.reads.set(clock.reads.get() + 1);
        let half_read = (after - before) / 2;
        let wall = before.saturating_sub(clock.base_mono_ns.get());
        let ran = (cpu.saturating_sub(half_read)).saturating_sub(clock.base_cpu_ns.get());
        let off_cpu = wall.saturating_sub(ran);
        let host_before = before.wrapping_sub(self.offset_ns.get());
        let corrected = host_before.saturating_sub(off_cpu).max(self.last_ns.get());
        clock
            .descheduled_ns
            .set(clock.descheduled_ns.get() + host_before.saturating_sub(corrected));
        // The clock stands still during the read: at `after` it reads `corrected`.
        self.offset_ns.set(after.wrapping_sub(corrected));
        clock.base_mono_ns.set(after);
        clock.base_cpu_ns.set(cpu + half_read);
        after
    }

    /// Re-bases after an emulation span ended at monotonic `end_ns`: the span (and this
    /// read) is excluded from the host clock, and CPU time is counted from here.
    pub(crate) fn cpu_end_emulation(&self, start_ns: u64) {
        let after = self.cpu_rebase();
        self.offset_ns
            .set(self.offset_ns.get().wrapping_add(after - start_ns));
    }
}

/// Makes the calling thread's host clock follow its CPU time (`true`) or the monotonic
/// clock (`false`, the default), from now on. Turning it on starts counting CPU time
/// here; turning it off first drops the time off the CPU since the last sync.
pub fn follow_cpu_time(on: bool) {
    LOCAL.with(|local| {
        let depth0 = local.emulation_depth.get() == 0;
        match (local.cpu.is_on(), on) {
            (false, true) => {
                local.cpu.on.set(true);
                if depth0 {
                    // Count from now; the clock reads on from where it is.
                    let now = local.now_ns();
                    let after = local.cpu_rebase();
                    local.offset_ns.set(after.wrapping_sub(now));
                }
            }
            (true, false) => {
                if depth0 {
                    local.cpu_sync();
                }
                local.cpu.on.set(false);
            }
            _ => {}
        }
    });
}

/// Whether the calling thread's host clock follows its CPU time.
pub fn follows_cpu_time() -> bool {
    LOCAL.with(|local| local.cpu.is_on())
}

/// A runtime boundary: on a thread that follows its CPU time and is outside emulation,
/// reads the CPU time and drops the time off the CPU since the last read (one system
/// call, not counted as host time). Does nothing otherwise. Returns the host clock.
pub fn sync() -> u64 {
    LOCAL.with(|local| {
        if local.cpu.is_on() && local.emulation_depth.get() == 0 {
            local.cpu_sync();
        }
        local.now_ns()
    })
}

/// Host time the calling thread's clock dropped because the thread was not running
/// (descheduled or blocked outside emulation), ns, since the thread started.
pub fn descheduled_ns() -> u64 {
    LOCAL.with(|local| local.cpu.descheduled_ns.get())
}

/// CPU-time reads (system calls) the calling thread's clock has made.
pub fn cpu_time_reads() -> u64 {
    LOCAL.with(|local| local.cpu.reads.get())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{advance_to, emulation_scope, monotonic_ns, now_ns};
    use std::time::Duration;

    /// Spins on the CPU for `ns` of thread CPU time.
    fn spin_cpu(ns: u64) {
        let start = thread_cpu_ns();
        while thread_cpu_ns() - start < ns {
            std::hint::spin_loop();
        }
    }

    #[test]
    fn a_sleep_is_not_host_time_on_a_cpu_time_thread() {
        let _serial = super::super::cut::serial();
        std::thread::spawn(|| {
            follow_cpu_time(true);
            assert!(follows_cpu_time());
            let before = now_ns();
            std::thread::sleep(Duration::from_millis(30));
            let after = sync();
            assert!(after >= before);
            assert!(
                after - before < 10_000_000,
                "sleep leaked: {} ns",
                after - before
            );
            assert!(descheduled_ns() >= 20_000_000, "{}", descheduled_ns());
            // Running counts.
            spin_cpu(5_000_000);
            let ran = sync() - after;
            assert!((4_000_000..40_000_000).contains(&ran), "ran {ran}");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn the_monotonic_clock_thread_keeps_its_sleeps() {
        let _serial = super::super::cut::serial();
        std::thread::spawn(|| {
            assert!(!follows_cpu_time());
            let before = now_ns();
            std::thread::sleep(Duration::from_millis(20));
            assert!(sync() - before >= 20_000_000);
            assert_eq!(descheduled_ns(), 0);
            assert_eq!(cpu_time_reads(), 0, "no CPU-time read when off");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_stamp_taken_after_a_sleep_is_never_undercut() {
        let _serial = super::super::cut::serial();
        std::thread::spawn(|| {
            follow_cpu_time(true);
            std::thread::sleep(Duration::from_millis(20));
            let stamped = now_ns(); // a record taken before the next sync keeps its stamp
            let synced = sync();
            assert!(synced >= stamped, "clock went back: {synced} < {stamped}");
            // ... and the sleep was not dropped, because a stamp holds it.
            assert!(descheduled_ns() < 5_000_000, "{}", descheduled_ns());
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_user_range_is_a_boundary() {
        let _serial = super::super::cut::serial();
        std::thread::spawn(|| {
            crate::set_enabled(true);
            follow_cpu_time(true);
            let before = now_ns();
            std::thread::sleep(Duration::from_millis(20));
            crate::range_begin(crate::RangePayload::default());
            crate::range_end(crate::RangePayload::default());
            assert!(now_ns() - before < 10_000_000, "the range kept the sleep");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn emulation_and_waits_are_boundaries() {
        let _serial = super::super::cut::serial();
        std::thread::spawn(|| {
            follow_cpu_time(true);
            let reads = cpu_time_reads();
            let before = now_ns();
            std::thread::sleep(Duration::from_millis(20));
            {
                // The emulation begin drops the sleep; the span itself is excluded too.
                let _e = emulation_scope();
                std::thread::sleep(Duration::from_millis(20));
            }
            assert!(now_ns() - before < 10_000_000);
            assert_eq!(cpu_time_reads() - reads, 2, "one read at begin, one at end");
            let target = now_ns() + 1_000_000;
            std::thread::sleep(Duration::from_millis(20));
            // The wait's sync drops the sleep first, so the wait still waits.
            assert_eq!(advance_to(target), target);
            assert!(target - before < 10_000_000);
            assert!(descheduled_ns() >= 35_000_000, "{}", descheduled_ns());
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_thread_sharing_one_cpu_counts_only_its_own_running() {
        let _serial = super::super::cut::serial();
        if !cfg!(target_os = "linux") {
            return;
        }
        // Two busy threads pinned to one CPU (the one this thread runs on): each runs
        // about half of the wall time.
        #[cfg(target_os = "linux")]
        // SAFETY: sched_getcpu has no preconditions.
        let cpu = unsafe { libc::sched_getcpu() }.max(0) as usize;
        let pin = move || {
            #[cfg(target_os = "linux")]
            // SAFETY: a zeroed cpu_set_t is valid; CPU_SET writes inside it; the call
            // reads `set` for the calling thread only.
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu, &mut set);
                let rc = libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
                assert_eq!(rc, 0, "pinning to CPU {cpu}");
            }
        };
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let hog = {
            let stop = std::sync::Arc::clone(&stop);
            std::thread::spawn(move || {
                pin();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        };
        let (host_ns, wall_ns) = std::thread::spawn(move || {
            pin();
            follow_cpu_time(true);
            let (host0, wall0) = (sync(), monotonic_ns());
            // Work in small pieces with a boundary after each (as a runtime's ops).
            for _ in 0..40 {
                spin_cpu(1_000_000);
                drop(emulation_scope());
            }
            (sync() - host0, monotonic_ns() - wall0)
        })
        .join()
        .unwrap();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        hog.join().unwrap();
        // The hog really took turns (else this test would test nothing) ...
        assert!(
            wall_ns > host_ns + 20_000_000,
            "no preemption happened: wall {wall_ns} ns, host {host_ns} ns"
        );
        // ... and the host clock counted 40 ms of CPU, not the wall time.
        assert!(
            (38_000_000..46_000_000).contains(&host_ns),
            "host {host_ns} ns for 40 ms of CPU (wall {wall_ns} ns)"
        );
    }
}
