//! Engine utilization over time: for each engine track (`neuron_instruction` events), the
//! busy fraction of each of N equal time buckets. Computed once per timeline, O(slices
//! on engine tracks).

use std::sync::Arc;

use crate::model::Timeline;

/// One heatmap row: one engine track.
#[derive(Clone, Debug)]
pub struct HeatmapRow {
    /// The track.
    pub track: u32,
    /// Its group (device of a rank).
    pub group: u32,
    /// Its label (`core 0 · engine 2` or the thread name).
    pub label: String,
    /// Busy fraction (0–1) of each bucket.
    pub busy: Vec<f32>,
}

/// The heatmap of a timeline.
#[derive(Clone, Debug)]
pub struct Heatmap {
    /// The timeline it was computed for.
    pub timeline: Arc<Timeline>,
    /// Bucket width, ns.
    pub bucket_ns: f64,
    /// One row per engine track.
    pub rows: Vec<HeatmapRow>,
}

impl Heatmap {
    /// Time span of bucket `i`, ns since the timeline's origin.
    pub fn bucket_span(&self, i: usize) -> (f64, f64) {
        (i as f64 * self.bucket_ns, (i + 1) as f64 * self.bucket_ns)
    }
}

/// Computes the heatmap with `buckets` buckets over the whole timeline. Only the top row
/// of each track counts (an engine runs one instruction at a time).
pub fn engine_heatmap(timeline: &Arc<Timeline>, buckets: usize) -> Heatmap {
    let buckets = buckets.max(1);
    let bucket_ns = (timeline.end_ns.max(1) as f64 / buckets as f64).max(1.0);
    let instruction = timeline.names.lookup("neuron_instruction");
    let mut rows = Vec::new();
    for (t, track) in timeline.tracks.iter().enumerate() {
        let Some(row) = track.rows().first() else {
            continue;
        };
        if instruction.is_none() || !row.category.iter().any(|c| Some(*c) == instruction) {
            continue;
        }
        let mut busy = vec![0f64; buckets];
        for i in 0..row.len() {
            let (mut s, e) = (row.start_ns[i] as f64, row.end_ns[i] as f64);
            while s < e {
                let b = ((s / bucket_ns) as usize).min(buckets - 1);
                let bucket_end = ((b + 1) as f64 * bucket_ns).max(s + 1.0);
                let piece_end = e.min(bucket_end);
                busy[b] += piece_end - s;
                s = piece_end;
                if b == buckets - 1 {
                    busy[b] += e - s;
                    break;
                }
            }
        }
        rows.push(HeatmapRow {
            track: t as u32,
            group: track.group,
            label: track.label.clone(),
            busy: busy
                .iter()
                .map(|b| (b / bucket_ns).clamp(0.0, 1.0) as f32)
                .collect(),
        });
    }
    Heatmap {
        timeline: Arc::clone(timeline),
        bucket_ns,
        rows,
    }
}
