//! Retiming a trace file: the `ts`/`dur` of chosen events go through a time map, every
//! other byte stays as it was.
//!
//! The PyTorch extension (`python/`) needs it: PyTorch's profiler stamps its host events
//! with the real clock, and the emulated device's work is cut from the process timeline
//! afterwards (`runtime-hooks`' process cut), so the host events of a written trace must
//! be moved onto the cut timeline — a monotonic map of instants — while the device's own
//! activities, already on it, stay. [`retime`] streams: the document is scanned byte by
//! byte, each element of `traceEvents` is held while it is rewritten (events are small),
//! everything else is copied as it comes, so a trace of hundreds of MB takes a few MB of
//! memory.
//!
//! What changes, exactly:
//! - for each event whose `cat` is not one of [`RetimeOptions::keep_categories`] (events
//!   without a `cat`, such as `M` metadata and `s`/`g` markers, included): its `ts`
//!   becomes `map(ts)`, and its `dur` (when it has one) becomes `map(ts + dur) − map(ts)`
//!   (never negative); times are absolute nanoseconds since the epoch (relative `ts` are
//!   shifted by `baseTimeNanoseconds` before and after);
//! - a number keeps its spelling: as many decimals as it had, or more if the new value
//!   needs them (three stay three: `12.300`, as PyTorch's Python exporter writes; trimmed
//!   stays trimmed: `12.3`, as libkineto writes), and an unchanged value keeps its text;
//! - with [`RetimeOptions::drop`], an event that would be retimed and has a `cat`, a
//!   `ts` and a `dur` is left out when the caller says so from its category and its
//!   interval before the map (the extension leaves out the host ops PyTorch recorded
//!   while the emulator computed a device's values: they are not the program's, and on
//!   the cut timeline they would all last 0 µs); each one left out is counted
//!   ([`RetimeStats::dropped`]), and the commas between the others stay right;
//! - with [`RetimeOptions::append`], events made by the caller are added at the end of
//!   `traceEvents` (the extension writes the device's engine rows there, which Kineto has
//!   no activity type for), told the time span of the kept events and the base time;
//! - one top-level member, [`RetimeOptions::marker`], is added before the closing brace
//!   (so a retimed trace says so, and is never retimed twice: [`retime`] refuses a
//!   document that already has the marker key).
//!
//! Nothing else changes: keys, spacing, order and the other values are copied byte for
//! byte. Since the map is monotonic, nesting and order on a thread are kept.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::sync::Arc;

use flate2::bufread::MultiGzDecoder;
use flate2::write::GzEncoder;

use crate::error::{Location, ReadError};
use crate::event::Event;
use crate::time::parse_us_to_ns;

/// Makes the value of [`RetimeOptions::marker`] from what was done.
pub type MarkerValue<'a> = &'a dyn Fn(&RetimeStats) -> String;

/// Makes the events [`RetimeOptions::append`] adds: called once, at the end of
/// `traceEvents`, with what the document holds; each event given to the sink is written
/// (times absolute, like every [`Event`]'s, written relative to the document's base).
pub type AppendEvents<'a> = &'a dyn Fn(&AppendContext, &mut dyn FnMut(&Event<'_>));

/// What an [`AppendEvents`] is told about the document.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AppendContext {
    /// The first start and the last end of the kept events ([`RetimeOptions::
    /// keep_categories`]), ns since the Unix epoch; `None` without any.
    pub kept_span_ns: Option<(i64, i64)>,
    /// The document's `baseTimeNanoseconds`.
    pub base_time_ns: Option<i64>,
}

/// Whether [`retime`] leaves an event out: told its raw `cat` (without the quotes), and
/// its start and end before the map (absolute ns since the Unix epoch).
pub type DropEvent<'a> = &'a dyn Fn(&[u8], i64, i64) -> bool;

/// What [`retime`] leaves alone, what it leaves out and what it adds.
#[derive(Clone, Default)]
pub struct RetimeOptions<'a> {
    /// Events of these categories keep their times (compared with the raw `cat`).
    pub keep_categories: Vec<String>,
    /// A top-level member added to the document: its key, and its raw JSON value made
    /// from what was done. A document that already has this key is refused
    /// ([`RetimeError::AlreadyRetimed`]).
    pub marker: Option<(String, MarkerValue<'a>)>,
    /// The document's `baseTimeNanoseconds`, for documents that write it only after
    /// `traceEvents` (older libkineto): [`retime`] reads in one pass and refuses such a
    /// document without it ([`RetimeError::LateBaseTime`]); [`retime_path`] finds it.
    pub base_time_ns: Option<i64>,
    /// Events to add at the end of `traceEvents` (see [`AppendEvents`]); they are
    /// counted in [`RetimeStats::appended`], not in `events`.
    pub append: Option<AppendEvents<'a>>,
    /// Events to leave out (see [`DropEvent`]): asked only of events that would be
    /// retimed and have a `cat`, a `ts` and a `dur`; counted in [`RetimeStats::dropped`]
    /// (and in `events`, not in `retimed`).
    pub drop: Option<DropEvent<'a>>,
}

impl std::fmt::Debug for RetimeOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RetimeOptions")
            .field("keep_categories", &self.keep_categories)
            .field("marker", &self.marker.as_ref().map(|(key, _)| key))
            .field("base_time_ns", &self.base_time_ns)
            .field("append", &self.append.is_some())
            .field("drop", &self.drop.is_some())
            .finish()
    }
}

