//! The process-wide *cut* of emulation time: real intervals in which some host thread
//! does (or waits for) work the emulated device would do on its own, removed from the
//! whole process's timeline.
//!
//! A program that computes the device's numerics itself on its host threads (the PyTorch
//! extension in `python/`, whose ops run ATen's CPU kernels) cannot keep them out of a
//! per-thread clock alone: PyTorch stamps its own events with the real clock, and other
//! threads (autograd's) wait for the one computing. So the cut stops the clock of *every*
//! thread: between [`cut_begin`] and [`cut_end`] (or during a [`cut_scope`]) the process
//! timeline stands still, and afterwards it runs at `monotonic − total cut`. Cuts of
//! several threads at once count as their union (the timeline stands still while at
//! least one thread is inside a cut); a thread's nested cuts count once.
//!
//! Every finished cut is kept in a bounded log ([`cut_log`]: the most recent
//! [`CUT_LOG_CAPACITY`] intervals, older ones dropped and counted), from which
//! [`CutLog::warp`] maps an instant of the real (monotonic) clock to the cut timeline:
//! `warped(t) = t − (cut before t)`, an instant inside a cut mapping to the cut's start.
//! A run-delay cut ([`cut_run_delay`], in `cut/run_delay.rs`) is logged as a share of
//! the interval it covers, spread evenly over it: an instant inside moves back by that
//! share of the part before it, so instants keep their order and lengths shrink in
//! proportion.
//! That is how timestamps taken with the real clock by someone else (PyTorch's
//! profiler) are put on the same timeline afterwards.
//!
//! # Reading the clock
//!
//! [`process_ns`] is `monotonic − total cut` (the cut's start while one is open), read
//! with a sequence lock: a writer (the first cut to begin, the last to end) bumps a
//! sequence number to odd, changes the state, bumps it to even; a reader retries when it
//! saw a writer at work. Until the first cut of the process the sequence number is 0 and
//! a read is one load more than the monotonic clock. Writers serialize on a mutex (two
//! per cut, off the recording path). A writer reads the clock after a full fence that
//! publishes its odd sequence number, and a reader's clock read completes before it
//! re-reads the sequence number, so no reader can have returned a later instant than a
//! cut's start: the timeline is monotonic for every thread.

use std::collections::VecDeque;
use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use super::monotonic_ns;
use crate::local::LOCAL;

mod run_delay;

pub use run_delay::{cut_run_delay, off_cpu_cut_ns, off_cpu_left_ns};

/// Intervals the cut log keeps (16 bytes each; the oldest are dropped beyond this).
pub const CUT_LOG_CAPACITY: usize = 1 << 20;

/// `START_NS` when no cut is open.
const CLOSED: u64 = u64::MAX;

/// Even: stable; odd: a writer is changing the state; 0: no cut ever began.
static SEQ: AtomicU64 = AtomicU64::new(0);
/// Monotonic instant the open cut began, or [`CLOSED`].
static START_NS: AtomicU64 = AtomicU64::new(CLOSED);
/// Length of every finished cut, ns.
static TOTAL_NS: AtomicU64 = AtomicU64::new(0);
/// The latest monotonic instant a clock read handed out (once cuts exist).
static LAST_READ_NS: AtomicU64 = AtomicU64::new(0);

/// One finished cut of the log: a real interval (monotonic ns) and how much of it is cut
/// — all of it for a cut some thread was inside ([`cut_begin`] .. [`cut_end`]), a share
/// spread evenly over it for a run-delay cut ([`cut_run_delay`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CutInterval {
    /// Monotonic instant the interval begins, ns.
    pub start_ns: u64,
    /// Monotonic instant it ends, ns (`>= start_ns`).
    pub end_ns: u64,
    /// Time cut from it, ns (`<= end_ns - start_ns`).
    pub cut_ns: u64,
    /// A run-delay cut (time a host thread spent off the CPU, [`cut_run_delay`]) rather
    /// than emulation time: never the emulator's work, even when it takes the whole
    /// interval.
    pub off_cpu: bool,
}

