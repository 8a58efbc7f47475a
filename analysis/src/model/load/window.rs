//! A load that keeps one annotation's window ([`super::LoadOptions::with_window`]):
//! the instances are counted as events arrive (file order, as the critical path counts
//! them); once the last asked-for instance has been read, the window's time range is
//! known, the events read so far are pruned to it and later ones are kept only when
//! they start in it. Of every row with a correlation the load keeps what HTA's links
//! between launches and device rows and its queue length need over the whole trace
//! ([`Pairing`]: a bit per correlation id and side, a 10-byte entry per launch and
//! device row, the pairs of the kept rows), or with
//! [`super::LoadWindow::records`] a 40-byte record of each ([`CorrelatedRow`]).

use super::{CorrelatedRow, FastMap, KeptWindow, LoadWindow, Names, Row, Timeline};
use crate::analyses::queue_length::HTA_LAUNCH_NAMES;
use crate::classify::Mode;
use crate::model::{ChangeLog, CompactCorrelations, WindowCorrelations};

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
    /// Category `cuda_sync` (a sync row, not work a launch queued).
    pub(super) cuda_sync: bool,
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
    /// With [`LoadWindow::records`]: every correlated row.
    correlated: Vec<CorrelatedRow>,
    /// Otherwise: the compact form.
    pairing: Option<Pairing>,
}

/// The start times kept: host events and device rows.
#[derive(Clone, Copy)]
struct Bands {
    host: (i64, i64),
    device: (i64, i64),
    /// [`Mode::Default`]: host rows with a correlation (launches) are kept in the
    /// device range, the default mode's queue length counts the launches issued while
    /// the window's device rows wait ([`crate::critical_path`]).
    launches_to_device_end: bool,
}

impl Bands {
    /// Whether an event is kept by its start: device rows (`stream` set) in the device
    /// range, anything else in the host range (launches, in the default mode, in the
    /// device range).
    fn holds(&self, stream: i64, correlation: i64, ts_rel_ns: i64) -> bool {
        let device = stream != -1 || (self.launches_to_device_end && correlation != -1);
        let (lo, hi) = if device { self.device } else { self.host };
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
            pairing: (!asked.records).then(|| Pairing {
                log_queue: asked.mode == Mode::HtaCompat,
                ..Pairing::default()
            }),
        }
    }

    /// Takes note of one event (in file order): returns whether it is kept, and whether
    /// it closed the window (then [`WindowState::prune`] the events kept so far).
    pub(super) fn see(&mut self, e: &Seen<'_>) -> (bool, bool) {
        let (kept, closed) = self.keeps(e);
        if e.is_row && e.correlation != -1 {
            let gpu_side = (e.stream >= 0 && e.correlation >= 0) || e.is_sync;
            let launch = HTA_LAUNCH_NAMES.contains(&e.name);
            match &mut self.pairing {
                Some(pairing) => pairing.see(e, gpu_side, launch, kept),
                None => {
                    let mut flags = 0;
                    if gpu_side {
                        flags |= CorrelatedRow::GPU_SIDE;
                    }
                    if launch {
                        flags |= CorrelatedRow::HTA_LAUNCH;
                    }
                    if e.cuda_sync {
                        flags |= CorrelatedRow::CUDA_SYNC;
                    }
                    self.correlated.push(CorrelatedRow {
                        ts_rel_ns: e.ts_rel_ns,
                        event_index: e.index,
                        correlation: e.correlation,
                        stream: e.stream,
                        flags,
                    });
                }
            }
        }
        (kept, closed)
    }

    /// Whether an event is kept, and whether it closed the window.
    fn keeps(&mut self, e: &Seen<'_>) -> (bool, bool) {
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
                    self.bands = Some(Bands {
                        host,
                        device,
                        launches_to_device_end: self.asked.mode == Mode::Default,
                    });
                    closed = true;
                }
                self.matches += 1;
            }
            return (true, closed);
        };
        // Later instances than the last asked for are kept only in the window.
        let kept = e.index == 0
            || e.name == "Stream Wait Event"
            || bands.holds(e.stream, e.correlation, e.ts_rel_ns)
            || self.asked.also_keep.binary_search(&e.index).is_ok()
            || (self.asked.mode == Mode::Default
                && e.is_row
                && ((e.stream >= 0 && e.correlation >= 0) || e.is_sync)
                && self
                    .pairing
                    .as_ref()
                    .is_some_and(|p| p.host_kept(e.correlation)));
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
        let by_time = |r: &Row| {
            always_kept(r.event_index, names.get(r.name), annotation)
                || bands.holds(r.stream, r.correlation, r.ts_rel_ns)
                || also.binary_search(&r.event_index).is_ok()
        };
        // The default mode also keeps the device rows of the launches kept.
        let launched: crate::model::FastSet<u64> = match &self.pairing {
            Some(pairing) if self.asked.mode == Mode::Default => {
                let host_kept: crate::model::FastSet<u64> = rows
                    .iter()
                    .filter(|r| r.stream == -1 && r.correlation != -1 && by_time(r))
                    .map(|r| r.event_index)
                    .collect();
                pairing
                    .pairs
                    .iter()
                    .filter(|&&(_, _, h, _)| host_kept.contains(&h))
                    .map(|&(_, d, _, _)| d)
                    .collect()
            }
            _ => Default::default(),
        };
        rows.retain(|r| by_time(r) || launched.contains(&r.event_index));
        let timeline_names = &timeline.names;
        timeline.events.retain(|e| {
            always_kept(e.event_index, timeline_names.get(e.name), annotation)
                || bands.holds(-1, -1, e.ts_rel_ns)
                || also.binary_search(&e.event_index).is_ok()
        });
        let kept_rows: Vec<u64> = rows.iter().map(|r| r.event_index).collect();
        timeline
            .waits
            .retain(|w| kept_rows.binary_search(&w.event_index).is_ok());
        if let Some(pairing) = &mut self.pairing {
            // A pair stays when a row of its correlation stays (also a host row that is
            // not the last of several).
            let kept_correlations: crate::model::FastSet<i64> = rows
                .iter()
                .filter(|r| r.correlation != -1)
                .map(|r| r.correlation)
                .collect();
            pairing.prune(
                |index| kept_rows.binary_search(&index).is_ok(),
                |correlation| kept_correlations.contains(&correlation),
            );
        }
        self.dropped += (before - rows.len() - timeline.events.len()) as u64;
    }

    /// What was kept, for [`Timeline::window`].
    pub(super) fn finish(mut self) -> KeptWindow {
        let correlations = match self.pairing.take() {
            Some(pairing) => pairing.finish(),
            None => {
                self.correlated.shrink_to_fit();
                WindowCorrelations::Records(std::mem::take(&mut self.correlated))
            }
        };
        KeptWindow {
            annotation: self.asked.annotation,
            instances: self.asked.instances,
            host_ns: self.bands.map(|b| b.host),
            device_ns: self.bands.map(|b| b.device),
            dropped_events: self.dropped,
            correlations,
        }
    }
}

