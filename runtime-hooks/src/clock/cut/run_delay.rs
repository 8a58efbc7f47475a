//! The run-delay cut: the time a host thread spent off the CPU although it could have
//! run — waiting for a CPU (its run delay, from the kernel's scheduler statistics) or
//! with its virtual CPU descheduled by the hypervisor (steal time, which no run delay
//! shows) — cut from the process timeline retroactively at the thread's next runtime
//! boundary, as if the thread had had a core to itself.
//!
//! # What is measured
//!
//! At each boundary the thread reads its run delay (`/proc/thread-self/schedstat`), its
//! CPU time (`CLOCK_THREAD_CPUTIME_ID`, which a paravirtualized kernel keeps free of
//! steal time) and its count of voluntary context switches (`getrusage`), and compares
//! them with the previous boundary's, leaving out what happened inside its own cuts:
//! - when the thread did not block since (no voluntary switch), everything it was not
//!   running was time it could have run: the monotonic time that passed minus its CPU
//!   time is cut. That covers the run delay and the steal time (measured on the 2-core
//!   development VM, 2026-12-07: 234 ms of a 5 s busy loop at load 3 were neither CPU
//!   time nor run delay);
//! - when it blocked (a sleep, a lock, a queue), the blocked time is the program's —
//!   a real host blocks too — and only the run delay is cut.
//!
//! # Where it goes
//!
//! The delay happened somewhere between the thread's previous boundary and this one, and
//! other code (PyTorch's profiler) may have stamped instants with the real clock in that
//! stretch without telling us. So the cut is spread evenly over the stretch (logged as a
//! share of it, [`CutInterval`]) rather than placed as one block at its end: a stamp
//! inside moves back by the share of the part before it, so stamps keep their order and
//! the lengths between them shrink in proportion — a block would map every stamp inside
//! it to its start, squeezing the operators there to zero length.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{in_cut, publish, push_log, writer, CutInterval, CUT_LOG_CAPACITY};
use super::{LAST_READ_NS, TOTAL_NS};
use crate::clock::monotonic_ns;
use crate::local::LOCAL;

/// Minimum run delay worth a retroactive cut, ns (a boundary's reads cost about 2 µs).
const MIN_RUN_DELAY_NS: u64 = 5_000;

/// Time off the CPU cut so far, ns (part of the total cut).
static OFF_CPU_CUT_NS: AtomicU64 = AtomicU64::new(0);
/// Time off the CPU a boundary measured but could not cut (another thread's cut was
/// open, or the stretch since the latest stamp handed out was shorter), ns.
static OFF_CPU_LEFT_NS: AtomicU64 = AtomicU64::new(0);

/// Time off the CPU (run delay and steal time) cut from the process timeline so far, ns.
pub fn off_cpu_cut_ns() -> u64 {
    OFF_CPU_CUT_NS.load(Ordering::Relaxed)
}

/// Time off the CPU that boundaries measured but could not cut, ns: it stayed in the
/// host timeline (see [`cut_run_delay`] for when that happens).
pub fn off_cpu_left_ns() -> u64 {
    OFF_CPU_LEFT_NS.load(Ordering::Relaxed)
}

/// A voluntary-switch count the kernel does not give (the thread counts as blocked).
const UNKNOWN: u64 = u64::MAX;

/// One reading of a thread's scheduling counters.
#[derive(Debug, Clone, Copy)]
struct Reading {
    /// Monotonic instant the reading began.
    at_ns: u64,
    /// Total run delay, ns.
    run_delay_ns: u64,
    /// Thread CPU time, ns.
    cpu_ns: u64,
    /// Voluntary context switches.
    voluntary: u64,
}

impl Reading {
    /// `self` minus `earlier`, counter by counter (saturating).
    fn since(&self, earlier: &Reading) -> Reading {
        Reading {
            at_ns: self.at_ns.saturating_sub(earlier.at_ns),
            run_delay_ns: self.run_delay_ns.saturating_sub(earlier.run_delay_ns),
            cpu_ns: self.cpu_ns.saturating_sub(earlier.cpu_ns),
            voluntary: if self.voluntary == UNKNOWN || earlier.voluntary == UNKNOWN {
                UNKNOWN
            } else {
                self.voluntary.saturating_sub(earlier.voluntary)
            },
        }
    }

