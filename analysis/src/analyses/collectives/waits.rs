//! Each rank's time in collectives waiting for a late peer, as intervals: what the step
//! split needs to tell the waiting part of its exposed communication
//! ([`crate::analyses::steps::StepSplit::peer_wait_us`]).

use std::collections::BTreeMap;

use super::Matcher;

impl Matcher {
    /// Per rank, the stretches (ns, the clock of [`super::collective_parts`]) its copies
    /// of the matched collectives waited for the last rank: a copy waits from its start
    /// for its duration less the instance's transfer time (the shortest duration across
    /// ranks, as [`super::CollectiveRank::wait_us`]), so a copy of the shortest duration
    /// waits for nothing. By rank, merged where they overlap: disjoint and in order.
    pub(crate) fn peer_waits(&self) -> BTreeMap<i64, Vec<(i64, i64)>> {
        let mut out: BTreeMap<i64, Vec<(i64, i64)>> = BTreeMap::new();
        for instance in self.matched.values() {
            let copies = &instance.copies;
            let transfer_ns = copies.iter().map(|c| c.2 - c.1).min().unwrap_or(0).max(0);
            for &(rank, start, end, _) in copies {
                let wait_end = end - transfer_ns;
                if wait_end > start {
                    out.entry(rank).or_default().push((start, wait_end));
                }
            }
        }
        for waits in out.values_mut() {
            waits.sort_unstable();
            *waits = crate::analyses::peer_wait::union(waits);
        }
        out
    }
}
