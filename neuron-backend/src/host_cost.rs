//! What an op costs the host: the modeled framework time of eager PyTorch per op.
//!
//! The emulator's own dispatcher (argument checks, allocator bookkeeping, the timing
//! model, recording) is not what a real host spends on an op: it is written in Rust and
//! takes about a microsecond in a release build, ten in a debug build, where eager
//! PyTorch spends several microseconds in Python, the dispatcher, autograd and the
//! runtime's launch call. So on a thread with a [`HostCost`] (every rank thread of a
//! [`crate::dist::World`], hence every built-in workload), each op runs as emulation
//! time and the host clock advances by the op's modeled cost instead:
//!
//! - before the launch, the framework cost of its class: a forward op of a recorded
//!   graph ([`HostCost::forward_op_ns`]), an op the autograd engine dispatches in the
//!   backward ([`HostCost::backward_op_ns`], plus [`HostCost::backward_node_ns`] once
//!   per backward node), any other op such as an optimizer update, a creation or a copy
//!   ([`HostCost::plain_op_ns`]), a view that launches nothing
//!   ([`HostCost::view_op_ns`]);
//! - inside the `nrt_execute` launch call, [`HostCost::launch_ns`] before the queue
//!   submission (which waits when the queue is full), so the kernel can start
//!   `launch_latency_ns` after the submission;
//! - a collective's call path ([`HostCost::collective_ns`]) before its launch.
//!
//! The host records of the op (operator begin/end, allocations, the launch and the
//! submission) sit at these modeled instants, and the same program gives the same host
//! timeline on any machine, build and load.
//!
//! # Where the figures come from
//!
//! [`HostCost::eager_pytorch`] holds eager PyTorch 2.15 on the CPU as measured by
//! `scripts/host_cost_reference.py` (tiny tensors, one thread, the thread's CPU time;
//! the command and the numbers are in `docs/HARDWARE.md`). The launch call has no
//! published Neuron figure: it is taken as the median `cudaLaunchKernel` of the real
//! CUDA traces in `../shared/traces` (an assumption, overridable). Override any figure
//! with [`HostCost::from_json`] (`neuronprof run --host-cost FILE`).

use std::cell::Cell;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::BackendError;

/// The host cost of each kind of op, ns (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostCost {
    /// A forward op of a recorded graph (autograd on): Python, dispatcher, autograd node.
    pub forward_op_ns: u64,
    /// An op the autograd engine dispatches in the backward (C++, no Python).
    pub backward_op_ns: u64,
    /// The autograd engine's own work per backward node (once per node, besides its ops).
    pub backward_node_ns: u64,
    /// Any other op (optimizer updates, copies, creation, inference).
    pub plain_op_ns: u64,
    /// A view (reshape, transpose of a view, slice): no kernel.
    pub view_op_ns: u64,
    /// The `c10d` call path of a collective, before its launch.
    pub collective_ns: u64,
    /// The runtime's launch call (`nrt_execute`) before the queue submission.
    pub launch_ns: u64,
}

/// Which figure an op pays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpClass {
    Forward,
    Backward,
    Plain,
    View,
}

impl HostCost {
    /// Eager PyTorch 2.15 on the CPU, measured (module docs).
    pub fn eager_pytorch() -> Self {
        HostCost {
            forward_op_ns: 4_300,
            backward_op_ns: 2_500,
            backward_node_ns: 2_500,
            plain_op_ns: 1_500,
            view_op_ns: 2_500,
            collective_ns: 11_300,
            launch_ns: 7_000,
        }
    }

    /// The framework cost of an op of `class`.
    pub(crate) fn op_ns(&self, class: OpClass) -> u64 {
        match class {
            OpClass::Forward => self.forward_op_ns,
            OpClass::Backward => self.backward_op_ns,
            OpClass::Plain => self.plain_op_ns,
            OpClass::View => self.view_op_ns,
        }
    }

    /// A host cost from a JSON override: one object whose keys name fields of
    /// [`HostCost`] and replace the [`eager_pytorch`](Self::eager_pytorch) values;
    /// unknown keys are errors.
    ///
    /// ```
    /// use neuron_backend::HostCost;
    /// let cost = HostCost::from_json(r#"{"launch_ns": 2500}"#)?;
    /// assert_eq!(cost.launch_ns, 2500);
    /// assert_eq!(cost.forward_op_ns, HostCost::eager_pytorch().forward_op_ns);
    /// # Ok::<(), neuron_backend::BackendError>(())
    /// ```
    pub fn from_json(text: &str) -> Result<Self, BackendError> {
        Self::from_json_at(text, "<string>")
    }

