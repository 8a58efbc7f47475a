//! Recently opened traces, kept in `$XDG_CONFIG_HOME/neuronprof/recent-traces` (or
//! `~/.config/…`): one opening per line, its paths separated by tabs, newest first.
//!
//! A path is written byte for byte but for these escapes, so that any path survives
//! (a file name may hold a tab, a newline or bytes that are not UTF-8): `\\` for a
//! backslash, `\t` for a tab, `\n` for a newline, `\r` for a carriage return, and
//! `\xHH` for a byte that is not part of UTF-8 text. A line that does not decode is
//! skipped.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::path::{Path, PathBuf};

/// How many openings are remembered.
pub const MAX_RECENT: usize = 12;

/// The list of recent openings and where it is saved.
#[derive(Clone, Debug, Default)]
pub struct RecentFiles {
    file: Option<PathBuf>,
    entries: Vec<Vec<PathBuf>>,
}

impl RecentFiles {
    /// The user's list (empty when there is no home directory or no file yet).
    pub fn load_default() -> Self {
        let dir = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")));
        match dir {
            Some(dir) => Self::load(&dir.join("neuronprof").join("recent-traces")),
            None => Self::default(),
        }
    }

    /// The list saved in `file` (empty when it does not exist).
    pub fn load(file: &Path) -> Self {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        RecentFiles {
            file: Some(file.to_path_buf()),
            entries: text
                .lines()
                .filter(|l| !l.trim().is_empty())
                .filter_map(decode_line)
                .take(MAX_RECENT)
                .collect(),
        }
    }

    /// A list that is never saved (tests).
    pub fn in_memory() -> Self {
        Self::default()
    }

    /// Openings, newest first.
    pub fn paths(&self) -> &[Vec<PathBuf>] {
        &self.entries
    }

    /// Puts an opening first and saves the list (failures to save are ignored: the list
    /// is a convenience).
    pub fn add(&mut self, paths: &[PathBuf]) {
        let absolute: Vec<PathBuf> = paths
            .iter()
            .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()))
            .collect();
        self.entries.retain(|e| *e != absolute);
        self.entries.insert(0, absolute);
        self.entries.truncate(MAX_RECENT);
        if let Some(file) = &self.file {
            let text: String = self.entries.iter().map(|e| encode_line(e)).collect();
            if let Some(dir) = file.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let _ = std::fs::write(file, text);
        }
    }
}

/// One opening as a line of the file (with its newline).
fn encode_line(paths: &[PathBuf]) -> String {
    let fields: Vec<String> = paths.iter().map(|p| encode_path(p)).collect();
    fields.join("\t") + "\n"
}

fn encode_path(path: &Path) -> String {
    let mut out = String::new();
    for chunk in path.as_os_str().as_bytes().utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\t' => out.push_str("\\t"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                c => out.push(c),
            }
        }
        for byte in chunk.invalid() {
            out.push_str(&format!("\\x{byte:02x}"));
        }
    }
    out
}

/// The paths of a line, or `None` when it does not decode.
fn decode_line(line: &str) -> Option<Vec<PathBuf>> {
    line.split('\t').map(decode_path).collect()
}

fn decode_path(field: &str) -> Option<PathBuf> {
    let mut bytes = Vec::with_capacity(field.len());
    let mut chars = field.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            let mut buffer = [0u8; 4];
            bytes.extend_from_slice(c.encode_utf8(&mut buffer).as_bytes());
            continue;
        }
        match chars.next()? {
            '\\' => bytes.push(b'\\'),
            't' => bytes.push(b'\t'),
            'n' => bytes.push(b'\n'),
            'r' => bytes.push(b'\r'),
            'x' => {
                let hex: String = chars.by_ref().take(2).collect();
                bytes.push(
                    u8::from_str_radix(&hex, 16)
                        .ok()
                        .filter(|_| hex.len() == 2)?,
                );
            }
            _ => return None,
        }
    }
    (!bytes.is_empty()).then(|| PathBuf::from(OsString::from_vec(bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_openings_are_saved_newest_first_without_duplicates() {
        let dir = std::env::temp_dir().join(format!("gui-recent-{}", std::process::id()));
        let file = dir.join("recent-traces");
        let _ = std::fs::remove_file(&file);
        let mut recent = RecentFiles::load(&file);
        recent.add(&[PathBuf::from("/a.json")]);
        recent.add(&[PathBuf::from("/b.json"), PathBuf::from("/c.json")]);
        recent.add(&[PathBuf::from("/a.json")]);
        let again = RecentFiles::load(&file);
        assert_eq!(
            again.paths(),
            &[
                vec![PathBuf::from("/a.json")],
                vec![PathBuf::from("/b.json"), PathBuf::from("/c.json")]
            ]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn paths_with_tabs_newlines_backslashes_and_other_bytes_come_back_whole() {
        let dir = std::env::temp_dir().join(format!("gui-recent-odd-{}", std::process::id()));
        let file = dir.join("recent-traces");
        let _ = std::fs::remove_file(&file);
        let odd = [
            PathBuf::from("/traces/a\tb.json"),
            PathBuf::from("/traces/line\nbreak.json"),
            PathBuf::from("/traces/back\\slash\\t.json"),
            PathBuf::from("/traces/cr\r.json"),
            PathBuf::from(OsString::from_vec(
                b"/traces/latin1-\xe9t\xe9.json".to_vec(),
            )),
            PathBuf::from("/traces/ünïcode.json"),
        ];
        let mut recent = RecentFiles::load(&file);
        recent.add(&odd[..2]);
        recent.add(&odd[2..]);
        let again = RecentFiles::load(&file);
        assert_eq!(again.paths(), &[odd[2..].to_vec(), odd[..2].to_vec()]);
        // A damaged line is skipped; the others are kept.
        let text = std::fs::read_to_string(&file).unwrap();
        std::fs::write(&file, format!("/bad\\q.json\n{text}")).unwrap();
        assert_eq!(RecentFiles::load(&file).paths().len(), 2);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