/// What [`retime`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RetimeStats {
    /// Elements of `traceEvents`.
    pub events: u64,
    /// Events whose `ts` went through the map.
    pub retimed: u64,
    /// Events kept because of their category.
    pub kept: u64,
    /// Events added by [`RetimeOptions::append`].
    pub appended: u64,
    /// Events left out by [`RetimeOptions::drop`].
    pub dropped: u64,
    /// The first start and the last end of the kept events, ns since the Unix epoch.
    pub kept_span_ns: Option<(i64, i64)>,
    /// Bytes of JSON read.
    pub bytes_in: u64,
}

/// Why a retime failed.
#[derive(Debug, thiserror::Error)]
pub enum RetimeError {
    /// The input is not a trace document [`retime`] understands (with where).
    #[error(transparent)]
    Read(#[from] ReadError),
    /// Writing the output failed.
    #[error("writing the retimed trace: {0}")]
    Write(#[source] io::Error),
    /// `baseTimeNanoseconds` comes after `traceEvents` and was not given.
    #[error("{at}: `baseTimeNanoseconds` comes after the events; retime needs it first (RetimeOptions::base_time_ns)")]
    LateBaseTime {
        /// Where the key is.
        at: Location,
    },
    /// The document has the marker key already.
    #[error("{at}: the trace is already retimed (it has the `{key}` key)")]
    AlreadyRetimed {
        /// Where the key is.
        at: Location,
        /// The marker key.
        key: String,
    },
}

/// Byte source with an offset, for errors.
struct Scan<R> {
    input: R,
    offset: u64,
    file: Arc<str>,
    event_index: Option<u64>,
}

impl<R: BufRead> Scan<R> {
    fn at(&self) -> Location {
        Location {
            file: self.file.clone(),
            byte_offset: self.offset,
            event_index: self.event_index,
        }
    }

    fn peek(&mut self) -> Result<Option<u8>, ReadError> {
        loop {
            match self.input.fill_buf() {
                Ok(buf) => return Ok(buf.first().copied()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(ReadError::Io {
                        at: self.at(),
                        source,
                    })
                }
            }
        }
    }

    fn next(&mut self) -> Result<Option<u8>, ReadError> {
        let byte = self.peek()?;
        if byte.is_some() {
            self.input.consume(1);
            self.offset += 1;
        }
        Ok(byte)
    }

    fn expect_next(&mut self, inside: &'static str) -> Result<u8, ReadError> {
        self.next()?.ok_or_else(|| ReadError::Truncated {
            at: self.at(),
            inside,
        })
    }

    fn syntax(&self, message: impl Into<String>) -> ReadError {
        ReadError::Syntax {
            at: self.at(),
            message: message.into(),
        }
    }

    /// Appends whitespace to `out`.
    fn whitespace(&mut self, out: &mut Vec<u8>) -> Result<(), ReadError> {
        while let Some(b) = self.peek()? {
            if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                break;
            }
            out.push(b);
            self.next()?;
        }
        Ok(())
    }

    /// Appends one complete JSON value (its first byte still unread) to `out`.
    fn value(&mut self, out: &mut Vec<u8>, inside: &'static str) -> Result<(), ReadError> {
        let first = self.expect_next(inside)?;
        out.push(first);
        match first {
            b'"' => self.string_rest(out, inside),
            b'{' | b'[' => {
                let mut depth = 1usize;
                while depth > 0 {
                    let b = self.expect_next(inside)?;
                    out.push(b);
                    match b {
                        b'"' => self.string_rest(out, inside)?,
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => depth -= 1,
                        _ => {}
                    }
                }
                Ok(())
            }
            b'-' | b'0'..=b'9' | b't' | b'f' | b'n' => {
                while let Some(b) = self.peek()? {
                    if matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                        break;
                    }
                    out.push(b);
                    self.next()?;
                }
                Ok(())
            }
            other => Err(self.syntax(format!("unexpected byte {:?}", other as char))),
        }
    }