    /// `self` plus `delta`, counter by counter.
    fn plus(&self, delta: &Reading) -> Reading {
        Reading {
            at_ns: self.at_ns + delta.at_ns,
            run_delay_ns: self.run_delay_ns + delta.run_delay_ns,
            cpu_ns: self.cpu_ns + delta.cpu_ns,
            voluntary: self.voluntary.saturating_add(delta.voluntary),
        }
    }
}

/// This thread's scheduler statistics (`/proc/thread-self/schedstat`, opened by the
/// thread itself so it names this thread) and what they said at its previous boundary.
struct RunDelay {
    file: std::fs::File,
    /// The previous boundary's reading, moved forward by what the counters did inside the
    /// thread's own cuts since (cut already).
    base: Reading,
    /// Monotonic instant of the previous boundary (the stretch a cut spreads over).
    boundary_ns: u64,
    /// The reading when the thread's current cut began (None: not in one).
    cut_began: Option<Reading>,
}

thread_local! {
    /// `None`: not looked at yet; `Some(None)`: no scheduler statistics here.
    static RUN_DELAY: RefCell<Option<Option<RunDelay>>> = const { RefCell::new(None) };
}

/// The calling thread's total run delay (time runnable but waiting for a CPU), ns;
/// `None` where the kernel does not report it.
#[cfg(unix)]
fn read_run_delay(file: &std::fs::File) -> Option<u64> {
    use std::os::unix::fs::FileExt;
    let mut buf = [0u8; 96];
    let n = file.read_at(&mut buf, 0).ok()?;
    let text = std::str::from_utf8(&buf[..n]).ok()?;
    text.split_ascii_whitespace().nth(1)?.parse().ok()
}

#[cfg(not(unix))]
fn read_run_delay(_file: &std::fs::File) -> Option<u64> {
    None
}

/// The calling thread's voluntary context switches (it blocked), or `None` where the
/// kernel does not count them per thread.
fn voluntary_switches() -> Option<u64> {
    #[cfg(all(target_os = "linux", not(miri)))]
    {
        // SAFETY: a zeroed rusage is valid; the call only writes it.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `usage` is a valid, writable rusage.
        let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
        if rc == 0 {
            return Some(usage.ru_nvcsw as u64);
        }
    }
    None
}

/// The calling thread's counters now, and what the reads cost, ns. Without a
/// voluntary-switch count, every stretch counts as blocked (only the run delay is cut).
///
/// The run delay is read last, and its read is the reading's instant: a preemption
/// around the other reads is then in this reading (the kernel adds a wait to the run
/// delay when it ends), and one during the run-delay read makes it retry
/// ([`read_settled`]), so no wait that ended after the reading's instant is in it.
fn read_counters(file: &std::fs::File) -> Option<(Reading, u64)> {
    let start_ns = monotonic_ns();
    let cpu_ns = crate::clock::thread_cpu_ns();
    let voluntary = voluntary_switches().unwrap_or(UNKNOWN);
    let (run_delay_ns, at_ns) = read_settled(file)?;
    let reading = Reading {
        at_ns,
        run_delay_ns,
        cpu_ns,
        voluntary,
    };
    // Reads that took long were preempted: that wait is in the run delay (here or at
    // the next boundary), so only a tight read's own time is counted as its cost.
    let read_ns = monotonic_ns() - start_ns;
    Some((reading, if read_ns < SLOW_READ_NS { read_ns } else { 0 }))
}

/// Time off the CPU in a stretch whose counters moved by `delta`: the run delay, and
/// when the thread did not block, all the time it did not run (see the module docs).
fn off_cpu_ns(delta: &Reading) -> u64 {
    if delta.voluntary == 0 {
        delta
            .run_delay_ns
            .max(delta.at_ns.saturating_sub(delta.cpu_ns))
    } else {
        delta.run_delay_ns
    }
}

/// What a boundary found to cut.
#[derive(Debug, Clone, Copy)]
struct Delay {
    /// Time off the CPU since the previous boundary (outside the thread's own cuts), ns.
    delay_ns: u64,
    /// How long this boundary's own reads took, ns.
    read_ns: u64,
    /// Monotonic instant of the previous boundary.
    since_ns: u64,
}

