//! What the recording paths accumulate for the live endpoint.
//!
//! Two places, chosen so that the recording path adds no lock of its own:
//! - [`TimelineLive`] lives inside a device's timeline and is updated under the lock the
//!   timing model already holds while it places a kernel: busy time of the union of
//!   kernel spans, FLOPs, executions, a ring of their latencies, and calls and device
//!   time per operator.
//! - [`DeviceLive`] sits beside it on the device: relaxed atomics (the submitting
//!   thread's clock offset, the step, error counts) and one small mutex taken twice
//!   per collective (the latency histogram and the collective in flight), never
//!   contended except by a report.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use hdrhistogram::Histogram;

use crate::BackendError;

/// Executions whose latencies are kept for the percentiles of a report.
pub(crate) const LATENCY_RING: usize = 4096;

/// Per-timeline counters, updated under the timeline's lock.
#[derive(Debug, Default)]
pub(crate) struct TimelineLive {
    /// Busy ns of the union of kernel spans on every queue.
    pub(crate) kernel_busy_ns: u64,
    covered_until_ns: u64,
    /// FLOPs of the kernels placed.
    pub(crate) flops: u64,
    /// Kernels (and collectives) placed.
    pub(crate) executions: u64,
    /// `(total latency, device latency)` ns of the last [`LATENCY_RING`] executions;
    /// execution `n` (0-based) is at `n % LATENCY_RING`.
    latencies: Vec<(u64, u64)>,
    /// Calls and device time per operator.
    pub(crate) ops: OpTable,
}

impl TimelineLive {
    /// One kernel launched by the host at `launch_ns`, run by the model from
    /// `start_ns` to `end_ns`.
    ///
    /// The union of kernel spans grows incrementally: a kernel that starts before the
    /// union's end adds only its part past that end. Kernels of one queue start in
    /// order, so this is exact for one queue; a kernel of another queue that fills an
    /// earlier gap is undercounted by that gap (rare: collective and copy queues start
    /// behind the compute work they wait for).
    #[inline]
    pub(crate) fn note_kernel(&mut self, launch_ns: u64, start_ns: u64, end_ns: u64, flops: u64) {
        let from_ns = start_ns.max(self.covered_until_ns);
        if end_ns > from_ns {
            self.kernel_busy_ns += end_ns - from_ns;
            self.covered_until_ns = end_ns;
        }
        self.flops += flops;
        let total_ns = end_ns.saturating_sub(launch_ns);
        let device_ns = end_ns.saturating_sub(start_ns);
        let slot = (self.executions % LATENCY_RING as u64) as usize;
        if self.latencies.len() <= slot {
            self.latencies.push((total_ns, device_ns));
        } else {
            self.latencies[slot] = (total_ns, device_ns);
        }
        self.executions += 1;
    }

    /// One operator ran for `device_ns` of modeled device time.
    #[inline]
    pub(crate) fn note_op(&mut self, name: &'static str, device_ns: u64) {
        self.ops.note(name, device_ns);
    }

    /// Latencies of the executions numbered `from..self.executions` still in the ring
    /// (the latest [`LATENCY_RING`] when more ran).
    pub(crate) fn latencies_since(&self, from: u64) -> Vec<(u64, u64)> {
        let first = from.max(self.executions.saturating_sub(LATENCY_RING as u64));
        (first..self.executions)
            .map(|n| self.latencies[(n % LATENCY_RING as u64) as usize])
            .collect()
    }
}

/// Error classes counted per device, as neuron-monitor's `execution_summary` names
/// them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorClass {
    /// A collective timed out waiting for a rank.
    TimedOut = 0,
    /// Work submitted to a released stream.
    FailedToQueue = 1,
    /// Bad input: shapes, dtypes, devices, indices, arguments.
    IncorrectInput = 2,
    /// Anything else (out of memory, ...).
    CompletedWithErr = 3,
}

