//! Running the real-PyTorch drivers: finding a Python with torch 2.15, the
//! `libneuronprof_capi.so` cargo built for the test, and the Python result line.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

pub fn repo_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `NEURONPROF_TORCH_PYTHON`, else the repository's `target/torch-venv` python (`None`:
/// the test records a skip with [`NO_TORCH`]).
pub fn torch_python() -> Option<PathBuf> {
    if let Some(python) = std::env::var_os("NEURONPROF_TORCH_PYTHON") {
        return Some(PathBuf::from(python));
    }
    let venv = repo_dir().join("target/torch-venv/bin/python");
    venv.exists().then_some(venv)
}

/// Why a real-PyTorch test skips without a torch venv.
pub const NO_TORCH: &str = "no PyTorch: run `bash scripts/torch-venv` or set \
                            NEURONPROF_TORCH_PYTHON to a python with torch 2.15";

/// `NEURONPROF_HTA_PYTHON`, else the repository's `target/hta-venv` python.
pub fn hta_python() -> Option<PathBuf> {
    if let Some(python) = std::env::var_os("NEURONPROF_HTA_PYTHON") {
        return Some(PathBuf::from(python));
    }
    let venv = repo_dir().join("target/hta-venv/bin/python");
    venv.exists().then_some(venv)
}

/// Lets the OpenMP threads that compute the emulator's numerics sleep between ops
/// (`OMP_WAIT_POLICY=PASSIVE`, unless the environment names a policy): by default
/// libgomp's threads spin for a while after each parallel region, and on a 2-core machine
/// they take the CPU from the host thread's own work, which then shows as host time
/// (python/README.md, "The OpenMP threads"). libgomp reads the variable when it loads, so
/// it must be set before Python starts.
pub fn quiet_openmp(command: &mut Command) {
    if std::env::var_os("OMP_WAIT_POLICY").is_none() {
        command.env("OMP_WAIT_POLICY", "PASSIVE");
    }
}

/// The `libneuronprof_capi.so` cargo built for this run (next to the test binary) and
/// the Cargo target folder it is in.
pub fn capi_library() -> (PathBuf, PathBuf) {
    let exe = std::env::current_exe().expect("path of the test binary");
    let deps = exe.parent().expect("test binary has a folder");
    let target = deps
        .parent()
        .and_then(Path::parent)
        .expect("deps sits in <target>/<profile>");
    for candidate in [
        deps.join("libneuronprof_capi.so"),
        deps.join("../libneuronprof_capi.so"),
    ] {
        if candidate.exists() {
            return (candidate, target.to_path_buf());
        }
    }
    panic!(
        "libneuronprof_capi.so not found near {}: the crate must keep crate-type cdylib",
        deps.display()
    );
}

/// A fresh work folder under the target folder.
pub fn work_dir(name: &str) -> PathBuf {
    let (_, target) = capi_library();
    let work = target.join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    work
}

/// Runs `python/capi/tests/<driver>` with `args` and the environment the extension
/// needs; returns the JSON of its `RESULT` line and its standard error.
pub fn run_driver(
    python: &Path,
    driver: &str,
    args: &[&Path],
    env: &[(&str, &str)],
) -> (Value, String) {
    let script = repo_dir().join("python/capi/tests").join(driver);
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    run_script(python, &script, &args, env)
}

/// Runs the Python `script` (any path) with `args` and the environment the extension
/// needs; returns the JSON of its `RESULT` line and its standard error.
pub fn run_script(
    python: &Path,
    script: &Path,
    args: &[&std::ffi::OsStr],
    env: &[(&str, &str)],
) -> (Value, String) {
    let driver = script.display();
    let (capi, target) = capi_library();
    let mut command = Command::new(python);
    quiet_openmp(&mut command);
    command
        .arg(script)
        .args(args)
        .env("PYTHONPATH", repo_dir().join("python"))
        .env("NEURONPROF_CAPI_LIB", &capi)
        .env("NEURONPROF_TORCH_BUILD_DIR", target.join("torch-ext"))
        .env_remove("NEURONPROF_DEVICE_PROFILE")
        .env_remove("NEURON_LAUNCH_BLOCKING");
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output().expect("run the PyTorch driver");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "{driver} failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .unwrap_or_else(|| panic!("no RESULT line:\n{stdout}\n{stderr}"));
    (serde_json::from_str(line).unwrap(), stderr)
}

/// Runs the HTA `script` (`python -c`) with the trace folder as its argument and working
/// folder; its standard output (a failure panics with both outputs).
pub fn run_hta(python: &Path, script: &str, trace_dir: &Path) -> String {
    let output = Command::new(python)
        .args(["-c", script])
        .arg(trace_dir)
        .current_dir(trace_dir)
        .output()
        .expect("run HTA");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "HTA failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The numbers of the array `result[key]` (losses in a driver's result).
pub fn f64s(result: &Value, key: &str) -> Vec<f64> {
    result[key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in {result}"))
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect()
}

/// The JSON of a trace file.
pub fn read_trace(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The `*.pt.trace.json` files of a folder, sorted.
pub fn traces_in(dir: &Path) -> Vec<PathBuf> {
    let mut traces: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".pt.trace.json"))
        .collect();
    traces.sort();
    traces
}

pub fn events(trace: &Value) -> &[Value] {
    trace["traceEvents"].as_array().expect("traceEvents")
}

pub fn cat<'a>(trace: &'a Value, category: &str) -> Vec<&'a Value> {
    events(trace)
        .iter()
        .filter(|e| e["cat"] == category)
        .collect()
}

pub fn arg_i64(event: &Value, key: &str) -> i64 {
    event["args"][key]
        .as_i64()
        .unwrap_or_else(|| panic!("no integer arg {key:?} in {event}"))
}

pub fn ts(event: &Value) -> f64 {
    event["ts"].as_f64().expect("ts")
}

pub fn end(event: &Value) -> f64 {
    ts(event) + event["dur"].as_f64().expect("dur")
}

/// The `neuronprof` binary cargo built next to the test (`target/<profile>/`), if any.
pub fn neuronprof_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let path = exe.parent()?.parent()?.join("neuronprof");
    path.exists().then_some(path)
}

/// Why a test that runs `neuronprof` skips without it.
pub const NO_NEURONPROF: &str = "the neuronprof binary is not built next to this test: \
                                 cargo build -p neuronprof (cargo test --workspace does)";

/// Runs `neuronprof ARGS…`; its standard output (a failure panics with both outputs).
pub fn neuronprof(binary: &Path, args: &[&std::ffi::OsStr]) -> String {
    let output = Command::new(binary)
        .args(args)
        .output()
        .expect("run neuronprof");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "neuronprof {args:?} failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The device rows of a trace: kernels and copies on a device's queues.
pub fn device_kernels(trace: &Value) -> Vec<&Value> {
    events(trace)
        .iter()
        .filter(|e| e["cat"] == "kernel" && e["ph"] == "X")
        .collect()
}
