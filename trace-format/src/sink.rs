//! Where the reader pushes what it reads: the [`TraceSink`] trait and two ready sinks.

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use crate::category::Category;
use crate::event::{Event, Phase};
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

/// Counts events by phase and by normalised category; allocates only per distinct value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CountingSink {
    /// Events seen.
    pub events: u64,
    // Linear lists: a trace has a dozen distinct values, and comparing enum variants is
    // far cheaper than comparing strings in a map on every event.
    phases: Vec<(Phase<'static>, u64)>,
    categories: Vec<(Option<Category<'static>>, u64)>,
}

impl CountingSink {
    /// Events per `ph` spelling.
    pub fn by_phase(&self) -> BTreeMap<String, u64> {
        let mut map = BTreeMap::new();
        for (phase, count) in &self.phases {
            *map.entry(phase.as_str().to_owned()).or_default() += count;
        }
        map
    }

    /// Events per normalised category (`""` for events without `cat`).
    pub fn by_category(&self) -> BTreeMap<String, u64> {
        let mut map = BTreeMap::new();
        for (category, count) in &self.categories {
            let key = category.as_ref().map_or("", |c| c.as_str());
            *map.entry(key.to_owned()).or_default() += count;
        }
        map
    }
}

impl TraceSink for CountingSink {
    fn on_event(&mut self, _index: u64, event: &Event<'_>) -> ControlFlow<()> {
        self.events += 1;
        match self.phases.iter_mut().find(|(p, _)| *p == event.phase) {
            Some((_, count)) => *count += 1,
            None => self.phases.push((event.phase.clone().into_owned(), 1)),
        }
        let category = event.category.as_ref().map(Category::normalized);
        match self.categories.iter_mut().find(|(c, _)| *c == category) {
            Some((_, count)) => *count += 1,
            None => self
                .categories
                .push((category.map(Category::into_owned), 1)),
        }
        ControlFlow::Continue(())
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
