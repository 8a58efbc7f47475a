//! An output that is either plain or gzip-compressed.

use std::io::{self, Write};

use flate2::write::GzEncoder;

/// A byte sink that compresses with gzip or passes bytes through.
#[derive(Debug)]
pub struct Output<W: Write>(Repr<W>);

// The encoder is boxed: with flate2's zlib-rs backend (which the workspace's Parquet
// codecs turn on) it is hundreds of bytes, and one allocation per writer is nothing.
#[derive(Debug)]
enum Repr<W: Write> {
    Plain(W),
    Gzip(Box<GzEncoder<W>>),
}

impl<W: Write> Output<W> {
    /// Passes bytes through to `inner`.
    pub fn plain(inner: W) -> Self {
        Output(Repr::Plain(inner))
    }

    /// Gzip-compresses into `inner` (default compression level).
    pub fn gzip(inner: W) -> Self {
        Output(Repr::Gzip(Box::new(GzEncoder::new(
            inner,
            flate2::Compression::default(),
        ))))
    }

    /// Ends the gzip stream (if any), flushes, and returns the inner writer.
    pub fn close(self) -> io::Result<W> {
        let mut inner = match self.0 {
            Repr::Plain(inner) => inner,
            Repr::Gzip(encoder) => encoder.finish()?,
        };
        inner.flush()?;
        Ok(inner)
    }
}

impl<W: Write> Write for Output<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.0 {
            Repr::Plain(inner) => inner.write(buf),
            Repr::Gzip(encoder) => encoder.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match &mut self.0 {
            Repr::Plain(inner) => inner.write_all(buf),
            Repr::Gzip(encoder) => encoder.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.0 {
            Repr::Plain(inner) => inner.flush(),
            Repr::Gzip(encoder) => encoder.flush(),
        }
    }
}