    /// Appends the rest of a string whose opening quote was read (plain runs copied a
    /// buffer at a time).
    fn string_rest(&mut self, out: &mut Vec<u8>, inside: &'static str) -> Result<(), ReadError> {
        loop {
            let buf = match self.input.fill_buf() {
                Ok(buf) => buf,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(ReadError::Io {
                        at: self.at(),
                        source,
                    })
                }
            };
            if buf.is_empty() {
                return Err(ReadError::Truncated {
                    at: self.at(),
                    inside,
                });
            }
            let found = memchr::memchr2(b'"', b'\\', buf);
            let plain = found.unwrap_or(buf.len());
            out.extend_from_slice(&buf[..plain]);
            self.input.consume(plain);
            self.offset += plain as u64;
            if found.is_none() {
                continue;
            }
            if let Some(b) = self.next()? {
                out.push(b);
                match b {
                    b'\\' => out.push(self.expect_next(inside)?),
                    _ => return Ok(()),
                }
            }
        }
    }
}

/// Rewrites the trace document in `input` into `output` (see the module docs); `map_ns`
/// takes and returns absolute nanoseconds since the Unix epoch. `file` names the input
/// in errors.
pub fn retime(
    input: impl Read,
    mut output: impl Write,
    file: &str,
    options: &RetimeOptions<'_>,
    mut map_ns: impl FnMut(i64) -> i64,
) -> Result<RetimeStats, RetimeError> {
    let mut scan = Scan {
        input: BufReader::with_capacity(256 << 10, input),
        offset: 0,
        file: Arc::from(file),
        event_index: None,
    };
    let mut stats = RetimeStats::default();
    let mut out: Vec<u8> = Vec::with_capacity(64 << 10);
    let flush = |out: &mut Vec<u8>, output: &mut dyn Write| -> Result<(), RetimeError> {
        output.write_all(out).map_err(RetimeError::Write)?;
        out.clear();
        Ok(())
    };
    scan.whitespace(&mut out)?;
    if scan.expect_next("the top-level object")? != b'{' {
        return Err(scan.syntax("a trace document is a JSON object").into());
    }
    out.push(b'{');
    let mut base_ns: Option<i64> = options.base_time_ns;
    let mut events_seen = false;
    let mut members = 0usize;
    let mut event = Vec::new();
    // Whitespace before the closing brace goes after the marker.
    let mut closing_ws = Vec::new();
    loop {
        closing_ws.clear();
        scan.whitespace(&mut closing_ws)?;
        if scan.peek()? == Some(b'}') {
            break;
        }
        out.extend_from_slice(&closing_ws);
        match scan.peek()? {
            Some(b',') if members > 0 => {
                out.push(b',');
                scan.next()?;
                scan.whitespace(&mut out)?;
            }
            _ if members > 0 => return Err(scan.syntax("expected `,` or `}`").into()),
            _ => {}
        }
        let key_at = scan.at();
        let key_start = out.len();
        if scan.peek()? != Some(b'"') {
            return Err(scan.syntax("expected a key").into());
        }
        scan.value(&mut out, "the top-level object")?;
        let key = out[key_start + 1..out.len() - 1].to_vec();
        if let Some((marker, _)) = &options.marker {
            if key == marker.as_bytes() {
                return Err(RetimeError::AlreadyRetimed {
                    at: key_at,
                    key: marker.clone(),
                });
            }
        }
        scan.whitespace(&mut out)?;
        if scan.expect_next("the top-level object")? != b':' {
            return Err(scan.syntax("expected `:`").into());
        }
        out.push(b':');
        scan.whitespace(&mut out)?;
        members += 1;
        if key == b"traceEvents" && scan.peek()? == Some(b'[') {
            events_seen = true;
            scan.next()?;
            out.push(b'[');
            let mut index = 0u64;
            // Elements written (an event left out writes nothing: no comma before it,
            // no whitespace after the one before it).
            let mut written = 0u64;
            loop {
                let mark = out.len();
                scan.whitespace(&mut out)?;
                match scan.peek()? {
                    Some(b']') => {
                        scan.next()?;
                        if let Some(append) = options.append {
                            let context = AppendContext {
                                kept_span_ns: stats.kept_span_ns,
                                base_time_ns: base_ns,
                            };
                            append(&context, &mut |event: &Event<'_>| {
                                if written > 0 {
                                    out.push(b',');
                                }
                                out.extend_from_slice(b"\n  ");
                                crate::writer::write_event_json(&mut out, event, base_ns);
                                written += 1;
                                stats.appended += 1;
                            });
                        }
                        out.push(b']');
                        break;
                    }
                    Some(b',') if index > 0 => {
                        scan.next()?;
                        if written > 0 {
                            out.push(b',');
                        }
                        scan.whitespace(&mut out)?;
                    }
                    _ if index > 0 => return Err(scan.syntax("expected `,` or `]`").into()),
                    _ => {}
                }
                scan.event_index = Some(index);
                event.clear();
                scan.value(&mut event, "an event")?;
                stats.events += 1;
                if rewrite_event(&event, &mut out, base_ns, options, &mut map_ns, &mut stats) {
                    written += 1;
                } else {
                    // Nothing of it was flushed: `out` is flushed only between elements.
                    out.truncate(mark);
                }
                scan.event_index = None;
                index += 1;
                if out.len() >= 64 << 10 {
                    flush(&mut out, &mut output)?;
                }
            }
        } else {
            let value_start = out.len();
            scan.value(&mut out, "the top-level object")?;
            if key == b"baseTimeNanoseconds" {
                let value = std::str::from_utf8(&out[value_start..])
                    .ok()
                    .and_then(|t| t.parse::<i64>().ok());
                if events_seen && options.base_time_ns.is_none() && value.is_some() {
                    return Err(RetimeError::LateBaseTime { at: key_at });
                }
                base_ns = base_ns.or(value);
            }
        }
        if out.len() >= 64 << 10 {
            flush(&mut out, &mut output)?;
        }
    }
    scan.next()?;
    stats.bytes_in = scan.offset;
    if let Some((key, value)) = &options.marker {
        let value = value(&stats);
        // On a line of its own, indented like libkineto's metadata keys.
        if members > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"\n  \"");
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(b"\": ");
        out.extend_from_slice(value.as_bytes());
    }
    out.extend_from_slice(&closing_ws);
    out.push(b'}');
    scan.whitespace(&mut out)?;
    if scan.peek()?.is_some() {
        return Err(scan.syntax("text after the top-level object").into());
    }
    flush(&mut out, &mut output)?;
    output.flush().map_err(RetimeError::Write)?;
    stats.bytes_in = scan.offset;
    Ok(stats)
}