/// Correlation ids per bitmap chunk.
const CHUNK_IDS: i64 = 1 << 16;
/// Bitmap chunks at most (16 KiB each: 64 MiB would be a file with ids spread over
/// 2^28 values); past that the compact form gives up ([`WindowCorrelations::Unproven`]).
const MAX_CHUNKS: usize = 4096;
/// Streams the 16-bit [`ChangeLog::stream`] numbers at most.
const MAX_STREAMS: usize = u16::MAX as usize;

/// A correlation whose other side has not been read yet.
#[derive(Clone, Copy)]
enum Open {
    /// A host-side row: an HTA launch call (its position in the launch log), or any
    /// host-side row that is kept (its device row may be dropped).
    Host {
        launch: Option<u32>,
        index: u64,
        kept: bool,
    },
    /// A device-side row (its position in the device-row log when on a stream).
    Device {
        stream: i64,
        /// Its stream when it is work a launch queued (not `cuda_sync`), else -1.
        work_stream: i64,
        logged: Option<u32>,
        index: u64,
        kept: bool,
    },
}

/// The compact form of what HTA computes over every correlated row
/// ([`CompactCorrelations`]), built as rows arrive. Under the conditions it checks (no
/// correlation id twice on one side, no correlation or stream below -1), each
/// correlation has at most one host-side and one device-side row, so a launch counts in
/// the queue length exactly when its device row is on a stream and is not the file's
/// first event, and the device row counts exactly when its host row is such a launch:
/// both are decided when the second of the two is read, and nothing else of a row that
/// is dropped is needed. A host-side row that is neither a launch nor kept is forgotten
/// at once (its bit says it was read).
#[derive(Default)]
struct Pairing {
    /// Log the queue-length changes (HTA-compat mode).
    log_queue: bool,
    /// Per chunk of [`CHUNK_IDS`] ids: 2 bits per id (host side read, device side read).
    seen: FastMap<i64, Box<[u64]>>,
    open: FastMap<i64, Open>,
    launches: ChangeLog,
    device_rows: ChangeLog,
    streams: Vec<i64>,
    stream_numbers: FastMap<i64, u16>,
    pairs: Vec<(i64, u64, u64, i64)>,
    /// Without `log_queue` (the default mode, where several host rows may share a
    /// correlation: neuron's `nrt_execute` and the `nrt_queue_submit` in it): the
    /// position in `pairs` of each correlation's pair, for a host row read after it.
    pair_of: FastMap<i64, usize>,
    /// Why the compact form cannot be exact, once known.
    unproven: Option<&'static str>,
}

