//! Where a collector keeps what it drains: records in 2 MiB blocks that never move.
//!
//! A collector that appends to one growing `Vec` copies everything it holds at each
//! doubling, and the drain that triggers it stalls for as long (105 ms at a million
//! records on the development VM) while the rings keep filling. Blocks make a drain
//! cost only what it moves. A fresh block is mapped in one call
//! (`MADV_POPULATE_WRITE`, Linux 5.14+) rather than by 512 page faults as it is
//! written: 1.0 ms a block instead of 2.2 ms on the development VM, where a fault
//! costs ~4 µs (`docs/PERFORMANCE.md`, "Collecting records"). On an older kernel the
//! advice is refused and the block is faulted in as it is written. Huge pages
//! (`MADV_HUGEPAGE`) were tried: 0.27 ms a block while the kernel had free huge
//! pages, then 3.9 ms a block once it had to compact memory to find them
//! (`defrag=madvise`), so they are not asked for.

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::ptr::NonNull;

use crate::Record;

/// Bytes of one block (32 Ki records).
const BLOCK_BYTES: usize = 2 << 20;

/// Records in one block.
pub const BLOCK_RECORDS: usize = BLOCK_BYTES / std::mem::size_of::<Record>();

/// One block: room for [`BLOCK_RECORDS`] records, the first `len` written.
struct Block {
    ptr: NonNull<Record>,
    len: usize,
}

// SAFETY: a block owns its memory (plain `Copy` records) and nothing refers to the
// thread that made it.
unsafe impl Send for Block {}
// SAFETY: shared access only reads the written prefix; writes need `&mut`.
unsafe impl Sync for Block {}

fn layout() -> Layout {
    // Page-aligned, so that the advice covers the block and nothing else.
    match Layout::from_size_align(BLOCK_BYTES, 4096) {
        Ok(layout) => layout,
        Err(_) => unreachable!("4096 is a power of two and 2 MiB fits in isize"),
    }
}

impl Block {
    fn new() -> Block {
        let layout = layout();
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc(layout) };
        let Some(ptr) = NonNull::new(raw.cast::<Record>()) else {
            handle_alloc_error(layout)
        };
        advise(raw);
        Block { ptr, len: 0 }
    }

    fn room(&self) -> usize {
        BLOCK_RECORDS - self.len
    }

    fn push(&mut self, record: Record) {
        assert!(
            self.len < BLOCK_RECORDS,
            "a block takes no more than it has room for"
        );
        // SAFETY: `len < BLOCK_RECORDS`, so the slot lies inside the allocation, and
        // `Record` is plain data aligned to 64, which the page alignment satisfies.
        unsafe { self.ptr.as_ptr().add(self.len).write(record) };
        self.len += 1;
    }

    fn records(&self) -> &[Record] {
        // SAFETY: the first `len` slots were written by `push` and nothing else writes
        // while this shared borrow lives.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `alloc` with this same layout.
        unsafe { dealloc(self.ptr.as_ptr().cast::<u8>(), layout()) };
    }
}

/// Asks for the block at `ptr` to be mapped now, in one call. Advice only: a kernel
/// older than 5.14 refuses it and the block is faulted in as it is written.
fn advise(ptr: *mut u8) {
    #[cfg(all(target_os = "linux", not(miri)))]
    // SAFETY: `ptr` starts a live, page-aligned allocation of BLOCK_BYTES that nothing
    // else uses; populating it does not change its (uninitialized) contents.
    unsafe {
        libc::madvise(ptr.cast(), BLOCK_BYTES, libc::MADV_POPULATE_WRITE);
    }
    #[cfg(not(all(target_os = "linux", not(miri))))]
    let _ = ptr;
}

/// Drained records, in blocks that never move: each thread's records stay in the order
/// it recorded them, across drains.
#[derive(Default)]
pub struct RecordBlocks {
    blocks: Vec<Block>,
}