impl CutInterval {
    /// An interval cut whole.
    pub fn whole(start_ns: u64, end_ns: u64) -> Self {
        CutInterval {
            start_ns,
            end_ns,
            cut_ns: end_ns.saturating_sub(start_ns),
            off_cpu: false,
        }
    }

    /// Cut time of this interval before the monotonic instant `t_ns`: its share of the
    /// part before `t_ns` (all of it for a whole cut).
    fn cut_before_ns(&self, t_ns: u64) -> u64 {
        if t_ns >= self.end_ns {
            return self.cut_ns;
        }
        let part_ns = t_ns.saturating_sub(self.start_ns);
        let len_ns = self.end_ns - self.start_ns;
        if self.cut_ns == len_ns {
            return part_ns;
        }
        (u128::from(self.cut_ns) * u128::from(part_ns) / u128::from(len_ns)) as u64
    }
}

#[derive(Debug)]
struct Writer {
    /// Threads inside a cut now.
    threads: u32,
    /// Finished cuts, oldest first, not overlapping.
    log: VecDeque<CutInterval>,
    /// Cuts dropped from the log, and their total length.
    dropped: u64,
    dropped_ns: u64,
    /// End of the newest dropped cut (0: none dropped).
    dropped_until_ns: u64,
}

static WRITER: Mutex<Writer> = Mutex::new(Writer {
    threads: 0,
    log: VecDeque::new(),
    dropped: 0,
    dropped_ns: 0,
    dropped_until_ns: 0,
});

fn writer() -> MutexGuard<'static, Writer> {
    // The state is changed in single steps under the lock; a panic cannot leave it torn.
    WRITER.lock().unwrap_or_else(|p| p.into_inner())
}

/// Appends a finished cut to the log, dropping (and counting) the oldest when it is full.
fn push_log(w: &mut Writer, cut: CutInterval) {
    if w.log.len() == CUT_LOG_CAPACITY {
        if let Some(old) = w.log.pop_front() {
            w.dropped += 1;
            w.dropped_ns += old.cut_ns;
            w.dropped_until_ns = old.end_ns;
        }
    }
    w.log.push_back(cut);
}

/// Runs `change` as a sequence-lock writer (the caller holds [`WRITER`]).
fn publish(change: impl FnOnce()) {
    let seq = SEQ.load(Ordering::Relaxed);
    SEQ.store(seq + 1, Ordering::Relaxed);
    // Publishes the odd number before the clock is read inside `change`.
    fence(Ordering::SeqCst);
    change();
    SEQ.store(seq + 2, Ordering::Release);
}

/// The cut timeline: [`monotonic_ns`] minus every cut so far; while a cut is open, the
/// instant it began minus the cuts before it.
#[inline]
pub fn process_ns() -> u64 {
    if SEQ.load(Ordering::Acquire) == 0 {
        return monotonic_ns();
    }
    loop {
        let seq = SEQ.load(Ordering::Acquire);
        if seq & 1 == 1 {
            std::hint::spin_loop();
            continue;
        }
        let start_ns = START_NS.load(Ordering::Relaxed);
        let total_ns = TOTAL_NS.load(Ordering::Relaxed);
        let real_ns = if start_ns == CLOSED {
            let now_ns = monotonic_ns();
            // The clock read completes before the sequence number is read again (the
            // TSC read of the vDSO is not ordered with later loads otherwise).
            #[cfg(target_arch = "x86_64")]
            // SAFETY: LFENCE is available on every x86_64 CPU and has no preconditions.
            unsafe {
                std::arch::x86_64::_mm_lfence()
            };
            // What was handed out bounds a later retroactive cut (`cut_run_delay`): the
            // note is published before the sequence number is checked again, and a
            // writer reads it after publishing its odd number (both sides fence), so
            // either the writer sees this read or this read sees the writer.
            if LAST_READ_NS.load(Ordering::Relaxed) < now_ns {
                LAST_READ_NS.store(now_ns, Ordering::Relaxed);
            }
            fence(Ordering::SeqCst);
            now_ns
        } else {
            start_ns
        };
        fence(Ordering::Acquire);
        if SEQ.load(Ordering::Relaxed) == seq {
            return real_ns.saturating_sub(total_ns);
        }
    }
}

