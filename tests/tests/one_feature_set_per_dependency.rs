//! `neuronprof` built alone compiles each dependency with the features the whole
//! workspace gives it (`workspace-hack`, issue #37): after the README's first command
//! (`cargo run --release -p neuronprof -- demo`) or `cargo install --path cli`, `cargo
//! build --release --workspace --bins` compiles no dependency again.
//!
//! Compared with `cargo tree -e normal,build` (the graph a build of binaries resolves,
//! dev-dependencies left out), the package alone against `--workspace`: for each
//! dependency (name and version) the feature sets the package alone resolves must be
//! among the workspace's (a crate can be resolved twice, for the host and for the
//! target). `neuron-top` and the viewer built alone are not held to it: they do not
//! link DataFusion, which asks Parquet for its compression codecs and async reader, and
//! making them build those too would slow the build of a binary that needs none.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// The packages held to the workspace's feature sets (see the module docs).
const BINARY_PACKAGES: &[&str] = &["neuronprof"];

type FeatureSets = BTreeMap<String, BTreeSet<String>>;

/// `cargo tree` of `selection`, as dependency → the feature sets it is resolved with.
fn feature_sets(selection: &[&str]) -> FeatureSets {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.toml");
    let out = Command::new(cargo)
        .args(["tree", "--offline", "--locked", "--manifest-path", manifest])
        .args(selection)
        .args(["-e", "normal,build", "--prefix", "none", "-f", "{p} [{f}]"])
        .output()
        .expect("running cargo tree");
    assert!(
        out.status.success(),
        "cargo tree {selection:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("cargo tree prints UTF-8");
    let mut sets = FeatureSets::new();
    // `name vX.Y.Z [(path)] [f1,f2] [(*)]`, a blank line between two roots' trees.
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let (Some(open), Some(close)) = (line.rfind(" ["), line.rfind(']')) else {
            panic!(
                "cargo tree {selection:?}, line {}: no feature list: {line:?}",
                n + 1
            );
        };
        let mut words = line[..open].split_whitespace();
        let (Some(name), Some(version)) = (words.next(), words.next()) else {
            panic!(
                "cargo tree {selection:?}, line {}: no package: {line:?}",
                n + 1
            );
        };
        sets.entry(format!("{name} {version}"))
            .or_default()
            .insert(line[open + 2..close].to_owned());
    }
    sets
}

#[test]
fn one_feature_set_per_dependency() {
    let workspace = feature_sets(&["--workspace"]);
    // The check must have seen the dependencies it is there for.
    for heavy in ["datafusion", "arrow-select", "parquet", "ahash"] {
        assert!(
            workspace.keys().any(|k| k.split(' ').next() == Some(heavy)),
            "{heavy} is not in the workspace's tree"
        );
    }
    let mut differ = Vec::new();
    for package in BINARY_PACKAGES {
        let alone = feature_sets(&["-p", package]);
        for (dependency, sets) in &alone {
            let Some(everyone) = workspace.get(dependency) else {
                continue; // Only a member itself can be missing (its own features).
            };
            for set in sets.difference(everyone) {
                differ.push(format!(
                    "{package} alone builds {dependency} with [{set}], the workspace with \
                     {everyone:?}"
                ));
            }
        }
    }
    assert!(
        differ.is_empty(),
        "add the missing features to workspace-hack/Cargo.toml:\n{}",
        differ.join("\n")
    );
}
