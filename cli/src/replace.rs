//! Writing an output file whole or not at all: the content goes to a temporary file
//! beside it, which replaces the file (`rename`, atomic on one file system) only once
//! everything is written. A command that fails half-way leaves the previous file as it
//! was and no temporary behind.

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

/// Calls `write` with a new temporary file beside `path`, then puts it in `path`'s
/// place (keeping the permissions of a file that was there); on an error, removes the
/// temporary and leaves `path` untouched. A symbolic link at `path` is followed: its
/// target is replaced.
pub fn replace_file<T>(
    path: &Path,
    write: impl FnOnce(&mut File) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let target = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
        }
        _ => path.to_owned(),
    };
    if target.is_dir() {
        anyhow::bail!("-o {}: is a directory", path.display());
    }
    let (temporary, mut file) = create_temporary(&target)
        .with_context(|| format!("creating a temporary file beside {}", path.display()))?;
    let written = write(&mut file).and_then(|value| {
        if let Ok(previous) = std::fs::metadata(&target) {
            file.set_permissions(previous.permissions())
                .with_context(|| format!("copying the permissions of {}", path.display()))?;
        }
        file.sync_all()
            .with_context(|| format!("writing {}", temporary.display()))?;
        drop(file);
        std::fs::rename(&temporary, &target).with_context(|| {
            format!("replacing {} with {}", path.display(), temporary.display())
        })?;
        Ok(value)
    });
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

/// A new file `.NAME.PID.N.tmp` in the directory of `target`.
fn create_temporary(target: &Path) -> std::io::Result<(PathBuf, File)> {
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = target.file_name().ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "the path names no file")
    })?;
    let mut attempt = 0u32;
    loop {
        let mut temporary_name = std::ffi::OsString::from(".");
        temporary_name.push(name);
        temporary_name.push(format!(".{}.{attempt}.tmp", std::process::id()));
        let temporary = dir.join(temporary_name);
        match File::options()
            .write(true)
            .create_new(true)
            .open(&temporary)
        {
            Ok(file) => return Ok((temporary, file)),
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists && attempt < 100 => {
                attempt += 1;
            }
            Err(err) => return Err(err),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("replace-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_failure_half_way_leaves_the_previous_file_and_no_temporary() {
        use std::io::Write as _;
        let dir = scratch("fail");
        let out = dir.join("result.csv");
        std::fs::write(&out, "previous\n").unwrap();
        let err = replace_file(&out, |file| -> anyhow::Result<()> {
            file.write_all(b"half a resu")?;
            anyhow::bail!("the query failed")
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "the query failed");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "previous\n");
        assert_eq!(entries(&dir), ["result.csv"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_success_replaces_the_file_keeping_its_permissions() {
        use std::io::Write as _;
        use std::os::unix::fs::PermissionsExt as _;
        let dir = scratch("ok");
        let out = dir.join("result.csv");
        std::fs::write(&out, "previous\n").unwrap();
        std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o640)).unwrap();
        replace_file(&out, |file| Ok(file.write_all(b"new\n")?)).unwrap();
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "new\n");
        let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        assert_eq!(entries(&dir), ["result.csv"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
