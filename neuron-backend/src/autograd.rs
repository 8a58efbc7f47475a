//! Reverse-mode automatic differentiation over the backend's ops.
//!
//! A [`Tape`] records the forward ops applied to [`Var`]s; [`Tape::backward`] walks it
//! in reverse and runs each op's backward as ordinary device ops (matmuls,
//! `gelu_backward`, `native_layer_norm_backward`, ...), so backward kernels are placed,
//! timed and recorded like any other. Linking forward and backward the way PyTorch's
//! profiler does (`fwdbwd` flows):
//! - each forward op that needs a gradient records its operator with a fresh sequence
//!   number and starts a [`ForwardToBackward`](runtime_hooks::FlowKind::ForwardToBackward)
//!   flow with that number as the id, inside the operator's span;
//! - its backward runs inside a host operator `autograd::engine::evaluate_function:
//!   <Name>Backward0` with the same sequence number, which ends the flow; the device
//!   ops of the backward carry that sequence number too.
//!
//! ```
//! use neuron_backend::autograd::Tape;
//! use neuron_backend::{Runtime, Tensor};
//!
//! let device = Runtime::trn2().device(0)?;
//! let tape = Tape::new();
//! let w = tape.param(Tensor::from_f32(&[2, 2], vec![1.0, 2.0, 3.0, 4.0])?.to_device(&device)?);
//! let x = tape.constant(Tensor::from_f32(&[1, 2], vec![1.0, 1.0])?.to_device(&device)?);
//! let loss = x.matmul(&w)?.sum_all()?;
//! let grads = tape.backward(&loss)?;
//! // d(sum(x·w))/dw = xᵀ·1
//! assert_eq!(grads.get(&w).unwrap().to_vec_f32()?, vec![1.0; 4]);
//! # Ok::<(), neuron_backend::BackendError>(())
//! ```

mod dist;
mod ops;

use std::collections::BTreeMap as HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use runtime_hooks::{FlowKind, OperatorPayload, OperatorScope};

use crate::dispatch::{self, BackwardScope, ForwardScope};
use crate::{BackendError, Tensor};

type BackwardFn = Box<dyn FnOnce(&Tensor) -> Result<Vec<Option<Tensor>>, BackendError> + Send>;

struct Node {
    /// Tape indices of the inputs (`None`: a constant, no gradient).
    inputs: Vec<Option<usize>>,
    /// `None` for a parameter (a leaf).
    backward: Option<BackwardFn>,
    /// The backward function's name, for example `MmBackward0`.
    name: &'static str,
    /// The forward op's sequence number.
    seq_nr: u64,
}

/// A record of forward ops, to differentiate through. Cheap to clone (shared).
#[derive(Clone, Default)]
pub struct Tape {
    nodes: Arc<Mutex<Vec<Node>>>,
}

impl std::fmt::Debug for Tape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tape")
            .field("nodes", &self.lock().len())
            .finish()
    }
}

/// A tensor on a tape: a parameter, a constant, or the result of recorded ops.
#[derive(Clone, Debug)]
pub struct Var {
    tensor: Tensor,
    /// Tape index; `None` for a constant.
    node: Option<usize>,
    tape: Tape,
}

/// Gradients of parameters, from [`Tape::backward`].
#[derive(Debug, Default)]
pub struct Gradients {
    by_node: HashMap<usize, Tensor>,
}

impl Gradients {
    /// The gradient of parameter `var`, if the loss depends on it.
    pub fn get(&self, var: &Var) -> Option<&Tensor> {
        self.by_node.get(&var.node?)
    }

    /// Removes and returns the gradient of `var`.
    pub fn take(&mut self, var: &Var) -> Option<Tensor> {
        self.by_node.remove(&var.node?)
    }
}

impl Tape {
    /// An empty tape.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Node>> {
        self.nodes.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Number of recorded nodes (parameters and ops).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A parameter: a leaf that gets a gradient.
    pub fn param(&self, tensor: Tensor) -> Var {
        let mut nodes = self.lock();
        nodes.push(Node {
            inputs: Vec::new(),
            backward: None,
            name: "",
            seq_nr: 0,
        });
        Var {
            tensor,
            node: Some(nodes.len() - 1),
            tape: self.clone(),
        }
    }

    /// A constant: no gradient flows into it.
    pub fn constant(&self, tensor: Tensor) -> Var {
        Var {
            tensor,
            node: None,
            tape: self.clone(),
        }
    }

    /// Runs `forward` (one device op) on the tensors of `inputs` and records it with
    /// the backward `make_backward` builds from the output, which maps the output's
    /// gradient to one gradient per input.
    pub(crate) fn record<B>(
        &self,
        name: &'static str,
        inputs: &[&Var],
        forward: impl FnOnce() -> Result<Tensor, BackendError>,
        make_backward: impl FnOnce(&Tensor) -> B,
    ) -> Result<Var, BackendError>
    where
        B: FnOnce(&Tensor) -> Result<Vec<Option<Tensor>>, BackendError> + Send + 'static,
    {
        let needs_grad = inputs.iter().any(|v| v.node.is_some());
        if !needs_grad {
            return Ok(self.constant(forward()?));
        }
        let tensor = {
            let _forward = ForwardScope::new();
            forward()?
        };
        let seq_nr = dispatch::last_seq_nr();
        let backward = make_backward(&tensor);
        let mut nodes = self.lock();
        nodes.push(Node {
            inputs: inputs.iter().map(|v| v.node).collect(),
            backward: Some(Box::new(backward)),
            name,
            seq_nr,
        });
        Ok(Var {
            tensor,
            node: Some(nodes.len() - 1),
            tape: self.clone(),
        })
    }

