//! A POSIX ustar writer for regular files, streaming: a member's header is written with
//! a zero size, its bytes go straight to the output, and the header is patched with
//! the size once the member ends (so a member of any length needs no buffer).
//!
//! Format facts (POSIX.1-1988 ustar, as `tar` and Perfetto's archive reader read it):
//! 512-byte blocks; a header block names the member (`name`, 100 bytes, NUL-padded),
//! its mode, owner ids, size and modification time as NUL-terminated octal, a checksum
//! (the sum of the header's bytes with the checksum field read as eight spaces, written
//! as six octal digits, NUL, space), the type flag `'0'` (regular file), the magic
//! `"ustar\0"` and version `"00"`; the member's bytes follow, padded with zeros to a
//! whole block; two zero blocks end the archive. A size field of 11 octal digits holds
//! sizes below 8 GiB; a larger member is refused rather than written in an extension
//! some readers lack.

use std::io::{self, Seek, SeekFrom, Write};

/// Bytes in a tar block.
pub const BLOCK: u64 = 512;

/// Largest member size an 11-digit octal field holds.
const MAX_SIZE: u64 = (1 << 33) - 1;

/// A tar archive being written into `out`, member by member.
#[derive(Debug)]
pub struct TarWriter<W: Write + Seek> {
    out: W,
    /// The open member: where its header starts, its name, and its bytes so far.
    open: Option<(u64, String, u64)>,
    mtime_s: u64,
}

impl<W: Write + Seek> TarWriter<W> {
    /// An archive written from the current position of `out`; members get `mtime_s`
    /// (seconds since the Unix epoch) as their modification time.
    pub fn new(out: W, mtime_s: u64) -> Self {
        TarWriter {
            out,
            open: None,
            mtime_s,
        }
    }

    /// Starts a member named `name` (at most 100 bytes, no NUL); write its bytes with
    /// [`Write`], then call [`TarWriter::end_member`].
    pub fn begin_member(&mut self, name: &str) -> io::Result<()> {
        if self.open.is_some() {
            return Err(io::Error::other("tar: a member is still open"));
        }
        if name.is_empty() || name.len() > 100 || name.contains('\0') {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("tar: member name {name:?} must be 1 to 100 bytes without NUL"),
            ));
        }
        let at = self.out.stream_position()?;
        self.out.write_all(&header(name, 0, self.mtime_s))?;
        self.open = Some((at, name.to_owned(), 0));
        Ok(())
    }

    /// Ends the open member: pads it to a whole block and writes its size into its
    /// header. Returns the member's size.
    pub fn end_member(&mut self) -> io::Result<u64> {
        let (at, name, size) = self
            .open
            .take()
            .ok_or_else(|| io::Error::other("tar: no member is open"))?;
        if size > MAX_SIZE {
            return Err(io::Error::other(format!(
                "tar: member {name} is {size} bytes, above the 8 GiB a ustar header holds"
            )));
        }
        let padding = (BLOCK - size % BLOCK) % BLOCK;
        self.out
            .write_all(&[0; BLOCK as usize][..padding as usize])?;
        let end = self.out.stream_position()?;
        self.out.seek(SeekFrom::Start(at))?;
        self.out.write_all(&header(&name, size, self.mtime_s))?;
        self.out.seek(SeekFrom::Start(end))?;
        Ok(size)
    }

    /// Writes a whole member at once.
    pub fn add_member(&mut self, name: &str, bytes: &[u8]) -> io::Result<u64> {
        self.begin_member(name)?;
        self.write_all(bytes)?;
        self.end_member()
    }

    /// Writes the end of the archive (two zero blocks) and returns the output.
    pub fn finish(mut self) -> io::Result<W> {
        if let Some((_, name, _)) = &self.open {
            return Err(io::Error::other(format!("tar: member {name} not ended")));
        }
        self.out.write_all(&[0; 2 * BLOCK as usize])?;
        self.out.flush()?;
        Ok(self.out)
    }
}

impl<W: Write + Seek> Write for TarWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let Some((_, _, size)) = &mut self.open else {
            return Err(io::Error::other("tar: bytes written outside a member"));
        };
        let n = self.out.write(buf)?;
        *size += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Writes `value` as `width - 1` octal digits and a NUL into `field`.
fn octal(field: &mut [u8], value: u64) {
    let digits = field.len() - 1;
    let text = format!("{value:0digits$o}");
    field[..digits].copy_from_slice(text.as_bytes());
    field[digits] = 0;
}

/// The header block of a regular file.
fn header(name: &str, size: u64, mtime_s: u64) -> [u8; BLOCK as usize] {
    let mut block = [0u8; BLOCK as usize];
    block[..name.len()].copy_from_slice(name.as_bytes());
    octal(&mut block[100..108], 0o644); // mode
    octal(&mut block[108..116], 0); // uid
    octal(&mut block[116..124], 0); // gid
    octal(&mut block[124..136], size.min(MAX_SIZE));
    octal(&mut block[136..148], mtime_s.min(MAX_SIZE));
    block[156] = b'0'; // regular file
    block[257..263].copy_from_slice(b"ustar\0");
    block[263..265].copy_from_slice(b"00");
    // The checksum is summed with its own field as spaces.
    block[148..156].copy_from_slice(b"        ");
    let sum: u32 = block.iter().map(|&b| u32::from(b)).sum();
    let text = format!("{sum:06o}\0 ");
    block[148..156].copy_from_slice(text.as_bytes());
    block
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    #[test]
    fn members_are_block_aligned_with_their_sizes_in_octal() {
        let mut tar = TarWriter::new(Cursor::new(Vec::new()), 0o1234);
        tar.add_member("a.json", b"{}").unwrap();
        tar.begin_member("b.bin").unwrap();
        tar.write_all(&[7; 600]).unwrap();
        assert_eq!(tar.end_member().unwrap(), 600);
        let bytes = tar.finish().unwrap().into_inner();
        // a: header + 1 block; b: header + 2 blocks; end: 2 blocks.
        assert_eq!(bytes.len(), 512 * 7);
        assert_eq!(&bytes[..6], b"a.json");
        assert_eq!(&bytes[124..136], b"00000000002\0");
        assert_eq!(&bytes[136..148], b"00000001234\0");
        assert_eq!(&bytes[257..265], b"ustar\x0000");
        assert_eq!(&bytes[512..514], b"{}");
        assert_eq!(&bytes[1024 + 124..1024 + 136], b"00000001130\0"); // 600
        assert!(bytes[512 * 5..].iter().all(|&b| b == 0));
        // The checksum: the header's byte sum with the field as spaces.
        let head = &bytes[..512];
        let sum: u32 = head[..148]
            .iter()
            .chain(head[156..].iter())
            .map(|&b| u32::from(b))
            .sum::<u32>()
            + 8 * u32::from(b' ');
        assert_eq!(&head[148..156], format!("{sum:06o}\0 ").as_bytes());
    }

    #[test]
    fn misuse_is_an_error_not_a_broken_archive() {
        let mut tar = TarWriter::new(Cursor::new(Vec::new()), 0);
        assert!(tar.write_all(b"x").is_err(), "bytes outside a member");
        assert!(tar.end_member().is_err());
        assert!(tar.begin_member(&"n".repeat(101)).is_err());
        tar.begin_member("open").unwrap();
        assert!(tar.begin_member("second").is_err());
        assert!(tar.finish().is_err(), "a member left open");
    }
}