    /// A host cost from a JSON override file (see [`from_json`](Self::from_json)).
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, BackendError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|err| BackendError::Profile {
            source_name: path.display().to_string(),
            reason: err.to_string(),
        })?;
        Self::from_json_at(&text, &path.display().to_string())
    }

    fn from_json_at(text: &str, source_name: &str) -> Result<Self, BackendError> {
        let fail = |reason: String| BackendError::Profile {
            source_name: source_name.to_string(),
            reason: format!("host cost: {reason}"),
        };
        let overrides: Value =
            serde_json::from_str(text).map_err(|err| fail(format!("not JSON: {err}")))?;
        let Value::Object(overrides) = overrides else {
            return Err(fail("expected a JSON object".into()));
        };
        let Value::Object(mut merged) =
            serde_json::to_value(Self::eager_pytorch()).map_err(|err| fail(err.to_string()))?
        else {
            return Err(fail("did not serialize to an object".into()));
        };
        for (key, value) in overrides {
            if !merged.contains_key(&key) {
                return Err(fail(format!("unknown field {key:?}")));
            }
            merged.insert(key, value);
        }
        serde_json::from_value(Value::Object(merged))
            .map_err(|err| fail(format!("bad value: {err}")))
    }

    /// Every figure as JSON in the override format.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

impl Default for HostCost {
    fn default() -> Self {
        Self::eager_pytorch()
    }
}

thread_local! {
    static THREAD_HOST_COST: Cell<Option<HostCost>> = const { Cell::new(None) };
}

/// Sets the calling thread's host cost (`None`: ops take what the emulator's own
/// dispatch measures, the default outside rank threads); returns the previous one.
pub fn set_thread_host_cost(cost: Option<HostCost>) -> Option<HostCost> {
    THREAD_HOST_COST.with(|c| c.replace(cost))
}

/// The calling thread's host cost.
pub fn thread_host_cost() -> Option<HostCost> {
    THREAD_HOST_COST.with(Cell::get)
}

/// Spends the figure `figure` picks from the thread's host cost (nothing without one).
pub(crate) fn spend_figure(figure: impl FnOnce(&HostCost) -> u64) {
    if let Some(cost) = thread_host_cost() {
        spend(figure(&cost));
    }
}

/// Spends `ns` of modeled host time on this thread (not a wait).
pub(crate) fn spend(ns: u64) {
    if ns > 0 {
        let now = runtime_hooks::clock::now_ns();
        runtime_hooks::clock::advance_to(now + ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_replace_named_figures_and_reject_unknown_ones() {
        let cost = HostCost::from_json(r#"{"launch_ns": 1000, "view_op_ns": 0}"#).unwrap();
        assert_eq!((cost.launch_ns, cost.view_op_ns), (1000, 0));
        assert_eq!(cost.plain_op_ns, HostCost::eager_pytorch().plain_op_ns);
        let err = HostCost::from_json(r#"{"launch": 5}"#).unwrap_err();
        assert!(err.to_string().contains("\"launch\""), "{err}");
        let err = HostCost::from_json("[1]").unwrap_err();
        assert!(err.to_string().contains("object"), "{err}");
        let round_trip = HostCost::from_json(&cost.to_json()).unwrap();
        assert_eq!(round_trip, cost);
    }

    #[test]
    fn spending_moves_the_host_clock_by_the_figure() {
        std::thread::spawn(|| {
            let cost = HostCost::eager_pytorch();
            assert_eq!(set_thread_host_cost(Some(cost)), None);
            let _frozen = runtime_hooks::clock::emulation_scope();
            let before = runtime_hooks::clock::now_ns();
            spend_figure(|c| c.launch_ns);
            assert_eq!(runtime_hooks::clock::now_ns() - before, cost.launch_ns);
            set_thread_host_cost(None);
            spend_figure(|c| c.launch_ns);
            assert_eq!(runtime_hooks::clock::now_ns() - before, cost.launch_ns);
        })
        .join()
        .unwrap();
    }
}
