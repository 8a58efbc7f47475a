//! Engine utilization counters, derived from an engine track's instructions.
//!
//! An engine's instructions reach the converter sorted by start (see `spill.rs`), so the
//! busy time is the union of their intervals, kept as one running interval. The trace's
//! span is cut into buckets of equal width (about [`TARGET_BUCKETS`] of them, at least
//! [`MIN_BUCKET_NS`]); each bucket's busy share becomes a `%` counter value at the
//! bucket's start. State per engine: the running interval and the current bucket.

/// Buckets a trace's span is cut into.
pub const TARGET_BUCKETS: i64 = 2_000;
/// Narrowest bucket, ns.
pub const MIN_BUCKET_NS: i64 = 10_000;

/// The bucket width for a trace spanning `first_ns..last_ns`.
pub fn bucket_width_ns(first_ns: i64, last_ns: i64) -> i64 {
    (last_ns.saturating_sub(first_ns) / TARGET_BUCKETS).max(MIN_BUCKET_NS)
}

/// Busy share per bucket of one engine.
#[derive(Debug)]
pub struct Utilization {
    origin_ns: i64,
    width_ns: i64,
    /// The union interval still growing.
    open: Option<(i64, i64)>,
    /// The bucket being filled and its busy ns.
    bucket: i64,
    busy_ns: i64,
    started: bool,
}

impl Utilization {
    /// Buckets of `width_ns` starting at `origin_ns`.
    pub fn new(origin_ns: i64, width_ns: i64) -> Self {
        Utilization {
            origin_ns,
            width_ns: width_ns.max(1),
            open: None,
            bucket: 0,
            busy_ns: 0,
            started: false,
        }
    }

    /// Adds an instruction (in start order); `emit(ts_ns, percent)` gets finished buckets.
    pub fn add(&mut self, ts_ns: i64, end_ns: i64, emit: &mut impl FnMut(i64, f64)) {
        match self.open {
            Some((start, end)) if ts_ns <= end => self.open = Some((start, end.max(end_ns))),
            Some(interval) => {
                self.account(interval, emit);
                self.open = Some((ts_ns, end_ns));
            }
            None => self.open = Some((ts_ns, end_ns)),
        }
    }

    /// Accounts the last interval and emits the remaining buckets, then a 0.
    pub fn finish(&mut self, emit: &mut impl FnMut(i64, f64)) {
        if let Some(interval) = self.open.take() {
            self.account(interval, emit);
        }
        if self.started {
            self.emit_bucket(emit);
            emit(self.bucket_start(self.bucket), 0.0);
        }
    }

    fn bucket_start(&self, bucket: i64) -> i64 {
        self.origin_ns + bucket * self.width_ns
    }

    fn emit_bucket(&mut self, emit: &mut impl FnMut(i64, f64)) {
        let percent = 100.0 * self.busy_ns as f64 / self.width_ns as f64;
        emit(self.bucket_start(self.bucket), percent.min(100.0));
        self.bucket += 1;
        self.busy_ns = 0;
    }

    fn account(&mut self, (mut start, end): (i64, i64), emit: &mut impl FnMut(i64, f64)) {
        if !self.started {
            self.started = true;
            self.bucket = (start - self.origin_ns).div_euclid(self.width_ns);
        }
        while start < end {
            let bucket = (start - self.origin_ns).div_euclid(self.width_ns);
            while self.bucket < bucket {
                self.emit_bucket(emit);
            }
            let bucket_end = self.bucket_start(bucket + 1);
            let until = end.min(bucket_end);
            self.busy_ns += until - start;
            start = until;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_share_per_bucket_counts_overlaps_once() {
        let mut util = Utilization::new(0, 100);
        let mut values = Vec::new();
        let mut emit = |ts: i64, percent: f64| values.push((ts, percent));
        util.add(0, 50, &mut emit);
        util.add(25, 75, &mut emit); // overlaps: busy 0..75
        util.add(150, 250, &mut emit); // half of bucket 1, half of bucket 2
        util.finish(&mut emit);
        assert_eq!(
            values,
            vec![(0, 75.0), (100, 50.0), (200, 50.0), (300, 0.0)]
        );
    }
}
