//! The top-level scanner: walks the trace object key by key, keeps metadata, and hands
//! each element of `traceEvents` to the event decoder as a slice of the buffer.

use std::ops::ControlFlow;
use std::sync::Arc;

use serde_json::value::RawValue;

use super::event_de::{EventContext, EventFields};
use super::fast_event;
use super::input::Input;
use crate::error::{excerpt, Location, ReadError};
use crate::json::{value_end, RawJson};
use crate::meta::{MetaEntry, Placement, TraceMeta};
use crate::sink::{EventText, TraceSink};

/// Where a pass delivers what it reads: the envelope's calls, and how the event array
/// is read (one event at a time into a [`TraceSink`], or in parallel: `super::parallel`).
pub(crate) trait Deliver {
    fn header(&mut self, meta: &TraceMeta) -> ControlFlow<()>;
    fn trailer(&mut self, meta: &TraceMeta);
    /// Reads `traceEvents` elements after its `[` up to and including its `]`.
    fn events(&mut self, parser: &mut Parser<'_, '_>) -> Result<(), ReadError>;
}

/// Sequential delivery into a [`TraceSink`].
pub(crate) struct Sequential<'a, S: ?Sized>(pub(crate) &'a mut S);

impl<S: TraceSink + ?Sized> Deliver for Sequential<'_, S> {
    fn header(&mut self, meta: &TraceMeta) -> ControlFlow<()> {
        self.0.on_header(meta)
    }
    fn trailer(&mut self, meta: &TraceMeta) {
        self.0.on_trailer(meta)
    }
    fn events(&mut self, parser: &mut Parser<'_, '_>) -> Result<(), ReadError> {
        parser.events(self.0)
    }
}

/// What one step over an element of `traceEvents` (and the separator after it) left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// A `,` was consumed: the next element follows.
    Next,
    /// The closing `]` was consumed.
    Closed,
    /// The sink asked to stop.
    Stopped,
}

/// How many per-event errors a lenient read keeps as examples.
pub(crate) const MAX_SKIPPED_EXAMPLES: usize = 16;

/// Supplies metadata found after `traceEvents` by reading the input a second time.
pub(crate) type Prescan<'p> = Box<dyn FnMut() -> Vec<MetaEntry> + 'p>;

/// State of one pass over the input.
pub(crate) struct Parser<'s, 'p> {
    pub(crate) input: Input<'s>,
    pub(crate) file: Arc<str>,
    pub(crate) lenient: bool,
    /// Skip events without decoding them (the pre-scan pass).
    pub(crate) skip_events: bool,
    pub(crate) prescan: Option<Prescan<'p>>,
    pub(crate) meta: TraceMeta,
    pub(crate) base_time_ns: Option<i64>,
    pub(crate) base_from_prescan: bool,
    pub(crate) header_sent: bool,
    pub(crate) next_index: u64,
    pub(crate) delivered: u64,
    pub(crate) skipped: u64,
    pub(crate) skipped_examples: Vec<ReadError>,
    pub(crate) stopped: bool,
    /// The text offset reached, when it is not the input's position (a parallel read
    /// stopped by its sink after the scanner had read ahead).
    pub(crate) offset_reached: Option<u64>,
}

/// What happened to one attempt at parsing the value at `input.pos`.
enum Attempt<T> {
    Done(usize, T),
    NeedMore,
    Failed(ReadError),
}

impl<'s, 'p> Parser<'s, 'p> {
    /// A parser at the start of `input`.
    pub(crate) fn new(input: Input<'s>, file: Arc<str>, lenient: bool, skip_events: bool) -> Self {
        Parser {
            input,
            file,
            lenient,
            skip_events,
            prescan: None,
            meta: TraceMeta::new(),
            base_time_ns: None,
            base_from_prescan: false,
            header_sent: false,
            next_index: 0,
            delivered: 0,
            skipped: 0,
            skipped_examples: Vec::new(),
            stopped: false,
            offset_reached: None,
        }
    }