impl Pairing {
    fn see(&mut self, e: &Seen<'_>, gpu_side: bool, launch: bool, kept: bool) {
        if self.unproven.is_some() {
            return;
        }
        if e.correlation < -1 || e.stream < -1 {
            self.unproven = Some("a row has a correlation or stream below -1");
            return;
        }
        if !self.mark(e.correlation, gpu_side) {
            return;
        }
        let c = e.correlation;
        if gpu_side {
            let logged =
                (self.log_queue && e.stream >= 0).then(|| log(&mut self.device_rows, e, kept));
            let work_stream = if e.stream >= 0 && !e.cuda_sync {
                e.stream
            } else {
                -1
            };
            match self.open.remove(&c) {
                Some(Open::Host {
                    launch: host_launch,
                    index,
                    kept: host_kept,
                }) => {
                    if let (Some(l), Some(d)) = (host_launch, logged) {
                        if e.index > 0 {
                            self.count(l, d, e.stream);
                        }
                    }
                    if kept || host_kept {
                        self.push_pair((c, e.index, index, work_stream));
                    }
                }
                // `mark` let this device row through: no other was read.
                Some(open @ Open::Device { .. }) => {
                    self.open.insert(c, open);
                    self.unproven = Some("a correlation id appears twice on one side");
                }
                None if self.host_read(c) => {
                    // Its host side was read, dropped and forgotten: not a launch.
                    if kept {
                        self.push_pair((c, e.index, CompactCorrelations::UNKNOWN, work_stream));
                    }
                }
                None => {
                    self.open.insert(
                        c,
                        Open::Device {
                            stream: e.stream,
                            work_stream,
                            logged,
                            index: e.index,
                            kept,
                        },
                    );
                }
            }
        } else {
            let logged = (self.log_queue && launch && e.stream == -1)
                .then(|| log(&mut self.launches, e, kept));
            match self.open.remove(&c) {
                Some(Open::Device {
                    stream,
                    work_stream,
                    logged: device,
                    index,
                    kept: device_kept,
                }) => {
                    if let (Some(l), Some(d)) = (logged, device) {
                        if index > 0 {
                            self.count(l, d, stream);
                        }
                    }
                    if kept || device_kept {
                        self.push_pair((c, index, e.index, work_stream));
                    }
                }
                // Another host row of the correlation, later in the file (`mark` lets
                // it through in the default mode only): the device row's partner.
                Some(Open::Host {
                    launch: earlier,
                    kept: earlier_kept,
                    ..
                }) if !self.log_queue => {
                    self.open.insert(
                        c,
                        Open::Host {
                            launch: earlier,
                            index: e.index,
                            kept: kept || earlier_kept,
                        },
                    );
                }
                // `mark` let this host row through: no other was read, so an open host
                // row or a device row resolved without this one cannot be.
                Some(open @ Open::Host { .. }) => {
                    self.open.insert(c, open);
                    self.unproven = Some("a correlation id appears twice on one side");
                }
                // The default mode: a host row after its device row; the last host row
                // is the device row's partner.
                None if self.device_read(c) && !self.log_queue => match self.pair_of.get(&c) {
                    Some(&k) => self.pairs[k].2 = e.index,
                    // Neither side was kept: only this row's own partner could matter,
                    // and that row was forgotten.
                    None if kept => {
                        self.unproven = Some("a kept host row follows its dropped device row")
                    }
                    None => {}
                },
                None if self.device_read(c) => {
                    self.unproven = Some("a correlation id appears twice on one side");
                }
                None if logged.is_some() || kept => {
                    self.open.insert(
                        c,
                        Open::Host {
                            launch: logged,
                            index: e.index,
                            kept,
                        },
                    );
                }
                None => {}
            }
        }
    }