/// Whether any cut has begun in this process (until then [`process_ns`] is the
/// monotonic clock).
#[inline]
pub fn cuts_seen() -> bool {
    SEQ.load(Ordering::Relaxed) != 0
}

/// Begins a cut on this thread: the process timeline stands still until the matching
/// [`cut_end`] (and until every other thread's cut has ended too). Cuts nest per thread;
/// only the outermost counts.
pub fn cut_begin() {
    let outermost = LOCAL.with(|local| {
        let depth = local.cut_depth.get();
        local.cut_depth.set(depth.saturating_add(1));
        depth == 0
    });
    if !outermost {
        return;
    }
    run_delay::before_cut();
    let mut w = writer();
    w.threads += 1;
    if w.threads == 1 {
        publish(|| START_NS.store(monotonic_ns(), Ordering::Relaxed));
    }
}

/// Ends this thread's cut begun by [`cut_begin`]; when no other thread is inside one,
/// the process timeline runs again with the cut subtracted for good. An unmatched end
/// does nothing.
pub fn cut_end() {
    let outermost = LOCAL.with(|local| match local.cut_depth.get() {
        0 => None,
        depth => {
            local.cut_depth.set(depth - 1);
            Some(depth == 1)
        }
    });
    if outermost != Some(true) {
        return;
    }
    run_delay::before_cut_end();
    let mut w = writer();
    w.threads = w.threads.saturating_sub(1);
    if w.threads > 0 {
        return;
    }
    let start_ns = START_NS.load(Ordering::Relaxed);
    let mut end_ns = start_ns;
    // Grow the log while the timeline still stands still (a reallocation copies MBs).
    if w.log.len() < CUT_LOG_CAPACITY {
        w.log.reserve(1);
    }
    publish(|| {
        end_ns = monotonic_ns().max(start_ns);
        TOTAL_NS.fetch_add(end_ns - start_ns, Ordering::Relaxed);
        START_NS.store(CLOSED, Ordering::Relaxed);
    });
    push_log(&mut w, CutInterval::whole(start_ns, end_ns));
}

/// Ends this thread's outermost cut like [`cut_end`], but leaves the last `keep_ns` of
/// it on the timeline: a *modeled* stretch of host time (the emulator's dispatch of a
/// PyTorch op, which stands for a real runtime's launch call of `keep_ns`). The part of
/// the cut before those `keep_ns` is logged as a whole cut, so every stamp handed out
/// inside the cut stays at its start and the timeline goes on `keep_ns` later; when the
/// cut has lasted less than `keep_ns`, this waits (spinning) until it has. Returns the
/// time kept, ns: `keep_ns`, or 0 when this was not the outermost cut or another
/// thread's cut is still open (then the union goes on and is cut whole, as with
/// [`cut_end`]).
pub fn cut_end_keeping(keep_ns: u64) -> u64 {
    let outermost = LOCAL.with(|local| match local.cut_depth.get() {
        0 => None,
        depth => {
            local.cut_depth.set(depth - 1);
            Some(depth == 1)
        }
    });
    if outermost != Some(true) {
        return 0;
    }
    run_delay::before_cut_end();
    // Pad a short cut to the kept length before taking the lock (a few µs at most).
    let open_ns = START_NS.load(Ordering::Relaxed);
    if open_ns != CLOSED {
        while monotonic_ns() < open_ns.saturating_add(keep_ns) {
            std::hint::spin_loop();
        }
    }
    let mut w = writer();
    w.threads = w.threads.saturating_sub(1);
    if w.threads > 0 {
        return 0;
    }
    let start_ns = START_NS.load(Ordering::Relaxed);
    let mut cut_until_ns = start_ns;
    if w.log.len() < CUT_LOG_CAPACITY {
        w.log.reserve(1);
    }
    publish(|| {
        let end_ns = monotonic_ns().max(start_ns);
        cut_until_ns = end_ns.saturating_sub(keep_ns).max(start_ns);
        TOTAL_NS.fetch_add(cut_until_ns - start_ns, Ordering::Relaxed);
        START_NS.store(CLOSED, Ordering::Relaxed);
    });
    push_log(&mut w, CutInterval::whole(start_ns, cut_until_ns));
    keep_ns
}

