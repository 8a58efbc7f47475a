//! The process timeline: one monotonic nanosecond clock, anchored once to wall time,
//! and each host thread's *emulation time* offset.
//!
//! # The clock
//!
//! Timestamps are `CLOCK_MONOTONIC` nanoseconds ([`monotonic_ns`]), read through the
//! vDSO (no system call). We chose it over a calibrated TSC because:
//! - every process on a machine reads the same `CLOCK_MONOTONIC`, so the traces of
//!   several ranks on one host line up exactly; a TSC converted with a per-process
//!   calibration disagrees between processes by the calibration error (tens of ppm,
//!   i.e. milliseconds after a few minutes), and the kernel already does the TSC
//!   conversion with NTP-disciplined parameters;
//! - it stays correct where the TSC is not invariant or not synchronized across cores
//!   (some VMs and older hosts), with no detection code to get wrong;
//! - the price is small: the kernel's vDSO reads the TSC itself, and the benchmark
//!   shows the difference (see the crate docs' overhead table).
//!
//! [`anchor`] pairs one monotonic reading with the wall clock (taken once per process,
//! the first time it is asked for or when recording is enabled), so a trace can state
//! `baseTimeNanoseconds` and convert with [`ClockAnchor::to_unix_ns`].
//!
//! # Emulation time
//!
//! The emulated device does on the CPU what a real device does on its own, and that CPU
//! time must not appear in host events. Each thread's *host clock* ([`now_ns`], used for
//! every host record) is the monotonic clock minus that thread's offset:
//! - between [`emulation_begin`] and [`emulation_end`] (or during an
//!   [`emulation_scope`]) the host clock stands still, and afterwards the time spent is
//!   subtracted for good;
//! - [`advance_to`] moves the host clock forward to a modeled instant (a host wait on
//!   the device ends when the model says the awaited work completes); it never moves it
//!   back.
//!
//! So a thread's host clock is monotonic, never runs ahead of real time except through
//! `advance_to`, and threads' clocks are independent. Device records carry instants the
//! timing model computed on this same timeline.
//!
//! # Time off the CPU
//!
//! A thread may also make its host clock advance only while it runs
//! ([`follow_cpu_time`]): then time the thread spends descheduled or blocked outside
//! emulation spans is dropped as well, read from the thread's CPU time at the runtime's
//! boundaries rather than per record. See [`cpu`] for how and what it costs;
//! neuron-backend's rank threads use it.
//!
//! # The process-wide cut
//!
//! A host program that computes the device's numerics on its own threads (the PyTorch
//! extension) removes that time from *every* thread's clock with a cut ([`cut_begin`],
//! [`cut_end`], [`cut_scope`]; [`CutLog`] has the details): the process
//! timeline [`process_ns`] is the monotonic clock minus every cut so far, and each
//! thread's host clock is that timeline minus the thread's own emulation offset. The two
//! compose: time that is both cut and inside a thread's emulation span is subtracted
//! once, because emulation spans are measured on the process timeline. [`cut_log`] puts
//! instants of the real clock taken by others (PyTorch's profiler) on the same timeline.

use std::sync::OnceLock;

use crate::local::LOCAL;

pub(crate) mod cpu;

pub use cpu::{
    cpu_time_reads, descheduled_ns, follow_cpu_time, follows_cpu_time, sync, thread_cpu_ns,
};

mod cut;

pub use cut::{
    cut_begin, cut_end, cut_end_keeping, cut_keep, cut_log, cut_pause_keeping, cut_resume,
    cut_run_delay, cut_scope, cut_total_ns, cuts_seen, in_cut, off_cpu_cut_ns, off_cpu_left_ns,
    process_ns, CutInterval, CutLog, CutScope, CUT_LOG_CAPACITY,
};

/// Reads `CLOCK_MONOTONIC` in nanoseconds: the raw process timeline, without the calling
/// thread's emulation offset (see [`now_ns`] for that).
#[inline]
pub fn monotonic_ns() -> u64 {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec and CLOCK_MONOTONIC is supported on
        // every Unix we build for, so the call only writes `ts`.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }
    #[cfg(not(unix))]
    {
        static EPOCH: OnceLock<std::time::Instant> = OnceLock::new();
        EPOCH
            .get_or_init(std::time::Instant::now)
            .elapsed()
            .as_nanos() as u64
    }
}

