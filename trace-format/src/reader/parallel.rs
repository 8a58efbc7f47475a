//! Reading one file's event array on several threads (see [`crate::TraceReader::read_parallel`]).
//!
//! The calling thread keeps the [`Parser`] and its input: it scans elements of
//! `traceEvents` with the same calls as the sequential reader, except that an event
//! object is only delimited ([`object_end`], no decoding), and copies the text into
//! batches. Worker threads decode each batch's events exactly as
//! [`Parser::element`] does ([`fast_event::split_event`], or serde_json, into
//! [`EventFields`], then [`EventContext::build`]) and run the sink's [`EventMapper`]. The calling thread takes
//! the results back in batch order and hands them to [`ParallelSink::consume`] in event
//! order, counting skips and deliveries as the sequential reader does.
//!
//! Errors stay those of the sequential reader. What the scanner meets itself (truncation
//! between events, a bad separator, an element that is not an object, I/O and gzip
//! errors, a value over the size limit) comes from the same calls on the same input
//! state, and is held back until every earlier batch is consumed. Errors inside an event
//! found by a worker fall in two kinds: those of [`EventContext::build`] (wrong type,
//! bad number) depend only on the event's text and offset, so the worker makes them
//! itself; when serde_json rejects an event's text, the batches from that event on are
//! put back in front of the input and the sequential [`Parser::element`] reads that one
//! element (producing its error, or in lenient mode skipping it), after which scanning
//! resumes. Where the scanner cannot delimit an event (the input ends inside it), the
//! sequential step reads it too.

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::panic::{self, AssertUnwindSafe};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use super::event_de::{EventContext, EventFields};
use super::fast_event;
use super::parse::{Deliver, Parser, Step};
use crate::error::ReadError;
use crate::event::Event;
use crate::json::object_end;
use crate::meta::TraceMeta;
use crate::sink::{EventMapper, EventText, ParallelSink, TraceSink};

/// The scanner reads ahead inside one event up to this many bytes; a longer (or
/// unbalanced) event is left to the sequential step, which reports what the sequential
/// reader reports, without the scanner having read further than needed.
const SCAN_LIMIT: usize = 1 << 20;

/// Batches in flight (queued, being decoded, or waiting to be consumed) per worker.
const IN_FLIGHT_PER_WORKER: usize = 3;

/// Delivery of a parallel read: the envelope as usual, the event array in parallel.
pub(crate) struct ParallelDeliver<'a, P: ParallelSink + ?Sized> {
    pub(crate) sink: &'a mut P,
    pub(crate) threads: usize,
    pub(crate) batch_bytes: usize,
    /// Map and consume on the calling thread (no workers).
    pub(crate) inline: bool,
}

impl<P: ParallelSink + ?Sized> Deliver for ParallelDeliver<'_, P> {
    fn header(&mut self, meta: &TraceMeta) -> ControlFlow<()> {
        self.sink.on_header(meta)
    }
    fn trailer(&mut self, meta: &TraceMeta) {
        self.sink.on_trailer(meta)
    }
    fn events(&mut self, parser: &mut Parser<'_, '_>) -> Result<(), ReadError> {
        if self.inline || self.threads == 0 {
            let mut inline = Inline {
                sink: &mut *self.sink,
                mapper: None,
            };
            return parser.events(&mut inline);
        }
        let mapper = self.sink.mapper();
        events(parser, self.sink, &mapper, self.threads, self.batch_bytes)
    }
}

/// Maps one event and consumes the item, on the calling thread.
fn map_consume<P: ParallelSink + ?Sized>(
    sink: &mut P,
    mapper: &P::Mapper,
    index: u64,
    event: &Event<'_>,
    text: EventText<'_>,
) -> ControlFlow<()> {
    match mapper.map_in(index, event, text) {
        Some(item) => sink.consume_in(index, item, text),
        None => ControlFlow::Continue(()),
    }
}