/// Keeps `keep_ns` of the cut this thread is in on the timeline and goes on cutting: the
/// timeline, standing still, jumps `keep_ns` forward (a modeled stretch of host time:
/// the launch call inside the emulator's dispatch of an op). The cut so far but for its
/// last `keep_ns` is logged whole and a new cut begins at once, so no instant between
/// them is left uncut; a cut younger than `keep_ns` is waited for (spinning) first.
/// Returns the time kept: `keep_ns`, or 0 outside a cut or while another thread is
/// inside one too (the union is cut whole then).
pub fn cut_keep(keep_ns: u64) -> u64 {
    if !in_cut() {
        return 0;
    }
    let open_ns = START_NS.load(Ordering::Relaxed);
    if open_ns != CLOSED {
        while monotonic_ns() < open_ns.saturating_add(keep_ns) {
            std::hint::spin_loop();
        }
    }
    let mut w = writer();
    let start_ns = START_NS.load(Ordering::Relaxed);
    if w.threads != 1 || start_ns == CLOSED {
        return 0;
    }
    if w.log.len() < CUT_LOG_CAPACITY {
        w.log.reserve(1);
    }
    let mut cut_until_ns = start_ns;
    publish(|| {
        let now_ns = monotonic_ns().max(start_ns.saturating_add(keep_ns));
        cut_until_ns = now_ns - keep_ns;
        TOTAL_NS.fetch_add(cut_until_ns - start_ns, Ordering::Relaxed);
        START_NS.store(now_ns, Ordering::Relaxed);
    });
    push_log(&mut w, CutInterval::whole(start_ns, cut_until_ns));
    keep_ns
}

/// Leaves every cut this thread is in for a stretch the program spends on its own — the
/// modeled launch call and the real wait for a queue slot inside the emulator's dispatch
/// of an op — keeping the last `keep_ns` of the cut on the timeline
/// ([`cut_end_keeping`]). Returns the time kept and the thread's cut depth, which
/// [`cut_resume`] restores. Outside a cut it does nothing and returns `(0, 0)`.
pub fn cut_pause_keeping(keep_ns: u64) -> (u64, u32) {
    let depth = LOCAL.with(|local| local.cut_depth.get());
    if depth == 0 {
        return (0, 0);
    }
    LOCAL.with(|local| local.cut_depth.set(1));
    (cut_end_keeping(keep_ns), depth)
}

/// Enters the cuts [`cut_pause_keeping`] left again, `depth` deep.
pub fn cut_resume(depth: u32) {
    if depth == 0 {
        return;
    }
    {
        let mut w = writer();
        w.threads += 1;
        if w.threads == 1 {
            publish(|| START_NS.store(monotonic_ns(), Ordering::Relaxed));
        }
    }
    // The run-delay reads inside the cut (a few µs of system calls): the pause was too
    // short for a delay worth cutting, and its reads must not show as host time.
    run_delay::after_cut_begin();
    LOCAL.with(|local| local.cut_depth.set(depth));
}