/// The calling thread's time off the CPU since its previous boundary and the reading
/// now; this is a boundary from now on. `None` where the kernel keeps no scheduler
/// statistics, or (`first_call` false) on a thread that has not been a boundary yet.
fn take_delay(first_call: bool) -> Option<(Delay, Reading)> {
    RUN_DELAY.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.is_none() && !first_call {
            return None;
        }
        let state = cell.get_or_insert_with(|| {
            let file = std::fs::File::open("/proc/thread-self/schedstat").ok()?;
            let (base, _) = read_counters(&file)?;
            Some(RunDelay {
                file,
                base,
                boundary_ns: base.at_ns,
                cut_began: None,
            })
        });
        let state = state.as_mut()?;
        // The reads themselves (three system calls, 2-10 µs on a VM) are the
        // emulator's, not the host's: cut with the delay.
        let (now, read_ns) = read_counters(&state.file)?;
        let delay_ns = off_cpu_ns(&now.since(&state.base));
        let since_ns = state.boundary_ns;
        state.base = now;
        state.boundary_ns = now.at_ns;
        LOCAL.with(|local| local.boundary_ns.set(now.at_ns));
        Some((
            Delay {
                delay_ns,
                read_ns,
                since_ns,
            },
            now,
        ))
    })
}

/// A read slower than this was preempted around its system call, ns.
const SLOW_READ_NS: u64 = 20_000;

/// Reads the run delay, and again while a read took longer than [`SLOW_READ_NS`] (at
/// most 4 times): the return from a system call is where the scheduler preempts a
/// thread, and a delay that began after the kernel took the figure would show only at
/// the next boundary — after the timestamps this one's caller takes, so beyond reach.
/// Returns the figure and the monotonic instant the read that gave it began.
fn read_settled(file: &std::fs::File) -> Option<(u64, u64)> {
    let mut read_at_ns = monotonic_ns();
    let mut delay_ns = read_run_delay(file)?;
    for _ in 0..3 {
        let after_ns = monotonic_ns();
        if after_ns - read_at_ns < SLOW_READ_NS {
            break;
        }
        read_at_ns = after_ns;
        delay_ns = read_run_delay(file)?;
    }
    Some((delay_ns, read_at_ns))
}

/// The calling thread's outermost cut is about to begin: on a thread that has been a
/// boundary ([`cut_run_delay`]), this is one too — the delay before the cut can still
/// be cut where it happened (once the cut has ended, that stretch would be out of
/// reach) — and what its counters do from here until the cut ends is cut with the
/// cut, not again at the next boundary.
pub(super) fn before_cut() {
    let Some((delay, now)) = take_delay(false) else {
        return;
    };
    cut_delay(delay);
    RUN_DELAY.with(|cell| {
        if let Some(Some(state)) = cell.borrow_mut().as_mut() {
            state.cut_began = Some(now);
        }
    });
}

/// The calling thread's outermost cut is about to end: what its counters did inside the
/// cut is left out of the next boundary's stretch, so the next boundary does not cut it
/// a second time (that would squeeze the host work after the cut).
/// Notes the counters at the start of a cut that has begun already ([`super::cut_resume`]:
/// the run delay of the instant before it is not cut).
pub(super) fn after_cut_begin() {
    RUN_DELAY.with(|cell| {
        if let Some(Some(state)) = cell.borrow_mut().as_mut() {
            state.cut_began = read_counters(&state.file).map(|(now, _)| now);
        }
    });
}

pub(super) fn before_cut_end() {
    RUN_DELAY.with(|cell| {
        if let Some(Some(state)) = cell.borrow_mut().as_mut() {
            if let Some(began) = state.cut_began.take() {
                if let Some((now, _)) = read_counters(&state.file) {
                    state.base = state.base.plus(&now.since(&began));
                }
            }
        }
    });
}