/// Byte ranges of one member's value in an event object.
#[derive(Debug, Clone, Copy, Default)]
struct Span {
    start: usize,
    end: usize,
}

/// Finds the values of `cat`, `ts` and `dur` among the top-level members of the event
/// object `text` (well-formed: [`Scan::value`] delimited it).
fn members(text: &[u8]) -> (Option<Span>, Option<Span>, Option<Span>) {
    let (mut cat, mut ts, mut dur) = (None, None, None);
    if text.first() != Some(&b'{') {
        return (cat, ts, dur);
    }
    let mut i = 1;
    let skip_ws = |i: &mut usize| {
        while *i < text.len() && matches!(text[*i], b' ' | b'\t' | b'\n' | b'\r') {
            *i += 1;
        }
    };
    let skip_string = |i: &mut usize| {
        // At the opening quote.
        *i += 1;
        while *i < text.len() {
            match text[*i] {
                b'\\' => *i += 2,
                b'"' => {
                    *i += 1;
                    return;
                }
                _ => *i += 1,
            }
        }
    };
    let skip_value = |i: &mut usize| {
        if *i >= text.len() {
            return;
        }
        match text[*i] {
            b'"' => skip_string(i),
            b'{' | b'[' => {
                let mut depth = 0usize;
                while *i < text.len() {
                    match text[*i] {
                        b'"' => {
                            skip_string(i);
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                *i += 1;
                                return;
                            }
                        }
                        _ => {}
                    }
                    *i += 1;
                }
            }
            _ => {
                while *i < text.len()
                    && !matches!(text[*i], b',' | b'}' | b' ' | b'\t' | b'\n' | b'\r')
                {
                    *i += 1;
                }
            }
        }
    };
    loop {
        skip_ws(&mut i);
        if i >= text.len() || text[i] != b'"' {
            return (cat, ts, dur);
        }
        let key_start = i + 1;
        skip_string(&mut i);
        let key = &text[key_start..i.saturating_sub(1)];
        skip_ws(&mut i);
        if i >= text.len() || text[i] != b':' {
            return (cat, ts, dur);
        }
        i += 1;
        skip_ws(&mut i);
        let start = i;
        skip_value(&mut i);
        let span = Some(Span { start, end: i });
        match key {
            b"cat" => cat = span,
            b"ts" => ts = span,
            b"dur" => dur = span,
            _ => {}
        }
        skip_ws(&mut i);
        if i < text.len() && text[i] == b',' {
            i += 1;
        } else {
            return (cat, ts, dur);
        }
    }
}

