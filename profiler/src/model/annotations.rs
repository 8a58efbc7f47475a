//! `gpu_user_annotation`: each user range (`record_function`) projected onto the
//! device queues that ran its work, as Kineto does for CUDA streams. `ProfilerStep#N`
//! ranges are left out (see [`PROFILER_STEP_PREFIX`]).
//!
//! A range's annotation on a queue spans from the start of the first to the end of
//! the last kernel, copy or collective launched inside the range (on the host, by the
//! range's thread or an operator nested in it) that ran on that queue. Queues run in
//! launch order, so annotations of nested ranges nest and those of successive ranges
//! follow each other; the rare annotation that would still cross another event on its
//! track (two host threads feeding one queue with interleaved ranges) is left out
//! rather than written overlapping (Perfetto drops such events).

use std::cmp::Reverse;
use std::collections::HashMap;
use std::sync::Arc;

use super::{HostKind, TraceModel};

/// Step ranges get no device twin: readers that find steps by name alone (HTA's
/// `add_iteration`, `neuronprof analyze`) would count each step twice.
const PROFILER_STEP_PREFIX: &str = "ProfilerStep#";

/// One user range on one device queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DeviceAnnotation {
    pub(crate) name: Arc<str>,
    pub(crate) device: u16,
    pub(crate) queue: u16,
    pub(crate) start_ns: u64,
    pub(crate) end_ns: u64,
    /// The range's `External id`.
    pub(crate) external_id: u64,
    /// The host range (index into the model's host spans).
    host: usize,
}

/// The annotations of `model`'s user ranges, ordered by track and start, each outer
/// annotation before the ones it encloses.
pub(crate) fn device_annotations(model: &TraceModel) -> Vec<DeviceAnnotation> {
    let mut spans: HashMap<(usize, u16, u16), (u64, u64)> = HashMap::new();
    for d in &model.device {
        let mut at = d.host_span;
        while let Some(i) = at {
            let h = &model.host[i];
            if h.kind == HostKind::UserRange && !h.name.starts_with(PROFILER_STEP_PREFIX) {
                let span = spans
                    .entry((i, d.device, d.queue))
                    .or_insert((d.start_ns, d.end_ns));
                span.0 = span.0.min(d.start_ns);
                span.1 = span.1.max(d.end_ns);
            }
            at = h.parent.filter(|&p| p != i);
        }
    }
    let mut all: Vec<DeviceAnnotation> = spans
        .into_iter()
        .map(
            |((host, device, queue), (start_ns, end_ns))| DeviceAnnotation {
                name: Arc::clone(&model.host[host].name),
                device,
                queue,
                start_ns,
                end_ns,
                external_id: model.host[host].external_id,
                host,
            },
        )
        .collect();
    // Ties (a range and the one inside it covering the same work): the outer range,
    // which began earlier or ends later on the host, first.
    all.sort_by_key(|a| {
        let h = &model.host[a.host];
        (
            a.device,
            a.queue,
            a.start_ns,
            Reverse(a.end_ns),
            h.start_ns,
            Reverse(h.end_ns),
        )
    });
    let mut kept: Vec<DeviceAnnotation> = Vec::with_capacity(all.len());
    // Annotations that contain the current one, on the current track.
    let mut open: Vec<usize> = Vec::new();
    for a in all {
        if kept
            .last()
            .is_some_and(|k| (k.device, k.queue) != (a.device, a.queue))
        {
            open.clear();
        }
        while open
            .last()
            .is_some_and(|&top| kept[top].end_ns <= a.start_ns)
        {
            open.pop();
        }
        let crosses_annotation = open.last().is_some_and(|&top| a.end_ns > kept[top].end_ns);
        if crosses_annotation || crosses_device_span(model, &a) {
            continue;
        }
        open.push(kept.len());
        kept.push(a);
    }
    kept
}