    /// Marks a side of a correlation read; false (and unproven) when it was already, or
    /// the bitmap would grow past [`MAX_CHUNKS`].
    fn mark(&mut self, correlation: i64, gpu_side: bool) -> bool {
        let (chunk, bit) = (correlation / CHUNK_IDS, correlation % CHUNK_IDS);
        if !self.seen.contains_key(&chunk) && self.seen.len() >= MAX_CHUNKS {
            self.unproven = Some("correlation ids too spread out for the bitmap");
            return false;
        }
        let words = self
            .seen
            .entry(chunk)
            .or_insert_with(|| vec![0u64; (2 * CHUNK_IDS / 64) as usize].into_boxed_slice());
        let position = 2 * bit + i64::from(gpu_side);
        let (word, mask) = ((position / 64) as usize, 1u64 << (position % 64));
        // The default mode takes several host rows of one correlation (the last is the
        // device row's partner).
        if words[word] & mask != 0 && (gpu_side || self.log_queue) {
            self.unproven = Some("a correlation id appears twice on one side");
            return false;
        }
        words[word] |= mask;
        true
    }

    fn read(&self, correlation: i64, gpu_side: bool) -> bool {
        let (chunk, bit) = (correlation / CHUNK_IDS, correlation % CHUNK_IDS);
        let position = 2 * bit + i64::from(gpu_side);
        self.seen
            .get(&chunk)
            .is_some_and(|w| w[(position / 64) as usize] & (1u64 << (position % 64)) != 0)
    }

    fn push_pair(&mut self, pair: (i64, u64, u64, i64)) {
        if !self.log_queue {
            self.pair_of.insert(pair.0, self.pairs.len());
        }
        self.pairs.push(pair);
    }

    /// Whether the correlation's host side was read and kept, its device side not yet.
    fn host_kept(&self, correlation: i64) -> bool {
        matches!(
            self.open.get(&correlation),
            Some(Open::Host { kept: true, .. })
        )
    }

    fn host_read(&self, correlation: i64) -> bool {
        self.read(correlation, false)
    }

    fn device_read(&self, correlation: i64) -> bool {
        self.read(correlation, true)
    }

    /// A launch (position `l` in its log) and its device row (`d`) count, on `stream`.
    fn count(&mut self, l: u32, d: u32, stream: i64) {
        let number = match self.stream_numbers.get(&stream) {
            Some(&n) => n,
            None if self.streams.len() < MAX_STREAMS => {
                self.streams.push(stream);
                let n = self.streams.len() as u16;
                self.stream_numbers.insert(stream, n);
                n
            }
            None => {
                self.unproven = Some("more streams than the compact form numbers");
                return;
            }
        };
        self.launches.stream[l as usize] = number;
        self.device_rows.stream[d as usize] = number;
    }

    /// After the window closed: only the rows `kept` stay kept.
    fn prune(&mut self, kept: impl Fn(u64) -> bool, kept_correlation: impl Fn(i64) -> bool) {
        self.launches.kept.retain(|&(_, i)| kept(i));
        self.device_rows.kept.retain(|&(_, i)| kept(i));
        self.pairs
            .retain(|&(c, d, h, _)| kept(d) || kept(h) || kept_correlation(c));
        if !self.log_queue {
            self.pair_of = self
                .pairs
                .iter()
                .enumerate()
                .map(|(k, p)| (p.0, k))
                .collect();
        }
        self.open.retain(|&c, open| match open {
            Open::Host {
                launch,
                index,
                kept: k,
            } => {
                *k = kept(*index) || kept_correlation(c);
                launch.is_some() || *k
            }
            Open::Device { index, kept: k, .. } => {
                *k = kept(*index);
                true
            }
        });
    }

    fn finish(self) -> WindowCorrelations {
        if let Some(reason) = self.unproven {
            return WindowCorrelations::Unproven(reason);
        }
        let shrink = |mut log: ChangeLog| {
            log.ts_rel_ns.shrink_to_fit();
            log.stream.shrink_to_fit();
            log.kept.shrink_to_fit();
            log
        };
        WindowCorrelations::Compact(CompactCorrelations {
            pairs: self.pairs,
            launches: shrink(self.launches),
            device_rows: shrink(self.device_rows),
            streams: self.streams,
        })
    }
}

/// Appends a candidate change (not counted until its partner is read); returns its
/// position.
fn log(log: &mut ChangeLog, e: &Seen<'_>, kept: bool) -> u32 {
    let position = log.ts_rel_ns.len() as u32;
    log.ts_rel_ns.push(e.ts_rel_ns);
    log.stream.push(0);
    if kept {
        log.kept.push((position, e.index));
    }
    position
}
