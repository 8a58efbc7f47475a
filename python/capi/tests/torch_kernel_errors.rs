//! Errors of queued kernels on real PyTorch (issue 16; `tests/torch_errors_driver.py`,
//! design in `python/neuronprof_torch/csrc/errors.cpp`):
//! - launches asynchronous: an out-of-range index in `embedding` / `index_select` /
//!   `gather` returns at the op and raises a RuntimeError naming the op and its index input
//!   at the next synchronizing call — `synchronize`, `.item()`, `.cpu()`,
//!   `Event.synchronize`, `Stream.synchronize`, `torch.accelerator.synchronize`, and
//!   `Event.query` / `Stream.query` (as CUDA's queries return a kernel's error) — once
//!   (a second synchronization succeeds, the device keeps giving the CPU's values); two
//!   errors before one call are reported as the first plus a count; an error never
//!   synchronized is printed when the process ends;
//! - `NEURON_LAUNCH_BLOCKING=1`: the launch waits for its kernel (the stream is idle right
//!   after a copy that takes milliseconds on the device, busy without it) and the error
//!   raises at the op;
//! - in both, an argument error (found by the meta kernel too) raises at the op, with
//!   PyTorch's own type and message;
//! - a panic inside an entry point of the C ABI (`tests/torch_panic_driver.py`:
//!   `npc_memory_blocks`, behind `torch.neuron.memory._snapshot()`, made to panic with
//!   `NEURONPROF_CAPI_PANIC`) raises a RuntimeError at that call and the process goes on;
//!   before every entry point was under the panic guard, it unwound into C and aborted
//!   the Python process.
//!
//! Needs a Python with torch 2.15 (see `support/torch.rs`); without one the skip is
//! recorded (`tests/support/skip.rs`), and under CI it fails.

#[path = "../../../tests/support/skip.rs"]
mod skip;
#[path = "support/torch.rs"]
mod torch;

use serde_json::Value;

/// The message of a RuntimeError the driver caught (panics on anything else).
fn runtime_error<'a>(result: &'a Value, key: &str) -> &'a str {
    let caught = &result[key];
    assert_eq!(caught[0], "RuntimeError", "{key}: {caught}");
    caught[1].as_str().unwrap()
}

fn check_kernel_error(message: &str, call: &str, index: &str) {
    assert!(
        message.contains(&format!("neuron: kernel {call} failed on neuron:0")),
        "{message}"
    );
    assert!(
        message.contains(&format!("index inputs: {index}")),
        "{message}"
    );
}

fn check_argument_error(result: &Value) {
    let caught = &result["argument_error"];
    assert_eq!(caught[0], "IndexError", "{caught}");
    assert!(
        caught[1]
            .as_str()
            .unwrap()
            .starts_with("Dimension out of range"),
        "{caught}"
    );
}

const SELECT: &str = "aten::index_select(self: f32[10, 4], dim: 0, index: i64[3])";
const BAD_INDEX: &str = "index (i64[3], values 1..12)";

#[test]
fn torch_kernel_errors() {
    let Some(python) = torch::torch_python() else {
        skip::skipped("neuronprof-capi: torch_kernel_errors", torch::NO_TORCH);
        return;
    };
    let (run, stderr) = torch::run_driver(&python, "torch_errors_driver.py", &[], &[]);
    assert_eq!(run["mode"], "async");
    assert_eq!(run["idle_after_launch"], false, "{run}");
    check_argument_error(&run);
    assert_eq!(run["at_op"], Value::Null, "the launch raised: {run}");
    assert_eq!(run["launched_shape"], serde_json::json!([3, 4]));
    assert_eq!(run["ran_on"], serde_json::json!([3, 4]));
    let at_sync = runtime_error(&run, "at_sync");
    check_kernel_error(at_sync, SELECT, BAD_INDEX);
    assert!(at_sync.contains("index out of range in self"), "{at_sync}");
    assert!(at_sync.contains("next synchronizing call"), "{at_sync}");
    assert_eq!(run["second_sync"], Value::Null, "reported once: {run}");
    assert_eq!(run["after_values"], run["expected_values"]);
    check_kernel_error(
        runtime_error(&run, "at_item"),
        // The functional op the script called is the kernel that fails (structured ops'
        // functional variants go to the fallback directly, not as `empty` + `.out`).
        "aten::gather(self: f32[10, 4], dim: 0, index: i64[1, 2], sparse_grad: False)",
        "index (i64[1, 2], values 0..17)",
    );
    for key in [
        "at_cpu",
        "at_event",
        "at_stream",
        "at_event_query",
        "at_stream_query",
        "two_errors",
    ] {
        check_kernel_error(runtime_error(&run, key), SELECT, BAD_INDEX);
    }
    assert!(
        runtime_error(&run, "two_errors").contains("(1 later kernel(s) on this device failed too"),
        "{run}"
    );
    assert_eq!(run["query_clean"], Value::Null, "{run}");
    assert_eq!(run["clean_after"], Value::Null, "{run}");
    // The error left pending at the end is printed, not lost.
    assert!(
        stderr.contains("index inputs: index (i64[1], values -20..-20)")
            && stderr.contains("never reported: no synchronizing call followed it"),
        "{stderr}"
    );

    let (blocking, stderr) = torch::run_driver(
        &python,
        "torch_errors_driver.py",
        &[],
        &[("NEURON_LAUNCH_BLOCKING", "1")],
    );
    assert_eq!(blocking["mode"], "blocking", "{blocking}");
    assert_eq!(blocking["idle_after_launch"], true, "{blocking}");
    check_argument_error(&blocking);
    let at_op = runtime_error(&blocking, "at_op");
    check_kernel_error(at_op, SELECT, BAD_INDEX);
    assert!(
        at_op.contains("raised at the op: NEURON_LAUNCH_BLOCKING=1"),
        "{at_op}"
    );
    assert_eq!(blocking["sync_after"], Value::Null, "{blocking}");
    assert!(!stderr.contains("never reported"), "{stderr}");
}

#[test]
fn a_panic_in_the_c_abi_is_a_python_exception() {
    let Some(python) = torch::torch_python() else {
        skip::skipped(
            "neuronprof-capi: a_panic_in_the_c_abi_is_a_python_exception",
            torch::NO_TORCH,
        );
        return;
    };
    let (run, _stderr) = torch::run_driver(
        &python,
        "torch_panic_driver.py",
        &[],
        &[("NEURONPROF_CAPI_PANIC", "npc_memory_blocks")],
    );
    assert_eq!(run["asked"], "npc_memory_blocks", "{run}");
    let caught = &run["snapshot"];
    assert_eq!(caught[0], "RuntimeError", "{run}");
    let message = caught[1].as_str().unwrap();
    assert!(
        message.contains("neuronprof_capi panicked in npc_memory_blocks")
            && message.contains("NEURONPROF_CAPI_PANIC=npc_memory_blocks asked it to panic"),
        "{message}"
    );
    assert_eq!(
        run["after"], 32.0,
        "the device works after the panic: {run}"
    );
}