/// Digits after the decimal point of a plain decimal number (`None` for exponents).
fn decimals(text: &[u8]) -> Option<usize> {
    if text.iter().any(|b| matches!(b, b'e' | b'E')) {
        return None;
    }
    Some(
        text.iter()
            .position(|&b| b == b'.')
            .map_or(0, |dot| text.len() - dot - 1),
    )
}

/// Writes `ns` as microseconds with at least `min_decimals` decimals (at most 3) and
/// as many more as the value needs: `(68_000, 1)` → `68.0`, `(68_500, 0)` → `68.5`,
/// `(12_300, 3)` → `12.300`.
fn write_us(out: &mut Vec<u8>, ns: i64, min_decimals: usize) {
    let magnitude = i128::from(ns).unsigned_abs();
    if ns < 0 {
        out.push(b'-');
    }
    out.extend_from_slice((magnitude / 1000).to_string().as_bytes());
    let frac = format!("{:03}", magnitude % 1000);
    let needed = frac.trim_end_matches('0').len();
    let decimals = needed.max(min_decimals.min(3));
    if decimals > 0 {
        out.push(b'.');
        out.extend_from_slice(&frac.as_bytes()[..decimals]);
    }
}

/// Writes `new_ns` in the spelling of `old_text` (the same text when the value is the
/// same).
fn write_like(out: &mut Vec<u8>, old_text: &[u8], old_ns: i64, new_ns: i64) {
    if new_ns == old_ns {
        out.extend_from_slice(old_text);
    } else {
        write_us(out, new_ns, decimals(old_text).unwrap_or(0));
    }
}

fn number_ns(text: &[u8]) -> Option<i64> {
    parse_us_to_ns(std::str::from_utf8(text).ok()?).ok()
}

/// Writes `event` retimed (or as it is) to `out`; returns false, writing nothing, for an
/// event [`RetimeOptions::drop`] leaves out.
fn rewrite_event(
    event: &[u8],
    out: &mut Vec<u8>,
    base_ns: Option<i64>,
    options: &RetimeOptions<'_>,
    map_ns: &mut impl FnMut(i64) -> i64,
    stats: &mut RetimeStats,
) -> bool {
    let (cat, ts, dur) = members(event);
    let kept = cat.is_some_and(|c| {
        let value = &event[c.start..c.end];
        value.len() >= 2
            && options
                .keep_categories
                .iter()
                .any(|k| k.as_bytes() == &value[1..value.len() - 1])
    });
    let Some(ts) = ts.filter(|_| !kept) else {
        if kept {
            stats.kept += 1;
            let time = |span: Option<Span>| span.and_then(|s| number_ns(&event[s.start..s.end]));
            if let Some(start) = time(ts) {
                let start = start.saturating_add(base_ns.unwrap_or(0));
                let end = start.saturating_add(time(dur).unwrap_or(0).max(0));
                stats.kept_span_ns = Some(match stats.kept_span_ns {
                    Some((first, last)) => (first.min(start), last.max(end)),
                    None => (start, end),
                });
            }
        }
        out.extend_from_slice(event);
        return true;
    };
    let ts_text = &event[ts.start..ts.end];
    let Some(ts_rel_ns) = number_ns(ts_text) else {
        out.extend_from_slice(event);
        return true;
    };
    let base = base_ns.unwrap_or(0);
    let start_ns = ts_rel_ns.saturating_add(base);
    if let (Some(drop), Some(cat), Some(dur_ns)) = (
        options.drop,
        cat,
        dur.and_then(|d| number_ns(&event[d.start..d.end])),
    ) {
        let cat = &event[cat.start..cat.end];
        if cat.len() >= 2
            && drop(
                &cat[1..cat.len() - 1],
                start_ns,
                start_ns.saturating_add(dur_ns),
            )
        {
            stats.dropped += 1;
            return false;
        }
    }
    let new_start_ns = map_ns(start_ns);
    // Spans to replace, in order: ts, then dur (when present and a number).
    let mut replacements: Vec<(Span, Vec<u8>)> = Vec::with_capacity(2);
    let mut text = Vec::with_capacity(24);
    write_like(
        &mut text,
        ts_text,
        ts_rel_ns,
        new_start_ns.saturating_sub(base),
    );
    replacements.push((ts, text));
    if let Some(dur) = dur {
        let dur_text = &event[dur.start..dur.end];
        if let Some(dur_ns) = number_ns(dur_text) {
            let new_end_ns = map_ns(start_ns.saturating_add(dur_ns));
            let mut text = Vec::with_capacity(16);
            let new_dur_ns = new_end_ns.saturating_sub(new_start_ns).max(0);
            write_like(&mut text, dur_text, dur_ns, new_dur_ns);
            replacements.push((dur, text));
        }
    }
    replacements.sort_by_key(|(span, _)| span.start);
    let mut at = 0;
    for (span, text) in replacements {
        out.extend_from_slice(&event[at..span.start]);
        out.extend_from_slice(&text);
        at = span.end;
    }
    out.extend_from_slice(&event[at..]);
    stats.retimed += 1;
    true
}