    /// Gradients of the scalar `loss` with respect to every parameter it depends on.
    /// Consumes the recorded backward functions: a tape is differentiated once.
    pub fn backward(&self, loss: &Var) -> Result<Gradients, BackendError> {
        self.backward_with(loss, &[], |_, _| Ok(()))
    }

    /// Like [`backward`](Self::backward), calling `on_ready(i, grad)` as soon as the
    /// gradient of `params[i]` is final (every op that used it has run its backward),
    /// while the rest of the backward still runs: what DDP's gradient buckets hook
    /// into to overlap their all-reduces with the backward.
    pub fn backward_with(
        &self,
        loss: &Var,
        params: &[Var],
        mut on_ready: impl FnMut(usize, &Tensor) -> Result<(), BackendError>,
    ) -> Result<Gradients, BackendError> {
        // The earliest node using each parameter: once the reverse walk has done it,
        // the parameter's gradient is complete.
        let mut first_use: HashMap<usize, usize> = HashMap::new();
        {
            let nodes = self.lock();
            for (index, node) in nodes.iter().enumerate() {
                for input in node.inputs.iter().flatten() {
                    first_use.entry(*input).or_insert(index);
                }
            }
        }
        let mut ready_at: HashMap<usize, Vec<usize>> = HashMap::new();
        for (i, p) in params.iter().enumerate() {
            if let Some(first) = p.node.and_then(|n| first_use.get(&n)) {
                ready_at.entry(*first).or_default().push(i);
            }
        }
        let Some(root) = loss.node else {
            return Ok(Gradients::default());
        };
        let device = loss
            .tensor
            .device()
            .cloned()
            .ok_or_else(|| BackendError::DeviceMismatch {
                op: "backward",
                devices: vec![loss.tensor.place()],
            })?;
        let seed = device.full(loss.tensor.shape(), 1.0, loss.tensor.dtype())?;
        let mut notify = |index: usize, grads: &HashMap<usize, Tensor>| {
            for &i in ready_at.get(&index).map(Vec::as_slice).unwrap_or(&[]) {
                let node = params[i].node.expect("parameters have nodes");
                if let Some(g) = grads.get(&node) {
                    on_ready(i, g)?;
                }
            }
            Ok::<(), BackendError>(())
        };
        let mut grads: HashMap<usize, Tensor> = HashMap::from([(root, seed)]);
        let mut index = root + 1;
        while index > 0 {
            index -= 1;
            let (backward, inputs, name, seq_nr) = {
                let mut nodes = self.lock();
                let node = &mut nodes[index];
                (
                    node.backward.take(),
                    node.inputs.clone(),
                    node.name,
                    node.seq_nr,
                )
            };
            let grad = grads.get(&index).cloned();
            if let (Some(backward), Some(grad)) = (backward, grad) {
                let input_grads = {
                    // On a host-cost thread the node's own work is modeled, not measured.
                    let _host = dispatch::HostSide::enter();
                    let _scope = OperatorScope::new(OperatorPayload {
                        name_id: backward_name_id(name),
                        seq_nr,
                        ..Default::default()
                    });
                    if runtime_hooks::is_enabled() {
                        runtime_hooks::flow_end(FlowKind::ForwardToBackward, seq_nr);
                    }
                    // The autograd engine's own work for the node (modeled on a
                    // host-cost thread), then the node's ops.
                    crate::host_cost::spend_figure(|cost| cost.backward_node_ns);
                    let _backward = BackwardScope::new(seq_nr);
                    backward(&grad)?
                };
                // Intermediates' gradients are not kept once used.
                grads.remove(&index);
                for (input, g) in inputs.into_iter().zip(input_grads) {
                    let (Some(input), Some(g)) = (input, g) else {
                        continue;
                    };
                    let summed = match grads.remove(&input) {
                        Some(existing) => existing.add(&g)?,
                        None => g,
                    };
                    grads.insert(input, summed);
                }
            }
            notify(index, &grads)?;
        }
        Ok(Gradients { by_node: grads })
    }
}

fn backward_name_id(name: &'static str) -> runtime_hooks::NameId {
    if !runtime_hooks::is_enabled() {
        return runtime_hooks::NameId::NONE;
    }
    runtime_hooks::intern(&format!("autograd::engine::evaluate_function: {name}"))
}

impl Var {
    /// The tensor.
    pub fn tensor(&self) -> &Tensor {
        &self.tensor
    }

    /// Whether a gradient flows into this value.
    pub fn requires_grad(&self) -> bool {
        self.node.is_some()
    }

    /// The tape.
    pub fn tape(&self) -> &Tape {
        &self.tape
    }
}
