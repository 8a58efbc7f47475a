//! Sorting the slices and instants of every track by time in bounded memory: an
//! external merge sort.
//!
//! Kineto does not write a thread's events in time order: it writes them in sorted runs
//! per kind (all `cpu_op`s, then all `python_function`s, …), so a thread's events can be
//! a whole trace apart. Nesting decisions need each track's events in time order, so
//! items (track, start, end, arrival, encoded event) are buffered up to a byte budget,
//! sorted, and spilled as a run to a temporary file when the budget is reached; at the
//! end the runs are merged. Memory: the budget plus one record and a 64 KiB read buffer
//! per run.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

/// Default byte budget of the in-memory buffer.
pub const DEFAULT_BUDGET_BYTES: usize = 64 << 20;

/// Fixed bytes per item besides its encoded event (for the budget).
const ITEM_OVERHEAD: usize = 56;

/// One slice or instant of a track.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// Index of the Kineto track.
    pub track: u32,
    /// Start, ns.
    pub ts_ns: i64,
    /// End, ns.
    pub end_ns: i64,
    /// Arrival order.
    pub seq: u64,
    /// An instant.
    pub instant: bool,
    /// The encoded `TrackEvent` fields (without type and track).
    pub body: Vec<u8>,
}

impl Item {
    /// The sort key: track, start, longer first, arrival.
    pub fn key(&self) -> (u32, i64, Reverse<i64>, u64) {
        (self.track, self.ts_ns, Reverse(self.end_ns), self.seq)
    }

    fn write_to(&self, out: &mut impl Write) -> io::Result<()> {
        out.write_all(&self.track.to_le_bytes())?;
        out.write_all(&self.ts_ns.to_le_bytes())?;
        out.write_all(&self.end_ns.to_le_bytes())?;
        out.write_all(&self.seq.to_le_bytes())?;
        out.write_all(&[u8::from(self.instant)])?;
        out.write_all(&(self.body.len() as u32).to_le_bytes())?;
        out.write_all(&self.body)
    }

    fn read_from(input: &mut impl Read) -> io::Result<Option<Item>> {
        let mut head = [0u8; 33];
        match input.read_exact(&mut head) {
            Ok(()) => {}
            Err(err) if err.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(err) => return Err(err),
        }
        let word = |at: usize| <[u8; 8]>::try_from(&head[at..at + 8]).expect("8 bytes");
        let len = u32::from_le_bytes(head[29..33].try_into().expect("4 bytes")) as usize;
        let mut body = vec![0; len];
        input.read_exact(&mut body)?;
        Ok(Some(Item {
            track: u32::from_le_bytes(head[0..4].try_into().expect("4 bytes")),
            ts_ns: i64::from_le_bytes(word(4)),
            end_ns: i64::from_le_bytes(word(12)),
            seq: u64::from_le_bytes(word(20)),
            instant: head[28] != 0,
            body,
        }))
    }
}

impl PartialOrd for Item {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Item {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

/// The buffer and the runs spilled so far.
#[derive(Debug)]
pub struct Sorter {
    buffer: Vec<Item>,
    buffered_bytes: usize,
    budget_bytes: usize,
    runs: Vec<PathBuf>,
    /// Runs written to disk.
    pub spilled_runs: u64,
}

/// The items of a [`Sorter`] in order, pulled one at a time ([`Sorter::sorted`]).
#[derive(Debug)]
pub struct Sorted {
    memory: std::vec::IntoIter<Item>,
    readers: Vec<BufReader<File>>,
    heads: BinaryHeap<Reverse<(Item, usize)>>,
    /// Keeps the runs until the end (removed on drop).
    _sorter: Sorter,
}

impl Sorted {
    /// The next item, or `None` at the end.
    pub fn next_item(&mut self) -> io::Result<Option<Item>> {
        if let Some(item) = self.memory.next() {
            return Ok(Some(item));
        }
        let Some(Reverse((item, run))) = self.heads.pop() else {
            return Ok(None);
        };
        if let Some(next) = Item::read_from(&mut self.readers[run])? {
            self.heads.push(Reverse((next, run)));
        }
        Ok(Some(item))
    }
}

impl Sorter {
    /// A sorter spilling past `budget_bytes`.
    pub fn new(budget_bytes: usize) -> Self {
        Sorter {
            buffer: Vec::new(),
            buffered_bytes: 0,
            budget_bytes,
            runs: Vec::new(),
            spilled_runs: 0,
        }
    }

    /// The byte budget of the in-memory buffer.
    pub fn budget_bytes(&self) -> usize {
        self.budget_bytes
    }

