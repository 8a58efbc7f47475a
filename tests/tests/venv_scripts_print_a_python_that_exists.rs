//! `scripts/torch-venv`, `scripts/hta-venv` and `scripts/perfetto-venv` print the path
//! of the venv's python, for a venv named relative to the repository or by an absolute
//! path (`NEURONPROF_TORCH_VENV`, `NEURONPROF_HTA_VENV`, `NEURONPROF_PERFETTO_VENV`). The
//! venvs here are stand-ins whose `python` accepts any check, so nothing is installed.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap()
}

/// A directory with an executable `bin/python` that exits 0.
fn fake_venv(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    let python = dir.join("bin/python");
    std::fs::write(&python, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn printed_python(script: &str, var: &str, venv: &str) -> PathBuf {
    let out = Command::new("bash")
        .arg(repo().join("scripts").join(script))
        .env(var, venv)
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "{script} with {var}={venv}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

#[test]
fn venv_scripts_print_a_python_that_exists() {
    let name = format!("venv-script-test-{}", std::process::id());
    let absolute = std::env::temp_dir().join(&name);
    fake_venv(&absolute);
    // Relative names are relative to the repository root (the scripts cd there).
    let relative = format!("target/{name}");
    fake_venv(&repo().join(&relative));
    for (script, var) in [
        ("torch-venv", "NEURONPROF_TORCH_VENV"),
        ("hta-venv", "NEURONPROF_HTA_VENV"),
        ("perfetto-venv", "NEURONPROF_PERFETTO_VENV"),
    ] {
        for (venv, dir) in [
            (absolute.to_str().unwrap().to_owned(), absolute.clone()),
            (relative.clone(), repo().join(&relative)),
        ] {
            let python = printed_python(script, var, &venv);
            assert!(
                python.is_absolute(),
                "{script} {venv}: {}",
                python.display()
            );
            assert!(
                python.exists(),
                "{script} {venv}: {} does not exist",
                python.display()
            );
            assert_eq!(
                python.canonicalize().unwrap(),
                dir.join("bin/python").canonicalize().unwrap(),
                "{script} {venv}"
            );
        }
    }
    std::fs::remove_dir_all(&absolute).unwrap();
    std::fs::remove_dir_all(repo().join(&relative)).unwrap();
}
