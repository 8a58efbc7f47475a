//! `support/skip.rs`, which every test with an outside prerequisite calls when it is
//! missing: it records the skip where `scripts/check` lists it, and fails under CI.

#[path = "../support/skip.rs"]
mod skip;

#[test]
fn skipped_tests_are_recorded_and_fail_under_ci() {
    // One test in this binary: it changes the process environment.
    let dir = std::env::temp_dir().join(format!("neuronprof-skip-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::env::remove_var("CI");
    std::env::set_var("NEURONPROF_SKIP_DIR", &dir);
    skip::skipped("crate: some test", "tmux is missing");
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
    assert_eq!(files.len(), 1, "one record per skip");
    let text = std::fs::read_to_string(files[0].path()).unwrap();
    assert_eq!(text, "crate: some test: tmux is missing\n");
    // A second test of the same name in the same process (tests made by a macro in
    // several modules, or sharing one prerequisite) is a second record.
    skip::skipped("crate: some test", "tmux is missing");
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        2,
        "one record per skipped test, not per name and process"
    );
    assert_eq!(
        skip::this_test(),
        "neuronprof-tests: skipped_tests_are_recorded_and_fail_under_ci",
        "a test is named by its thread"
    );

    std::env::set_var("CI", "true");
    let under_ci = std::panic::catch_unwind(|| skip::skipped("crate: other", "no venv"));
    let message = under_ci.expect_err("a skip under CI fails");
    let message = message
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(
        message.contains("CI must run crate: other, but no venv"),
        "{message}"
    );
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        2,
        "nothing recorded under CI"
    );
    std::env::remove_var("CI");
    std::fs::remove_dir_all(&dir).unwrap();
}
