//! The dependency-arrow rules of `docs/ARCHITECTURE.md`, checked on `cargo metadata`.
//!
//! Every workspace crate has a fixed list of workspace crates it may depend on
//! (normal and build dependencies; dev-dependencies of a crate's own tests and
//! benches are allowed to reach further, except for the leaf rules below).
//! A workspace crate that is not in the table is itself a violation, so adding
//! a crate forces a decision about its arrows here.

use serde_json::Value;

/// Allowed workspace dependencies per workspace package, from DESIGN.md.
///
/// `neuronprof` is the `cli` folder's package; `neuronprof-tests` is `tests`.
/// `neuronprof-capi` (`python/capi`, the C ABI the PyTorch extension links) is a top
/// crate like `cli`: it joins the device, the recording and the profiler's conversion,
/// and nothing depends on it.
pub const ALLOWED: &[(&str, &[&str])] = &[
    ("runtime-hooks", &[]),
    ("trace-format", &[]),
    // No code: the union of the features the members ask of the dependencies
    // `neuronprof` shares with them, so it is built once (issue #37).
    ("workspace-hack", &[]),
    // The performance model of operators and the device rooflines: a leaf, so the
    // analyses, a what-if on another device and the emulator's timing model share it.
    ("perf-model", &[]),
    // The neuron-monitor document, written by neuron-backend and read by analysis.
    ("monitor-schema", &[]),
    ("neuron-backend", &["runtime-hooks", "monitor-schema"]),
    ("profiler", &["runtime-hooks", "trace-format"]),
    // Neuron Explorer profiles (Parquet) read as Kineto events: a reader beside
    // trace-format's, which stays a leaf.
    ("neuron-explorer", &["trace-format"]),
    (
        "analysis",
        &[
            "trace-format",
            "neuron-explorer",
            "monitor-schema",
            "perf-model",
        ],
    ),
    ("exporters", &["trace-format", "analysis"]),
    // Serves exposition text over HTTP; knows nothing of what the text says.
    ("metrics-server", &[]),
    // SQL over traces (embedded DataFusion): the exporters' tables, read from traces.
    ("query", &["trace-format", "exporters"]),
    ("tui", &["analysis", "trace-format"]),
    ("gui", &["analysis", "trace-format"]),
    (
        "neuronprof",
        &[
            "runtime-hooks",
            "trace-format",
            "perf-model",
            "neuron-explorer",
            "monitor-schema",
            "neuron-backend",
            "profiler",
            "analysis",
            "exporters",
            "metrics-server",
            "query",
            "tui",
            "gui",
            "workspace-hack",
        ],
    ),
    (
        "neuronprof-capi",
        &[
            "runtime-hooks",
            "neuron-backend",
            "profiler",
            "trace-format",
        ],
    ),
    (
        "neuronprof-tests",
        &[
            "runtime-hooks",
            "trace-format",
            "perf-model",
            "neuron-explorer",
            "monitor-schema",
            "neuron-backend",
            "profiler",
            "analysis",
            "exporters",
            "query",
            "tui",
            "gui",
        ],
    ),
];

/// External (non-workspace) crates `runtime-hooks` may use at run time: std and libc only.
pub const RUNTIME_HOOKS_EXTERNAL: &[&str] = &["libc"];

/// One broken rule: which crate, which dependency, and why it is not allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The depending workspace package.
    pub package: String,
    /// The dependency's package name.
    pub dependency: String,
    /// Dependency kind as cargo reports it: `normal`, `build` or `dev`.
    pub kind: String,
    /// The rule that was broken, in words.
    pub rule: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} -> {} ({} dependency): {}",
            self.package, self.dependency, self.kind, self.rule
        )
    }
}

