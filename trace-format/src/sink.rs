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

    /// What the reader calls for each event: [`on_event`](TraceSink::on_event) with the
    /// event's text as read (see [`EventText`]). The default forwards to `on_event`.
    fn on_event_in(
        &mut self,
        index: u64,
        event: &Event<'_>,
        text: EventText<'_>,
    ) -> ControlFlow<()> {
        let _ = text;
        self.on_event(index, event)
    }

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
    fn on_event_in(
        &mut self,
        index: u64,
        event: &Event<'_>,
        text: EventText<'_>,
    ) -> ControlFlow<()> {
        (**self).on_event_in(index, event, text)
    }
    fn on_trailer(&mut self, meta: &TraceMeta) {
        (**self).on_trailer(meta)
    }
}

/// Receives a trace read on several threads by [`TraceReader::read_parallel`].
///
/// The work per event is split in two: [`EventMapper::map`] runs on worker threads, on
/// events in any order, and turns each borrowed [`Event`] into an owned `Item` (or
/// drops it); [`consume`](ParallelSink::consume) runs on the calling thread, in event
/// order, and does what depends on order or on the sink's state (interning, appending
/// rows). The mapper is a separate value, made by [`mapper`](ParallelSink::mapper) after
/// [`on_header`](ParallelSink::on_header), because workers share it while `consume`
/// holds the sink mutably; it sees what the header told the sink (a base time, a rank)
/// if the sink copies that into it.
///
/// Call order: `on_header` once, `mapper` once (when events start), `consume` for each
/// event whose `map` returned `Some`, in `traceEvents` order, then `on_trailer` once if
/// the input was read to its end. A read delivers the same events, indices, report and
/// errors as [`TraceReader::read`] with a [`TraceSink`] that maps and consumes inline.
///
/// [`TraceReader::read_parallel`]: crate::TraceReader::read_parallel
/// [`TraceReader::read`]: crate::TraceReader::read
pub trait ParallelSink {
    /// What `map` hands to `consume`.
    type Item: Send;
    /// The per-event work done on worker threads.
    type Mapper: EventMapper<Item = Self::Item>;

    /// As [`TraceSink::on_header`].
    fn on_header(&mut self, meta: &TraceMeta) -> ControlFlow<()> {
        let _ = meta;
        ControlFlow::Continue(())
    }

    /// Makes the mapper the workers share; called once, after `on_header`.
    fn mapper(&self) -> Self::Mapper;

    /// Called in event order for each event mapped to `Some`; `index` is its position in
    /// `traceEvents`. Return `ControlFlow::Break(())` to stop reading (events after it
    /// may have been mapped already; they are not consumed).
    fn consume(&mut self, index: u64, item: Self::Item) -> ControlFlow<()>;

    /// What the reader calls: [`consume`](ParallelSink::consume) with the text of the
    /// event the item was mapped from, the same text [`EventMapper::map_in`] was given,
    /// so [`TextSpan`]s the mapper kept read back here. The default forwards to
    /// `consume`.
    fn consume_in(&mut self, index: u64, item: Self::Item, text: EventText<'_>) -> ControlFlow<()> {
        let _ = text;
        self.consume(index, item)
    }

    /// As [`TraceSink::on_trailer`].
    fn on_trailer(&mut self, meta: &TraceMeta) {
        let _ = meta;
    }
}

/// The per-event half of a [`ParallelSink`], shared by the worker threads.
///
/// Implemented for closures `Fn(u64, &Event<'_>) -> Option<T> + Sync`.
pub trait EventMapper: Sync {
    /// What an event becomes.
    type Item: Send;

    /// Turns event number `index` into an item for `consume`, or `None` to drop it.
    /// Called on worker threads, in no particular order.
    fn map(&self, index: u64, event: &Event<'_>) -> Option<Self::Item>;

    /// What the reader calls: [`map`](EventMapper::map) with the event's text as read.
    /// A string the event borrows from that text can be kept as a [`TextSpan`]
    /// ([`EventText::span_of`]) instead of a copy, and read back in
    /// [`ParallelSink::consume_in`]. The default forwards to `map`.
    fn map_in(&self, index: u64, event: &Event<'_>, text: EventText<'_>) -> Option<Self::Item> {
        let _ = text;
        self.map(index, event)
    }
}

/// The text of one event object as the reader read it, from its `{` to its `}`.
///
/// A parallel read maps an event on a worker thread and consumes the item on the calling
/// thread; both get this text for that event (the same bytes, kept alive by the reader
/// in between). A mapper that keeps a name or an argument as a [`TextSpan`] instead of
/// an owned copy saves an allocation on one thread and a free on another per event.
#[derive(Clone, Copy, Debug)]
pub struct EventText<'t>(&'t [u8]);

/// A piece of an [`EventText`] by position: 8 bytes, no allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextSpan {
    start: u32,
    len: u32,
}

impl<'t> EventText<'t> {
    /// The text of one event object (as the reader hands it over).
    pub fn new(text: &'t [u8]) -> Self {
        EventText(text)
    }

    /// The span of `piece` if it lies inside this text (a string the event borrows from
    /// its text), `None` otherwise (a string the reader had to unescape into a copy, or
    /// one from elsewhere).
    pub fn span_of(&self, piece: &str) -> Option<TextSpan> {
        let base = self.0.as_ptr() as usize;
        let start = (piece.as_ptr() as usize).checked_sub(base)?;
        let end = start.checked_add(piece.len())?;
        if end > self.0.len() {
            return None;
        }
        Some(TextSpan {
            start: u32::try_from(start).ok()?,
            len: u32::try_from(piece.len()).ok()?,
        })
    }

    /// The text at `span`: `None` when the span does not lie in this text as UTF-8 (a
    /// span taken from another event's text).
    pub fn get(&self, span: TextSpan) -> Option<&'t str> {
        let start = span.start as usize;
        let bytes = self.0.get(start..start + span.len as usize)?;
        std::str::from_utf8(bytes).ok()
    }
}

impl<T: Send, F: Fn(u64, &Event<'_>) -> Option<T> + Sync> EventMapper for F {
    type Item = T;
    fn map(&self, index: u64, event: &Event<'_>) -> Option<T> {
        self(index, event)
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

/// Maps each event to an owned copy (the mapper of [`CollectSink`] as a [`ParallelSink`]).
pub type OwnedEvent = fn(u64, &Event<'_>) -> Option<Event<'static>>;

impl ParallelSink for CollectSink {
    type Item = Event<'static>;
    type Mapper = OwnedEvent;

    fn on_header(&mut self, meta: &TraceMeta) -> ControlFlow<()> {
        TraceSink::on_header(self, meta)
    }
    fn mapper(&self) -> OwnedEvent {
        |_, event| Some(event.clone().into_owned())
    }
    fn consume(&mut self, _index: u64, event: Event<'static>) -> ControlFlow<()> {
        self.events.push(event);
        ControlFlow::Continue(())
    }
    fn on_trailer(&mut self, meta: &TraceMeta) {
        TraceSink::on_trailer(self, meta)
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