/// The calling thread's host clock in nanoseconds: the process timeline
/// ([`process_ns`]: [`monotonic_ns`] minus the process-wide cuts) minus the thread's
/// emulation offset. This is what host records are stamped with.
#[inline]
pub fn now_ns() -> u64 {
    LOCAL.with(|local| local.now_ns())
}

/// How long after its latest run-delay boundary a thread's next stamp is preceded by
/// another boundary, ns: a stamp taken after the thread was preempted would keep that
/// delay from being cut (a retroactive cut never reaches back over a stamp handed out).
const STALE_BOUNDARY_NS: u64 = 50_000;

impl crate::local::Local {
    #[inline]
    pub(crate) fn now_ns(&self) -> u64 {
        let real_ns = if self.emulation_depth.get() == 0 {
            let boundary_ns = self.boundary_ns.get();
            if boundary_ns != 0
                && self.cut_depth.get() == 0
                && monotonic_ns().saturating_sub(boundary_ns) > STALE_BOUNDARY_NS
            {
                cut_run_delay();
            }
            process_ns()
        } else {
            self.emulation_start_ns.get()
        };
        let now_ns = real_ns.wrapping_sub(self.offset_ns.get());
        self.last_ns.set(now_ns);
        now_ns
    }
}

/// One reading of the monotonic clock paired with the wall clock at the same instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockAnchor {
    /// Monotonic clock ([`monotonic_ns`]) at the anchor.
    pub monotonic_ns: u64,
    /// Nanoseconds since the Unix epoch at the anchor.
    pub unix_ns: u64,
}

impl ClockAnchor {
    /// Converts a timeline instant to nanoseconds since the Unix epoch.
    pub fn to_unix_ns(&self, timeline_ns: u64) -> u64 {
        self.unix_ns
            .wrapping_add(timeline_ns.wrapping_sub(self.monotonic_ns))
    }
}

/// The process's clock anchor, taken on first use and the same ever after.
pub fn anchor() -> ClockAnchor {
    static ANCHOR: OnceLock<ClockAnchor> = OnceLock::new();
    *ANCHOR.get_or_init(take_anchor)
}

/// Brackets a wall-clock read between two monotonic reads, a few times, and keeps the
/// tightest bracket.
fn take_anchor() -> ClockAnchor {
    let mut best: Option<(u64, ClockAnchor)> = None;
    for _ in 0..5 {
        let before = monotonic_ns();
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos() as u64);
        let after = monotonic_ns();
        let width = after - before;
        let anchor = ClockAnchor {
            monotonic_ns: before + width / 2,
            unix_ns: wall,
        };
        if best.is_none_or(|(best_width, _)| width < best_width) {
            best = Some((width, anchor));
        }
    }
    best.map(|(_, anchor)| anchor).unwrap_or(ClockAnchor {
        monotonic_ns: 0,
        unix_ns: 0,
    })
}

/// Starts emulation work on this thread: its host clock stands still until the matching
/// [`emulation_end`]. Spans nest; only the outermost one counts.
#[inline]
pub fn emulation_begin() {
    LOCAL.with(|local| {
        let depth = local.emulation_depth.get();
        if depth == 0 {
            let start_ns = if local.cpu.is_on() {
                local.cpu_sync()
            } else {
                process_ns()
            };
            local.emulation_start_ns.set(start_ns);
        }
        local.emulation_depth.set(depth.saturating_add(1));
    });
}

/// Ends emulation work begun by [`emulation_begin`]; the time in between is subtracted
/// from this thread's host clock. An `emulation_end` without a begin does nothing.
#[inline]
pub fn emulation_end() {
    LOCAL.with(|local| match local.emulation_depth.get() {
        0 => {}
        1 => {
            let start_ns = local.emulation_start_ns.get();
            if local.cpu.is_on() {
                local.cpu_end_emulation(start_ns);
            } else {
                let spent_ns = process_ns().saturating_sub(start_ns);
                local
                    .offset_ns
                    .set(local.offset_ns.get().wrapping_add(spent_ns));
            }
            local.emulation_depth.set(0);
        }
        depth => local.emulation_depth.set(depth - 1),
    });
}

