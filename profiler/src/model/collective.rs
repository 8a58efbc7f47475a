//! Collectives: the NCCL-style args real traces carry (`../shared/reference/kineto-format.md`,
//! "args", Collectives) and the names they are written under.

use std::sync::Arc;

use runtime_hooks::{CollectiveAlgorithm, CollectiveOp, CollectivePayload};

/// A collective's parameters, resolved from its record.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Collective {
    pub(crate) op: CollectiveOp,
    /// `Process Group Name`.
    pub(crate) group: Arc<str>,
    /// `Process Group Ranks` as recorded (`[0, 1]`), if any.
    pub(crate) group_ranks: Option<Arc<str>>,
    pub(crate) group_size: u32,
    pub(crate) rank: u32,
    pub(crate) algorithm: u16,
    /// `c10::ScalarType` code.
    pub(crate) dtype: u16,
    pub(crate) bytes: u64,
    /// `Seq`: the collective's position among this rank's collectives of its group.
    pub(crate) seq: u64,
}

impl Collective {
    pub(crate) fn new(op: CollectiveOp, p: &CollectivePayload, group: Arc<str>) -> Self {
        Collective {
            op,
            group,
            group_ranks: None,
            group_size: p.group_size,
            rank: p.rank,
            algorithm: p.algorithm,
            dtype: p.dtype,
            bytes: p.bytes,
            seq: 0,
        }
    }

    /// `Collective name` as PyTorch writes it (`allreduce`, `allgather`, …).
    pub(crate) fn collective_name(&self) -> &'static str {
        match self.op {
            CollectiveOp::AllReduce => "allreduce",
            CollectiveOp::AllGather => "allgather",
            CollectiveOp::ReduceScatter => "reduce_scatter",
            CollectiveOp::Broadcast => "broadcast",
            CollectiveOp::Reduce => "reduce",
            CollectiveOp::AllToAll => "all_to_all",
            CollectiveOp::Send => "send",
            CollectiveOp::Recv => "recv",
            CollectiveOp::Barrier => "barrier",
        }
    }

    fn op_camel(&self) -> &'static str {
        match self.op {
            CollectiveOp::AllReduce => "AllReduce",
            CollectiveOp::AllGather => "AllGather",
            CollectiveOp::ReduceScatter => "ReduceScatter",
            CollectiveOp::Broadcast => "Broadcast",
            CollectiveOp::Reduce => "Reduce",
            CollectiveOp::AllToAll => "AllToAll",
            CollectiveOp::Send => "SendRecv",
            CollectiveOp::Recv => "SendRecv",
            CollectiveOp::Barrier => "Barrier",
        }
    }

    /// The algorithm's name in upper case (`RING`, `MESH`), if stated.
    pub(crate) fn algorithm_name(&self) -> Option<String> {
        match CollectiveAlgorithm::from_raw(self.algorithm) {
            Some(CollectiveAlgorithm::Unspecified) => None,
            Some(known) => Some(format!("{known:?}").to_uppercase()),
            None => Some(format!("ALGO{}", self.algorithm)),
        }
    }

    /// The device kernel's name: `ncclKernel_AllReduce_RING_BFloat16`.
    ///
    /// The `ncclKernel_` prefix is deliberate: HTA and our `analysis` crate (in its
    /// name-based compat mode) classify communication kernels by that prefix
    /// (`../shared/reference/hta-analyses.md`); the args say it is a Neuron collective.
    pub(crate) fn kernel_name(&self) -> String {
        let mut name = format!("ncclKernel_{}", self.op_camel());
        if let Some(algorithm) = self.algorithm_name() {
            name.push('_');
            name.push_str(&algorithm);
        }
        name.push('_');
        name.push_str(dtype_name(self.dtype));
        name
    }

    /// `In msg nelems`.
    pub(crate) fn in_nelems(&self) -> u64 {
        self.bytes / dtype_bytes(self.dtype)
    }

    /// `Out msg nelems`: input × group size for an all-gather, ÷ group size for a
    /// reduce-scatter, the input otherwise.
    pub(crate) fn out_nelems(&self) -> u64 {
        let ranks = u64::from(self.group_size.max(1));
        match self.op {
            CollectiveOp::AllGather => self.in_nelems() * ranks,
            CollectiveOp::ReduceScatter => self.in_nelems() / ranks,
            CollectiveOp::Barrier => 0,
            _ => self.in_nelems(),
        }
    }
}

/// The `c10::ScalarType` name of a type code, as NCCL args spell `dtype` (`Float`).
pub(crate) fn dtype_name(code: u16) -> &'static str {
    match code {
        0 => "Byte",
        1 => "Char",
        2 => "Short",
        3 => "Int",
        4 => "Long",
        5 => "Half",
        6 => "Float",
        7 => "Double",
        11 => "Bool",
        15 => "BFloat16",
        23 => "Float8_e5m2",
        24 => "Float8_e4m3fn",
        _ => "Undefined",
    }
}

/// Bytes per element of a type code (1 for unknown codes).
pub(crate) fn dtype_bytes(code: u16) -> u64 {
    match code {
        2 | 5 | 15 => 2,
        3 | 6 => 4,
        4 | 7 => 8,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_sizes_follow_nccl_args() {
        let payload = CollectivePayload {
            bytes: 4096,
            group_size: 4,
            rank: 1,
            algorithm: CollectiveAlgorithm::Ring.raw(),
            dtype: 15,
            ..Default::default()
        };
        let c = Collective::new(CollectiveOp::AllGather, &payload, Arc::from("0"));
        assert_eq!(c.kernel_name(), "ncclKernel_AllGather_RING_BFloat16");
        assert_eq!(c.collective_name(), "allgather");
        assert_eq!((c.in_nelems(), c.out_nelems()), (2048, 8192));
        let rs = Collective {
            op: CollectiveOp::ReduceScatter,
            algorithm: 0,
            dtype: 6,
            ..c
        };
        assert_eq!(rs.kernel_name(), "ncclKernel_ReduceScatter_Float");
        assert_eq!((rs.in_nelems(), rs.out_nelems()), (1024, 256));
    }
}
