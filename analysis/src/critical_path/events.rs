//! The events of one rank as the critical path sees them: rows and timeline events in
//! file order, HTA's times and `index_correlation`, and the clip to an annotation's
//! window (HTA `CriticalPathAnalysis.critical_path_analysis`).

use crate::classify::{self, KernelType, Mode};
use crate::frame::hta_round_us;
use crate::model::{CompactCorrelations, CorrelatedRow, FastMap, RankTrace, WindowCorrelations};

/// One event of a rank.
#[derive(Clone, Debug)]
pub struct CpEvent<'t> {
    /// The rank.
    pub rank: i64,
    /// Position in the file's `traceEvents`.
    pub event_index: u64,
    /// Start, in ticks (µs in HTA-compat mode, ns otherwise), on the rank's clock
    /// (compat: relative to the file's time base; default: absolute).
    pub ts: i64,
    /// End, in ticks.
    pub end: i64,
    /// `name`.
    pub name: &'t str,
    /// `cat` as written.
    pub category: &'t str,
    /// `pid` when numeric.
    pub pid: Option<i64>,
    /// `tid` when numeric.
    pub tid: Option<i64>,
    /// `stream` arg, -1 when absent.
    pub stream: i64,
    /// `correlation` arg, -1 when absent.
    pub correlation: i64,
    /// HTA's `index_correlation`: the event index of the partner row (launch ↔ device
    /// row), 0 when the correlation has no partner, -1 without correlation.
    pub index_correlation: i64,
    /// On a host event: the stream of the device row it launched, when that row is
    /// work on a stream (not `cuda_sync`), also when a windowed load dropped the row;
    /// else -1.
    pub launch_stream: i64,
    /// Whether a device row is communication (compat: HTA's `^nccl.*Kernel`; default:
    /// collective args or communication by category and name).
    pub is_comm: bool,
    /// `wait_on_stream`, -1 when absent.
    pub wait_on_stream: i64,
    /// `wait_on_cuda_event_record_corr_id`, -1 when absent.
    pub wait_on_event_corr: i64,
    /// (`flops`, `bytes`) args of a row (-1 when absent): with the name, what identifies
    /// the same work across a trace.
    pub work: (i64, i64),
    /// Collective args' identity (process group, `Seq` or occurrence), for matching
    /// across ranks; `None` for other events.
    pub collective: Option<(String, String, Option<i64>)>,
}

impl CpEvent<'_> {
    /// Duration in ticks.
    pub fn dur(&self) -> i64 {
        self.end - self.ts
    }

    /// HTA's device-row test (`stream != -1`).
    pub fn on_stream(&self) -> bool {
        self.stream != -1
    }
}

/// HTA's `nccl.*Kernel` test (`hta.utils.utils.is_comm_kernel`).
pub(crate) fn is_nccl_kernel(name: &str) -> bool {
    name.strip_prefix("nccl")
        .is_some_and(|rest| rest.contains("Kernel"))
}

