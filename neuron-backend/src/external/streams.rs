//! Streams and events for an external program (torch.cuda's semantics on the emulator's
//! queues): a queue runs its kernels in order; an event is a point in a queue's work
//! that completes when the work before it does; a queue can wait for an event on the
//! device (the host does not block); the host can query or wait for a queue, an event
//! or the whole device. All instants are the modeled ones, on the cut timeline.
//!
//! Records (when recording is on): every call is a runtime call on the calling thread
//! (`nrt_event_record`, `nrt_event_wait`, `nrt_stream_synchronize`,
//! `nrt_event_synchronize`, `nrt_synchronize`; a synchronization lasts until the modeled
//! completion). On the device rows, an event leaves an `Event Record` mark on its queue at
//! its modeled instant, and a wait of one queue for another's event leaves a `Stream Wait
//! Event` span on the waiting queue from when the queue reaches the wait to when the
//! event completes (zero long when it was already complete); both carry the event's
//! correlation id, which is how the `profiler` crate pairs them into a flow.

use std::sync::atomic::{AtomicUsize, Ordering};

use runtime_hooks::{KernelPayload, RuntimeCallKind, RuntimeCallPayload, RuntimeCallScope};

use super::sleep_until;
use crate::{BackendError, Device, Stream, USER_STREAM_POOL};

/// Name of the device-side mark an event leaves on its queue.
pub const EVENT_RECORD_NAME: &str = "Event Record";
/// Name of the device-side span of a cross-queue wait.
pub const STREAM_WAIT_NAME: &str = "Stream Wait Event";

/// A recorded event: a point in the work of one queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExternalEvent {
    /// The device whose queue it was recorded on.
    pub device: u16,
    /// The queue.
    pub queue: u16,
    /// Modeled instant it completes: the end of the work queued before it (or the
    /// record's host instant when the queue was idle).
    pub ready_ns: u64,
    /// Correlation id of its record (shared by the runtime call, the device mark and the
    /// waits on it).
    pub corr_id: u64,
}

impl ExternalEvent {
    /// Whether the event has completed by the calling thread's clock.
    pub fn query(&self) -> bool {
        runtime_hooks::clock::now_ns() >= self.ready_ns
    }

    /// Modeled time from `self` to `later`, ns (negative when `later` is earlier).
    pub fn elapsed_ns(&self, later: &ExternalEvent) -> i64 {
        later.ready_ns as i64 - self.ready_ns as i64
    }
}

/// Round-robin position of each device's user-stream pool.
static NEXT_POOL_STREAM: AtomicUsize = AtomicUsize::new(0);

impl Device {
    /// Execution queues of the device: the hardware's, then the user-stream pool.
    pub fn external_queue_count(&self) -> usize {
        self.profile().queues_per_core() as usize + USER_STREAM_POOL
    }

    /// The next user stream of the pool, round-robin (as CUDA's stream pool; streams
    /// beyond [`USER_STREAM_POOL`] share queues). Returns its queue.
    pub fn external_pool_queue(&self) -> usize {
        let i = NEXT_POOL_STREAM.fetch_add(1, Ordering::Relaxed) % USER_STREAM_POOL;
        self.profile().queues_per_core() as usize + i
    }

    pub(crate) fn check_queue(&self, op: &'static str, queue: usize) -> Result<(), BackendError> {
        if queue < self.external_queue_count() {
            Ok(())
        } else {
            Err(BackendError::InvalidArgument {
                op,
                reason: format!(
                    "{self} has {} queues, asked for queue {queue}",
                    self.external_queue_count()
                ),
            })
        }
    }

    pub(crate) fn stream_of_queue(&self, queue: usize) -> Stream {
        Stream::of_queue(self, queue)
    }

    fn runtime_call(
        &self,
        kind: RuntimeCallKind,
        name_id: runtime_hooks::NameId,
        queue: usize,
        corr_id: u64,
    ) -> RuntimeCallScope {
        RuntimeCallScope::new(
            kind,
            RuntimeCallPayload {
                name_id,
                device: self.shared.index,
                queue: queue as u16,
                corr_id,
                ..Default::default()
            },
        )
    }

    /// Where queue `queue` stands: the modeled instant its next command starts, at the
    /// host instant `now_ns`.
    fn queue_reach_ns(&self, queue: usize, now_ns: u64) -> u64 {
        self.queue_done_ns(queue).max(now_ns)
    }

