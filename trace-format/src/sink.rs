//! Where the reader pushes what it reads: the [`TraceSink`] trait and two ready sinks.

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use crate::event::Event;
use crate::meta::TraceMeta;

/// Receives a trace as it is read, like ripgrep's searcher pushes matches into a `Sink`.
///
/// Call order: [`on_header`](TraceSink::on_header) once, then
/// [`on_event`](TraceSink::on_event) for each element of `traceEvents` in order, then
/// [`on_trailer`](TraceSink::on_trailer) once if the input was read to its end.
/// Events borrow the reader's buffer: copy what you keep ([`Event::into_owned`]).
pub trait TraceSink {
    /// Called once, when `traceEvents` starts (or at the end if it is absent), with the
    /// metadata known at that point: keys before `traceEvents`, plus keys after it when
    /// the reader pre-scanned the input for `baseTimeNanoseconds` (see the crate docs).
    fn on_header(&mut self, meta: &TraceMeta) -> ControlFlow<()> {
        let _ = meta;
        ControlFlow::Continue(())
    }

    /// Called for each event; `index` is its position in `traceEvents`. Return
    /// `ControlFlow::Break(())` to stop reading.
    fn on_event(&mut self, index: u64, event: &Event<'_>) -> ControlFlow<()>;

    /// Called once after the whole input was read, with the complete metadata.
    fn on_trailer(&mut self, meta: &TraceMeta) {
        let _ = meta;
    }
}

impl<S: TraceSink + ?Sized> TraceSink for &mut S {
    fn on_header(&mut self, meta: &TraceMeta) -> ControlFlow<()> {
        (**self).on_header(meta)
    }
    fn on_event(&mut self, index: u64, event: &Event<'_>) -> ControlFlow<()> {
        (**self).on_event(index, event)
    }
    fn on_trailer(&mut self, meta: &TraceMeta) {
        (**self).on_trailer(meta)
    }
}

/// Counts events by phase and normalised category; allocates only per distinct key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CountingSink {
    /// Events seen.
    pub events: u64,
    /// Events per `ph` spelling.
    pub by_phase: BTreeMap<String, u64>,
    /// Events per normalised category (`""` for events without `cat`).
    pub by_category: BTreeMap<String, u64>,
}

impl TraceSink for CountingSink {
    fn on_event(&mut self, _index: u64, event: &Event<'_>) -> ControlFlow<()> {
        self.events += 1;
        bump(&mut self.by_phase, event.phase.as_str());
        let category = event.normalized_category();
        bump(
            &mut self.by_category,
            category.as_ref().map_or("", |c| c.as_str()),
        );
        ControlFlow::Continue(())
    }
}

fn bump(map: &mut BTreeMap<String, u64>, key: &str) {
    match map.get_mut(key) {
        Some(count) => *count += 1,
        None => {
            map.insert(key.to_owned(), 1);
        }
    }
}

/// Keeps everything: owned events and the final metadata. For tests and small traces.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CollectSink {
    /// The metadata given to `on_header`.
    pub header: TraceMeta,
    /// Every event, owned, in order.
    pub events: Vec<Event<'static>>,
    /// The metadata given to `on_trailer` (empty if the input was not read to its end).
    pub meta: TraceMeta,
}

impl TraceSink for CollectSink {
    fn on_header(&mut self, meta: &TraceMeta) -> ControlFlow<()> {
        self.header = meta.clone();
        ControlFlow::Continue(())
    }
    fn on_event(&mut self, _index: u64, event: &Event<'_>) -> ControlFlow<()> {
        self.events.push(event.clone().into_owned());
        ControlFlow::Continue(())
    }
    fn on_trailer(&mut self, meta: &TraceMeta) {
        self.meta = meta.clone();
    }
}

/// A sink made of a closure over events, for quick one-offs.
pub fn from_fn<F: FnMut(u64, &Event<'_>) -> ControlFlow<()>>(f: F) -> FnSink<F> {
    FnSink(f)
}

/// See [`from_fn`].
#[derive(Debug)]
pub struct FnSink<F>(F);

impl<F: FnMut(u64, &Event<'_>) -> ControlFlow<()>> TraceSink for FnSink<F> {
    fn on_event(&mut self, index: u64, event: &Event<'_>) -> ControlFlow<()> {
        (self.0)(index, event)
    }
}
