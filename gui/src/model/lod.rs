//! The level-of-detail pyramid of one row, built at load.
//!
//! Level k has buckets of `BASE_BUCKET_NS × 4^k`. Slices shorter than the bucket are
//! summarised per bucket (first start, last end, count, first slice); longer ones are
//! listed individually. A frame whose pixel is at least one bucket wide reads that
//! level: at most about four buckets and four long slices per pixel column in view,
//! read in order (no search per column, so no cache miss per column on large rows).

/// Bucket width of level 0, ns.
pub const BASE_BUCKET_NS: i64 = 1_000;
/// Rows with fewer slices than this get no pyramid (the per-column search is cheap).
pub const MIN_SLICES_FOR_LOD: usize = 4_096;

/// One level of the pyramid.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LodLevel {
    /// Bucket width, ns.
    pub bucket_ns: i64,
    /// Per non-empty bucket: earliest start of its short slices.
    pub start_ns: Vec<i64>,
    /// Per bucket: latest end of its short slices.
    pub end_ns: Vec<i64>,
    /// Per bucket: how many short slices it holds.
    pub count: Vec<u32>,
    /// Per bucket: index of its first short slice in the row.
    pub first: Vec<u32>,
    /// Slices at least `bucket_ns` long, by start: their indices in the row.
    pub long: Vec<u32>,
    /// Start of each long slice (a copy, so the frame reads one array in order).
    pub long_start_ns: Vec<i64>,
}

/// Builds every level for a row whose slices never overlap and are sorted by start,
/// up to the first level with a single bucket. Level k is made from level k − 1 (its
/// buckets, and its long slices now short enough to join a bucket), so building costs
/// O(n) for the first level and shrinks from there on.
pub fn build_levels(start_ns: &[i64], end_ns: &[i64]) -> Vec<LodLevel> {
    let n = start_ns.len();
    if n < MIN_SLICES_FOR_LOD {
        return Vec::new();
    }
    let span = end_ns[n - 1] - start_ns[0];
    let mut levels: Vec<LodLevel> = Vec::new();
    let mut bucket_ns = BASE_BUCKET_NS;
    loop {
        let mut level = LodLevel {
            bucket_ns,
            ..LodLevel::default()
        };
        let mut current: Option<i64> = None;
        // Adds a run of `count` short slices (first index `first`) to the level.
        let mut add = |level: &mut LodLevel, s: i64, e: i64, count: u32, first: u32| {
            let bucket = s.div_euclid(bucket_ns);
            if current == Some(bucket) {
                let last = level.count.len() - 1;
                level.count[last] += count;
                level.end_ns[last] = level.end_ns[last].max(e);
            } else {
                current = Some(bucket);
                level.start_ns.push(s);
                level.end_ns.push(e);
                level.count.push(count);
                level.first.push(first);
            }
        };
        match levels.last() {
            None => {
                for i in 0..n {
                    if end_ns[i] - start_ns[i] >= bucket_ns {
                        level.long.push(i as u32);
                        level.long_start_ns.push(start_ns[i]);
                    } else {
                        add(&mut level, start_ns[i], end_ns[i], 1, i as u32);
                    }
                }
            }
            Some(prev) => {
                // Merge the previous buckets and long slices in start order.
                let (mut b, mut l) = (0, 0);
                while b < prev.count.len() || l < prev.long.len() {
                    let take_bucket = l == prev.long.len()
                        || (b < prev.count.len() && prev.start_ns[b] < prev.long_start_ns[l]);
                    if take_bucket {
                        add(
                            &mut level,
                            prev.start_ns[b],
                            prev.end_ns[b],
                            prev.count[b],
                            prev.first[b],
                        );
                        b += 1;
                    } else {
                        let i = prev.long[l] as usize;
                        if end_ns[i] - start_ns[i] >= bucket_ns {
                            level.long.push(i as u32);
                            level.long_start_ns.push(start_ns[i]);
                        } else {
                            add(&mut level, start_ns[i], end_ns[i], 1, i as u32);
                        }
                        l += 1;
                    }
                }
            }
        }
        let done = level.long.is_empty() && level.count.len() <= 1;
        levels.push(level);
        // Stop once one bucket holds the whole row.
        if done || bucket_ns > span {
            break;
        }
        bucket_ns *= 4;
    }
    levels
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_keep_every_slice_once() {
        // 10,000 slices of 100 ns every 300 ns, and every 1000th one 50 µs long.
        let mut start = Vec::new();
        let mut end = Vec::new();
        let mut t = 0;
        for i in 0..10_000 {
            let dur = if i % 1000 == 0 { 50_000 } else { 100 };
            start.push(t);
            end.push(t + dur);
            t += dur + 200;
        }
        let levels = build_levels(&start, &end);
        assert!(levels.len() > 3);
        for level in &levels {
            let short: u64 = level.count.iter().map(|c| *c as u64).sum();
            assert_eq!(
                short + level.long.len() as u64,
                10_000,
                "level {}",
                level.bucket_ns
            );
            assert!(level.long_start_ns.windows(2).all(|w| w[0] <= w[1]));
            assert!(level.start_ns.windows(2).all(|w| w[0] <= w[1]));
        }
        assert_eq!(
            levels[0].long.len(),
            10,
            "the 50 µs slices are long at 1 µs"
        );
        assert!(levels.last().unwrap().long.is_empty() || levels.last().unwrap().count.len() <= 1);
    }
}