    /// Adds an item; spills a sorted run when over budget.
    pub fn push(&mut self, item: Item) -> io::Result<()> {
        self.buffered_bytes += item.body.len() + ITEM_OVERHEAD;
        self.buffer.push(item);
        if self.buffered_bytes > self.budget_bytes {
            self.spill()?;
        }
        Ok(())
    }

    fn spill(&mut self) -> io::Result<()> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        self.buffer.sort_unstable();
        let path = std::env::temp_dir().join(format!(
            "neuronprof-export-{}-{}.run",
            std::process::id(),
            NEXT.fetch_add(1, AtomicOrdering::Relaxed)
        ));
        let mut out = BufWriter::with_capacity(1 << 16, File::create(&path)?);
        self.runs.push(path);
        for item in self.buffer.drain(..) {
            item.write_to(&mut out)?;
        }
        out.flush()?;
        self.buffered_bytes = 0;
        self.spilled_runs += 1;
        Ok(())
    }

    /// Visits all items in order without consuming them (the in-memory buffer is
    /// sorted in place, spilled runs are read again), so [`Sorter::finish`] or
    /// [`Sorter::sorted`] can follow.
    pub fn visit(&mut self, mut each: impl FnMut(&Item) -> io::Result<()>) -> io::Result<()> {
        if self.runs.is_empty() {
            self.buffer.sort_unstable();
            for item in &self.buffer {
                each(item)?;
            }
            return Ok(());
        }
        if !self.buffer.is_empty() {
            self.spill()?;
        }
        let (readers, mut heads) = self.open_runs()?;
        let mut readers = readers;
        while let Some(Reverse((item, run))) = heads.pop() {
            if let Some(next) = Item::read_from(&mut readers[run])? {
                heads.push(Reverse((next, run)));
            }
            each(&item)?;
        }
        Ok(())
    }

    #[allow(clippy::type_complexity)]
    fn open_runs(&self) -> io::Result<(Vec<BufReader<File>>, BinaryHeap<Reverse<(Item, usize)>>)> {
        let mut readers = Vec::with_capacity(self.runs.len());
        for path in &self.runs {
            readers.push(BufReader::with_capacity(1 << 16, File::open(path)?));
        }
        let mut heads = BinaryHeap::new();
        for (run, reader) in readers.iter_mut().enumerate() {
            if let Some(item) = Item::read_from(reader)? {
                heads.push(Reverse((item, run)));
            }
        }
        Ok((readers, heads))
    }

    /// All items in (track, start, longer first, arrival) order, pulled one at a time.
    pub fn sorted(mut self) -> io::Result<Sorted> {
        if self.runs.is_empty() {
            self.buffer.sort_unstable();
            return Ok(Sorted {
                memory: std::mem::take(&mut self.buffer).into_iter(),
                readers: Vec::new(),
                heads: BinaryHeap::new(),
                _sorter: self,
            });
        }
        if !self.buffer.is_empty() {
            self.spill()?;
        }
        let (readers, heads) = self.open_runs()?;
        Ok(Sorted {
            memory: Vec::new().into_iter(),
            readers,
            heads,
            _sorter: self,
        })
    }

    /// All items in (track, start, longer first, arrival) order.
    pub fn finish(self, mut each: impl FnMut(Item) -> io::Result<()>) -> io::Result<()> {
        let mut sorted = self.sorted()?;
        while let Some(item) = sorted.next_item()? {
            each(item)?;
        }
        Ok(())
    }
}

impl Drop for Sorter {
    fn drop(&mut self) {
        for path in &self.runs {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(track: u32, ts_ns: i64, seq: u64) -> Item {
        Item {
            track,
            ts_ns,
            end_ns: ts_ns + 5,
            seq,
            instant: seq.is_multiple_of(2),
            body: vec![seq as u8; (seq % 7) as usize],
        }
    }

    #[test]
    fn spilled_runs_merge_into_one_sorted_stream() {
        let mut sorter = Sorter::new(400);
        let mut expected = Vec::new();
        for seq in 0..500u64 {
            let it = item((seq % 3) as u32, ((seq * 7919) % 1000) as i64, seq);
            expected.push(it.clone());
            sorter.push(it).unwrap();
        }
        assert!(sorter.spilled_runs > 10);
        let runs = sorter.runs.clone();
        let mut visited = Vec::new();
        sorter
            .visit(|it| {
                visited.push(it.clone());
                Ok(())
            })
            .unwrap();
        let mut got = Vec::new();
        sorter
            .finish(|it| {
                got.push(it);
                Ok(())
            })
            .unwrap();
        expected.sort();
        assert_eq!(got, expected);
        assert_eq!(visited, expected, "a visit first changes nothing");
        assert!(runs.iter().all(|p| !p.exists()), "runs are removed");
    }
}
