//! Binding flow endpoints to the slices that enclose them, in one merged pass over the
//! sorted slices and the sorted flows.

use std::io;

use super::super::proto::TrackEvent;
use super::super::spill::{Item, Sorter};
use super::super::ExportStats;

/// Binds every flow endpoint to the innermost slice of its track that encloses its
/// time (`start <= ts <= end`; among overlapping lanes the latest start, then the
/// shortest), as Perfetto's JSON importer binds Kineto's flows (`bp: "e"`): one pass
/// over the sorted slices merged with the sorted flows. Returns, sorted like the
/// slices, the flow ids to append to each binding slice's begin event (an item with
/// the slice's key, `instant: false`) and the endpoints no slice encloses (their
/// instants, as before); memory: the open slices of one track plus the budget.
pub(super) fn bind_flows(
    slices: &mut Sorter,
    flows: Sorter,
    stats: &mut ExportStats,
) -> io::Result<Sorter> {
    use prost::Message as _;
    let mut bound = Sorter::new(slices.budget_bytes());
    let mut flows = flows.sorted()?;
    let mut next_flow = flows.next_item()?;
    // Open slices of the current track: (start, end, seq), in start order.
    let mut open: Vec<(i64, i64, u64)> = Vec::new();
    let mut open_track = u32::MAX;
    let bind = |flow: Item,
                open: &mut Vec<(i64, i64, u64)>,
                open_track: u32,
                bound: &mut Sorter,
                stats: &mut ExportStats|
     -> io::Result<()> {
        let enclosing = (open_track == flow.track)
            .then(|| open.iter().rev().find(|s| s.1 >= flow.ts_ns))
            .flatten()
            .copied();
        let Some((ts_ns, end_ns, seq)) = enclosing else {
            stats.flows_unbound += 1;
            return bound.push(flow);
        };
        let event = TrackEvent::decode(flow.body.as_slice()).map_err(io::Error::other)?;
        let ids = TrackEvent {
            flow_ids: event.flow_ids,
            terminating_flow_ids: event.terminating_flow_ids,
            ..TrackEvent::default()
        };
        stats.flows_bound += 1;
        bound.push(Item {
            track: flow.track,
            ts_ns,
            end_ns,
            seq,
            instant: false,
            body: ids.encode_to_vec(),
        })
    };
    slices.visit(|item| {
        while let Some(flow) = next_flow.take_if(|f| (f.track, f.ts_ns) < (item.track, item.ts_ns))
        {
            bind(flow, &mut open, open_track, &mut bound, stats)?;
            next_flow = flows.next_item()?;
        }
        if item.instant {
            return Ok(());
        }
        if open_track != item.track {
            open.clear();
            open_track = item.track;
        }
        open.retain(|s| s.1 >= item.ts_ns);
        open.push((item.ts_ns, item.end_ns, item.seq));
        Ok(())
    })?;
    while let Some(flow) = next_flow.take() {
        bind(flow, &mut open, open_track, &mut bound, stats)?;
        next_flow = flows.next_item()?;
    }
    Ok(bound)
}
