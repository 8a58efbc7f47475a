//! Host waits on the device: a wait moves the calling thread's host clock to the
//! modeled instant it ends at, and each thread counts how long it waited, so that
//! the host's own time (dispatch and recording) can be told apart from waiting.

use std::cell::Cell;

use runtime_hooks::clock;

thread_local! {
    static WAITED_NS: Cell<u64> = const { Cell::new(0) };
}

/// Waits until `target_ns`: moves this thread's host clock forward to it (never
/// back) and adds the time moved to [`host_wait_ns`]. Returns the host clock after.
pub(crate) fn wait_until(target_ns: u64) -> u64 {
    let before_ns = clock::now_ns();
    let after_ns = clock::advance_to(target_ns);
    // Only the move counts, not the clock running on between the two reads.
    let waited_ns = target_ns.min(after_ns).saturating_sub(before_ns);
    if waited_ns > 0 {
        WAITED_NS.with(|w| w.set(w.get().saturating_add(waited_ns)));
    }
    after_ns
}

/// Host time the calling thread has spent waiting for devices so far, ns: queue
/// back-pressure, synchronizations, copies to the host, collectives (including
/// waiting for the peers). A step's host time minus its wait is the time the host
/// spent dispatching (and, with a profiler on, recording) — the figure a
/// recording-overhead measurement wants when the device keeps the host waiting.
pub fn host_wait_ns() -> u64 {
    WAITED_NS.with(Cell::get)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_count_only_forward_moves() {
        let start = host_wait_ns();
        let now = clock::now_ns();
        wait_until(now + 5_000_000);
        let waited = host_wait_ns() - start;
        // The clock runs on between the two reads: a little less than 5 ms is waited.
        assert!((4_000_000..=5_000_000).contains(&waited), "{waited}");
        wait_until(0);
        assert_eq!(
            host_wait_ns() - start,
            waited,
            "a past instant costs no wait"
        );
    }
}
