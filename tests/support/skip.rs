//! Saying that a test could not run, so that a skip is never an `ok` nobody sees.
//!
//! Every test crate that has a test needing something outside the repository (a Python
//! venv, tmux, the live endpoint) includes this one file
//! (`#[path = "<up>/tests/support/skip.rs"] mod skip;`) and calls [`skipped`] when the
//! prerequisite is missing:
//! - under CI (the `CI` environment variable set) it panics: CI installs every
//!   prerequisite (`.ci/run`), so a missing one is a failure;
//! - otherwise it prints `SKIPPED <test>: <reason>` and, when `NEURONPROF_SKIP_DIR` is
//!   set (the README's test command, `scripts/check`, sets it), writes one file there
//!   naming the test and the reason; `scripts/check` counts and lists those files at
//!   its end. A file rather than a line on standard output, because `cargo test` hides
//!   what a passing test prints.
//!
//! One call is one skipped test, however many share a name or a process: every test
//! that does not run calls [`skipped`] itself (a prerequisite looked up once for many
//! tests keeps its reason and each test records its own skip, named by [`this_test`]).

#![allow(dead_code)] // each crate uses what it needs

use std::path::PathBuf;

/// Records that `test` did not run because `reason` (what is missing and how to get it).
/// Panics under CI.
pub fn skipped(test: &str, reason: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must run {test}, but {reason}"
    );
    eprintln!("SKIPPED {test}: {reason}");
    let Some(dir) = std::env::var_os("NEURONPROF_SKIP_DIR").map(PathBuf::from) else {
        return;
    };
    let name: String = test
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    // One file per call: the process id and a count in the process keep two skips of
    // one name apart.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let file = dir.join(format!("{name}.{}.{call}.txt", std::process::id()));
    let written = std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(&file, format!("{test}: {reason}\n")));
    // A skip that cannot be recorded must not pass as a run.
    if let Err(e) = written {
        panic!(
            "{test} skipped ({reason}), and recording it in {} failed: {e}",
            file.display()
        );
    }
}

/// The running test's name (`module::test`, as the test harness names the thread it runs
/// the test on), prefixed by the test crate's package: what [`skipped`] records for a
/// test that shares its prerequisite with others.
pub fn this_test() -> String {
    let thread = std::thread::current();
    format!(
        "{}: {}",
        env!("CARGO_PKG_NAME"),
        thread.name().unwrap_or("(unnamed test thread)")
    )
}