impl std::fmt::Debug for RecordBlocks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordBlocks")
            .field("blocks", &self.blocks.len())
            .field("records", &self.len())
            .finish()
    }
}

impl RecordBlocks {
    /// An empty store (no block allocated yet).
    pub fn new() -> Self {
        Self::default()
    }

    /// Records held.
    pub fn len(&self) -> usize {
        self.blocks.iter().map(|b| b.len).sum()
    }

    /// Whether no record is held.
    pub fn is_empty(&self) -> bool {
        self.blocks.iter().all(|b| b.len == 0)
    }

    /// Appends one record.
    pub fn push(&mut self, record: Record) {
        self.block_with_room().push(record);
    }

    fn block_with_room(&mut self) -> &mut Block {
        if self.blocks.last().is_none_or(|b| b.room() == 0) {
            self.blocks.push(Block::new());
        }
        match self.blocks.last_mut() {
            Some(block) => block,
            None => unreachable!("a block was just pushed"),
        }
    }

    /// Moves every unread record of every thread in here (as [`crate::drain`] does
    /// into a `Vec`) and returns how many.
    pub fn drain_rings(&mut self) -> usize {
        let mut moved = 0;
        loop {
            let block = self.block_with_room();
            let room = block.room();
            // A ring left part-drained is taken up where it stopped by the next
            // round, so each thread's records stay in order.
            let got = crate::drain_with(room, |record| block.push(*record));
            moved += got;
            if got < room {
                return moved;
            }
        }
    }

    /// The records, block by block, in the order they were appended.
    pub fn iter(&self) -> impl Iterator<Item = &Record> {
        self.blocks.iter().flat_map(Block::records)
    }

    /// Every record in one vector, freeing each block once copied.
    pub fn into_vec(mut self) -> Vec<Record> {
        let mut records = Vec::with_capacity(self.len());
        for block in self.blocks.drain(..) {
            records.extend_from_slice(block.records());
        }
        records
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Payload, Phase, RecordKind};

    fn record(n: u64) -> Record {
        Record::new(
            RecordKind::Counter,
            Phase::Instant,
            0,
            n,
            n,
            Payload::default(),
        )
    }

    #[test]
    fn records_keep_their_order_across_blocks() {
        let mut blocks = RecordBlocks::new();
        let n = BLOCK_RECORDS * 2 + 17;
        for i in 0..n as u64 {
            blocks.push(record(i));
        }
        assert_eq!(blocks.len(), n);
        assert_eq!(blocks.blocks.len(), 3);
        let stamps: Vec<u64> = blocks.iter().map(|r| r.start_ns).collect();
        assert_eq!(stamps, (0..n as u64).collect::<Vec<_>>());
        let flat = blocks.into_vec();
        assert_eq!(flat.len(), n);
        assert!(flat.iter().enumerate().all(|(i, r)| r.start_ns == i as u64));
    }

    /// What a growing `Vec` does not give: a drain appends without moving what the
    /// window holds, so its cost is what it moves (a doubling `Vec` copied the whole
    /// window and stalled the drainer while the rings overflowed).
    #[test]
    fn appending_never_moves_what_is_held() {
        let mut blocks = RecordBlocks::new();
        blocks.push(record(0));
        let first: *const Record = blocks.iter().next().unwrap();
        for i in 1..(BLOCK_RECORDS * 4) as u64 {
            blocks.push(record(i));
        }
        let still: *const Record = blocks.iter().next().unwrap();
        assert_eq!(first, still);
        assert_eq!(
            blocks.blocks.len(),
            4,
            "full blocks are not grown, others are added"
        );
    }

    #[test]
    fn blocks_start_on_a_page() {
        let mut blocks = RecordBlocks::new();
        assert!(blocks.is_empty());
        blocks.push(record(1));
        let at = blocks.blocks[0].ptr.as_ptr() as usize;
        assert_eq!(at % 4096, 0, "block at {at:#x}");
        assert!(!blocks.is_empty());
    }
}