/// A [`ParallelSink`] used as a [`TraceSink`] (for the event array only): map and
/// consume each event inline (the mapper made at the first event).
struct Inline<'a, P: ParallelSink + ?Sized> {
    sink: &'a mut P,
    mapper: Option<P::Mapper>,
}

impl<P: ParallelSink + ?Sized> TraceSink for Inline<'_, P> {
    fn on_event(&mut self, index: u64, event: &Event<'_>) -> ControlFlow<()> {
        // The reader calls `on_event_in`; without a text, spans cannot be taken.
        self.on_event_in(index, event, EventText::new(&[]))
    }
    fn on_event_in(&mut self, i: u64, event: &Event<'_>, text: EventText<'_>) -> ControlFlow<()> {
        let mapper = self.mapper.get_or_insert_with(|| self.sink.mapper());
        map_consume(self.sink, mapper, i, event, text)
    }
}

/// The sequential step's sink inside a parallel read (the mapper already exists).
struct Step1<'a, P: ParallelSink + ?Sized> {
    sink: &'a mut P,
    mapper: &'a P::Mapper,
}

impl<P: ParallelSink + ?Sized> TraceSink for Step1<'_, P> {
    fn on_event(&mut self, index: u64, event: &Event<'_>) -> ControlFlow<()> {
        self.on_event_in(index, event, EventText::new(&[]))
    }
    fn on_event_in(&mut self, i: u64, event: &Event<'_>, text: EventText<'_>) -> ControlFlow<()> {
        map_consume(self.sink, self.mapper, i, event, text)
    }
}

/// One element of a batch: an event object's extent in the batch text, or an element
/// the scanner skipped (lenient mode: not an object).
#[derive(Clone, Copy)]
struct Entry {
    start: usize,
    end: usize,
    skipped: bool,
}

/// A run of consecutive elements and the text they span (separators included).
struct Batch {
    id: u64,
    /// Text offset of `text[0]`.
    offset: u64,
    text: Vec<u8>,
    first_index: u64,
    entries: Vec<Entry>,
    /// The errors of skipped entries, in order.
    skips: Vec<ReadError>,
}

/// What became of one entry on a worker.
enum Outcome<T> {
    /// Decoded; the mapper's result.
    Mapped(Option<T>),
    /// Decoded by serde_json but rejected by the checks (wrong type, bad number).
    Bad(ReadError),
    /// serde_json rejected the text (or the scanner skipped the entry): the calling
    /// thread decides.
    Unread,
}

type Done<T> = (Batch, Vec<Outcome<T>>);

/// Emptied outcome vectors, back from the calling thread for the workers to fill again:
/// a batch's outcomes take about a megabyte, and allocating it per batch on one thread
/// and freeing it on another made the allocator map and fault in fresh pages each time
/// (or, with some allocators, hold on to the freed ones).
type OutcomePool<T> = Mutex<Vec<Vec<Outcome<T>>>>;

/// An empty outcome vector from `pool`, or a new one.
fn pooled<T>(pool: &OutcomePool<T>) -> Vec<Outcome<T>> {
    pool.lock()
        .ok()
        .and_then(|mut p| p.pop())
        .unwrap_or_default()
}
type WorkerResult<T> = Result<Done<T>, Box<dyn std::any::Any + Send>>;

/// Why the scanner stopped scanning.
enum ScanEnd {
    /// The closing `]` was consumed.
    Closed,
    /// The element at `input.pos` must be read by the sequential step.
    Sequential,
    /// The error the sequential reader would return here.
    Error(ReadError),
}

/// Scanner state: text up to `copied` (an offset) is in batches already sent or in `batch`.
struct Scanner {
    copied: u64,
    next_id: u64,
    batch_bytes: usize,
    /// Buffers of consumed batches, reused (text, entries).
    spare: Vec<(Vec<u8>, Vec<Entry>)>,
}

