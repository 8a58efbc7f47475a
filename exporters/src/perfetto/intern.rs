//! Interning of event names, categories and debug-annotation names and string values.
//!
//! Perfetto's `InternedData` maps small ids (`iid`, non-zero) to strings on one packet
//! sequence; a `TrackEvent` then says `name_iid` instead of the name
//! (`shared/reference/perfetto.md`, "Interning"). New entries are collected here and
//! attached to the next track-event packet, which is always before their first use.
//! Each table is capped ([`MAX_ENTRIES`] entries, [`MAX_TABLE_BYTES`] of text) so memory
//! stays bounded whatever the trace: past the cap, strings are written inline. Long
//! strings are interned too: Kineto's `Call stack` values run to kilobytes and repeat on
//! every call of an operator.

use std::collections::HashMap;

use super::proto::{InternedData, InternedName, InternedString};

/// Most entries per table; beyond it strings are written inline (bounded memory).
pub const MAX_ENTRIES: usize = 1 << 16;

/// Most bytes of text per table.
pub const MAX_TABLE_BYTES: usize = 32 << 20;

/// One interning table.
#[derive(Debug, Default)]
struct Table {
    ids: HashMap<Box<str>, u64>,
    bytes: usize,
}

impl Table {
    /// The iid of `text`, and whether it is new; `None` past the cap.
    fn get(&mut self, text: &str) -> Option<(u64, bool)> {
        if let Some(&iid) = self.ids.get(text) {
            return Some((iid, false));
        }
        if self.ids.len() >= MAX_ENTRIES || self.bytes + text.len() > MAX_TABLE_BYTES {
            return None;
        }
        self.bytes += text.len();
        let iid = self.ids.len() as u64 + 1;
        self.ids.insert(text.into(), iid);
        Some((iid, true))
    }
}

/// The interning state of one packet sequence, with the entries not yet written.
#[derive(Debug, Default)]
pub struct Interner {
    names: Table,
    categories: Table,
    arg_names: Table,
    arg_values: Table,
    pending: InternedData,
    has_pending: bool,
}

impl Interner {
    /// The iid of an event name (`None`: write it inline).
    pub fn name(&mut self, text: &str) -> Option<u64> {
        let (iid, new) = self.names.get(text)?;
        if new {
            self.pending.event_names.push(entry(iid, text));
            self.has_pending = true;
        }
        Some(iid)
    }

    /// The iid of a category (`None`: write it inline).
    pub fn category(&mut self, text: &str) -> Option<u64> {
        let (iid, new) = self.categories.get(text)?;
        if new {
            self.pending.event_categories.push(entry(iid, text));
            self.has_pending = true;
        }
        Some(iid)
    }

    /// The iid of a debug annotation name (`None`: write it inline).
    pub fn arg_name(&mut self, text: &str) -> Option<u64> {
        let (iid, new) = self.arg_names.get(text)?;
        if new {
            self.pending.debug_annotation_names.push(entry(iid, text));
            self.has_pending = true;
        }
        Some(iid)
    }

    /// The iid of a debug annotation string value (`None`: write it inline).
    pub fn arg_value(&mut self, text: &str) -> Option<u64> {
        let (iid, new) = self.arg_values.get(text)?;
        if new {
            self.pending
                .debug_annotation_string_values
                .push(InternedString {
                    iid: Some(iid),
                    str: Some(text.as_bytes().to_vec()),
                });
            self.has_pending = true;
        }
        Some(iid)
    }

    /// The entries created since the last call, to attach to the next packet.
    pub fn take_pending(&mut self) -> Option<InternedData> {
        if !self.has_pending {
            return None;
        }
        self.has_pending = false;
        Some(std::mem::take(&mut self.pending))
    }
}

fn entry(iid: u64, text: &str) -> InternedName {
    InternedName {
        iid: Some(iid),
        name: Some(text.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_and_new_entries_pending_once() {
        let mut interner = Interner::default();
        assert_eq!(interner.name("matmul"), Some(1));
        assert_eq!(interner.name("add"), Some(2));
        assert_eq!(interner.name("matmul"), Some(1));
        let pending = interner.take_pending().unwrap();
        assert_eq!(pending.event_names.len(), 2);
        assert!(interner.take_pending().is_none());
        let long = "x".repeat(300);
        assert_eq!(
            interner.arg_value(&long),
            Some(1),
            "long values are interned"
        );
        assert_eq!(interner.arg_value(&long), Some(1));
    }

    #[test]
    fn a_full_table_writes_inline() {
        let mut interner = Interner::default();
        let big = "y".repeat(MAX_TABLE_BYTES / 2);
        assert_eq!(interner.arg_value(&big), Some(1));
        assert_eq!(
            interner.arg_value(&format!("{big}z")),
            None,
            "over the byte cap"
        );
        assert_eq!(
            interner.arg_value("short"),
            Some(2),
            "what fits still interns"
        );
    }
}