    fn loc(&self, index: usize, event_index: Option<u64>) -> Location {
        self.input.location(index, event_index)
    }

    fn truncated(&self, inside: &'static str, event_index: Option<u64>) -> ReadError {
        ReadError::Truncated {
            at: self.loc(self.input.end, event_index),
            inside,
        }
    }

    pub(crate) fn expect_byte(
        &mut self,
        event_index: Option<u64>,
        inside: &'static str,
    ) -> Result<u8, ReadError> {
        self.input
            .peek_significant(event_index)?
            .ok_or_else(|| self.truncated(inside, event_index))
    }

    pub(crate) fn unexpected(&mut self, expected: &str, event_index: Option<u64>) -> ReadError {
        self.fill_excerpt(event_index);
        let rest =
            String::from_utf8_lossy(&self.input.unread()[..self.input.unread().len().min(40)])
                .into_owned();
        ReadError::Syntax {
            at: self.loc(self.input.pos, event_index),
            message: format!("expected {expected}, found `{}`", excerpt(&rest)),
        }
    }

    /// Reads on until 40 bytes follow `pos` (or the input ends), so that an error quoting
    /// the text there does not depend on where the buffer happened to end. A reader
    /// error is kept for the next refill (which reports it where it happens).
    fn fill_excerpt(&mut self, event_index: Option<u64>) {
        while self.input.unread().len() < 40 && !self.input.eof {
            match self.input.refill(event_index) {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    let _ = self.input.stash(e);
                    break;
                }
            }
        }
    }

    /// Reads the whole input, pushing into `sink`.
    pub(crate) fn run<D: Deliver + ?Sized>(&mut self, sink: &mut D) -> Result<(), ReadError> {
        match self.expect_byte(None, "an empty input")? {
            b'[' => {
                // A bare event array, as the Chrome trace format allows.
                self.input.pos += 1;
                sink.events(self)?;
            }
            b'{' => {
                self.input.pos += 1;
                self.object(sink)?;
            }
            _ => return Err(self.unexpected("`{` or `[` (a trace object)", None)),
        }
        if self.stopped {
            return Ok(());
        }
        if self.input.peek_significant(None)?.is_some() {
            return Err(self.unexpected("the end of the input", None));
        }
        self.send_header(sink);
        if !self.stopped {
            sink.trailer(&self.meta);
        }
        Ok(())
    }

    fn send_header<D: Deliver + ?Sized>(&mut self, sink: &mut D) {
        if !self.header_sent {
            self.header_sent = true;
            if sink.header(&self.meta).is_break() {
                self.stopped = true;
            }
        }
    }

    fn object<D: Deliver + ?Sized>(&mut self, sink: &mut D) -> Result<(), ReadError> {
        let mut seen_events = false;
        let mut first = true;
        loop {
            let b = self.expect_byte(None, "the top-level object")?;
            if b == b'}' && first {
                self.input.pos += 1;
                return Ok(());
            }
            if b != b'"' {
                return Err(self.unexpected("a key", None));
            }
            first = false;
            let key: String = self.parse_value(None, "a key", |text| serde_json::from_str(text))?;
            if self.expect_byte(None, "the top-level object")? != b':' {
                return Err(self.unexpected("`:`", None));
            }
            self.input.pos += 1;
            let b = self.expect_byte(None, "the top-level object")?;
            if key == "traceEvents" && !seen_events {
                if b != b'[' {
                    let found = String::from_utf8_lossy(&[b]).into_owned();
                    return Err(ReadError::WrongType {
                        at: self.loc(self.input.pos, None),
                        field: "traceEvents".to_owned(),
                        expected: "an array",
                        found,
                    });
                }
                seen_events = true;
                self.input.pos += 1;
                self.enter_events();
                self.send_header(sink);
                if self.stopped {
                    return Ok(());
                }
                sink.events(self)?;
                if self.stopped {
                    return Ok(());
                }
                self.meta.retain_before_events();
            } else {
                let value = self.parse_value(None, "a metadata value", |text| {
                    RawJson::parse(text.to_owned())
                })?;
                let placement = if seen_events {
                    Placement::AfterEvents
                } else {
                    Placement::BeforeEvents
                };
                self.meta.push(MetaEntry {
                    key,
                    value,
                    placement,
                });
            }
            match self.expect_byte(None, "the top-level object")? {
                b',' => self.input.pos += 1,
                b'}' => {
                    self.input.pos += 1;
                    return Ok(());
                }
                _ => return Err(self.unexpected("`,` or `}`", None)),
            }
        }
    }

    /// Called as `traceEvents` opens: settle the time base.
    fn enter_events(&mut self) {
        self.base_time_ns = self.meta.base_time_ns();
        if self.base_time_ns.is_none() {
            if let Some(prescan) = self.prescan.as_mut() {
                for entry in prescan() {
                    self.meta.push(entry);
                }
                self.base_time_ns = self.meta.base_time_ns();
                self.base_from_prescan = self.base_time_ns.is_some();
            }
        }
    }

    /// Parses one complete JSON value at `input.pos` with `parse`, refilling as needed.
    fn parse_value<T>(
        &mut self,
        event_index: Option<u64>,
        inside: &'static str,
        parse: impl Fn(&str) -> Result<T, serde_json::Error>,
    ) -> Result<T, ReadError> {
        loop {
            let unread = self.input.unread();
            let attempt = {
                let mut stream =
                    serde_json::Deserializer::from_slice(unread).into_iter::<&RawValue>();
                match stream.next() {
                    // A number touching the end of the buffer may continue in the next chunk.
                    Some(Ok(_)) if stream.byte_offset() == unread.len() && !self.input.eof => {
                        Attempt::NeedMore
                    }
                    Some(Ok(raw)) => match parse(raw.get()) {
                        Ok(value) => Attempt::Done(stream.byte_offset(), value),
                        Err(e) => Attempt::Failed(ReadError::Syntax {
                            at: self.loc(self.input.pos, event_index),
                            message: strip_position(&e),
                        }),
                    },
                    Some(Err(e)) if !self.input.eof && near_end(&e, unread) => Attempt::NeedMore,
                    None if !self.input.eof => Attempt::NeedMore,
                    Some(Err(e)) => Attempt::Failed(self.serde_error(&e, event_index, inside)),
                    None => Attempt::Failed(self.truncated(inside, event_index)),
                }
            };
            match attempt {
                Attempt::Done(used, value) => {
                    self.input.pos += used;
                    return Ok(value);
                }
                Attempt::NeedMore => {
                    self.input.refill(event_index)?;
                }
                Attempt::Failed(e) => return Err(e),
            }
        }
    }

    /// Turns a serde_json error on `input.unread()` into a located [`ReadError`].
    fn serde_error(
        &self,
        e: &serde_json::Error,
        event_index: Option<u64>,
        inside: &'static str,
    ) -> ReadError {
        let unread = self.input.unread();
        if e.is_eof() {
            return self.truncated(inside, event_index);
        }
        let offset = offset_of_line_column(unread, e.line(), e.column());
        let at = self.loc(self.input.pos + offset, event_index);
        let message = strip_position(e);
        if message.contains("unicode code point") {
            let window = &unread[..(offset + 4).min(unread.len())];
            if let Err(bad) = std::str::from_utf8(window) {
                return ReadError::InvalidUtf8 {
                    at: self.loc(self.input.pos + bad.valid_up_to(), event_index),
                };
            }
        }
        // `NaN`, `Infinity` are what Python's json.dump writes for non-finite floats.
        let from = offset.saturating_sub(1);
        let near = &unread[from..(from + 12).min(unread.len())];
        for token in ["NaN", "-Infinity", "Infinity"] {
            if let Some(hit) = near
                .windows(token.len())
                .position(|w| w == token.as_bytes())
            {
                return ReadError::BadNumber {
                    at: self.loc(self.input.pos + from + hit, event_index),
                    field: key_before(unread, from + hit).unwrap_or_else(|| "value".to_owned()),
                    value: token.to_owned(),
                    problem: "not a finite number (NaN and Infinity are not JSON)",
                };
            }
        }
        ReadError::Syntax { at, message }
    }

    /// Reads `traceEvents` elements after its `[` up to and including its `]`.
    pub(crate) fn events<S: TraceSink + ?Sized>(&mut self, sink: &mut S) -> Result<(), ReadError> {
        if self.expect_byte(Some(self.next_index), "the event array")? == b']' {
            self.input.pos += 1;
            return Ok(());
        }
        while self.element(sink)? == Step::Next {}
        Ok(())
    }

    /// Reads the element at `input.pos` (after optional whitespace) and the `,` or `]`
    /// after it.
    pub(crate) fn element<S: TraceSink + ?Sized>(
        &mut self,
        sink: &mut S,
    ) -> Result<Step, ReadError> {
        let index = self.next_index;
        let b = self.expect_byte(Some(index), "the event array")?;
        if b == b']' || b == b',' {
            return Err(self.unexpected("an event object", Some(index)));
        }
        if b != b'{' {
            let err = self.not_an_object(index);
            if !self.lenient {
                return Err(err);
            }
            self.skip_value(index)?;
            self.record_skip(err);
        } else if self.skip_events {
            self.skip_value(index)?;
        } else {
            self.event(sink, index)?;
            if self.stopped {
                return Ok(Step::Stopped);
            }
        }
        self.next_index += 1;
        self.separator()
    }

    /// The error for an element at `input.pos` that is not an object.
    pub(crate) fn not_an_object(&mut self, index: u64) -> ReadError {
        self.fill_excerpt(Some(index));
        let unread = self.input.unread();
        let found = String::from_utf8_lossy(&unread[..unread.len().min(40)]).into_owned();
        ReadError::WrongType {
            at: self.loc(self.input.pos, Some(index)),
            field: "traceEvents[]".to_owned(),
            expected: "an object",
            found: excerpt(&found),
        }
    }

    /// Reads the `,` or `]` after element `next_index - 1`.
    pub(crate) fn separator(&mut self) -> Result<Step, ReadError> {
        match self.expect_byte(Some(self.next_index), "the event array")? {
            b',' => {
                self.input.pos += 1;
                Ok(Step::Next)
            }
            b']' => {
                self.input.pos += 1;
                Ok(Step::Closed)
            }
            _ => Err(self.unexpected("`,` or `]` after an event", Some(self.next_index))),
        }
    }

    pub(crate) fn record_skip(&mut self, err: ReadError) {
        self.skipped += 1;
        if self.skipped_examples.len() < MAX_SKIPPED_EXAMPLES {
            self.skipped_examples.push(err);
        }
    }

    /// Skips the value at `input.pos` without decoding it.
    pub(crate) fn skip_value(&mut self, index: u64) -> Result<(), ReadError> {
        loop {
            let unread = self.input.unread();
            match value_end(unread, 0) {
                Some(end) if end > 0 => {
                    self.input.pos += end;
                    return Ok(());
                }
                Some(_) => return Err(self.unexpected("a value", Some(index))),
                None if self.input.eof => return Err(self.truncated("an event", Some(index))),
                None => {
                    self.input.refill(Some(index))?;
                }
            }
        }
    }

    /// Decodes the event at `input.pos` and hands it to the sink.
    fn event<S: TraceSink + ?Sized>(&mut self, sink: &mut S, index: u64) -> Result<(), ReadError> {
        loop {
            let unread = &self.input.buf[self.input.pos..self.input.end];
            let attempt = {
                // The fast split takes complete, valid events; serde_json the rest (and
                // reports the errors).
                let split = fast_event::split_event(unread).map(Ok).or_else(|| {
                    let mut stream =
                        serde_json::Deserializer::from_slice(unread).into_iter::<EventFields<'_>>();
                    stream
                        .next()
                        .map(|fields| fields.map(|fields| (fields, stream.byte_offset())))
                });
                match split {
                    Some(Ok((fields, used))) => {
                        let cx = EventContext {
                            file: &self.file,
                            text: unread,
                            text_offset: self.input.offset_of(self.input.pos),
                            index,
                            base_time_ns: self.base_time_ns,
                        };
                        match cx.build(fields) {
                            Ok(event) => {
                                let text = EventText::new(&unread[..used]);
                                Attempt::Done(used, Ok(sink.on_event_in(index, &event, text)))
                            }
                            Err(e) => Attempt::Done(used, Err(e)),
                        }
                    }
                    Some(Err(e)) if !self.input.eof && near_end(&e, unread) => Attempt::NeedMore,
                    None if !self.input.eof => Attempt::NeedMore,
                    Some(Err(e)) => Attempt::Failed(self.serde_error(&e, Some(index), "an event")),
                    None => Attempt::Failed(self.truncated("an event", Some(index))),
                }
            };
            match attempt {
                Attempt::Done(used, Ok(flow)) => {
                    self.input.pos += used;
                    self.delivered += 1;
                    if flow == ControlFlow::Break(()) {
                        self.stopped = true;
                    }
                    return Ok(());
                }
                Attempt::Done(used, Err(e)) => {
                    if !self.lenient {
                        return Err(e);
                    }
                    self.input.pos += used;
                    self.record_skip(e);
                    return Ok(());
                }
                Attempt::NeedMore => {
                    self.input.refill(Some(index))?;
                }
                Attempt::Failed(e) => {
                    // Invalid UTF-8 inside a well-delimited event: a lenient read skips it.
                    if self.lenient && matches!(e, ReadError::InvalidUtf8 { .. }) {
                        self.skip_value(index)?;
                        self.record_skip(e);
                        return Ok(());
                    }
                    return Err(e);
                }
            }
        }
    }
}