/// Whether an edge of `a` falls strictly inside a device span on its queue (the
/// model's device spans are sorted by device, queue and start, and do not overlap on
/// a queue).
fn crosses_device_span(model: &TraceModel, a: &DeviceAnnotation) -> bool {
    let track = (a.device, a.queue);
    let inside = |t: u64| {
        let at = model
            .device
            .partition_point(|d| (d.device, d.queue, d.start_ns) < (track.0, track.1, t));
        at > 0 && {
            let d = &model.device[at - 1];
            (d.device, d.queue) == track && t < d.end_ns
        }
    };
    inside(a.start_ns) || inside(a.end_ns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{DeviceKind, DeviceSpan, HostSpan};

    fn host(
        kind: HostKind,
        name: &str,
        start_ns: u64,
        end_ns: u64,
        parent: Option<usize>,
    ) -> HostSpan {
        HostSpan {
            kind,
            name: Arc::from(name),
            tid: 1,
            start_ns,
            end_ns,
            corr_id: 0,
            external_id: start_ns,
            record_function_id: 0,
            seq_nr: 0,
            fwd_tid: 0,
            flops: 0,
            bytes: 0,
            input_sig: None,
            parent,
            device: None,
            collective: None,
        }
    }

    fn kernel(queue: u16, start_ns: u64, end_ns: u64, host_span: usize) -> DeviceSpan {
        DeviceSpan {
            kind: DeviceKind::Kernel,
            name: Arc::from("k"),
            device: 0,
            queue,
            start_ns,
            end_ns,
            corr_id: 1,
            external_id: 0,
            host_span: Some(host_span),
            launch: None,
            flops: 0,
            bytes: 0,
            engine_busy_ns: Vec::new(),
            collective: None,
        }
    }

    #[test]
    fn ranges_span_their_kernels_per_queue_and_nest() {
        let model = TraceModel {
            host: vec![
                host(HostKind::UserRange, "step", 0, 100, None),
                host(HostKind::UserRange, "forward", 10, 50, Some(0)),
                host(HostKind::Operator, "aten::mm", 11, 20, Some(1)),
                host(HostKind::Operator, "aten::add", 30, 40, Some(1)),
                host(HostKind::Operator, "aten::sum", 60, 70, Some(0)),
                host(HostKind::UserRange, "ProfilerStep#3", 80, 90, None),
                host(HostKind::Operator, "aten::mul", 81, 89, Some(5)),
            ],
            device: vec![
                kernel(0, 100, 200, 2),
                kernel(0, 200, 250, 3),
                kernel(0, 260, 300, 4),
                kernel(1, 120, 130, 4),
                kernel(0, 300, 310, 6),
            ],
            ..TraceModel::default()
        };
        let got: Vec<(String, u16, u64, u64)> = device_annotations(&model)
            .into_iter()
            .map(|a| (a.name.to_string(), a.queue, a.start_ns, a.end_ns))
            .collect();
        assert_eq!(
            got,
            [
                ("step".to_owned(), 0, 100, 300),
                ("forward".to_owned(), 0, 100, 250),
                ("step".to_owned(), 1, 120, 130),
            ]
        );
    }

    #[test]
    fn an_annotation_that_would_cross_another_event_is_left_out() {
        // Two ranges whose kernels interleave on one queue (two threads feeding it).
        let model = TraceModel {
            host: vec![
                host(HostKind::UserRange, "a", 0, 100, None),
                host(HostKind::UserRange, "b", 0, 100, None),
            ],
            device: vec![
                kernel(0, 10, 20, 0),
                kernel(0, 20, 30, 1),
                kernel(0, 30, 40, 0),
            ],
            ..TraceModel::default()
        };
        let got: Vec<String> = device_annotations(&model)
            .into_iter()
            .map(|a| a.name.to_string())
            .collect();
        // "a" spans 10..40 and encloses "b"'s 20..30: that one nests, so both stay.
        assert_eq!(got, ["a", "b"]);
        let model = TraceModel {
            device: vec![
                kernel(0, 10, 20, 0),
                kernel(0, 20, 30, 1),
                kernel(0, 30, 40, 0),
                kernel(0, 40, 50, 1),
            ],
            ..model
        };
        let got: Vec<String> = device_annotations(&model)
            .into_iter()
            .map(|a| a.name.to_string())
            .collect();
        // "b" (20..50) crosses "a" (10..40).
        assert_eq!(got, ["a"]);
    }
}