    fn device_mark(&self, name: &'static str, queue: usize, span: (u64, u64), corr_id: u64) {
        if runtime_hooks::is_enabled() {
            runtime_hooks::kernel(
                span.0,
                span.1,
                KernelPayload {
                    name_id: runtime_hooks::intern(name),
                    device: self.shared.index,
                    queue: queue as u16,
                    corr_id,
                    ..Default::default()
                },
            );
        }
    }

    /// Records an event on queue `queue`: it completes when the work queued there so far
    /// does.
    pub fn external_record_event(&self, queue: usize) -> Result<ExternalEvent, BackendError> {
        self.check_queue("event record", queue)?;
        let corr_id = runtime_hooks::next_corr_id();
        let _call = self.runtime_call(
            RuntimeCallKind::EventRecord,
            runtime_hooks::name!("nrt_event_record"),
            queue,
            corr_id,
        );
        let ready_ns = self.queue_reach_ns(queue, runtime_hooks::clock::now_ns());
        self.device_mark(EVENT_RECORD_NAME, queue, (ready_ns, ready_ns), corr_id);
        Ok(ExternalEvent {
            device: self.shared.index,
            queue: queue as u16,
            ready_ns,
            corr_id,
        })
    }

    /// Makes work submitted to queue `queue` from now on wait (on the device) until
    /// `event` completes; the host does not block. The timing model holds the queue's
    /// next kernel until the event's instant.
    pub fn external_wait_event(
        &self,
        queue: usize,
        event: &ExternalEvent,
    ) -> Result<(), BackendError> {
        self.check_queue("event wait", queue)?;
        let _call = self.runtime_call(
            RuntimeCallKind::EventWait,
            runtime_hooks::name!("nrt_event_wait"),
            queue,
            event.corr_id,
        );
        let reach_ns = self.queue_reach_ns(queue, runtime_hooks::clock::now_ns());
        let end_ns = reach_ns.max(event.ready_ns);
        {
            let mut timeline = self.timeline();
            let q = &mut timeline.queues[queue];
            q.wait_until_ns = q.wait_until_ns.max(event.ready_ns);
        }
        if usize::from(event.queue) != queue || event.device != self.shared.index {
            self.device_mark(STREAM_WAIT_NAME, queue, (reach_ns, end_ns), event.corr_id);
        }
        Ok(())
    }

    /// Modeled instant the work submitted to queue `queue` so far is done: its last
    /// kernel's end, or the event it was last made to wait for when that is later (a
    /// wait is queued work, as `cudaStreamWaitEvent` is).
    pub(crate) fn queue_done_ns(&self, queue: usize) -> u64 {
        self.timeline().queues[queue].done_ns()
    }

    /// Whether all work submitted to queue `queue` (its kernels and event waits) has
    /// completed by the calling thread's clock.
    pub fn external_queue_done(&self, queue: usize) -> Result<bool, BackendError> {
        self.check_queue("stream query", queue)?;
        Ok(runtime_hooks::clock::now_ns() >= self.queue_done_ns(queue))
    }

    /// Waits (really) until the work submitted to queue `queue` (its kernels and event
    /// waits) is done, recorded as `nrt_stream_synchronize`. Returns the host clock after.
    pub fn external_synchronize_queue(&self, queue: usize) -> Result<u64, BackendError> {
        self.check_queue("stream synchronize", queue)?;
        let _call = self.runtime_call(
            RuntimeCallKind::Synchronize,
            runtime_hooks::name!("nrt_stream_synchronize"),
            queue,
            0,
        );
        Ok(sleep_until(self.queue_done_ns(queue)))
    }

    /// Waits (really) until `event` completes, recorded as `nrt_event_synchronize`.
    /// Returns the host clock after.
    pub fn external_event_synchronize(&self, event: &ExternalEvent) -> u64 {
        let _call = self.runtime_call(
            RuntimeCallKind::Synchronize,
            runtime_hooks::name!("nrt_event_synchronize"),
            usize::from(event.queue),
            event.corr_id,
        );
        sleep_until(event.ready_ns)
    }

    /// Waits (really, on the calling thread) until everything submitted to the device is
    /// done; recorded as an `nrt_synchronize` runtime call. Returns the host clock after.
    pub fn external_synchronize(&self) -> u64 {
        let _call = self.runtime_call(
            RuntimeCallKind::Synchronize,
            runtime_hooks::name!("nrt_synchronize"),
            0,
            0,
        );
        let done_ns = self.timeline().all_done_ns();
        sleep_until(done_ns)
    }
}

