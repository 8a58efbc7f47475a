//! The byte source: a file, a slice or any reader, gunzipped when it starts with gzip's
//! magic bytes, read through one reusable buffer.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::PathBuf;
use std::sync::Arc;

use flate2::bufread::MultiGzDecoder;

use crate::error::{Location, ReadError};

/// Where a trace comes from.
pub(crate) enum Source<'s> {
    /// A file, opened (and re-opened for the pre-scan) by path.
    Path(PathBuf),
    /// Bytes in memory.
    Slice(&'s [u8]),
    /// Any reader; read once, so no pre-scan.
    Reader(Box<dyn Read + 's>),
}

impl Source<'_> {
    /// Whether the source can be read a second time (for the `baseTimeNanoseconds` pre-scan).
    pub(crate) fn can_reopen(&self) -> bool {
        !matches!(self, Source::Reader(_))
    }
}

/// gzip's magic bytes (RFC 1952).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// The buffer size (it grows only for a single value larger than this).
const BUFFER: usize = 4 << 20;

/// An opened source.
pub(crate) struct Opened<'s> {
    /// The text (decompressed if needed).
    pub(crate) reader: Box<dyn Read + 's>,
    /// Whether it was gzip.
    pub(crate) is_gzip: bool,
    /// The length of the raw input, when known.
    pub(crate) size_hint: Option<u64>,
}

/// Opens `source` (or re-opens a path / slice), detecting gzip by content.
pub(crate) fn open<'s>(source: &mut Source<'s>, file: &Arc<str>) -> Result<Opened<'s>, ReadError> {
    let io_err = |source| ReadError::Io {
        at: Location {
            file: file.clone(),
            byte_offset: 0,
            event_index: None,
        },
        source,
    };
    match source {
        Source::Path(path) => {
            let f = File::open(&*path).map_err(io_err)?;
            let len = f.metadata().ok().map(|m| m.len());
            let mut reader = BufReader::with_capacity(256 << 10, f);
            let is_gzip = reader.fill_buf().map_err(io_err)?.starts_with(&GZIP_MAGIC);
            if is_gzip {
                Ok(Opened {
                    reader: Box::new(MultiGzDecoder::new(reader)),
                    is_gzip: true,
                    size_hint: len,
                })
            } else {
                Ok(Opened {
                    reader: Box::new(reader),
                    is_gzip: false,
                    size_hint: len,
                })
            }
        }
        Source::Slice(bytes) => {
            let bytes: &'s [u8] = bytes;
            let len = Some(bytes.len() as u64);
            if bytes.starts_with(&GZIP_MAGIC) {
                Ok(Opened {
                    reader: Box::new(MultiGzDecoder::new(bytes)),
                    is_gzip: true,
                    size_hint: len,
                })
            } else {
                Ok(Opened {
                    reader: Box::new(bytes),
                    is_gzip: false,
                    size_hint: len,
                })
            }
        }
        Source::Reader(reader) => {
            let reader = std::mem::replace(reader, Box::new(io::empty()));
            let mut reader = BufReader::with_capacity(256 << 10, reader);
            let is_gzip = reader.fill_buf().map_err(io_err)?.starts_with(&GZIP_MAGIC);
            if is_gzip {
                Ok(Opened {
                    reader: Box::new(MultiGzDecoder::new(reader)),
                    is_gzip: true,
                    size_hint: None,
                })
            } else {
                Ok(Opened {
                    reader: Box::new(reader),
                    is_gzip: false,
                    size_hint: None,
                })
            }
        }
    }
}

/// A window over the decompressed JSON text: `buf[pos..end]` is unread.
pub(crate) struct Input<'s> {
    reader: Box<dyn Read + 's>,
    is_gzip: bool,
    file: Arc<str>,
    pub(crate) buf: Vec<u8>,
    pub(crate) pos: usize,
    pub(crate) end: usize,
    /// Offset in the text of `buf[0]`.
    base: u64,
    pub(crate) eof: bool,
    max_value_bytes: usize,
    /// An error a parallel read's scanner got from the reader while reading ahead; the
    /// next refill that needs the reader returns it, located where that refill is (see
    /// `super::parallel`).
    stashed: Option<io::Error>,
    /// Text put back by a parallel read (see [`Input::put_back`]) and how much of it
    /// was served: refills take from it before the reader.
    pending: Option<(Vec<u8>, usize)>,
}

impl<'s> Input<'s> {
    /// `size_hint`: the input's length when known, to size the buffer for small inputs.
    pub(crate) fn new(
        reader: Box<dyn Read + 's>,
        is_gzip: bool,
        file: Arc<str>,
        max_value_bytes: usize,
        size_hint: Option<u64>,
    ) -> Self {
        let size = match size_hint {
            Some(len) if !is_gzip => usize::try_from(len).unwrap_or(BUFFER).saturating_add(64),
            _ => BUFFER,
        };
        Input {
            reader,
            is_gzip,
            file,
            buf: vec![0; size.clamp(256, BUFFER).min(max_value_bytes.max(256))],
            pos: 0,
            end: 0,
            base: 0,
            eof: false,
            max_value_bytes,
            stashed: None,
            pending: None,
        }
    }

