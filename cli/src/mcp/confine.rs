//! The path rule of `neuronprof mcp`: every path a tool reads or writes lies in one of
//! the folders named with `--allow`.
//!
//! - The allowed folders are canonicalized once, when the server starts (they must
//!   exist and be folders).
//! - A path with a `..` component is refused, whatever it would resolve to; a relative
//!   path is taken relative to the first allowed folder.
//! - An input must exist; its canonical path (symlinks resolved) must lie in an allowed
//!   folder, and when it is a folder, so must the target of every symlink below it (the
//!   commands read a folder's rank traces, and a profile folder's tables, through them).
//!   A symlink whose target does not exist is refused too.
//! - An output (export's `out`, what-if's `out`, critical-path's `overlay`) may not exist
//!   yet: the nearest part of it that exists (itself or an ancestor, as a symlink or
//!   not) must resolve into an allowed folder, and an output folder that exists is
//!   checked like an input folder, so no write follows a symlink out.
//!
//! The check is made when a tool is called; it does not guard against someone changing
//! the allowed folders' contents between the check and the read.

use std::path::{Component, Path, PathBuf};

use anyhow::{bail, Context as _};

/// The most entries checked below one folder; a larger tree is refused.
const MAX_ENTRIES: usize = 200_000;

/// The folders the tools may read and write in.
#[derive(Clone, Debug)]
pub struct AllowedDirs {
    roots: Vec<PathBuf>,
}

impl AllowedDirs {
    /// Canonicalizes the folders given with `--allow`.
    pub fn new(dirs: &[PathBuf]) -> anyhow::Result<Self> {
        if dirs.is_empty() {
            bail!("name at least one folder the tools may use: --allow DIR");
        }
        let mut roots: Vec<PathBuf> = Vec::new();
        for dir in dirs {
            let root = dir
                .canonicalize()
                .with_context(|| format!("--allow {}", dir.display()))?;
            if !root.is_dir() {
                bail!("--allow {}: not a folder", dir.display());
            }
            if !roots.contains(&root) {
                roots.push(root);
            }
        }
        Ok(AllowedDirs { roots })
    }

    /// The allowed folders, canonical, in the order given.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// The allowed folders as one line, for messages.
    pub fn describe(&self) -> String {
        let names: Vec<String> = self.roots.iter().map(|r| r.display().to_string()).collect();
        names.join(", ")
    }

    /// An input path (`what` names the argument in messages): the canonical path, when
    /// the rule allows it.
    pub fn input(&self, what: &str, path: &str) -> anyhow::Result<PathBuf> {
        let full = self.lexical(what, path)?;
        let canonical = full
            .canonicalize()
            .with_context(|| format!("{what} `{path}`"))?;
        self.check_inside(what, path, &canonical)?;
        if canonical.is_dir() {
            self.check_tree(what, path, &canonical)?;
        }
        Ok(canonical)
    }

    /// Several input paths, `what[i]` in messages.
    pub fn inputs(&self, what: &str, paths: &[String]) -> anyhow::Result<Vec<PathBuf>> {
        if paths.is_empty() {
            bail!("{what}: give at least one trace file or folder");
        }
        paths
            .iter()
            .enumerate()
            .map(|(i, p)| self.input(&format!("{what}[{i}]"), p))
            .collect()
    }

    /// An output path, which need not exist yet: the path to write, with its existing
    /// part canonical, when the rule allows it.
    pub fn output(&self, what: &str, path: &str) -> anyhow::Result<PathBuf> {
        let full = self.lexical(what, path)?;
        let mut existing = full.as_path();
        let mut missing = Vec::new();
        while existing.symlink_metadata().is_err() {
            let (Some(name), Some(parent)) = (existing.file_name(), existing.parent()) else {
                bail!("{what} `{path}`: no part of it exists");
            };
            missing.push(name.to_owned());
            existing = parent;
        }
        let canonical = existing.canonicalize().with_context(|| {
            format!(
                "{what} `{path}`: {} does not resolve (a symlink to nothing?)",
                existing.display()
            )
        })?;
        self.check_inside(what, path, &canonical)?;
        if missing.is_empty() && canonical.is_dir() {
            self.check_tree(what, path, &canonical)?;
        }
        Ok(missing.iter().rev().fold(canonical, |p, name| p.join(name)))
    }

    /// The path made absolute, without `..`.
    fn lexical(&self, what: &str, path: &str) -> anyhow::Result<PathBuf> {
        if path.is_empty() {
            bail!("{what}: an empty path");
        }
        let given = Path::new(path);
        if given.components().any(|c| c == Component::ParentDir) {
            bail!(
                "{what} `{path}`: `..` is not allowed in paths; name a path inside the \
                 allowed folders ({})",
                self.describe()
            );
        }
        Ok(if given.is_absolute() {
            given.to_owned()
        } else {
            self.roots[0].join(given)
        })
    }

    fn check_inside(&self, what: &str, path: &str, canonical: &Path) -> anyhow::Result<()> {
        if self.roots.iter().any(|root| canonical.starts_with(root)) {
            return Ok(());
        }
        let resolved = if Path::new(path) == canonical {
            String::new()
        } else {
            format!(" (it resolves to {})", canonical.display())
        };
        bail!(
            "{what} `{path}`{resolved} is outside the allowed folders ({}); start the \
             server with --allow for its folder to use it",
            self.describe()
        )
    }

    /// Refuses a folder with a symlink below it that leads out or to nothing.
    fn check_tree(&self, what: &str, path: &str, dir: &Path) -> anyhow::Result<()> {
        let mut pending = vec![dir.to_owned()];
        let mut seen = 0usize;
        while let Some(folder) = pending.pop() {
            let entries = std::fs::read_dir(&folder)
                .with_context(|| format!("{what} `{path}`: listing {}", folder.display()))?;
            for entry in entries {
                let entry = entry
                    .with_context(|| format!("{what} `{path}`: listing {}", folder.display()))?;
                seen += 1;
                if seen > MAX_ENTRIES {
                    bail!(
                        "{what} `{path}`: more than {MAX_ENTRIES} entries below it to check; \
                         name a smaller folder"
                    );
                }
                let kind = entry
                    .file_type()
                    .with_context(|| format!("{what} `{path}`: {}", entry.path().display()))?;
                if kind.is_symlink() {
                    let link = entry.path();
                    let target = link.canonicalize().with_context(|| {
                        format!(
                            "{what} `{path}`: the symlink {} leads to nothing",
                            link.display()
                        )
                    })?;
                    if !self.roots.iter().any(|root| target.starts_with(root)) {
                        bail!(
                            "{what} `{path}`: the symlink {} leads out of the allowed \
                             folders ({}), to {}",
                            link.display(),
                            self.describe(),
                            target.display()
                        );
                    }
                } else if kind.is_dir() {
                    pending.push(entry.path());
                }
            }
        }
        Ok(())
    }
}
