//! A load that keeps one annotation's window ([`super::LoadOptions::with_window`]):
//! the instances are counted as events arrive (file order, as the critical path counts
//! them); once the last asked-for instance has been read, the window's time range is
//! known, the events read so far are pruned to it and later ones are kept only when
//! they start in it. Every row with a correlation is kept in compact form
//! ([`CorrelatedRow`]): HTA links launches and device rows, and counts its queue
//! length, over the whole trace.

use super::{CorrelatedRow, KeptWindow, LoadWindow, Names, Row, Timeline};
use crate::analyses::queue_length::HTA_LAUNCH_NAMES;

/// Slack around the window, ns: HTA-compat mode rounds times to whole µs (up or down,
/// less than 1 µs either way), so an event whose rounded start is in the rounded window
/// starts within 2 µs of it.
pub(crate) const ROUNDING_SLACK_NS: i64 = 2_000;

/// One complete event as the window sees it.
pub(super) struct Seen<'a> {
    pub(super) index: u64,
    pub(super) name: &'a str,
    pub(super) ts_rel_ns: i64,
    pub(super) dur_ns: i64,
    pub(super) stream: i64,
    pub(super) correlation: i64,
    /// A row ([`super::RankTrace::rows`]) rather than a timeline event.
    pub(super) is_row: bool,
    /// `Event Sync` / `Context Sync`.
    pub(super) is_sync: bool,
}

/// The state of a windowed load of one file.
pub(super) struct WindowState {
    asked: LoadWindow,
    /// Instances read so far.
    matches: usize,
    /// (least start, greatest end) of the asked-for instances read so far, ns.
    span: Option<(i64, i64)>,
    /// The ranges kept, once the last instance has been read.
    bands: Option<Bands>,
    dropped: u64,
    correlated: Vec<CorrelatedRow>,
}

/// The start times kept: host events and device rows.
#[derive(Clone, Copy)]
struct Bands {
    host: (i64, i64),
    device: (i64, i64),
}

impl Bands {
    /// Whether an event is kept by its start: device rows (`stream` set) in the device
    /// range, anything else in the host range.
    fn holds(&self, stream: i64, ts_rel_ns: i64) -> bool {
        let (lo, hi) = if stream != -1 { self.device } else { self.host };
        ts_rel_ns >= lo && ts_rel_ns <= hi
    }
}

/// Whether an event is kept whatever its time: the file's first event (HTA's
/// `index_correlation` 0 points at it), `Stream Wait Event` rows (HTA's clip keeps
/// them all) and the annotation's instances read before the window closed.
fn always_kept(index: u64, name: &str, annotation: &str) -> bool {
    index == 0 || name == "Stream Wait Event" || name.contains(annotation)
}

impl WindowState {
    pub(super) fn new(asked: &LoadWindow) -> Self {
        WindowState {
            asked: asked.clone(),
            matches: 0,
            span: None,
            bands: None,
            dropped: 0,
            correlated: Vec::new(),
        }
    }

    /// Takes note of one event (in file order): returns whether it is kept, and whether
    /// it closed the window (then [`WindowState::prune`] the events kept so far).
    pub(super) fn see(&mut self, e: &Seen<'_>) -> (bool, bool) {
        if e.is_row && e.correlation != -1 {
            let gpu_side = (e.stream >= 0 && e.correlation >= 0) || e.is_sync;
            let mut flags = 0;
            if gpu_side {
                flags |= CorrelatedRow::GPU_SIDE;
            }
            if HTA_LAUNCH_NAMES.contains(&e.name) {
                flags |= CorrelatedRow::HTA_LAUNCH;
            }
            self.correlated.push(CorrelatedRow {
                ts_rel_ns: e.ts_rel_ns,
                event_index: e.index,
                correlation: e.correlation,
                stream: e.stream,
                flags,
            });
        }
        let Some(bands) = self.bands else {
            let mut closed = false;
            if e.name.contains(&self.asked.annotation) {
                let (first, last) = self.asked.instances;
                if (first..=last).contains(&self.matches) {
                    let end = e.ts_rel_ns.saturating_add(e.dur_ns);
                    let (lo, hi) = self.span.get_or_insert((e.ts_rel_ns, end));
                    *lo = (*lo).min(e.ts_rel_ns);
                    *hi = (*hi).max(end);
                }
                if self.matches == last && first <= last {
                    let (lo, hi) = self.span.expect("the last instance was just read");
                    let host = (
                        lo.saturating_sub(ROUNDING_SLACK_NS),
                        hi.saturating_add(ROUNDING_SLACK_NS),
                    );
                    // Device work launched late in the window runs after it: one more
                    // window's length. (A row launched in the window that starts later
                    // still is missing from the load; the critical path finds that
                    // from the correlations and says so.)
                    let device = (host.0, host.1.saturating_add(hi.saturating_sub(lo)));
                    self.bands = Some(Bands { host, device });
                    closed = true;
                }
                self.matches += 1;
            }
            return (true, closed);
        };
        // Later instances than the last asked for are kept only in the window.
        let kept = e.index == 0
            || e.name == "Stream Wait Event"
            || bands.holds(e.stream, e.ts_rel_ns)
            || self.asked.also_keep.binary_search(&e.index).is_ok();
        if !kept {
            self.dropped += 1;
        }
        (kept, false)
    }

    /// Drops the rows and timeline events read before the window closed that are
    /// outside it (every instance read so far is at most the last asked for: kept).
    pub(super) fn prune(&mut self, rows: &mut Vec<Row>, names: &Names, timeline: &mut Timeline) {
        let Some(bands) = self.bands else { return };
        let annotation = self.asked.annotation.as_str();
        let also = &self.asked.also_keep;
        let before = rows.len() + timeline.events.len();
        rows.retain(|r| {
            always_kept(r.event_index, names.get(r.name), annotation)
                || bands.holds(r.stream, r.ts_rel_ns)
                || also.binary_search(&r.event_index).is_ok()
        });
        let timeline_names = &timeline.names;
        timeline.events.retain(|e| {
            always_kept(e.event_index, timeline_names.get(e.name), annotation)
                || bands.holds(-1, e.ts_rel_ns)
                || also.binary_search(&e.event_index).is_ok()
        });
        let kept_rows: Vec<u64> = rows.iter().map(|r| r.event_index).collect();
        timeline
            .waits
            .retain(|w| kept_rows.binary_search(&w.event_index).is_ok());
        self.dropped += (before - rows.len() - timeline.events.len()) as u64;
    }

    /// What was kept, for [`Timeline::window`].
    pub(super) fn finish(mut self) -> KeptWindow {
        self.correlated.shrink_to_fit();
        KeptWindow {
            annotation: self.asked.annotation,
            instances: self.asked.instances,
            host_ns: self.bands.map(|b| b.host),
            device_ns: self.bands.map(|b| b.device),
            dropped_events: self.dropped,
            correlated: self.correlated,
        }
    }
}