/// Checks `cargo metadata --format-version 1 --no-deps` output against the rules.
///
/// Returns every violation found (empty when the workspace follows DESIGN.md),
/// or an error string when the metadata does not have the expected shape.
pub fn check(metadata: &Value) -> Result<Vec<Violation>, String> {
    let packages = metadata
        .get("packages")
        .and_then(Value::as_array)
        .ok_or("cargo metadata: no `packages` array")?;
    let members: Vec<&str> = packages
        .iter()
        .filter_map(|p| p.get("name").and_then(Value::as_str))
        .collect();

    let mut violations = Vec::new();
    for package in packages {
        let name = package
            .get("name")
            .and_then(Value::as_str)
            .ok_or("cargo metadata: package without a name")?;
        let Some(allowed) = ALLOWED.iter().find(|(n, _)| *n == name).map(|(_, a)| *a) else {
            violations.push(Violation {
                package: name.to_owned(),
                dependency: String::new(),
                kind: String::new(),
                rule: "crate is not in the arrow table of tests/src/arrows.rs".to_owned(),
            });
            continue;
        };
        let deps = package
            .get("dependencies")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("cargo metadata: package {name} has no dependencies array"))?;
        for dep in deps {
            let dep_name = dep.get("name").and_then(Value::as_str).unwrap_or("");
            // cargo reports `null` for normal dependencies.
            let kind = dep.get("kind").and_then(Value::as_str).unwrap_or("normal");
            let in_workspace = members.contains(&dep_name);
            let mut broken = |rule: String| {
                violations.push(Violation {
                    package: name.to_owned(),
                    dependency: dep_name.to_owned(),
                    kind: kind.to_owned(),
                    rule,
                })
            };
            if in_workspace && dep_name == "neuronprof" {
                broken("nothing depends on the cli crate".to_owned());
            } else if in_workspace && dep_name == "neuronprof-capi" {
                broken("nothing depends on the C ABI crate of python/".to_owned());
            } else if in_workspace && kind != "dev" && !allowed.contains(&dep_name) {
                broken(format!(
                    "{name} may depend only on {allowed:?} in the workspace"
                ));
            } else if in_workspace
                && kind == "dev"
                && matches!(name, "runtime-hooks" | "trace-format" | "monitor-schema")
            {
                broken("leaf crates know no other workspace crate, not even in tests".to_owned());
            } else if name == "runtime-hooks"
                && kind != "dev"
                && !RUNTIME_HOOKS_EXTERNAL.contains(&dep_name)
            {
                broken("runtime-hooks depends on std and libc only".to_owned());
            }
        }
    }
    Ok(violations)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn package(name: &str, deps: &[(&str, Option<&str>)]) -> Value {
        let deps: Vec<Value> = deps
            .iter()
            .map(|(d, kind)| json!({ "name": d, "kind": kind }))
            .collect();
        json!({ "name": name, "dependencies": deps })
    }

    fn workspace(packages: Vec<Value>) -> Value {
        json!({ "packages": packages })
    }

    #[test]
    fn clean_workspace_has_no_violations() {
        let meta = workspace(vec![
            package(
                "runtime-hooks",
                &[("libc", None), ("criterion", Some("dev"))],
            ),
            package("trace-format", &[("serde_json", None)]),
            package("analysis", &[("trace-format", None)]),
            package("neuronprof", &[("analysis", None), ("trace-format", None)]),
        ]);
        assert_eq!(check(&meta).unwrap(), vec![]);
    }

    #[test]
    fn leaf_depending_on_workspace_crate_is_reported() {
        let meta = workspace(vec![
            package("runtime-hooks", &[]),
            package("trace-format", &[("runtime-hooks", None)]),
        ]);
        let v = check(&meta).unwrap();
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].package, "trace-format");
        assert_eq!(v[0].dependency, "runtime-hooks");
    }

    #[test]
    fn runtime_hooks_with_external_dependency_is_reported() {
        let meta = workspace(vec![package("runtime-hooks", &[("parking_lot", None)])]);
        let v = check(&meta).unwrap();
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].rule.contains("std and libc"));
    }

    #[test]
    fn tui_and_gui_may_not_depend_on_each_other() {
        let meta = workspace(vec![
            package("tui", &[("gui", None)]),
            package("gui", &[("tui", Some("build"))]),
        ]);
        assert_eq!(check(&meta).unwrap().len(), 2);
    }

    #[test]
    fn nothing_may_depend_on_cli_even_in_tests() {
        let meta = workspace(vec![
            package("neuronprof", &[]),
            package("analysis", &[("neuronprof", Some("dev"))]),
        ]);
        let v = check(&meta).unwrap();
        assert_eq!(v.len(), 1);
        assert!(v[0].rule.contains("cli"));
    }

    #[test]
    fn analysis_may_not_depend_on_backend() {
        let meta = workspace(vec![
            package("neuron-backend", &[]),
            package("analysis", &[("neuron-backend", None)]),
        ]);
        assert_eq!(check(&meta).unwrap().len(), 1);
    }

    #[test]
    fn unknown_crate_is_reported() {
        let meta = workspace(vec![package("mystery", &[])]);
        assert_eq!(check(&meta).unwrap()[0].package, "mystery");
    }

    #[test]
    fn malformed_metadata_is_an_error() {
        assert!(check(&json!({})).is_err());
    }
}
