//! Recently opened traces, kept in `$XDG_CONFIG_HOME/neuronprof/recent-traces` (or
//! `~/.config/…`): one opening per line, its paths separated by tabs, newest first.

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
                .map(|l| l.split('\t').map(PathBuf::from).collect())
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
            let text: String = self
                .entries
                .iter()
                .map(|e| {
                    let line: Vec<String> = e.iter().map(|p| p.display().to_string()).collect();
                    line.join("\t") + "\n"
                })
                .collect();
            if let Some(dir) = file.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let _ = std::fs::write(file, text);
        }
    }
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
}