/// The top-level `baseTimeNanoseconds` of the document in `input`, skipping everything
/// else (a pre-scan for documents that write it after their events).
fn find_base_time(input: impl Read, file: &str) -> Result<Option<i64>, ReadError> {
    let mut scan = Scan {
        input: BufReader::with_capacity(256 << 10, input),
        offset: 0,
        file: Arc::from(file),
        event_index: None,
    };
    let mut scratch = Vec::new();
    scan.whitespace(&mut scratch)?;
    if scan.expect_next("the top-level object")? != b'{' {
        return Ok(None);
    }
    loop {
        scan.whitespace(&mut scratch)?;
        match scan.peek()? {
            Some(b'}') | None => return Ok(None),
            Some(b',') => {
                scan.next()?;
                scan.whitespace(&mut scratch)?;
            }
            _ => {}
        }
        scratch.clear();
        scan.value(&mut scratch, "the top-level object")?;
        let is_base = scratch == b"\"baseTimeNanoseconds\"";
        scan.whitespace(&mut scratch)?;
        if scan.expect_next("the top-level object")? != b':' {
            return Err(scan.syntax("expected `:`"));
        }
        scan.whitespace(&mut scratch)?;
        scratch.clear();
        scan.value(&mut scratch, "the top-level object")?;
        if is_base {
            return Ok(std::str::from_utf8(&scratch)
                .ok()
                .and_then(|t| t.parse().ok()));
        }
        scratch.clear();
    }
}

fn open_text(path: &Path, at: &dyn Fn() -> Location) -> Result<(Box<dyn Read>, bool), ReadError> {
    let file = File::open(path).map_err(|source| ReadError::Io { at: at(), source })?;
    let mut reader = BufReader::with_capacity(256 << 10, file);
    let is_gzip = reader
        .fill_buf()
        .map_err(|source| ReadError::Io { at: at(), source })?
        .starts_with(&[0x1f, 0x8b]);
    Ok(if is_gzip {
        (Box::new(MultiGzDecoder::new(reader)), true)
    } else {
        (Box::new(reader), false)
    })
}

