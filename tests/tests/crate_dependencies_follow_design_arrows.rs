//! The workspace's real dependency graph follows DESIGN.md's arrows.

use std::process::Command;

#[test]
fn crate_dependencies_follow_design_arrows() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.toml");
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
            "--manifest-path",
        ])
        .arg(manifest)
        .output()
        .expect("running cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata is JSON");
    let names: Vec<&str> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    // The check must actually have seen the leaf crates it guards.
    assert!(
        names.contains(&"runtime-hooks") && names.contains(&"trace-format"),
        "{names:?}"
    );
    let violations = neuronprof_tests::arrows::check(&meta).expect("metadata has packages");
    let listed: Vec<String> = violations.iter().map(ToString::to_string).collect();
    assert!(
        listed.is_empty(),
        "dependency rules broken:\n{}",
        listed.join("\n")
    );
}