impl Scanner {
    /// Appends the text from `copied` up to `input.pos` to `batch`.
    fn flush(&mut self, parser: &Parser<'_, '_>, batch: &mut Batch) {
        let input = &parser.input;
        let from = (self.copied - input.offset_of(0)) as usize;
        batch.text.extend_from_slice(&input.buf[from..input.pos]);
        self.copied = input.offset_of(input.pos);
    }

    /// Skips whitespace and returns the next byte, as [`Parser::expect_byte`] does
    /// (refilling through it when the buffer runs out, after saving the text).
    fn peek(
        &mut self,
        parser: &mut Parser<'_, '_>,
        batch: &mut Batch,
        index: u64,
    ) -> Result<u8, ReadError> {
        loop {
            let unread = parser.input.unread();
            if let Some(k) = unread
                .iter()
                .position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
            {
                let b = unread[k];
                parser.input.pos += k;
                return Ok(b);
            }
            // Only whitespace left: save it before the refill drops it.
            parser.input.pos = parser.input.end;
            self.flush(parser, batch);
            if !parser.input.refill(Some(index))? {
                // The input ends here: the same error as the sequential reader's.
                return parser.expect_byte(Some(index), "the event array");
            }
        }
    }

    /// Scans elements into a new batch until it holds `batch_bytes` of text or scanning
    /// must stop.
    fn batch(&mut self, parser: &mut Parser<'_, '_>) -> (Batch, Option<ScanEnd>) {
        let (text, entries) = self.spare.pop().unwrap_or_else(|| {
            let text = Vec::with_capacity(self.batch_bytes.min(64 << 20) * 5 / 4);
            (text, Vec::new())
        });
        let mut batch = Batch {
            id: self.next_id,
            offset: self.copied,
            text,
            first_index: parser.next_index,
            entries,
            skips: Vec::new(),
        };
        self.next_id += 1;
        let end = loop {
            if parser.input.offset_of(parser.input.pos) - batch.offset >= self.batch_bytes as u64 {
                break None;
            }
            match self.element(parser, &mut batch) {
                Ok(Step::Next) => {}
                Ok(Step::Closed) => break Some(ScanEnd::Closed),
                Ok(Step::Stopped) => break Some(ScanEnd::Sequential),
                Err(e) => break Some(ScanEnd::Error(e)),
            }
        };
        self.flush(parser, &mut batch);
        (batch, end)
    }

    /// Mirrors [`Parser::element`] for one element, delimiting instead of decoding.
    /// `Step::Stopped` means: leave this element to the sequential step.
    fn element(
        &mut self,
        parser: &mut Parser<'_, '_>,
        batch: &mut Batch,
    ) -> Result<Step, ReadError> {
        let index = parser.next_index;
        let b = self.peek(parser, batch, index)?;
        // (Text is saved before every call that may refill, errors included: they read
        // on to quote the text.)
        if b == b']' || b == b',' {
            self.flush(parser, batch);
            return Err(parser.unexpected("an event object", Some(index)));
        }
        let start = (parser.input.offset_of(parser.input.pos) - batch.offset) as usize;
        let skipped = if b != b'{' {
            self.flush(parser, batch);
            let err = parser.not_an_object(index);
            if !parser.lenient {
                return Err(err);
            }
            parser.skip_value(index)?;
            batch.skips.push(err);
            true
        } else {
            loop {
                let unread = parser.input.unread();
                match object_end(unread, 0) {
                    Some(end) => {
                        parser.input.pos += end;
                        break;
                    }
                    // The event continues after the buffer: read on, within limits.
                    None if !parser.input.eof
                        && unread.len() < SCAN_LIMIT.min(parser.input.buf.len()) =>
                    {
                        self.flush(parser, batch);
                        if let Err(e) = parser.input.refill(Some(index)) {
                            // The sequential step meets it if the event needs more text
                            // (it may be broken before that point).
                            return match parser.input.stash(e) {
                                None => Ok(Step::Stopped),
                                Some(e) => Err(e),
                            };
                        }
                    }
                    // The input ends inside the event, or it is longer than the limit
                    // (or unbalanced): the sequential step reads it.
                    _ => return Ok(Step::Stopped),
                }
            }
            false
        };
        let end = (parser.input.offset_of(parser.input.pos) - batch.offset) as usize;
        batch.entries.push(Entry {
            start,
            end,
            skipped,
        });
        parser.next_index += 1;
        // The separator, as `Parser::separator` reads it.
        match self.peek(parser, batch, parser.next_index)? {
            b',' => {
                parser.input.pos += 1;
                Ok(Step::Next)
            }
            b']' => {
                parser.input.pos += 1;
                Ok(Step::Closed)
            }
            _ => {
                self.flush(parser, batch);
                Err(parser.unexpected("`,` or `]` after an event", Some(parser.next_index)))
            }
        }
    }
}

