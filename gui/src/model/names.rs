//! Interned strings: every distinct name and category is stored once.

use std::collections::HashMap;

use super::NameId;

/// A string interner; id 0 is always `""`.
#[derive(Clone, Debug)]
pub struct Names {
    texts: Vec<String>,
    ids: HashMap<String, NameId>,
}

impl Default for Names {
    fn default() -> Self {
        let mut names = Names {
            texts: Vec::new(),
            ids: HashMap::new(),
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
