//! Streams (execution queues) and events.

use std::sync::atomic::Ordering;

use runtime_hooks::{clock, RuntimeCallKind, RuntimeCallPayload, RuntimeCallScope};

use super::Device;
use crate::BackendError;

/// User streams each logical core offers on top of its hardware queues, handed out
/// round-robin ([`Device::external_pool_queue`]), as CUDA hands out a pool of 32 streams
/// per device and priority.
pub const USER_STREAM_POOL: usize = 32;

/// The kind of an execution queue (hw.md runtime: 1 compute, 3 collective and
/// 2 tensor-op queues per logical core), or a user stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QueueKind {
    /// Compute kernels (the default stream).
    Compute,
    /// Collectives.
    Collective,
    /// Tensor operations such as copies.
    TensorOp,
    /// A user stream of the pool ([`USER_STREAM_POOL`]): an in-order queue of its own
    /// that shares the core's engines and DMA with every other queue. The hardware has
    /// no such queues; they model streams a framework creates (`torch.neuron.Stream`).
    User,
}

/// An execution queue of one device. Work on a stream runs in submission order; at most
/// `max_in_flight` kernels are in flight, beyond that the submitting host blocks.
#[derive(Debug, Clone)]
pub struct Stream {
    device: Device,
    queue: u16,
}

impl Stream {
    /// The stream of queue `queue` of `device` (the caller checked the index).
    pub(crate) fn of_queue(device: &Device, queue: usize) -> Stream {
        Stream {
            device: device.clone(),
            queue: queue as u16,
        }
    }

    /// The device.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The queue index on the device (the `stream` of kernel records): compute queues
    /// first, then collective, then tensor-op queues.
    pub fn queue(&self) -> usize {
        usize::from(self.queue)
    }

    /// The queue's kind and its index among queues of that kind.
    pub fn kind(&self) -> (QueueKind, usize) {
        let p = self.device.profile();
        let q = u32::from(self.queue);
        if q < p.compute_queues {
            (QueueKind::Compute, q as usize)
        } else if q < p.compute_queues + p.collective_queues {
            (QueueKind::Collective, (q - p.compute_queues) as usize)
        } else if q < p.queues_per_core() {
            let first = p.compute_queues + p.collective_queues;
            (QueueKind::TensorOp, (q - first) as usize)
        } else {
            (QueueKind::User, (q - p.queues_per_core()) as usize)
        }
    }

    /// Makes this the device's current stream: ops on the device go here from now on.
    pub fn make_current(&self) {
        self.device
            .shared
            .current_queue
            .store(self.queue as u8, Ordering::Relaxed);
    }

    /// Releases the stream: work submitted to it afterwards fails with
    /// [`BackendError::StreamReleased`]; work already queued still completes. If it was
    /// current, the default stream becomes current.
    pub fn release(&self) {
        self.device.timeline().queues[self.queue()].released = true;
        let _ = self.device.shared.current_queue.compare_exchange(
            self.queue as u8,
            0,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }

    /// Records an event that completes when the work queued so far on this stream (its
    /// kernels and the events it was made to wait for) does.
    pub fn record_event(&self) -> Event {
        let _call = self.call(
            RuntimeCallKind::EventRecord,
            runtime_hooks::name!("nrt_event_record"),
        );
        let ready_ns = self.device.timeline().queues[self.queue()].done_ns();
        Event {
            device: self.device.clone(),
            ready_ns,
        }
    }

    /// Makes later work on this stream wait for `event` (on the device; the host does
    /// not block).
    pub fn wait_event(&self, event: &Event) {
        let _call = self.call(
            RuntimeCallKind::EventWait,
            runtime_hooks::name!("nrt_event_wait"),
        );
        let queue = &mut self.device.timeline().queues[self.queue()];
        queue.wait_until_ns = queue.wait_until_ns.max(event.ready_ns);
    }

    /// Waits on the host until this stream's work (its kernels and the events it was
    /// made to wait for) is done; returns the host clock after.
    pub fn synchronize(&self) -> u64 {
        let _call = self.call(
            RuntimeCallKind::Synchronize,
            runtime_hooks::name!("nrt_stream_synchronize"),
        );
        let done_ns = self.device.timeline().queues[self.queue()].done_ns();
        super::wait_until(done_ns)
    }

    fn call(&self, kind: RuntimeCallKind, name_id: runtime_hooks::NameId) -> RuntimeCallScope {
        RuntimeCallScope::new(
            kind,
            RuntimeCallPayload {
                name_id,
                device: self.device.shared.index,
                queue: self.queue,
                ..Default::default()
            },
        )
    }
}

impl std::fmt::Display for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (kind, index) = self.kind();
        let kind = match kind {
            QueueKind::Compute => "compute",
            QueueKind::Collective => "collective",
            QueueKind::TensorOp => "tensor_op",
            QueueKind::User => "user",
        };
        write!(f, "{}/{kind}{index}", self.device)
    }
}

/// A point in a stream's work: completes when the work before it does.
#[derive(Debug, Clone)]
pub struct Event {
    device: Device,
    ready_ns: u64,
}

impl Event {
    /// The modeled completion instant.
    pub fn ready_ns(&self) -> u64 {
        self.ready_ns
    }

    /// Whether the event has completed by the calling host thread's clock.
    pub fn query(&self) -> bool {
        clock::now_ns() >= self.ready_ns
    }

    /// Waits on the host for the event; returns the host clock after.
    pub fn synchronize(&self) -> u64 {
        let _call = RuntimeCallScope::new(
            RuntimeCallKind::Synchronize,
            RuntimeCallPayload {
                name_id: runtime_hooks::name!("nrt_event_synchronize"),
                device: self.device.shared.index,
                ..Default::default()
            },
        );
        super::wait_until(self.ready_ns)
    }
}

impl Device {
    /// The `index`-th stream of `kind`.
    pub fn stream(&self, kind: QueueKind, index: usize) -> Result<Stream, BackendError> {
        let p = self.profile();
        let (first, count) = match kind {
            QueueKind::Compute => (0, p.compute_queues),
            QueueKind::Collective => (p.compute_queues, p.collective_queues),
            QueueKind::TensorOp => (p.compute_queues + p.collective_queues, p.tensor_op_queues),
            QueueKind::User => (p.queues_per_core(), USER_STREAM_POOL as u32),
        };
        if index >= count as usize {
            return Err(BackendError::InvalidArgument {
                op: "stream",
                reason: format!("{self} has {count} {kind:?} queues, asked for index {index}"),
            });
        }
        Ok(Stream {
            device: self.clone(),
            queue: (first as usize + index) as u16,
        })
    }

    /// The default stream (the compute queue).
    pub fn default_stream(&self) -> Stream {
        Stream {
            device: self.clone(),
            queue: 0,
        }
    }

    /// The stream ops go to now.
    pub fn current_stream(&self) -> Stream {
        Stream {
            device: self.clone(),
            queue: self.current_queue() as u16,
        }
    }
}
