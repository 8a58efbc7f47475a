//! The run-delay cut: the time a host thread spent waiting for a CPU (its run delay, from
//! the kernel's scheduler statistics), cut from the process timeline retroactively at the
//! thread's next runtime boundary, as if the thread had not been preempted.
//!
//! The delay happened somewhere between the thread's previous boundary and this one, and
//! other code (PyTorch's profiler) may have stamped instants with the real clock in that
//! stretch without telling us. So the cut is spread evenly over the stretch (logged as a
//! share of it, [`CutInterval`]) rather than placed as one block at its end: a stamp
//! inside moves back by the share of the part before it, so stamps keep their order and
//! the lengths between them shrink in proportion — a block would map every stamp inside
//! it to its start, squeezing the operators there to zero length.

use std::cell::RefCell;
use std::sync::atomic::Ordering;

use super::{in_cut, publish, push_log, writer, CutInterval, CUT_LOG_CAPACITY};
use super::{LAST_READ_NS, TOTAL_NS};
use crate::clock::monotonic_ns;
use crate::local::LOCAL;

/// Minimum run delay worth a retroactive cut, ns (a schedstat read costs about 1 µs).
const MIN_RUN_DELAY_NS: u64 = 5_000;

/// This thread's scheduler statistics (`/proc/thread-self/schedstat`, opened by the
/// thread itself so it names this thread) and what they said at its previous boundary.
struct RunDelay {
    file: std::fs::File,
    /// Run delay accounted for so far: reported at the previous boundary, plus what the
    /// thread waited inside its own cuts since (cut already).
    counted_ns: u64,
    /// Monotonic instant of the previous boundary.
    boundary_ns: u64,
    /// The run delay reported when the thread's current cut began (None: not in one).
    cut_began_at_ns: Option<u64>,
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

/// The calling thread's run delay since its previous boundary (outside its own cuts), the
/// monotonic instant of that boundary, and the total the statistics report now; this is
/// a boundary from now on. `None` where the kernel keeps no scheduler statistics, or
/// (`first_call` false) on a thread that has not been a boundary yet.
fn take_delay(first_call: bool) -> Option<(u64, u64, u64)> {
    RUN_DELAY.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.is_none() && !first_call {
            return None;
        }
        let state = cell.get_or_insert_with(|| {
            let file = std::fs::File::open("/proc/thread-self/schedstat").ok()?;
            let counted_ns = read_run_delay(&file)?;
            Some(RunDelay {
                file,
                counted_ns,
                boundary_ns: monotonic_ns(),
                cut_began_at_ns: None,
            })
        });
        let state = state.as_mut()?;
        let (now_ns, read_at_ns) = read_settled(&state.file)?;
        let delay_ns = now_ns.saturating_sub(state.counted_ns);
        let since_ns = state.boundary_ns;
        state.counted_ns = now_ns;
        state.boundary_ns = read_at_ns;
        LOCAL.with(|local| local.boundary_ns.set(read_at_ns));
        Some((delay_ns, since_ns, now_ns))
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
/// reach) — and what it waits for a CPU from here until the cut ends is cut with the
/// cut, not again at the next boundary.
pub(super) fn before_cut() {
    let Some((delay_ns, since_ns, total_ns)) = take_delay(false) else {
        return;
    };
    cut_delay(delay_ns, since_ns);
    RUN_DELAY.with(|cell| {
        if let Some(Some(state)) = cell.borrow_mut().as_mut() {
            state.cut_began_at_ns = Some(total_ns);
        }
    });
}

/// The calling thread's outermost cut is about to end: its run delay inside the cut is
/// counted, so the next boundary does not cut it a second time (that would squeeze the
/// host work after the cut).
pub(super) fn before_cut_end() {
    RUN_DELAY.with(|cell| {
        if let Some(Some(state)) = cell.borrow_mut().as_mut() {
            if let (Some(began_ns), Some(now_ns)) =
                (state.cut_began_at_ns.take(), read_run_delay(&state.file))
            {
                state.counted_ns += now_ns.saturating_sub(began_ns);
            }
        }
    });
}

/// A runtime boundary on the PyTorch path: the time the calling thread spent waiting for
/// a CPU since its previous boundary (outside its own cuts) is cut from the process
/// timeline, retroactively, spread evenly over the stretch since that boundary — but
/// never before the latest instant any clock read handed out, nor into an earlier cut, so
/// no timestamp of ours moves and the timeline stays monotonic for every thread; a
/// real-clock stamp someone else took inside the stretch keeps its order (see the module
/// docs). When those bounds leave a stretch shorter than the delay, the whole stretch is
/// cut. Once a thread has been a boundary, each of its cuts begins with one too, so the
/// stretch before a cut is handled before the cut closes it off. Nothing is cut inside a
/// cut (the delay waits for the next boundary), while another thread's cut is open, for
/// delays under 5 µs, or where the kernel keeps no scheduler statistics. Returns the
/// time cut, ns.
///
/// Once a thread has been a boundary, a stamp of its host clock ([`crate::clock::now_ns`])
/// more than 50 µs after its latest boundary is preceded by one, so a preemption in the
/// middle of a runtime call is cut before the call's next record.
///
/// Costs one read of `/proc/thread-self/schedstat` (about 1 µs; the first call on a
/// thread also opens it); so does each cut of such a thread, plus one read inside it.
pub fn cut_run_delay() -> u64 {
    if in_cut() {
        return 0;
    }
    match take_delay(true) {
        Some((delay_ns, since_ns, _)) => cut_delay(delay_ns, since_ns),
        None => 0,
    }
}

/// Cuts `delay_ns` spread over the stretch from `since_ns` to now, within the bounds of
/// [`cut_run_delay`]; returns the time cut, ns.
fn cut_delay(delay_ns: u64, since_ns: u64) -> u64 {
    if delay_ns < MIN_RUN_DELAY_NS {
        return 0;
    }
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
