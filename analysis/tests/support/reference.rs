//! Parsing what HTA printed (`tests/data/traces/hta-reference/*.txt`, or
//! `scripts/hta_reference.py` run here) and comparing
//! our numbers with it at the printed precision.

use super::traces::traces_dir;
use std::collections::BTreeMap;

/// The sections of one reference output, by name (`temporal_breakdown`, …).
pub struct Reference {
    pub file: String,
    pub sections: BTreeMap<String, Vec<String>>,
}

impl Reference {
    /// Reads `tests/data/traces/hta-reference/<name>` (vendored).
    #[allow(dead_code)] // not every test crate reads the vendored references
    pub fn load(name: &str) -> Reference {
        let path = traces_dir().join("hta-reference").join(name);
        Self::from_path(&path, name)
    }

    /// Reads a reference printed elsewhere (by `scripts/hta_reference.py`), naming it
    /// `label` in messages.
    pub fn from_path(path: &std::path::Path, label: &str) -> Reference {
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("reference {} unreadable: {e}", path.display()));
        let mut sections = BTreeMap::new();
        let mut current = String::from("header");
        for line in text.lines() {
            if let Some(title) = line
                .strip_prefix("===== ")
                .and_then(|l| l.strip_suffix(" ====="))
            {
                current = title.to_owned();
                continue;
            }
            sections
                .entry(current.clone())
                .or_insert_with(Vec::new)
                .push(line.to_owned());
        }
        Reference {
            file: label.to_owned(),
            sections,
        }
    }

    pub fn section(&self, name: &str) -> &[String] {
        self.sections
            .get(name)
            .unwrap_or_else(|| panic!("{}: no section {name}", self.file))
    }
}

/// Whether every token parses as a number (or `NaN`).
pub fn all_numeric(tokens: &[&str]) -> bool {
    !tokens.is_empty()
        && tokens
            .iter()
            .all(|t| *t == "NaN" || t.parse::<f64>().is_ok())
}

/// Asserts `ours` equals `printed` at the precision HTA printed it with.
pub fn assert_printed(ours: Option<f64>, printed: &str, what: &str) {
    if printed == "NaN" {
        assert!(
            ours.is_none_or(f64::is_nan),
            "{what}: HTA printed NaN, we have {ours:?}"
        );
        return;
    }
    let ours = ours.unwrap_or_else(|| panic!("{what}: HTA printed {printed}, we have none"));
    let expected: f64 = printed
        .parse()
        .unwrap_or_else(|_| panic!("{what}: bad number {printed}"));
    let formatted = if let Some((mantissa, _)) = printed.split_once('e') {
        let decimals = mantissa.split_once('.').map_or(0, |(_, f)| f.len());
        format!("{ours:.decimals$e}")
    } else {
        let decimals = printed.split_once('.').map_or(0, |(_, f)| f.len());
        format!("{ours:.decimals$}")
    };
    let ours_printed: f64 = formatted.parse().expect("formatted number parses");
    assert!(
        ours_printed == expected,
        "{what}: HTA printed {printed}, we have {ours} (prints as {formatted})"
    );
}

/// Splits a table line `index name… tail…` into (name, the `tail` last columns); runs of
/// spaces inside the name are collapsed.
pub fn split_name_row(line: &str, tail: usize) -> (String, Vec<String>) {
    let tokens: Vec<&str> = line.split_whitespace().collect();
    let cut = tokens.len() - tail;
    let name = tokens[1..cut].join(" ");
    (
        name,
        tokens[cut..].iter().map(|t| (*t).to_owned()).collect(),
    )
}

/// Whether our kernel name matches what pandas printed (truncated names end in `...`).
pub fn name_matches(ours: &str, printed: &str) -> bool {
    let collapsed: String = ours.split_whitespace().collect::<Vec<_>>().join(" ");
    match printed.strip_suffix("...") {
        Some(prefix) => collapsed.starts_with(prefix),
        None => collapsed == printed,
    }
}