/// Decodes and maps a batch's events (on a worker thread) into `out` (empty).
fn decode<M: EventMapper>(
    batch: &Batch,
    mapper: &M,
    file: &Arc<str>,
    base_time_ns: Option<i64>,
    mut out: Vec<Outcome<M::Item>>,
) -> Vec<Outcome<M::Item>> {
    out.reserve(batch.entries.len());
    for (k, entry) in batch.entries.iter().enumerate() {
        if entry.skipped {
            out.push(Outcome::Unread);
            continue;
        }
        let index = batch.first_index + k as u64;
        let start = entry.start;
        let text = &batch.text[start..];
        let fields = match fast_event::split_event(&text[..entry.end - start]) {
            Some((fields, used)) if used == entry.end - start => Some(fields),
            // What the fast split leaves aside, serde_json decides.
            _ => {
                let mut stream =
                    serde_json::Deserializer::from_slice(text).into_iter::<EventFields<'_>>();
                match stream.next() {
                    Some(Ok(fields)) if stream.byte_offset() == entry.end - start => Some(fields),
                    _ => None,
                }
            }
        };
        let outcome = match fields {
            Some(fields) => {
                let cx = EventContext {
                    file,
                    text,
                    text_offset: batch.offset + start as u64,
                    index,
                    base_time_ns,
                };
                match cx.build(fields) {
                    Ok(event) => {
                        let text = EventText::new(&text[..entry.end - start]);
                        Outcome::Mapped(mapper.map_in(index, &event, text))
                    }
                    Err(e) => Outcome::Bad(e),
                }
            }
            _ => {
                // The rest of the batch is read again sequentially.
                out.push(Outcome::Unread);
                break;
            }
        };
        out.push(outcome);
    }
    out
}

/// Reads `traceEvents` after its `[` in parallel; same results as [`Parser::events`].
fn events<P: ParallelSink + ?Sized>(
    parser: &mut Parser<'_, '_>,
    sink: &mut P,
    mapper: &P::Mapper,
    threads: usize,
    batch_bytes: usize,
) -> Result<(), ReadError> {
    if parser.expect_byte(Some(parser.next_index), "the event array")? == b']' {
        parser.input.pos += 1;
        return Ok(());
    }
    let file = parser.file.clone();
    let base_time_ns = parser.base_time_ns;
    let (job_tx, job_rx) = mpsc::channel::<Batch>();
    let job_rx = Mutex::new(job_rx);
    let pool: OutcomePool<P::Item> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        let (done_tx, done_rx) = mpsc::channel::<WorkerResult<P::Item>>();
        for _ in 0..threads {
            let (job_rx, done_tx, file, pool) = (&job_rx, done_tx.clone(), &file, &pool);
            scope.spawn(move || loop {
                let job = match job_rx.lock() {
                    Ok(rx) => rx.recv(),
                    Err(_) => return,
                };
                let Ok(batch) = job else { return };
                let result = panic::catch_unwind(AssertUnwindSafe(|| {
                    decode(&batch, mapper, file, base_time_ns, pooled(pool))
                }));
                let message = result.map(|outcomes| (batch, outcomes));
                if done_tx.send(message).is_err() {
                    return;
                }
            });
        }
        drop(done_tx);
        let mut pipeline = Pipeline {
            job_tx,
            done_rx,
            job_rx: &job_rx,
            pool: &pool,
            mapper,
            file: &file,
            base_time_ns,
            in_flight: 0,
            max_in_flight: threads * IN_FLIGHT_PER_WORKER,
            waiting: BTreeMap::new(),
            next_to_consume: 0,
        };
        let mut scanner = Scanner {
            copied: parser.input.offset_of(parser.input.pos),
            next_id: 0,
            batch_bytes,
            spare: Vec::new(),
        };
        loop {
            let end = pipeline.run(parser, &mut scanner, sink)?;
            match end {
                Finish::Closed | Finish::Stopped => return Ok(()),
                Finish::Error(e) => return Err(e),
                Finish::Sequential => {}
            }
            // Read one element sequentially at `input.pos`, then scan on.
            let mut step = Step1 { sink, mapper };
            match parser.element(&mut step)? {
                Step::Next => {}
                Step::Closed | Step::Stopped => return Ok(()),
            }
            scanner.copied = parser.input.offset_of(parser.input.pos);
        }
    })
}

