//! Differentiable collectives for tensor parallelism (Megatron's `f` and `g`).

use super::Var;
use crate::dispatch;
use crate::dist::{ProcessGroup, ReduceOp};
use crate::{BackendError, Tensor};

type Grads = Result<Vec<Option<Tensor>>, BackendError>;

impl Var {
    /// Identity forward, all-reduce (sum) of the gradient over `group` backward: the
    /// input of a column-parallel layer, whose ranks each contribute part of the
    /// input's gradient.
    pub fn tp_copy(&self, group: &ProcessGroup) -> Result<Var, BackendError> {
        let group = group.clone();
        self.tape.record(
            "TpCopyBackward0",
            &[self],
            || {
                Ok(dispatch::host_op("aten::alias", &[&self.tensor], || {
                    self.tensor.clone()
                }))
            },
            |_| move |g: &Tensor| -> Grads { Ok(vec![Some(group.all_reduce(g, ReduceOp::Sum)?)]) },
        )
    }

    /// All-reduce (sum) over `group` forward, identity backward: the output of a
    /// row-parallel layer, whose ranks each hold a partial sum.
    pub fn tp_reduce(&self, group: &ProcessGroup) -> Result<Var, BackendError> {
        let group_fwd = group.clone();
        self.tape.record(
            "TpReduceBackward0",
            &[self],
            || group_fwd.all_reduce(&self.tensor, ReduceOp::Sum),
            |_| move |g: &Tensor| -> Grads { Ok(vec![Some(g.clone())]) },
        )
    }
}