/// A runtime boundary on the PyTorch path: the time the calling thread spent off the CPU
/// although it could have run (see the module docs) since its previous boundary (outside
/// its own cuts) is cut from the process timeline, retroactively, spread evenly over
/// the stretch since that boundary — but never before the latest instant any clock read
/// handed out, nor into an earlier cut, so no timestamp of ours moves and the timeline
/// stays monotonic for every thread; a real-clock stamp someone else took inside the
/// stretch keeps its order (see the module docs). When those bounds leave a stretch
/// shorter than the delay, the whole stretch is cut. Once a thread has been a boundary,
/// each of its cuts begins with one too, so the stretch before a cut is handled before
/// the cut closes it off. Nothing is cut inside a cut (the delay waits for the next
/// boundary), while another thread's cut is open, for delays under 5 µs, or where the
/// kernel keeps no scheduler statistics; what a boundary measured but could not cut is
/// counted ([`off_cpu_left_ns`]). Returns the time cut, ns.
///
/// Once a thread has been a boundary, a stamp of its host clock ([`crate::clock::now_ns`])
/// more than 50 µs after its latest boundary is preceded by one, so a preemption in the
/// middle of a runtime call is cut before the call's next record.
///
/// Costs a read of `/proc/thread-self/schedstat` and two system calls (about 2 µs; the
/// first call on a thread also opens the file); so does each cut of such a thread,
/// twice.
pub fn cut_run_delay() -> u64 {
    if in_cut() {
        return 0;
    }
    match take_delay(true) {
        Some((delay, _)) => cut_delay(delay),
        None => 0,
    }
}

/// Cuts a boundary's delay and the cost of its own reads (the emulator's, not the
/// host's) spread over the stretch from the previous boundary to now, within the bounds
/// of [`cut_run_delay`]; returns the time cut, ns.
fn cut_delay(delay: Delay) -> u64 {
    let total_ns = delay.delay_ns + delay.read_ns;
    if total_ns < MIN_RUN_DELAY_NS {
        return 0;
    }
    let cut_ns = cut_within_bounds(total_ns, delay.since_ns);
    // What was cut is the reads first (they are the newest), then the delay.
    let off_cpu_ns = cut_ns.saturating_sub(delay.read_ns);
    OFF_CPU_CUT_NS.fetch_add(off_cpu_ns, Ordering::Relaxed);
    OFF_CPU_LEFT_NS.fetch_add(delay.delay_ns - off_cpu_ns, Ordering::Relaxed);
    cut_ns
}

/// The cut of [`cut_delay`] itself: the time cut, ns (at most `delay_ns`).
fn cut_within_bounds(delay_ns: u64, since_ns: u64) -> u64 {
    let mut w = writer();
    if w.threads > 0 {
        return 0;
    }
    if w.log.len() < CUT_LOG_CAPACITY {
        w.log.reserve(1);
    }
    let log_end_ns = w.log.back().map_or(0, |cut| cut.end_ns);
    let mut cut = None;
    publish(|| {
        let now_ns = monotonic_ns();
        let start_ns = since_ns
            .max(LAST_READ_NS.load(Ordering::Relaxed))
            .max(log_end_ns)
            .min(now_ns);
        let cut_ns = delay_ns.min(now_ns - start_ns);
        if cut_ns >= MIN_RUN_DELAY_NS {
            TOTAL_NS.fetch_add(cut_ns, Ordering::Relaxed);
            cut = Some(CutInterval {
                start_ns,
                end_ns: now_ns,
                cut_ns,
                off_cpu: true,
            });
        }
    });
    let Some(cut) = cut else {
        return 0;
    };
    push_log(&mut w, cut);
    cut.cut_ns
}

#[cfg(test)]
mod tests {
    use super::super::{cut_log, cut_scope, process_ns, serial};
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    /// Pins the calling thread to `cpu`.
    fn pin(cpu: usize) {
        // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET writes into it.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        }
    }

    /// Spins until the monotonic clock has advanced by `ns`.
    fn spin_ns(ns: u64) {
        let until = monotonic_ns() + ns;
        while monotonic_ns() < until {
            std::hint::spin_loop();
        }
    }