/// Guard for a cut; ends it when dropped.
#[must_use = "the cut ends when this guard is dropped"]
#[derive(Debug)]
pub struct CutScope {
    // Not Send: the cut belongs to the thread that began it.
    _not_send: std::marker::PhantomData<*const ()>,
}

/// Begins a cut that ends when the returned guard is dropped.
pub fn cut_scope() -> CutScope {
    cut_begin();
    CutScope {
        _not_send: std::marker::PhantomData,
    }
}

impl Drop for CutScope {
    fn drop(&mut self) {
        cut_end();
    }
}

/// Whether the calling thread is inside a cut.
pub fn in_cut() -> bool {
    LOCAL.with(|local| local.cut_depth.get() > 0)
}

/// Total length of the cuts so far, ns (an open cut counts up to now).
pub fn cut_total_ns() -> u64 {
    let _w = writer();
    let start_ns = START_NS.load(Ordering::Relaxed);
    let open_ns = if start_ns == CLOSED {
        0
    } else {
        monotonic_ns().saturating_sub(start_ns)
    };
    TOTAL_NS.load(Ordering::Relaxed) + open_ns
}

/// A snapshot of the cut log, to put real-clock instants on the cut timeline.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CutLog {
    /// Cuts, oldest first, not overlapping (an open cut is included, whole, up to the
    /// snapshot).
    pub intervals: Vec<CutInterval>,
    /// `prefix_ns[i]`: cut time before `intervals[i]` began.
    prefix_ns: Vec<u64>,
    /// Cuts that had been dropped from the log (beyond [`CUT_LOG_CAPACITY`]).
    pub dropped: u64,
    /// Instants before this (the end of the newest dropped cut) cannot be warped
    /// exactly; 0 when nothing was dropped.
    pub exact_from_ns: u64,
}

/// A snapshot of the cut log (see [`CutLog`]).
pub fn cut_log() -> CutLog {
    let w = writer();
    let mut intervals: Vec<CutInterval> = w.log.iter().copied().collect();
    let start_ns = START_NS.load(Ordering::Relaxed);
    if start_ns != CLOSED {
        intervals.push(CutInterval::whole(start_ns, monotonic_ns().max(start_ns)));
    }
    let prefix_ns = prefix_sums(&intervals, w.dropped_ns);
    CutLog {
        intervals,
        prefix_ns,
        dropped: w.dropped,
        exact_from_ns: w.dropped_until_ns,
    }
}

/// `prefix[i]`: `first_ns` plus the cut time of `intervals[..i]`.
fn prefix_sums(intervals: &[CutInterval], first_ns: u64) -> Vec<u64> {
    let mut prefix_ns = Vec::with_capacity(intervals.len());
    let mut sum = first_ns;
    for cut in intervals {
        prefix_ns.push(sum);
        sum += cut.cut_ns;
    }
    prefix_ns
}

impl CutLog {
    /// A log of the given whole cuts `(start_ns, end_ns)` (sorted, not overlapping), with
    /// nothing dropped: for tests and for replaying a recorded log.
    pub fn from_intervals(intervals: Vec<(u64, u64)>) -> Self {
        Self::from_cuts(
            intervals
                .into_iter()
                .map(|(start_ns, end_ns)| CutInterval::whole(start_ns, end_ns))
                .collect(),
        )
    }

    /// A log of the given cuts (sorted, not overlapping), with nothing dropped.
    pub fn from_cuts(intervals: Vec<CutInterval>) -> Self {
        let prefix_ns = prefix_sums(&intervals, 0);
        CutLog {
            intervals,
            prefix_ns,
            dropped: 0,
            exact_from_ns: 0,
        }
    }

    /// Cut time before the monotonic instant `t_ns` (the part of a cut `t_ns` lies in
    /// counts up to `t_ns`).
    pub fn cut_before_ns(&self, t_ns: u64) -> u64 {
        // Index of the first cut starting after t.
        let after = self.intervals.partition_point(|cut| cut.start_ns <= t_ns);
        if after == 0 {
            return self.prefix_ns.first().copied().unwrap_or(0);
        }
        let i = after - 1;
        self.prefix_ns[i] + self.intervals[i].cut_before_ns(t_ns)
    }