    /// The text offset of `buf[index]`.
    pub(crate) fn offset_of(&self, index: usize) -> u64 {
        self.base + index as u64
    }

    /// Puts back text that a parallel read had scanned past: `text` is the text from
    /// offset `offset` up to `buf[from]`. Afterwards the buffer is empty at `offset`, and
    /// refills serve that text, then `buf[from..end]`, then the reader again. The buffer
    /// keeps its size, so values hit the size limit exactly where a sequential read's do.
    pub(crate) fn put_back(&mut self, mut text: Vec<u8>, from: usize, offset: u64) {
        debug_assert_eq!(offset + text.len() as u64, self.offset_of(from));
        text.extend_from_slice(&self.buf[from..self.end]);
        if let Some((rest, at)) = self.pending.take() {
            text.extend_from_slice(&rest[at..]);
        }
        if !text.is_empty() {
            self.pending = Some((text, 0));
        }
        self.pos = 0;
        self.end = 0;
        self.base = offset;
        self.eof = false;
    }

    /// The bytes not yet consumed.
    pub(crate) fn unread(&self) -> &[u8] {
        &self.buf[self.pos..self.end]
    }

    /// Reads more text after `end`, keeping `buf[pos..end]`. Returns `false` at the end of
    /// the input. Fails if one value would need more than the configured limit.
    pub(crate) fn refill(&mut self, event_index: Option<u64>) -> Result<bool, ReadError> {
        if self.eof {
            return Ok(false);
        }
        if self.pos > 0 {
            // What is left is at most one partial value: cheap to move.
            self.buf.copy_within(self.pos..self.end, 0);
            self.base += self.pos as u64;
            self.end -= self.pos;
            self.pos = 0;
        }
        if self.end == self.buf.len() {
            if self.end >= self.max_value_bytes {
                return Err(ReadError::TooLarge {
                    at: self.location(self.pos, event_index),
                    limit_bytes: self.max_value_bytes,
                });
            }
            let new_len = (self.buf.len() * 2).min(self.max_value_bytes.max(self.buf.len() + 1));
            self.buf.resize(new_len, 0);
        }
        // Put-back text first; then the reader fills what room is left, as it would have
        // in a sequential read (error messages quote what the buffer holds).
        let mut served = false;
        if let Some((text, at)) = &mut self.pending {
            let n = (text.len() - *at).min(self.buf.len() - self.end);
            self.buf[self.end..self.end + n].copy_from_slice(&text[*at..*at + n]);
            *at += n;
            let exhausted = *at == text.len();
            if exhausted {
                self.pending = None;
            }
            self.end += n;
            served = n > 0;
            if !exhausted || self.end == self.buf.len() {
                return Ok(true);
            }
        }
        if let Some(source) = self.stashed.take() {
            if served {
                self.stashed = Some(source);
                return Ok(true);
            }
            return Err(self.reader_error(source, event_index));
        }
        loop {
            match self.reader.read(&mut self.buf[self.end..]) {
                Ok(0) if served => return Ok(true),
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(source) if served => {
                    self.stashed = Some(source);
                    return Ok(true);
                }
                Err(source) => return Err(self.reader_error(source, event_index)),
            }
        }
    }

    /// Keeps the reader's error behind `e` for the next refill that needs the reader;
    /// returns `e` back if it is not a reader error.
    pub(crate) fn stash(&mut self, e: ReadError) -> Option<ReadError> {
        match e {
            ReadError::Io { source, .. } | ReadError::Gzip { source, .. } => {
                self.stashed = Some(source);
                None
            }
            other => Some(other),
        }
    }

    /// The error for a failed read of the reader, at the end of the text read so far.
    fn reader_error(&self, source: io::Error, event_index: Option<u64>) -> ReadError {
        let at = self.location(self.end, event_index);
        if self.is_gzip {
            ReadError::Gzip { at, source }
        } else {
            ReadError::Io { at, source }
        }
    }

    /// Skips whitespace (and a UTF-8 byte order mark at the very start), refilling as
    /// needed; returns the next byte without consuming it, or `None` at the end.
    pub(crate) fn peek_significant(
        &mut self,
        event_index: Option<u64>,
    ) -> Result<Option<u8>, ReadError> {
        loop {
            while self.pos < self.end {
                match self.buf[self.pos] {
                    b' ' | b'\t' | b'\n' | b'\r' => self.pos += 1,
                    0xEF if self.offset_of(self.pos) == 0 => {
                        if self.end - self.pos < 3 && !self.eof {
                            break;
                        }
                        if self.buf[self.pos..self.end].starts_with(&[0xEF, 0xBB, 0xBF]) {
                            self.pos += 3;
                        } else {
                            return Ok(Some(0xEF));
                        }
                    }
                    b => return Ok(Some(b)),
                }
            }
            if !self.refill(event_index)? {
                return Ok(None);
            }
        }
    }

    /// A location at `buf[index]`.
    pub(crate) fn location(&self, index: usize, event_index: Option<u64>) -> Location {
        Location {
            file: self.file.clone(),
            byte_offset: self.offset_of(index),
            event_index,
        }
    }
}