/// Whether a parse error may only be the buffer ending mid-value: serde_json reports
/// `1.` or `tr` at the end of its input as "invalid number"/"expected value", not EOF.
/// Refilling is always safe: a real error is reported again, further from the end.
fn near_end(e: &serde_json::Error, unread: &[u8]) -> bool {
    e.is_eof() || offset_of_line_column(unread, e.line(), e.column()) + 64 >= unread.len()
}

/// serde_json's message without its " at line L column C" suffix.
fn strip_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(cut) => text[..cut].to_owned(),
        None => text,
    }
}

/// The byte offset of serde_json's (1-based line, 1-based column) in `text`.
fn offset_of_line_column(text: &[u8], line: usize, column: usize) -> usize {
    let mut line_start = 0;
    for _ in 1..line {
        match memchr::memchr(b'\n', &text[line_start..]) {
            Some(hit) => line_start += hit + 1,
            None => break,
        }
    }
    (line_start + column.saturating_sub(1)).min(text.len())
}

/// The key of the member whose value starts at `at`, if it is a plain quoted key.
fn key_before(text: &[u8], at: usize) -> Option<String> {
    let mut p = at;
    while p > 0 && matches!(text[p - 1], b' ' | b'\t' | b'\n' | b'\r' | b':') {
        p -= 1;
    }
    if p == 0 || text[p - 1] != b'"' {
        return None;
    }
    let close = p - 1;
    let open = memchr::memrchr(b'"', &text[..close])?;
    std::str::from_utf8(&text[open + 1..close])
        .ok()
        .map(str::to_owned)
}