#[cfg(test)]
mod tests {
    use crate::{DType, Device, Engine, ExternalKernel, ExternalLaunch, KernelSpan, Runtime};

    fn add(elements: u64) -> ExternalLaunch {
        ExternalLaunch {
            name_id: runtime_hooks::intern("streams_test_add"),
            corr_id: runtime_hooks::next_corr_id(),
            flops: elements,
            bytes: 12 * elements,
            kernel: ExternalKernel::Elementwise {
                elements,
                inputs: 2,
                dtype: DType::F32,
                engine: Engine::Vector,
            },
        }
    }

    /// A 550 GFLOP fp32 matmul on queue 0: about 14 ms of modeled time, so the host is
    /// still ahead of it whatever the machine's load.
    fn long_matmul(device: &Device) -> KernelSpan {
        device
            .external_launch(
                0,
                &ExternalLaunch {
                    kernel: ExternalKernel::Matmul {
                        batch: 1,
                        m: 8192,
                        k: 4096,
                        n: 8192,
                        dtype: DType::F32,
                        bias: false,
                    },
                    ..add(0)
                },
            )
            .unwrap()
    }

    #[test]
    fn a_queue_waits_on_the_device_for_another_queues_event() {
        let runtime = Runtime::trn2();
        let device = runtime.device(2).unwrap();
        let side = device.external_pool_queue();
        assert!(side >= device.profile().queues_per_core() as usize);
        let long = long_matmul(&device);
        let before = runtime_hooks::clock::now_ns();
        let event = device.external_record_event(0).unwrap();
        let after = runtime_hooks::clock::now_ns();
        // The end of the queue's work, or the record itself if the host got there later
        // (a test thread can be held up that long on a busy machine).
        assert!(event.ready_ns >= long.end_ns);
        if event.ready_ns > long.end_ns {
            assert!((before..=after).contains(&event.ready_ns), "{event:?}");
        }
        // Without the wait a kernel on the side queue starts at its launch.
        let free = device.external_launch(side, &add(1 << 10)).unwrap();
        device.external_wait_event(side, &event).unwrap();
        let held = device.external_launch(side, &add(1 << 10)).unwrap();
        assert!(held.start_ns >= event.ready_ns, "{held:?} before {event:?}");
        assert!(free.start_ns < held.start_ns);
        let later = device.external_record_event(side).unwrap();
        assert_eq!(
            event.elapsed_ns(&later),
            (later.ready_ns - event.ready_ns) as i64
        );
        assert!(later.ready_ns >= held.end_ns);
        let after = device.external_synchronize_queue(side).unwrap();
        assert!(after >= held.end_ns);
        assert!(device.external_queue_done(side).unwrap());
        assert!(event.query() && later.query());
    }

    #[test]
    fn a_queue_waiting_for_an_event_is_busy_until_the_event_completes() {
        let runtime = Runtime::trn2();
        let device = runtime.device(1).unwrap();
        let side = device.external_pool_queue();
        // The event completes long after now.
        let long = long_matmul(&device);
        let event = device.external_record_event(0).unwrap();
        assert!(event.ready_ns >= long.end_ns);
        device.external_wait_event(side, &event).unwrap();
        // The wait is work queued on the side queue (as cudaStreamWaitEvent is): the
        // queue is not done before the event, and a synchronize waits for it.
        assert!(!device.external_queue_done(side).unwrap(), "{event:?}");
        let after = device.external_synchronize_queue(side).unwrap();
        assert!(after >= event.ready_ns, "{after} before {event:?}");
        assert!(device.external_queue_done(side).unwrap());
    }

    #[test]
    fn an_event_on_an_idle_queue_is_complete_at_once_and_bad_queues_are_errors() {
        let runtime = Runtime::trn2();
        let device = runtime.device(3).unwrap();
        let queue = device.external_pool_queue();
        let event = device.external_record_event(queue).unwrap();
        assert!(event.query());
        assert!(device.external_event_synchronize(&event) >= event.ready_ns);
        let count = device.external_queue_count();
        let err = device.external_record_event(count).unwrap_err();
        assert!(err.to_string().contains("queues"), "{err}");
        assert!(device.external_launch(count, &add(1)).is_err());
    }
}