    /// The monotonic instant `t_ns` on the cut timeline ([`process_ns`]'s).
    pub fn warp(&self, t_ns: u64) -> u64 {
        t_ns.saturating_sub(self.cut_before_ns(t_ns))
    }

    /// Whether the monotonic interval `[start_ns, end_ns]` lies inside one whole cut
    /// (every instant of it maps to that cut's start): what a thread did there was
    /// emulation, not the program's time. Run-delay cuts, which keep a share of their
    /// interval, never cover anything.
    pub fn covers(&self, start_ns: u64, end_ns: u64) -> bool {
        let after = self
            .intervals
            .partition_point(|cut| cut.start_ns <= start_ns);
        let Some(cut) = after.checked_sub(1).map(|i| self.intervals[i]) else {
            return false;
        };
        !cut.off_cpu
            && cut.cut_ns == cut.end_ns - cut.start_ns
            && start_ns <= end_ns
            && end_ns <= cut.end_ns
    }

    /// Time off the CPU (run-delay cuts) cut between the monotonic instants `from_ns`
    /// and `to_ns`, ns: how much the host timeline there was corrected for preemption
    /// and steal time.
    pub fn off_cpu_between_ns(&self, from_ns: u64, to_ns: u64) -> u64 {
        let first = self.intervals.partition_point(|cut| cut.end_ns <= from_ns);
        self.intervals[first..]
            .iter()
            .take_while(|cut| cut.start_ns < to_ns)
            .filter(|cut| cut.off_cpu)
            .map(|cut| cut.cut_before_ns(to_ns) - cut.cut_before_ns(from_ns.max(cut.start_ns)))
            .sum()
    }

    /// Whether `t_ns` can be warped exactly (it is not older than a dropped cut).
    pub fn is_exact(&self, t_ns: u64) -> bool {
        t_ns >= self.exact_from_ns
    }

    /// Total cut time in the log (dropped cuts included).
    pub fn total_ns(&self) -> u64 {
        match (self.intervals.last(), self.prefix_ns.last()) {
            (Some(cut), Some(&prefix)) => prefix + cut.cut_ns,
            _ => 0,
        }
    }
}