/// Every complete event of `trace` (rows and [`crate::model::Timeline`] events), in
/// file order, with HTA's times and `index_correlation`. `absolute`: add the file's
/// time base (to compare ranks).
pub(crate) fn rank_events(trace: &RankTrace, mode: Mode, absolute: bool) -> Vec<CpEvent<'_>> {
    let compat = mode == Mode::HtaCompat;
    let base = if absolute { trace.base_ns } else { 0 };
    let times = |ts_rel_ns: i64, dur_ns: i64| -> (i64, i64) {
        if compat {
            if trace.ts_is_float {
                hta_round_us(ts_rel_ns, dur_ns)
            } else {
                (ts_rel_ns / 1000, (ts_rel_ns + dur_ns) / 1000)
            }
        } else {
            (ts_rel_ns + base, ts_rel_ns + dur_ns + base)
        }
    };
    let waits: FastMap<u64, (i64, i64)> = trace
        .timeline
        .iter()
        .flat_map(|t| t.waits.iter())
        .map(|w| (w.event_index, (w.wait_on_stream, w.wait_on_event_corr)))
        .collect();
    let mut events: Vec<CpEvent<'_>> = Vec::with_capacity(
        trace.rows.len() + trace.timeline.as_ref().map_or(0, |t| t.events.len()),
    );
    let rows = trace.rows.iter().map(|row| {
        let (ts, end) = times(row.ts_rel_ns, row.dur_ns);
        let name = trace.name(row);
        let category = trace.category(row);
        let is_comm = if compat {
            is_nccl_kernel(name)
        } else {
            classify::kernel_type(category, name, row.is_collective()) == KernelType::Communication
        };
        let (wait_on_stream, wait_on_event_corr) =
            waits.get(&row.event_index).copied().unwrap_or((-1, -1));
        let collective = row
            .collective
            .as_ref()
            .filter(|_| row.stream != -1)
            .map(|c| {
                // Without `Seq`, the occurrence the load counted over the whole file.
                let seq = c.seq.or(Some(-(c.occurrence as i64)));
                (c.process_group.clone(), c.collective.clone(), seq)
            });
        CpEvent {
            rank: trace.rank,
            event_index: row.event_index,
            ts,
            end,
            name,
            category,
            pid: row.pid,
            tid: row.tid,
            stream: row.stream,
            correlation: row.correlation,
            index_correlation: -1,
            launch_stream: -1,
            is_comm,
            wait_on_stream,
            wait_on_event_corr,
            work: (row.flops, row.bytes),
            collective,
        }
    });
    let mut rows = rows.peekable();
    let timeline = trace.timeline.as_ref();
    let mut others = timeline.into_iter().flat_map(|t| {
        t.events.iter().map(move |e| {
            let (ts, end) = times(e.ts_rel_ns, e.dur_ns);
            let (pid, tid) = t.threads[e.thread as usize];
            CpEvent {
                rank: trace.rank,
                event_index: e.event_index,
                ts,
                end,
                name: t.names.get(e.name),
                category: t.names.get(e.category),
                pid,
                tid,
                stream: -1,
                correlation: -1,
                index_correlation: -1,
                launch_stream: -1,
                is_comm: false,
                wait_on_stream: -1,
                wait_on_event_corr: -1,
                work: (-1, -1),
                collective: None,
            }
        })
    });
    let mut other = others.next();
    loop {
        let take_row = match (rows.peek(), &other) {
            (Some(r), Some(o)) => r.event_index < o.event_index,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        if take_row {
            events.extend(rows.next());
        } else {
            events.extend(other.take());
            other = others.next();
        }
    }
    match trace
        .timeline
        .as_ref()
        .and_then(|t| t.window.as_ref())
        .map(|w| &w.correlations)
    {
        Some(WindowCorrelations::Records(rows)) => link_through(&mut events, rows),
        Some(WindowCorrelations::Compact(compact)) => link_pairs(&mut events, &compact.pairs),
        // The graph refuses such a load; the kept rows' own links meanwhile.
        Some(WindowCorrelations::Unproven(_)) | None => link_correlations(&mut events),
    }
    events
}

/// A start in HTA-compat ticks (µs, rounded as [`rank_events`] rounds it).
pub(crate) fn compat_tick(trace: &RankTrace, ts_rel_ns: i64) -> i64 {
    if trace.ts_is_float {
        hta_round_us(ts_rel_ns, 0).0
    } else {
        ts_rel_ns / 1000
    }
}

/// HTA's device side of a correlation (`GPUKernelFilter`): a row on a stream with a
/// correlation, or a device-wide sync row.
fn is_gpu_side(e: &CpEvent<'_>) -> bool {
    (e.stream >= 0 && e.correlation >= 0) || e.name == "Event Sync" || e.name == "Context Sync"
}

