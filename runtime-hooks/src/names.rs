//! Interned names: records carry a [`NameId`], the collector resolves it to a string.
//!
//! Two ways in:
//! - [`name!`](crate::name) at a call site with a `&'static str`: the first call interns
//!   the string (takes the interner lock once) and stores the id in a static
//!   [`NameSite`]; every later call is one relaxed atomic load.
//! - [`intern`] for names known only at run time (operator names from a dispatcher,
//!   kernel names from a compiler). It locks the interner and hashes the string, so call
//!   it once per distinct name and keep the id; it is not meant for the recording path.
//!
//! Ids are dense, start at 1 and are never reused; [`NameId::NONE`] (0) means "no name".

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// Handle of an interned string; 0 ([`NameId::NONE`]) means no name.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NameId(u32);

impl NameId {
    /// No name.
    pub const NONE: NameId = NameId(0);

    /// Wraps a raw id (as found in a record or received over the C ABI).
    #[inline]
    pub const fn from_u32(raw: u32) -> Self {
        NameId(raw)
    }

    /// The raw id.
    #[inline]
    pub const fn as_u32(self) -> u32 {
        self.0
    }

    /// Whether this is [`NameId::NONE`].
    #[inline]
    pub const fn is_none(self) -> bool {
        self.0 == 0
    }
}

#[derive(Default)]
struct Interner {
    by_name: HashMap<Arc<str>, NameId>,
    /// `names[i]` is the string of id `i + 1`.
    names: Vec<Arc<str>>,
}

fn interner() -> MutexGuard<'static, Interner> {
    static INTERNER: OnceLock<Mutex<Interner>> = OnceLock::new();
    let lock = INTERNER.get_or_init(Mutex::default).lock();
    // The interner's data stays consistent even if a holder panicked (every update is a
    // push plus an insert of the same id), so a poisoned lock is still usable.
    lock.unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Interns `name` and returns its id; the same string always gets the same id.
///
/// Takes a global lock and may allocate: call it once per distinct name, off the
/// recording path, and keep the id. For string literals prefer [`name!`](crate::name).
pub fn intern(name: &str) -> NameId {
    let mut interner = interner();
    if let Some(&existing) = interner.by_name.get(name) {
        return existing;
    }
    let next = u32::try_from(interner.names.len() + 1).expect("more than 4 billion names");
    let id = NameId(next);
    let shared: Arc<str> = Arc::from(name);
    interner.names.push(Arc::clone(&shared));
    interner.by_name.insert(shared, id);
    id
}

/// The string of an interned id, or `None` for [`NameId::NONE`] and unknown ids.
pub fn resolve(name_id: NameId) -> Option<Arc<str>> {
    let index = (name_id.0 as usize).checked_sub(1)?;
    interner().names.get(index).cloned()
}

/// Every interned name with an id `>= first`, in id order.
///
/// A collector that exports names incrementally passes the first id it has not seen yet
/// (start with `NameId::from_u32(1)`).
pub fn names_from(first: NameId) -> Vec<(NameId, Arc<str>)> {
    let interner = interner();
    let start = (first.0 as usize).saturating_sub(1);
    interner
        .names
        .iter()
        .enumerate()
        .skip(start)
        .map(|(index, name)| (NameId(index as u32 + 1), Arc::clone(name)))
        .collect()
}

/// A call site's interned name: the id is computed on first use and kept in the static.
///
/// Normally created by [`name!`](crate::name); usable directly as a `static`.
#[derive(Debug)]
pub struct NameSite {
    name: &'static str,
    name_id: AtomicU32,
}

impl NameSite {
    /// A site for `name`, not interned yet.
    pub const fn new(name: &'static str) -> Self {
        NameSite {
            name,
            name_id: AtomicU32::new(0),
        }
    }

    /// The id of this site's name; interns it on the first call.
    #[inline]
    pub fn name_id(&self) -> NameId {
        match self.name_id.load(Ordering::Relaxed) {
            0 => self.intern_slow(),
            raw => NameId(raw),
        }
    }

    #[cold]
    #[inline(never)]
    fn intern_slow(&self) -> NameId {
        // Two threads may race here; `intern` gives both the same id, so either store wins.
        let id = intern(self.name);
        self.name_id.store(id.0, Ordering::Relaxed);
        id
    }
}

/// Interns a string literal once per call site and evaluates to its [`NameId`].
///
/// ```
/// let a = runtime_hooks::name!("aten::add");
/// let b = runtime_hooks::intern("aten::add");
/// assert_eq!(a, b);
/// assert_eq!(runtime_hooks::resolve(a).as_deref(), Some("aten::add"));
/// ```
#[macro_export]
macro_rules! name {
    ($name:expr) => {{
        static SITE: $crate::NameSite = $crate::NameSite::new($name);
        SITE.name_id()
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_is_idempotent_and_resolvable() {
        let a = intern("names::test::alpha");
        let b = intern("names::test::beta");
        assert_ne!(a, b);
        assert_eq!(intern("names::test::alpha"), a);
        assert_eq!(resolve(a).as_deref(), Some("names::test::alpha"));
        assert_eq!(resolve(NameId::NONE), None);
        assert_eq!(resolve(NameId::from_u32(u32::MAX)), None);
        let listed = names_from(a);
        assert_eq!(listed[0], (a, Arc::from("names::test::alpha")));
        assert!(listed
            .iter()
            .any(|(id, name)| *id == b && &**name == "names::test::beta"));
    }

    #[test]
    fn a_site_interns_once() {
        fn site() -> NameId {
            crate::name!("names::test::site")
        }
        let first = site();
        assert!(!first.is_none());
        assert_eq!(site(), first);
        assert_eq!(intern("names::test::site"), first);
    }
}