impl ErrorClass {
    pub(crate) fn of(err: &BackendError) -> Self {
        match err {
            BackendError::CollectiveTimeout { .. } => ErrorClass::TimedOut,
            BackendError::StreamReleased { .. } => ErrorClass::FailedToQueue,
            BackendError::ShapeMismatch { .. }
            | BackendError::DTypeMismatch { .. }
            | BackendError::DeviceMismatch { .. }
            | BackendError::UseAfterFree { .. }
            | BackendError::IndexOutOfRange { .. }
            | BackendError::NumericsOff { .. }
            | BackendError::InvalidArgument { .. }
            | BackendError::CollectiveMismatch { .. } => ErrorClass::IncorrectInput,
            _ => ErrorClass::CompletedWithErr,
        }
    }
}

/// One operator's totals.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OpCount {
    pub(crate) calls: u64,
    pub(crate) device_ns: u64,
}

/// Hashes an operator name by the address of its static text: names are `&'static
/// str` literals, one address per call site, so the address identifies the name
/// (two literals with the same text may get two rows; the report merges rows by
/// name). One multiply instead of SipHash over the text, on the recording path.
#[derive(Debug, Default, Clone, Copy)]
struct AddressHasher(u64);

impl std::hash::Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }

    fn write_usize(&mut self, i: usize) {
        // Fibonacci hashing: the multiply spreads the address bits over the high bits
        // that hashbrown's control bytes read.
        self.0 = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

type AddressMap = HashMap<usize, usize, std::hash::BuildHasherDefault<AddressHasher>>;

/// Operators by name, in first-seen order.
#[derive(Debug, Default)]
pub(crate) struct OpTable {
    index: AddressMap,
    pub(crate) names: Vec<&'static str>,
    pub(crate) counts: Vec<OpCount>,
}

impl OpTable {
    fn note(&mut self, name: &'static str, device_ns: u64) {
        let i = *self.index.entry(name.as_ptr() as usize).or_insert_with(|| {
            self.names.push(name);
            self.counts.push(OpCount {
                calls: 0,
                device_ns: 0,
            });
            self.names.len() - 1
        });
        let count = &mut self.counts[i];
        count.calls += 1;
        count.device_ns += device_ns;
    }
}

/// A collective this rank's host is inside of (from the call until the ranks met).
#[derive(Debug, Clone)]
pub(crate) struct InFlight {
    pub(crate) op: &'static str,
    pub(crate) group: String,
    /// The group's identity within its world and the meeting's key, to find the other
    /// participants' entries.
    pub(crate) meeting: (usize, String),
    pub(crate) seq: u64,
    pub(crate) bytes: u64,
    pub(crate) since: Instant,
    /// Global ranks taking part.
    pub(crate) participants: Vec<usize>,
}

/// Collective statistics of one rank.
#[derive(Debug)]
pub(crate) struct CollectiveStats {
    /// Modeled latency (this rank's kernel span: waiting for the peers included), µs.
    pub(crate) latency_us: Histogram<u32>,
    pub(crate) completed: u64,
    /// Modeled ns this rank's collectives waited for each global rank (the last to be
    /// ready), indexed by global rank.
    pub(crate) waited_for_ns: Vec<u64>,
    pub(crate) in_flight: Vec<InFlight>,
    /// Collectives (not sends and receives) a host program issued, per process group
    /// name (`Device::external_collective_issue`): the count is the c10d backend's
    /// sequence number of the latest, as it issues each of its collectives once, in
    /// order.
    pub(crate) external_issued: std::collections::HashMap<String, u64>,
}

impl Default for CollectiveStats {
    fn default() -> Self {
        CollectiveStats {
            // 1 µs to one hour at 2 significant digits (values within 1 %): about
            // 3,300 counters (13 KiB), small enough to read at every report.
            latency_us: Histogram::new_with_bounds(1, 3_600_000_000, 2)
                .expect("valid histogram bounds"),
            completed: 0,
            waited_for_ns: Vec::new(),
            in_flight: Vec::new(),
            external_issued: std::collections::HashMap::new(),
        }
    }
}

/// Per-device live state outside the timeline.
#[derive(Debug)]
pub(crate) struct DeviceLive {
    /// `monotonic - host clock` of the thread that last submitted work here, so a
    /// reader can tell that thread's host clock now; `i64::MIN` before any submission.
    host_offset_ns: AtomicI64,
    /// That thread's host clock at its last submission, ns.
    host_at_submit_ns: AtomicU64,
    /// Whether that thread's host clock follows its CPU time
    /// (`runtime_hooks::clock::follow_cpu_time`).
    host_follows_cpu: AtomicBool,
    /// Last completed step + 1 (0: none yet).
    step_plus_one: AtomicU64,
    /// The rank's thread has left its body.
    pub(crate) finished: AtomicBool,
    /// OS thread id of the rank thread (0: not a rank).
    pub(crate) os_tid: AtomicI64,
    /// `runtime_hooks` thread index of the rank thread (`u32::MAX`: none).
    pub(crate) hooks_thread: AtomicU32,
    errors: [AtomicU64; 4],
    pub(crate) collectives: Mutex<CollectiveStats>,
}

impl Default for DeviceLive {
    fn default() -> Self {
        DeviceLive {
            host_offset_ns: AtomicI64::new(i64::MIN),
            host_at_submit_ns: AtomicU64::new(0),
            host_follows_cpu: AtomicBool::new(false),
            step_plus_one: AtomicU64::new(0),
            finished: AtomicBool::new(false),
            os_tid: AtomicI64::new(0),
            hooks_thread: AtomicU32::new(u32::MAX),
            errors: Default::default(),
            collectives: Mutex::new(CollectiveStats::default()),
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Each update is one step; a panicking thread leaves the counters usable.
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl DeviceLive {
    /// The submitting thread submitted at its host instant `host_ns` (relaxed stores
    /// of thread-local values; no clock read).
    #[inline]
    pub(crate) fn note_host(&self, host_ns: u64) {
        self.host_at_submit_ns.store(host_ns, Ordering::Relaxed);
        self.host_follows_cpu
            .store(runtime_hooks::clock::follows_cpu_time(), Ordering::Relaxed);
        self.host_offset_ns.store(
            runtime_hooks::clock::emulation_offset_ns(),
            Ordering::Relaxed,
        );
    }

    /// The host clock of the thread that last submitted here, as another thread can
    /// tell it at instant `process_ns` of the process timeline
    /// (`runtime_hooks::clock::process_ns`); `None` before any submission.
    ///
    /// A thread whose clock follows its CPU time (a rank thread) is read at its last
    /// submission: off the CPU (waiting for a peer in a collective, preempted) or
    /// inside an emulation span its clock stands still, which no other thread can see,
    /// so an estimate from the wall clock would run ahead and fall back at its next
    /// submission. Any other thread's clock is `process_ns` minus its emulation offset
    /// (exact outside its emulation spans, ahead of it inside one), never before its
    /// last submission. Readers keep their samples monotone.
    pub(crate) fn host_now_ns(&self, process_ns: u64) -> Option<u64> {
        let offset = self.host_offset_ns.load(Ordering::Relaxed);
        if offset == i64::MIN {
            return None;
        }
        let at_submit = self.host_at_submit_ns.load(Ordering::Relaxed);
        if self.host_follows_cpu.load(Ordering::Relaxed) {
            return Some(at_submit);
        }
        Some(((process_ns as i64).wrapping_sub(offset).max(0) as u64).max(at_submit))
    }

    /// A step finished.
    pub(crate) fn note_step(&self, step: u64) {
        self.step_plus_one.store(step + 1, Ordering::Relaxed);
    }

    /// The last finished step.
    pub(crate) fn step(&self) -> Option<u64> {
        self.step_plus_one.load(Ordering::Relaxed).checked_sub(1)
    }

    /// An op on this device failed with `err`.
    pub(crate) fn note_error(&self, err: &BackendError) {
        self.errors[ErrorClass::of(err) as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Error counts by [`ErrorClass`] index.
    pub(crate) fn errors(&self) -> [u64; 4] {
        std::array::from_fn(|i| self.errors[i].load(Ordering::Relaxed))
    }

    /// A collective call entered its meeting.
    pub(crate) fn collective_begin(&self, in_flight: InFlight) {
        lock(&self.collectives).in_flight.push(in_flight);
    }

    /// A host program issued collective `op` (not a send or receive) on process group
    /// `group` with correlation id `corr_id`: it is in flight, with the next sequence
    /// number of its group, until [`Self::external_placed`].
    pub(crate) fn external_issued(
        &self,
        op: &'static str,
        group: &str,
        corr_id: u64,
        bytes: u64,
        participants: &[usize],
    ) {
        let mut stats = lock(&self.collectives);
        let seq = stats.external_issued.entry(group.to_owned()).or_default();
        *seq += 1;
        let seq = *seq;
        stats.in_flight.push(InFlight {
            op,
            group: group.to_owned(),
            meeting: (0, format!("external {corr_id}")),
            seq,
            bytes,
            since: Instant::now(),
            participants: participants.to_vec(),
        });
    }

    /// The host program's collective of `corr_id` was placed (the ranks met).
    pub(crate) fn external_placed(&self, corr_id: u64) {
        self.collective_left(&(0, format!("external {corr_id}")));
    }

    /// The collective of `seq` on `group` left its meeting (met, failed or timed out).
    pub(crate) fn collective_left(&self, meeting: &(usize, String)) {
        let mut stats = lock(&self.collectives);
        if let Some(i) = stats.in_flight.iter().position(|f| &f.meeting == meeting) {
            stats.in_flight.swap_remove(i);
        }
    }

    /// A collective completed on the model: this rank's kernel ran `latency_ns`, and
    /// `waited_ns` of it waited for global rank `last_rank`.
    pub(crate) fn collective_done(&self, latency_ns: u64, last_rank: usize, waited_ns: u64) {
        let mut stats = lock(&self.collectives);
        stats
            .latency_us
            .saturating_record(latency_ns.div_ceil(1_000).max(1));
        stats.completed += 1;
        if stats.waited_for_ns.len() <= last_rank {
            stats.waited_for_ns.resize(last_rank + 1, 0);
        }
        stats.waited_for_ns[last_rank] += waited_ns;
    }

    pub(crate) fn lock_collectives(&self) -> std::sync::MutexGuard<'_, CollectiveStats> {
        lock(&self.collectives)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_union_counts_overlap_once() {
        let mut live = TimelineLive::default();
        live.note_kernel(0, 10, 20, 5);
        live.note_kernel(0, 15, 30, 5); // overlaps 15..20
        live.note_kernel(0, 40, 50, 0);
        assert_eq!(live.kernel_busy_ns, 10 + 10 + 10);
        assert_eq!(live.flops, 10);
        assert_eq!(live.executions, 3);
        assert_eq!(live.latencies_since(1), vec![(30, 15), (50, 10)]);
    }

    #[test]
    fn latency_ring_keeps_the_latest() {
        let mut live = TimelineLive::default();
        let n = LATENCY_RING as u64 + 10;
        for i in 0..n {
            live.note_kernel(0, 0, i + 1, 0);
        }
        let all = live.latencies_since(0);
        assert_eq!(all.len(), LATENCY_RING);
        assert_eq!(all.last(), Some(&(n, n)));
        assert_eq!(all[0], (11, 11));
    }

    #[test]
    fn op_table_sums_per_name() {
        const MM: &str = "aten::mm";
        let mut live = TimelineLive::default();
        live.note_op(MM, 10);
        live.note_op("aten::add", 1);
        live.note_op(MM, 5);
        let ops = &live.ops;
        assert_eq!(ops.names, vec!["aten::mm", "aten::add"]);
        assert_eq!((ops.counts[0].calls, ops.counts[0].device_ns), (2, 15));
    }
}