/// HTA `transform_correlation_to_index`: host and device rows of one correlation point
/// at each other; with several partners the last in file order wins (pandas'
/// assignment of a many-to-many merge).
fn link_correlations(events: &mut [CpEvent<'_>]) {
    let mut last_gpu: FastMap<i64, (u64, i64)> = FastMap::default();
    let mut last_cpu: FastMap<i64, u64> = FastMap::default();
    for e in events.iter_mut() {
        e.index_correlation = e.correlation.min(0);
        if e.correlation == -1 {
            continue;
        }
        if is_gpu_side(e) {
            last_gpu.insert(e.correlation, (e.event_index, work_stream(e)));
        } else {
            last_cpu.insert(e.correlation, e.event_index);
        }
    }
    for e in events.iter_mut() {
        if e.correlation == -1 {
            continue;
        }
        if is_gpu_side(e) {
            if let Some(&p) = last_cpu.get(&e.correlation) {
                e.index_correlation = p as i64;
            }
        } else if let Some(&(p, stream)) = last_gpu.get(&e.correlation) {
            e.index_correlation = p as i64;
            e.launch_stream = stream;
        }
    }
}

/// A device-side row's stream when it is work a launch queued (not `cuda_sync`), else
/// -1 ([`CpEvent::launch_stream`]).
fn work_stream(e: &CpEvent<'_>) -> i64 {
    if e.stream >= 0 && e.category != "cuda_sync" {
        e.stream
    } else {
        -1
    }
}

/// [`link_correlations`] for a windowed load ([`crate::model::KeptWindow`]): the
/// partners come from every correlated row of the file, kept or not, so each kept
/// event's `index_correlation` is the one the whole trace gives.
fn link_through(events: &mut [CpEvent<'_>], rows: &[CorrelatedRow]) {
    let wanted: crate::model::FastSet<i64> = events
        .iter()
        .filter(|e| e.correlation != -1)
        .map(|e| e.correlation)
        .collect();
    // Per correlation: the last device-side row (and its work stream) and host-side
    // row, in file order.
    type Last = (Option<(u64, i64)>, Option<u64>);
    let mut last: FastMap<i64, Last> = FastMap::default();
    for r in rows.iter().filter(|r| wanted.contains(&r.correlation)) {
        let slot = last.entry(r.correlation).or_default();
        if r.flags & CorrelatedRow::GPU_SIDE != 0 {
            let work = r.stream >= 0 && r.flags & CorrelatedRow::CUDA_SYNC == 0;
            slot.0 = Some((r.event_index, if work { r.stream } else { -1 }));
        } else {
            slot.1 = Some(r.event_index);
        }
    }
    for e in events.iter_mut() {
        e.index_correlation = e.correlation.min(0);
        if e.correlation == -1 {
            continue;
        }
        let (gpu, cpu) = last.get(&e.correlation).copied().unwrap_or_default();
        if is_gpu_side(e) {
            if let Some(p) = cpu {
                e.index_correlation = p as i64;
            }
        } else if let Some((p, stream)) = gpu {
            e.index_correlation = p as i64;
            e.launch_stream = stream;
        }
    }
}

/// HTA's partner of an event whose host side is in the file but was not kept
/// ([`CompactCorrelations::UNKNOWN`]): a position no event has.
pub(crate) const UNKNOWN_PARTNER: i64 = i64::MAX;

/// [`link_correlations`] for a windowed load's compact form
/// ([`CompactCorrelations::pairs`]: each correlation's only device-side and host-side
/// row, which the load proved), so each kept event's `index_correlation` is the one the
/// whole trace gives (or [`UNKNOWN_PARTNER`]).
fn link_pairs(events: &mut [CpEvent<'_>], pairs: &[(i64, u64, u64, i64)]) {
    let by_correlation: FastMap<i64, (u64, u64, i64)> =
        pairs.iter().map(|&(c, d, h, s)| (c, (d, h, s))).collect();
    for e in events.iter_mut() {
        e.index_correlation = e.correlation.min(0);
        if e.correlation == -1 {
            continue;
        }
        if let Some(&(device, host, stream)) = by_correlation.get(&e.correlation) {
            let gpu_side = is_gpu_side(e);
            let partner = if gpu_side { host } else { device };
            e.index_correlation = if partner == CompactCorrelations::UNKNOWN {
                UNKNOWN_PARTNER
            } else {
                partner as i64
            };
            if !gpu_side {
                e.launch_stream = stream;
            }
        }
    }
}

/// The window of the `instances` (first and last, inclusive, positions among the
/// events whose name contains `annotation`, in file order) of `annotation`: (start, end)
/// in ticks; `None` when no event matches. An empty annotation is the whole trace.
pub(crate) fn annotation_window(
    events: &[CpEvent<'_>],
    annotation: &str,
    instances: (usize, usize),
) -> Result<(i64, i64), WindowError> {
    if annotation.is_empty() {
        let start = events.iter().map(|e| e.ts).min();
        let end = events.iter().map(|e| e.end).max();
        return match (start, end) {
            (Some(s), Some(e)) => Ok((s, e)),
            _ => Err(WindowError::NoEvents),
        };
    }
    let matches: Vec<&CpEvent<'_>> = events
        .iter()
        .filter(|e| e.name.contains(annotation))
        .collect();
    if matches.is_empty() {
        return Err(WindowError::NoAnnotation);
    }
    let picked = matches
        .get(instances.0..=instances.1.min(matches.len().saturating_sub(1)))
        .filter(|p| !p.is_empty())
        .ok_or(WindowError::NoInstance {
            found: matches.len(),
        })?;
    let start = picked.iter().map(|e| e.ts).min().expect("not empty");
    let end = picked.iter().map(|e| e.end).max().expect("not empty");
    Ok((start, end))
}

/// Why no window was found.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(clippy::enum_variant_names)] // each says what there is none of
pub(crate) enum WindowError {
    NoEvents,
    NoAnnotation,
    NoInstance { found: usize },
}

/// HTA's clip: host events (`stream == -1`) that start in the window and last > 0,
/// device rows whose launch does, and `Stream Wait Event` rows. Returns positions in
/// `events`, in file order.
pub(crate) fn clip(events: &[CpEvent<'_>], window: (i64, i64)) -> Vec<u32> {
    let in_window = |e: &CpEvent<'_>| e.ts >= window.0 && e.ts <= window.1 && e.dur() > 0;
    // Device rows whose launch (a host event pointing at them) is in the window.
    let mut launched: crate::model::FastSet<i64> = Default::default();
    for e in events {
        if !e.on_stream() && e.index_correlation >= 0 && in_window(e) {
            launched.insert(e.index_correlation);
        }
    }
    events
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            if e.on_stream() {
                launched.contains(&(e.event_index as i64)) || e.name == "Stream Wait Event"
            } else {
                in_window(e)
            }
        })
        .map(|(i, _)| i as u32)
        .collect()
}

/// Device rows that start in the window but have no launch at all (no host event of
/// their correlation: a damaged trace, unmatched flows, a launch before the profiler
/// started): HTA's clip drops them, so they are counted ([`super::Skipped`]).
pub(crate) fn rows_without_launch(events: &[CpEvent<'_>], window: (i64, i64)) -> u64 {
    // HTA's `index_correlation` of a row without a partner is 0 (its correlation
    // clipped at 0), which is also the index of the file's first event: that one is a
    // partner only when it has the row's correlation.
    let first_correlation = events
        .iter()
        .find(|e| e.event_index == 0 && !e.on_stream())
        .map(|e| e.correlation);
    events
        .iter()
        .filter(|e| {
            e.on_stream()
                && e.name != "Stream Wait Event"
                && (e.index_correlation < 0
                    || (e.index_correlation == 0 && first_correlation != Some(e.correlation)))
                && e.ts >= window.0
                && e.ts <= window.1
        })
        .count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nccl_kernels_are_named_like_hta_says() {
        assert!(is_nccl_kernel("ncclKernel_AllReduce_RING_LL_Sum_float"));
        assert!(is_nccl_kernel("ncclDevKernel_AllReduce_Avg_f32_MESH"));
        assert!(!is_nccl_kernel("matmul_f32"));
        assert!(!is_nccl_kernel("xncclKernel"));
    }
}
