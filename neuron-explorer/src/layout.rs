//! Where a profile's tables are on disk, and which folders are profiles.
//!
//! `neuron-explorer view --ingest-only --data-path D --display-name N` writes
//! `D/profiles/global/N@latest/<Table>.parquet`; a large table is split into
//! `<Table>_0.parquet`, `<Table>_1.parquet`, … (`how-to-analyze-profile-output.rst` in
//! AWS's `aws-neuron-sdk`; facts in `/work/shared/reference/neuron-explorer.md`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::NeuronError;

/// One profile folder and its tables: table name → files (split parts in index order).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProfileLayout {
    /// The folder.
    pub dir: PathBuf,
    /// Each table's files.
    pub tables: BTreeMap<String, Vec<PathBuf>>,
}

impl ProfileLayout {
    /// Lists the `.parquet` files of `dir` by table. Errors when the folder cannot be
    /// listed or holds no Parquet table.
    pub fn open(dir: &Path) -> Result<ProfileLayout, NeuronError> {
        let entries = std::fs::read_dir(dir).map_err(|e| NeuronError::io(dir, e))?;
        let mut parts: BTreeMap<String, Vec<(u64, PathBuf)>> = BTreeMap::new();
        for entry in entries {
            let path = entry.map_err(|e| NeuronError::io(dir, e))?.path();
            let Some(stem) = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".parquet"))
            else {
                continue;
            };
            let (table, index) = split_name(stem);
            parts
                .entry(table.to_owned())
                .or_default()
                .push((index, path.clone()));
        }
        if parts.is_empty() {
            return Err(NeuronError::NotAProfile {
                path: dir.to_path_buf(),
                reason: "the folder holds no .parquet table".into(),
            });
        }
        let tables = parts
            .into_iter()
            .map(|(table, mut files)| {
                files.sort();
                (table, files.into_iter().map(|(_, p)| p).collect())
            })
            .collect();
        Ok(ProfileLayout {
            dir: dir.to_path_buf(),
            tables,
        })
    }

    /// The files of `table` (empty when the profile has none).
    pub fn files(&self, table: &str) -> &[PathBuf] {
        self.tables.get(table).map_or(&[], Vec::as_slice)
    }

    /// Whether the profile has `table`.
    pub fn has(&self, table: &str) -> bool {
        self.tables.contains_key(table)
    }
}

/// `Table_3` → (`Table`, 3); `Table` → (`Table`, 0). Only a numeric suffix after the last
/// `_` splits: `DmaPacket_Aggregated` stays one name.
fn split_name(stem: &str) -> (&str, u64) {
    if let Some((table, index)) = stem.rsplit_once('_') {
        if !index.is_empty() && index.bytes().all(|b| b.is_ascii_digit()) {
            if let Ok(index) = index.parse() {
                return (table, index);
            }
        }
    }
    (stem, 0)
}

/// Whether `path` is a profile folder: a directory holding `Metadata`, `SchemaFields` or
/// `SystemProfileEvents` tables (whole or split).
pub fn is_profile_dir(path: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(path) else {
        return false;
    };
    entries.filter_map(Result::ok).any(|e| {
        let name = e.file_name();
        let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(".parquet")) else {
            return false;
        };
        matches!(
            split_name(stem).0,
            "Metadata" | "SchemaFields" | "SystemProfileEvents"
        )
    })
}

/// The profile folders a path names: the folder itself when it is a profile; else the
/// profiles of a data path (`profiles/global/*@latest`, or `*@latest` folders directly
/// in it), sorted by name. Empty when there are none.
pub fn find_profiles(path: &Path) -> Vec<PathBuf> {
    if is_profile_dir(path) {
        return vec![path.to_path_buf()];
    }
    let mut found = Vec::new();
    for base in [path.join("profiles").join("global"), path.to_path_buf()] {
        let Ok(entries) = std::fs::read_dir(&base) else {
            continue;
        };
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| is_profile_dir(p))
            .collect();
        dirs.sort();
        found.extend(dirs);
        if !found.is_empty() {
            break;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_tables_are_named_by_their_prefix() {
        assert_eq!(split_name("BirInstruction_12"), ("BirInstruction", 12));
        assert_eq!(split_name("Instruction"), ("Instruction", 0));
        assert_eq!(split_name("Some_Table"), ("Some_Table", 0));
        assert_eq!(split_name("Odd_"), ("Odd_", 0));
    }
}