/// Retimes the trace file at `path` in place (plain JSON or gzip, detected by content;
/// written to a temporary file next to it, then renamed over it). A document whose
/// `baseTimeNanoseconds` comes after its events (or has none) is read twice.
pub fn retime_path(
    path: &Path,
    options: &RetimeOptions<'_>,
    map_ns: impl FnMut(i64) -> i64,
) -> Result<RetimeStats, RetimeError> {
    let name = path.display().to_string();
    let at = || Location {
        file: Arc::from(name.as_str()),
        byte_offset: 0,
        event_index: None,
    };
    let mut options = options.clone();
    if options.base_time_ns.is_none() {
        // Stops at the key, which libkineto writes before the events.
        let (reader, _) = open_text(path, &at)?;
        options.base_time_ns = find_base_time(reader, &name)?;
    }
    let (reader, is_gzip) = open_text(path, &at)?;
    let options = &options;
    let tmp = path.with_file_name(format!(
        ".{}.retime-{}",
        path.file_name()
            .map_or_else(|| "trace".into(), |n| n.to_string_lossy()),
        std::process::id()
    ));
    let result = (|| {
        let out = BufWriter::new(File::create(&tmp).map_err(RetimeError::Write)?);
        let stats = if is_gzip {
            let mut gz = GzEncoder::new(out, flate2::Compression::default());
            let stats = retime(reader, &mut gz, &name, options, map_ns)?;
            gz.finish()
                .and_then(|mut w| w.flush())
                .map_err(RetimeError::Write)?;
            stats
        } else {
            let mut out = out;
            let stats = retime(reader, &mut out, &name, options, map_ns)?;
            out.flush().map_err(RetimeError::Write)?;
            stats
        };
        std::fs::rename(&tmp, path).map_err(RetimeError::Write)?;
        Ok(stats)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str, keep: &[&str], map: impl FnMut(i64) -> i64) -> (String, RetimeStats) {
        let marker = |_: &RetimeStats| "{\"n\": 1}".to_owned();
        let options = RetimeOptions {
            keep_categories: keep.iter().map(|s| s.to_string()).collect(),
            marker: Some(("retimed".into(), &marker)),
            base_time_ns: None,
            append: None,
            drop: None,
        };
        let mut out = Vec::new();
        let stats = retime(text.as_bytes(), &mut out, "t.json", &options, map).unwrap();
        (String::from_utf8(out).unwrap(), stats)
    }

    #[test]
    fn appended_events_go_last_relative_to_the_base_and_see_the_kept_span() {
        let text = r#"{"baseTimeNanoseconds": 1000000, "traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 50},
  {"ph": "X", "cat": "kernel", "name": "k", "ts": 12.5, "dur": 3},
  {"ph": "X", "cat": "kernel", "name": "k", "ts": 20, "dur": 1.25}
]}"#;
        let seen = std::cell::Cell::new(None);
        let append = |context: &AppendContext, sink: &mut dyn FnMut(&Event<'_>)| {
            seen.set(Some(*context));
            let (start, _) = context.kept_span_ns.unwrap();
            sink(&Event::complete(
                crate::Category::Other("neuron_instruction".into()),
                "matmul",
                0i64,
                1000i64,
                start + 500,
                1_500,
            ));
        };
        let options = RetimeOptions {
            keep_categories: vec!["kernel".into()],
            append: Some(&append),
            ..Default::default()
        };
        let mut out = Vec::new();
        let stats = retime(text.as_bytes(), &mut out, "t.json", &options, |t| t).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert_eq!(
            seen.get(),
            Some(AppendContext {
                kept_span_ns: Some((1_012_500, 1_021_250)),
                base_time_ns: Some(1_000_000),
            })
        );
        assert_eq!((stats.events, stats.kept, stats.appended), (3, 2, 1));
        let value: serde_json::Value = serde_json::from_str(&out).expect(&out);
        let events = value["traceEvents"].as_array().unwrap();
        assert_eq!(events.len(), 4);
        assert_eq!(events[3]["cat"], "neuron_instruction");
        assert_eq!(events[3]["ts"].as_f64(), Some(13.0));
        assert_eq!(events[3]["dur"].as_f64(), Some(1.5));
        // Nothing to add into an empty array: still a valid document.
        let empty = |_: &AppendContext, _: &mut dyn FnMut(&Event<'_>)| {};
        let options = RetimeOptions {
            append: Some(&empty),
            ..Default::default()
        };
        let mut out = Vec::new();
        retime(
            &br#"{"traceEvents": []}"#[..],
            &mut out,
            "e.json",
            &options,
            |t| t,
        )
        .unwrap();
        assert_eq!(out, br#"{"traceEvents": []}"#);
    }

    #[test]
    fn events_left_out_take_their_comma_and_are_counted() {
        // Host ops inside [100, 200) µs (relative) are left out, whatever the kernel's
        // times; instants (no `dur`) and kept categories are never asked about.
        let text = r#"{"baseTimeNanoseconds": 0, "traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "in0", "ts": 100, "dur": 5},
  {"ph": "X", "cat": "cpu_op", "name": "out", "ts": 90, "dur": 200},
  {"ph": "X", "cat": "cpu_op", "name": "in1", "ts": 120, "dur": 0},
  {"ph": "X", "cat": "kernel", "name": "k", "ts": 110, "dur": 1},
  {"ph": "i", "cat": "cpu_op", "name": "instant", "ts": 130},
  {"ph": "X", "cat": "python_function", "name": "in2", "ts": 150, "dur": 50}
]}"#;
        let asked = std::cell::RefCell::new(Vec::new());
        let drop = |cat: &[u8], start: i64, end: i64| {
            asked
                .borrow_mut()
                .push(String::from_utf8_lossy(cat).into_owned());
            start >= 100_000 && end <= 200_000
        };
        let options = RetimeOptions {
            keep_categories: vec!["kernel".into()],
            drop: Some(&drop),
            ..Default::default()
        };
        let mut out = Vec::new();
        let stats = retime(text.as_bytes(), &mut out, "t.json", &options, |t| t).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert_eq!(
            out,
            r#"{"baseTimeNanoseconds": 0, "traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "out", "ts": 90, "dur": 200},
  {"ph": "X", "cat": "kernel", "name": "k", "ts": 110, "dur": 1},
  {"ph": "i", "cat": "cpu_op", "name": "instant", "ts": 130}
]}"#
        );
        assert_eq!(
            (stats.events, stats.dropped, stats.retimed, stats.kept),
            (6, 3, 2, 1)
        );
        assert_eq!(
            *asked.borrow(),
            ["cpu_op", "cpu_op", "cpu_op", "python_function"]
        );
        // Every event left out: an empty array, still a document.
        let all = |_: &[u8], _: i64, _: i64| true;
        let options = RetimeOptions {
            drop: Some(&all),
            ..Default::default()
        };
        let mut out = Vec::new();
        let text = r#"{"traceEvents": [{"ph": "X", "cat": "a", "ts": 1, "dur": 1}, {"ph": "X", "cat": "b", "ts": 2, "dur": 1}]}"#;
        let stats = retime(text.as_bytes(), &mut out, "t.json", &options, |t| t).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), r#"{"traceEvents": []}"#);
        assert_eq!((stats.events, stats.dropped), (2, 2));
    }

    #[test]
    fn only_host_times_change_and_spellings_are_kept() {
        let text = r#"{
  "schemaVersion": 1,
  "baseTimeNanoseconds": 1000000,
  "traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 10.5, "dur": 20, "args": {"ts": 3}},
  {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 0, "ts": 12.250, "dur": 3.000},
  {"ph":"i","cat":"cpu_instant_event","s":"t","name":"[memory]","ts":15.000},
  {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "ts": 0, "args": {"name": "x}\""}}
  ],
  "traceName": "t.json"
}
"#;
        // Everything after 12 µs (relative) moves back by 2 µs.
        let (out, stats) = run(text, &["kernel"], |ns| {
            if ns > 1_012_000 {
                (ns - 2_000).max(1_012_000)
            } else {
                ns
            }
        });
        let expected = text
            .replace(r#""ts": 10.5, "dur": 20,"#, r#""ts": 10.5, "dur": 18,"#)
            .replace(r#""ts":15.000"#, r#""ts":13.000"#)
            .replace(
                "\"traceName\": \"t.json\"\n}",
                "\"traceName\": \"t.json\",\n  \"retimed\": {\"n\": 1}\n}",
            );
        assert_eq!(out, expected);
        assert_eq!(
            stats,
            RetimeStats {
                events: 4,
                retimed: 3,
                kept: 1,
                appended: 0,
                dropped: 0,
                // The kernel: 12.25 µs for 3 µs after the 1 ms base.
                kept_span_ns: Some((1_012_250, 1_015_250)),
                bytes_in: text.len() as u64,
            }
        );
    }

    #[test]
    fn absolute_times_without_a_base_and_the_python_exporters_layout() {
        let text = r#"{"traceEvents":[{"ph":"X","cat":"user_annotation","name":"s","pid":1,"tid":1,"ts":1700000000000.001,"dur":0.999},{"ph":"s","id":1,"pid":1,"tid":1,"ts":1700000000000.500,"cat":"fwdbwd","name":"fwdbwd"}]}"#;
        let (out, _) = run(text, &[], |ns| ns + 1);
        assert!(
            out.starts_with(r#"{"traceEvents":[{"ph":"X","cat":"user_annotation","name":"s","pid":1,"tid":1,"ts":1700000000000.002,"dur":0.999},{"ph":"s","id":1,"pid":1,"tid":1,"ts":1700000000000.501,"#),
            "{out}"
        );
    }

    #[test]
    fn a_retimed_trace_is_refused_and_damage_says_where() {
        let marker = |stats: &RetimeStats| stats.events.to_string();
        let options = RetimeOptions {
            marker: Some(("retimed".into(), &marker)),
            ..Default::default()
        };
        let retimed = r#"{"traceEvents": [], "retimed": 1}"#;
        let err = retime(retimed.as_bytes(), Vec::new(), "a.json", &options, |t| t).unwrap_err();
        assert!(matches!(err, RetimeError::AlreadyRetimed { .. }), "{err}");
        let cut = r#"{"traceEvents": [{"ph": "X", "ts": 1}, {"ph": "X", "ts""#;
        let err = retime(cut.as_bytes(), Vec::new(), "b.json", &options, |t| t).unwrap_err();
        let RetimeError::Read(err) = err else {
            panic!("{err}")
        };
        assert_eq!(err.location().event_index, Some(1), "{err}");
        assert!(err.to_string().contains("b.json"), "{err}");
    }
}
