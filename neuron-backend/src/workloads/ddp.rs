//! Data parallelism: gradient buckets all-reduced while the backward still runs.
//!
//! As PyTorch's DDP reducer does, gradients are collected in the order the backward
//! finishes them into buckets of about `bucket_bytes`; a full bucket is flattened into
//! one tensor and all-reduced (average) on the data-parallel group's collective queue
//! at once, so the communication overlaps the rest of the backward on the compute
//! queue. [`Reducer::finish`] makes the compute stream wait for the buckets and splits
//! them back into per-parameter gradients.

use crate::dist::{ProcessGroup, ReduceOp, Work};
use crate::{BackendError, Tensor};

/// A bucket in flight: (parameter index, shape) of each piece, and its all-reduce.
type InFlight = (Vec<(usize, Vec<usize>)>, Work);

/// Buckets gradients of one step and all-reduces them.
#[derive(Debug)]
pub(crate) struct Reducer {
    group: Option<ProcessGroup>,
    bucket_bytes: u64,
    pending: Vec<(usize, Tensor)>,
    pending_bytes: u64,
    in_flight: Vec<InFlight>,
    out: Vec<Option<Tensor>>,
    buckets: usize,
}

impl Reducer {
    /// A reducer for `params` gradients over `group` (`None` or a group of one: no
    /// communication).
    pub(crate) fn new(group: Option<ProcessGroup>, params: usize, bucket_bytes: u64) -> Self {
        Reducer {
            group: group.filter(|g| g.size() > 1),
            bucket_bytes,
            pending: Vec::new(),
            pending_bytes: 0,
            in_flight: Vec::new(),
            out: vec![None; params],
            buckets: 0,
        }
    }

    /// The gradient of parameter `index` is final.
    pub(crate) fn ready(&mut self, index: usize, grad: &Tensor) -> Result<(), BackendError> {
        if self.group.is_none() {
            self.out[index] = Some(grad.clone());
            return Ok(());
        }
        self.pending_bytes += grad.size_bytes();
        self.pending.push((index, grad.clone()));
        if self.pending_bytes >= self.bucket_bytes {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), BackendError> {
        let Some(group) = &self.group else {
            return Ok(());
        };
        if self.pending.is_empty() {
            return Ok(());
        }
        let flat: Vec<Tensor> = self
            .pending
            .iter()
            .map(|(_, g)| g.reshape(&[-1]))
            .collect::<Result<_, _>>()?;
        let refs: Vec<&Tensor> = flat.iter().collect();
        let bucket = if refs.len() == 1 {
            flat[0].clone()
        } else {
            Tensor::concat(&refs, 0)?
        };
        let work = group.all_reduce_async(&bucket, ReduceOp::Avg)?;
        let layout = self
            .pending
            .drain(..)
            .map(|(i, g)| (i, g.shape().to_vec()))
            .collect();
        self.in_flight.push((layout, work));
        self.pending_bytes = 0;
        self.buckets += 1;
        Ok(())
    }

    /// Sends the last bucket, waits (on the device) for all of them and returns the
    /// averaged gradients in parameter order (`None` for parameters without one) and
    /// the number of buckets sent.
    pub(crate) fn finish(mut self) -> Result<(Vec<Option<Tensor>>, usize), BackendError> {
        self.flush()?;
        for (layout, work) in std::mem::take(&mut self.in_flight) {
            let reduced = work.wait().remove(0);
            let mut offset = 0;
            for (index, shape) in layout {
                let n: usize = shape.iter().product();
                let dims: Vec<isize> = shape.iter().map(|&d| d as isize).collect();
                self.out[index] = Some(reduced.slice(0, offset, offset + n)?.reshape(&dims)?);
                offset += n;
            }
        }
        Ok((self.out, self.buckets))
    }
}