/// How a parallel stretch ended, once every batch before the end was consumed.
enum Finish {
    Closed,
    Stopped,
    /// The sequential step reads the element at `input.pos` (`next_index`).
    Sequential,
    Error(ReadError),
}

/// The calling thread's side: dispatches batches, takes results back in order, and
/// decodes queued batches itself rather than wait idle.
struct Pipeline<'a, M: EventMapper> {
    job_tx: mpsc::Sender<Batch>,
    done_rx: mpsc::Receiver<WorkerResult<M::Item>>,
    job_rx: &'a Mutex<mpsc::Receiver<Batch>>,
    pool: &'a OutcomePool<M::Item>,
    mapper: &'a M,
    file: &'a Arc<str>,
    base_time_ns: Option<i64>,
    in_flight: usize,
    max_in_flight: usize,
    waiting: BTreeMap<u64, Done<M::Item>>,
    next_to_consume: u64,
}

impl<M: EventMapper> Pipeline<'_, M> {
    /// Scans, dispatches and consumes until scanning ended and all batches are consumed,
    /// or a batch's consumption ends the stretch early.
    fn run<P: ParallelSink<Item = M::Item> + ?Sized>(
        &mut self,
        parser: &mut Parser<'_, '_>,
        scanner: &mut Scanner,
        sink: &mut P,
    ) -> Result<Finish, ReadError> {
        let mut scan_end: Option<ScanEnd> = None;
        loop {
            // Consume what is ready, in order.
            while let Some(done) = self.waiting.remove(&self.next_to_consume) {
                self.next_to_consume += 1;
                self.in_flight -= 1;
                if let Some(finish) = self.consume(parser, scanner, sink, done)? {
                    if let (Finish::Sequential, Some(ScanEnd::Error(e))) =
                        (&finish, scan_end.take())
                    {
                        // Text was put back and is read again; if the reader failed after
                        // it, it fails there again (located by that read) rather than
                        // being read after its error.
                        let _ = parser.input.stash(e);
                    }
                    return Ok(finish);
                }
            }
            if scan_end.is_none() && self.in_flight < self.max_in_flight {
                let (batch, end) = scanner.batch(parser);
                scan_end = end;
                self.in_flight += 1;
                self.send(batch);
                // Take results that arrived meanwhile without waiting.
                while let Ok(message) = self.done_rx.try_recv() {
                    self.receive(message);
                }
                continue;
            }
            if self.in_flight > 0 {
                // A batch no worker has taken yet: decode it here instead of waiting.
                let queued = self
                    .job_rx
                    .try_lock()
                    .ok()
                    .and_then(|rx| rx.try_recv().ok());
                if let Some(batch) = queued {
                    let out = pooled(self.pool);
                    let outcomes = decode(&batch, self.mapper, self.file, self.base_time_ns, out);
                    self.waiting.insert(batch.id, (batch, outcomes));
                    continue;
                }
                let message = self.done_rx.recv().expect("workers outlive the pipeline");
                self.receive(message);
                continue;
            }
            return Ok(match scan_end.take() {
                Some(ScanEnd::Closed) => Finish::Closed,
                Some(ScanEnd::Sequential) => Finish::Sequential,
                Some(ScanEnd::Error(e)) => Finish::Error(e),
                None => unreachable!("scanning goes on while nothing is in flight"),
            });
        }
    }

    fn send(&mut self, batch: Batch) {
        if let Err(mpsc::SendError(batch)) = self.job_tx.send(batch) {
            // Workers are gone only after a panic, which `receive` re-raises first.
            let _ = batch;
            unreachable!("workers stopped before the read ended");
        }
    }

    fn receive(&mut self, message: WorkerResult<M::Item>) {
        match message {
            Ok(done) => {
                self.waiting.insert(done.0.id, done);
            }
            Err(payload) => panic::resume_unwind(payload),
        }
    }

    /// Hands one batch's results to the sink in order. `Some` ends the stretch.
    fn consume<P: ParallelSink<Item = M::Item> + ?Sized>(
        &mut self,
        parser: &mut Parser<'_, '_>,
        scanner: &mut Scanner,
        sink: &mut P,
        (mut batch, mut outcomes): Done<M::Item>,
    ) -> Result<Option<Finish>, ReadError> {
        let mut skips = std::mem::take(&mut batch.skips).into_iter();
        for (k, outcome) in outcomes.drain(..).enumerate() {
            let index = batch.first_index + k as u64;
            let entry = batch.entries[k];
            match outcome {
                Outcome::Mapped(item) => {
                    parser.delivered += 1;
                    if let Some(item) = item {
                        let text = EventText::new(&batch.text[entry.start..entry.end]);
                        if sink.consume_in(index, item, text).is_break() {
                            parser.stopped = true;
                            parser.offset_reached = Some(batch.offset + entry.end as u64);
                            return Ok(Some(Finish::Stopped));
                        }
                    }
                }
                Outcome::Bad(e) => {
                    if !parser.lenient {
                        return Err(e);
                    }
                    parser.record_skip(e);
                }
                Outcome::Unread if entry.skipped => {
                    if let Some(e) = skips.next() {
                        parser.record_skip(e);
                    }
                }
                Outcome::Unread => {
                    self.put_back(parser, scanner, batch, entry.start, index);
                    return Ok(Some(Finish::Sequential));
                }
            }
        }
        if let Ok(mut pool) = self.pool.lock() {
            if pool.len() < self.max_in_flight {
                pool.push(outcomes);
            }
        }
        if scanner.spare.len() < self.max_in_flight {
            let (mut text, mut entries) = (batch.text, batch.entries);
            text.clear();
            entries.clear();
            scanner.spare.push((text, entries));
        }
        Ok(None)
    }

    /// Puts the text from `batch.text[from]` (element `index`) and every later batch
    /// back in front of the input, so the sequential step reads element `index` next.
    fn put_back(
        &mut self,
        parser: &mut Parser<'_, '_>,
        scanner: &mut Scanner,
        batch: Batch,
        from: usize,
        index: u64,
    ) {
        // Wait for every later batch; their results are dropped, their text kept.
        while self.waiting.len() < self.in_flight {
            let message = self.done_rx.recv().expect("workers outlive the pipeline");
            self.receive(message);
        }
        let offset = batch.offset + from as u64;
        let mut text = batch.text;
        text.drain(..from);
        let later = std::mem::take(&mut self.waiting);
        for (_, (later, _)) in later {
            text.extend_from_slice(&later.text);
        }
        self.next_to_consume = scanner.next_id;
        self.in_flight = 0;
        let input_from = (scanner.copied - parser.input.offset_of(0)) as usize;
        parser.input.put_back(text, input_from, offset);
        parser.next_index = index;
        scanner.copied = offset;
    }
}