/// Tests that cut the process timeline or time the clock run one at a time (a cut stops
/// every thread's clock).
#[cfg(test)]
pub(crate) fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Barrier};
    use std::time::Duration;

    #[test]
    fn a_cut_stops_every_threads_clock_and_is_subtracted() {
        let _serial = serial();
        let total_before = cut_total_ns();
        let before = process_ns();
        let gate = Arc::new(Barrier::new(2));
        let other = {
            let gate = Arc::clone(&gate);
            std::thread::spawn(move || {
                gate.wait(); // the main thread is inside its cut now
                let frozen = super::super::now_ns();
                std::thread::sleep(Duration::from_millis(5));
                let still = super::super::now_ns();
                gate.wait();
                (frozen, still)
            })
        };
        {
            let _cut = cut_scope();
            assert!(in_cut());
            gate.wait();
            std::thread::sleep(Duration::from_millis(20));
            gate.wait();
        }
        let (frozen, still) = other.join().unwrap();
        assert_eq!(frozen, still, "another thread's clock moved inside the cut");
        let after = process_ns();
        assert!(!in_cut());
        assert!(after >= before);
        assert!(
            after - before < 15_000_000,
            "the cut leaked: {} ns",
            after - before
        );
        assert!(cut_total_ns() - total_before >= 20_000_000);
    }

    #[test]
    fn overlapping_cuts_of_two_threads_count_as_their_union() {
        let _serial = serial();
        let log_before = cut_log().intervals.len();
        let total_before = cut_total_ns();
        let start = monotonic_ns();
        let gate = Arc::new(Barrier::new(2));
        let other = {
            let gate = Arc::clone(&gate);
            std::thread::spawn(move || {
                gate.wait();
                let _cut = cut_scope();
                gate.wait(); // both inside
                std::thread::sleep(Duration::from_millis(10));
            })
        };
        {
            let _cut = cut_scope();
            gate.wait();
            gate.wait();
            std::thread::sleep(Duration::from_millis(3));
        } // ends first: the other thread's cut goes on
        other.join().unwrap();
        let elapsed = monotonic_ns() - start;
        let added = cut_total_ns() - total_before;
        assert!(
            added >= 10_000_000 && added <= elapsed,
            "{added} of {elapsed}"
        );
        let log = cut_log();
        assert_eq!(log.intervals.len(), log_before + 1, "one union interval");
    }

    #[test]
    fn nested_cuts_count_once_and_unmatched_ends_are_ignored() {
        let _serial = serial();
        let log_before = cut_log().intervals.len();
        cut_begin();
        cut_begin();
        std::thread::sleep(Duration::from_millis(2));
        cut_end();
        assert!(in_cut());
        cut_end();
        cut_end();
        assert!(!in_cut());
        assert_eq!(cut_log().intervals.len(), log_before + 1);
    }

    #[test]
    fn a_cut_ended_keeping_leaves_the_modeled_stretch_on_the_timeline() {
        let _serial = serial();
        let before = process_ns();
        cut_begin();
        std::thread::sleep(Duration::from_millis(50));
        let frozen = process_ns();
        assert_eq!(cut_end_keeping(200_000), 200_000);
        let after = process_ns();
        // The 50 ms are gone but for the 200 µs kept (the rest: preemption at most).
        assert!(after - frozen >= 200_000, "kept {} ns", after - frozen);
        assert!(after - before < 30_000_000, "cut {} ns", after - before);
        let last = *cut_log().intervals.last().unwrap();
        assert!(!last.off_cpu && last.cut_ns == last.end_ns - last.start_ns);
        assert!(last.cut_ns >= 49_000_000, "{last:?}");
        // A cut shorter than what it keeps lasts that long.
        let start = monotonic_ns();
        let before = process_ns();
        cut_begin();
        assert_eq!(cut_end_keeping(1_000_000), 1_000_000);
        assert!(monotonic_ns() - start >= 1_000_000);
        assert!(process_ns() - before >= 1_000_000);
        // Nested, it keeps nothing and the outer cut goes on.
        cut_begin();
        cut_begin();
        assert_eq!(cut_end_keeping(1_000), 0);
        assert!(in_cut());
        cut_end();
        assert!(!in_cut());
    }

    #[test]
    fn a_kept_stretch_moves_the_standing_timeline_forward_and_the_cut_goes_on() {
        let _serial = serial();
        assert_eq!(cut_keep(1_000), 0, "outside a cut: nothing");
        cut_begin();
        std::thread::sleep(Duration::from_millis(20));
        let frozen = process_ns();
        assert_eq!(cut_keep(300_000), 300_000);
        assert!(in_cut());
        let moved = process_ns();
        assert_eq!(
            moved - frozen,
            300_000,
            "the timeline jumps by the kept time"
        );
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(
            process_ns(),
            moved,
            "and stands still while the cut goes on"
        );
        cut_end();
        let last = *cut_log().intervals.last().unwrap();
        assert!(
            last.cut_ns >= 5_000_000,
            "the cut after the kept stretch: {last:?}"
        );
    }

    #[test]
    fn a_paused_cut_lets_the_timeline_run_and_resumes_at_its_depth() {
        let _serial = serial();
        cut_begin();
        cut_begin();
        std::thread::sleep(Duration::from_millis(20));
        let (kept, depth) = cut_pause_keeping(100_000);
        assert_eq!((kept, depth), (100_000, 2));
        assert!(!in_cut());
        let running = process_ns();
        std::thread::sleep(Duration::from_millis(5));
        assert!(process_ns() - running >= 5_000_000, "the timeline ran");
        cut_resume(depth);
        assert!(in_cut());
        let frozen = process_ns();
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(process_ns(), frozen, "the resumed cut stops the timeline");
        cut_end();
        assert!(in_cut());
        cut_end();
        assert!(!in_cut());
        assert_eq!(cut_pause_keeping(1_000), (0, 0), "outside a cut: nothing");
        cut_resume(0);
        assert!(!in_cut());
    }

    #[test]
    fn the_log_warps_real_instants_onto_the_cut_timeline() {
        let _serial = serial();
        let t0 = monotonic_ns();
        {
            let _cut = cut_scope();
            std::thread::sleep(Duration::from_millis(4));
        }
        let t1 = monotonic_ns();
        let host_t1 = process_ns();
        let log = cut_log();
        let CutInterval {
            start_ns: start,
            end_ns: end,
            ..
        } = *log.intervals.last().unwrap();
        assert!(t0 <= start && end <= t1);
        // Inside the cut: its start. After it: shifted by everything cut before.
        assert_eq!(log.warp(start + 1_000), log.warp(start));
        assert_eq!(log.warp(end), log.warp(start));
        let warped_t1 = log.warp(t1);
        assert!(warped_t1 <= host_t1 && host_t1 - warped_t1 < 1_000_000);
        assert_eq!(log.total_ns(), cut_total_ns());
        assert!(log.is_exact(t0));
    }

    #[test]
    fn a_replayed_log_warps_by_the_cuts_before() {
        let log = CutLog::from_intervals(vec![(100, 150), (200, 300)]);
        assert_eq!(log.warp(50), 50);
        assert_eq!(log.warp(120), 100);
        assert_eq!(log.warp(170), 120);
        assert_eq!(log.warp(250), 150);
        assert_eq!(log.warp(300), 150);
        assert_eq!(log.warp(400), 250);
        assert_eq!(log.total_ns(), 150);
        assert_eq!(CutLog::default().warp(7), 7);
    }

    #[test]
    fn a_spread_cut_moves_instants_back_by_its_share_and_keeps_their_order() {
        // 100 ns cut from [1000, 1400]: a quarter of every stretch inside it.
        let log = CutLog::from_cuts(vec![
            CutInterval::whole(100, 150),
            CutInterval {
                start_ns: 1000,
                end_ns: 1400,
                cut_ns: 100,
                off_cpu: true,
            },
        ]);
        assert_eq!(log.warp(1000), 950);
        assert_eq!(log.warp(1200), 1100);
        assert_eq!(log.warp(1400), 1250);
        assert_eq!(log.warp(1500), 1350);
        let warped: Vec<u64> = (1000..=1400).step_by(40).map(|t| log.warp(t)).collect();
        assert!(
            warped.windows(2).all(|w| w[1] - w[0] == 30),
            "40 ns apart inside become 30: {warped:?}"
        );
        assert_eq!(log.total_ns(), 150);
        // Inside a spread cut is still the program's time.
        assert!(log.covers(110, 140));
        assert!(!log.covers(1100, 1200));
    }

    #[test]
    fn an_interval_is_covered_only_inside_one_whole_cut() {
        let log = CutLog::from_intervals(vec![(100, 150), (150, 300)]);
        assert!(log.covers(100, 150));
        assert!(log.covers(120, 120));
        assert!(log.covers(200, 300));
        // Across two cuts, partly outside, outside, or backwards.
        assert!(!log.covers(120, 200));
        assert!(!log.covers(90, 120));
        assert!(!log.covers(250, 301));
        assert!(!log.covers(50, 60));
        assert!(!log.covers(400, 500));
        assert!(!log.covers(140, 130));
        assert!(!CutLog::default().covers(1, 2));
    }
}