/// Guard for an emulation span; ends it when dropped.
#[must_use = "the emulation span ends when this guard is dropped"]
#[derive(Debug)]
pub struct EmulationScope {
    // Not Send: the span belongs to the thread that began it.
    _not_send: std::marker::PhantomData<*const ()>,
}

/// Begins an emulation span that ends when the returned guard is dropped.
#[inline]
pub fn emulation_scope() -> EmulationScope {
    emulation_begin();
    EmulationScope {
        _not_send: std::marker::PhantomData,
    }
}

impl Drop for EmulationScope {
    #[inline]
    fn drop(&mut self) {
        emulation_end();
    }
}

/// Moves this thread's host clock forward to `target_ns` if it is behind it (a host wait
/// that ends at a modeled completion time). Never moves the clock back. Returns the
/// host clock afterwards. On a thread that follows its CPU time this is a boundary
/// ([`sync`]): time off the CPU before the wait is dropped first.
pub fn advance_to(target_ns: u64) -> u64 {
    LOCAL.with(|local| {
        if local.cpu.is_on() && local.emulation_depth.get() == 0 {
            local.cpu_sync();
        }
        let now = local.now_ns();
        if target_ns > now {
            local
                .offset_ns
                .set(local.offset_ns.get().wrapping_sub(target_ns - now));
            local.last_ns.set(target_ns);
            target_ns
        } else {
            now
        }
    })
}

/// How far this thread's host clock is behind the process timeline ([`process_ns`])
/// outside emulation spans: emulation time subtracted minus time added by
/// [`advance_to`] (negative when ahead). Process-wide cuts are not part of it.
pub fn emulation_offset_ns() -> i64 {
    LOCAL.with(|local| local.offset_ns.get() as i64)
}

/// Whether this thread is inside an emulation span.
pub fn in_emulation() -> bool {
    LOCAL.with(|local| local.emulation_depth.get() > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn emulation_span_stops_the_host_clock_and_is_subtracted() {
        let _serial = cut::serial();
        let start_offset = emulation_offset_ns();
        let before = now_ns();
        {
            let _emulating = emulation_scope();
            assert!(in_emulation());
            let frozen = now_ns();
            std::thread::sleep(Duration::from_millis(20));
            assert_eq!(
                now_ns(),
                frozen,
                "host clock moved inside an emulation span"
            );
        }
        let after = now_ns();
        assert!(!in_emulation());
        assert!(after >= before);
        assert!(
            after - before < 15_000_000,
            "emulated sleep leaked: {}",
            after - before
        );
        assert!(emulation_offset_ns() - start_offset >= 20_000_000);
    }

    #[test]
    fn nested_spans_count_once() {
        let _serial = cut::serial();
        let start_offset = emulation_offset_ns();
        emulation_begin();
        emulation_begin();
        std::thread::sleep(Duration::from_millis(5));
        emulation_end();
        assert!(in_emulation());
        emulation_end();
        emulation_end(); // unmatched: ignored
        let added = emulation_offset_ns() - start_offset;
        assert!((5_000_000..1_000_000_000).contains(&added), "added {added}");
    }

    #[test]
    fn advance_to_moves_forward_only() {
        let _serial = cut::serial();
        let now = now_ns();
        let target = now + 1_000_000_000;
        assert_eq!(advance_to(target), target);
        let after = now_ns();
        assert!(after >= target && after < target + 500_000_000);
        assert!(advance_to(now) >= after, "advance_to moved the clock back");
        assert!(
            process_ns() < now_ns(),
            "the wait put the host clock ahead of the timeline"
        );
    }

    #[test]
    fn anchor_is_stable_and_converts() {
        let a = anchor();
        assert_eq!(a, anchor());
        assert_eq!(a.to_unix_ns(a.monotonic_ns + 5), a.unix_ns + 5);
        assert_eq!(a.to_unix_ns(a.monotonic_ns - 5), a.unix_ns - 5);
        // Anchored some time after 2020.
        assert!(a.unix_ns > 1_577_836_800_000_000_000);
    }
}
