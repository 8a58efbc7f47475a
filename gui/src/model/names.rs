//! Interned strings: every distinct name and category is stored once.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::NameId;

/// A fast non-cryptographic hasher for interning (every event's name is looked up once;
/// SipHash made that a visible share of loading). The multiply-rotate step of
/// rustc's FxHasher, eight bytes at a time.
#[derive(Clone, Copy, Debug, Default)]
pub struct FastHasher(u64);

impl Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let word = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
            self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(K);
        }
        let mut tail = [0u8; 8];
        let rest = chunks.remainder();
        tail[..rest.len()].copy_from_slice(rest);
        self.0 =
            (self.0.rotate_left(5) ^ u64::from_le_bytes(tail) ^ rest.len() as u64).wrapping_mul(K);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// The map type interning uses.
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

/// A string interner; id 0 is always `""`.
#[derive(Clone, Debug)]
pub struct Names {
    texts: Vec<String>,
    ids: FastMap<String, NameId>,
}

impl Default for Names {
    fn default() -> Self {
        let mut names = Names {
            texts: Vec::new(),
            ids: FastMap::default(),
        };
        names.intern("");
        names
    }
}

impl Names {
    /// The id of `text`, adding it when new.
    pub fn intern(&mut self, text: &str) -> NameId {
        if let Some(&id) = self.ids.get(text) {
            return id;
        }
        let id = self.texts.len() as NameId;
        self.texts.push(text.to_owned());
        self.ids.insert(text.to_owned(), id);
        id
    }

    /// The text of an id (`""` for an unknown id).
    pub fn get(&self, id: NameId) -> &str {
        self.texts.get(id as usize).map_or("", String::as_str)
    }

    /// The id of `text`, if interned.
    pub fn lookup(&self, text: &str) -> Option<NameId> {
        self.ids.get(text).copied()
    }

    /// Number of distinct strings.
    pub fn len(&self) -> usize {
        self.texts.len()
    }

    /// Whether only `""` is interned.
    pub fn is_empty(&self) -> bool {
        self.texts.len() <= 1
    }

    /// All strings, by id.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.texts.iter().map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_gives_one_id_per_distinct_text() {
        let mut names = Names::default();
        let texts = [
            "",
            "a",
            "ab",
            "abcdefgh",
            "abcdefghi",
            "ncclDevKernel_AllReduce",
        ];
        let ids: Vec<NameId> = texts.iter().map(|t| names.intern(t)).collect();
        assert_eq!(ids, vec![0, 1, 2, 3, 4, 5]);
        for (t, id) in texts.iter().zip(&ids) {
            assert_eq!(names.intern(t), *id);
            assert_eq!(names.get(*id), *t);
            assert_eq!(names.lookup(t), Some(*id));
        }
        assert_eq!(names.lookup("zz"), None);
        let hash = |t: &str| {
            let mut h = FastHasher::default();
            h.write(t.as_bytes());
            h.finish()
        };
        assert_ne!(
            hash("abcdefgh"),
            hash("abcdefgh\0"),
            "length is part of the hash"
        );
    }
}