    /// Runs `body` with this thread sharing its CPU with three spinning threads (so it
    /// waits for the CPU most of the time), then lets it run on every CPU again. `None`
    /// (and a recorded skip of `test`, a failure under CI: `tests/support/skip.rs`)
    /// where the kernel keeps no scheduler statistics.
    fn preempted<T>(test: &str, body: impl FnOnce() -> T) -> Option<T> {
        if std::fs::read_to_string("/proc/thread-self/schedstat").is_err() {
            crate::skip::skipped(
                test,
                "no scheduler statistics (/proc/thread-self/schedstat) on this kernel",
            );
            return None;
        }
        drop(cut_scope()); // cuts exist: reads note what they hand out
                           // SAFETY: sched_getcpu has no preconditions.
        let cpu = unsafe { libc::sched_getcpu() }.max(0) as usize;
        pin(cpu);
        cut_run_delay();
        let stop = Arc::new(AtomicBool::new(false));
        let spinners: Vec<_> = (0..3)
            .map(|_| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    pin(cpu);
                    while !stop.load(Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                })
            })
            .collect();
        let result = body();
        stop.store(true, Ordering::Relaxed);
        spinners.into_iter().for_each(|t| t.join().unwrap());
        // SAFETY: resets this thread's affinity to every CPU.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            for i in 0..libc::CPU_SETSIZE as usize {
                libc::CPU_SET(i, &mut set);
            }
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        }
        Some(result)
    }

    /// Whether the warped stamps are strictly increasing; else the first pair that is not.
    fn first_squeezed(stamps: &[u64]) -> Option<(usize, u64, u64)> {
        let log = cut_log();
        let warped: Vec<u64> = stamps.iter().map(|&t| log.warp(t)).collect();
        warped
            .windows(2)
            .position(|w| w[0] >= w[1])
            .map(|i| (i, warped[i], warped[i + 1]))
    }

    #[test]
    fn a_preempted_thread_has_its_run_delay_cut_and_no_stamp_moves() {
        let _serial = serial();
        let Some((real, host, cut_ns, stamps)) = preempted("runtime-hooks: clock::cut::run_delay::tests::a_preempted_thread_has_its_run_delay_cut_and_no_stamp_moves", || {
            let (real_start, host_start) = (monotonic_ns(), process_ns());
            let mut stamps = vec![host_start];
            let mut cut_ns = 0;
            while monotonic_ns() - real_start < 60_000_000 {
                spin_ns(200_000); // busy work, then a boundary
                cut_ns += cut_run_delay();
                stamps.push(process_ns());
            }
            let real = monotonic_ns() - real_start;
            (real, process_ns() - host_start, cut_ns, stamps)
        }) else {
            return;
        };
        assert!(
            stamps.windows(2).all(|w| w[0] <= w[1]),
            "the timeline went back"
        );
        assert!(
            cut_ns > real / 4,
            "cut {cut_ns} of {real} ns while sharing a CPU four ways"
        );
        assert!(
            host + cut_ns <= real + 1_000_000,
            "host {host} + cut {cut_ns} > real {real}"
        );
    }

    /// Real-clock stamps taken between two boundaries (as PyTorch's profiler takes them,
    /// without our clock knowing) keep their order on the cut timeline: a block cut at the
    /// second boundary would map the ones inside it to one instant.
    #[test]
    fn real_clock_stamps_between_boundaries_keep_their_order() {
        let _serial = serial();
        let Some((stamps, cut_ns)) = preempted("runtime-hooks: clock::cut::run_delay::tests::real_clock_stamps_between_boundaries_keep_their_order", || {
            let mut stamps = Vec::new();
            let mut cut_ns = 0;
            for _ in 0..10 {
                for _ in 0..40 {
                    spin_ns(50_000);
                    stamps.push(monotonic_ns());
                }
                cut_ns += cut_run_delay();
            }
            (stamps, cut_ns)
        }) else {
            return;
        };
        assert!(cut_ns > 0, "no run delay cut while sharing a CPU four ways");
        assert_eq!(first_squeezed(&stamps), None, "stamps squeezed together");
    }

    /// The run delay a thread had inside its own cut is cut with the cut; the next
    /// boundary does not cut it again from the host work after the cut.
    #[test]
    fn a_delay_inside_a_cut_is_not_cut_again_at_the_next_boundary() {
        let _serial = serial();
        let Some(stamps) = preempted("runtime-hooks: clock::cut::run_delay::tests::a_delay_inside_a_cut_is_not_cut_again_at_the_next_boundary", || {
            let mut stamps = Vec::new();
            for _ in 0..10 {
                {
                    let _cut = cut_scope();
                    spin_ns(4_000_000); // preempted inside the cut
                }
                for _ in 0..10 {
                    spin_ns(50_000);
                    stamps.push(monotonic_ns());
                }
                cut_run_delay();
            }
            stamps
        }) else {
            return;
        };
        assert_eq!(first_squeezed(&stamps), None, "stamps squeezed together");
    }
}
