//! An emulated Trainium device for neuronprof.
//!
//! `neuron-backend` is an eager tensor library on a device named `neuron`. It computes
//! real results on the CPU and places every device activity on the process timeline
//! with a timing model built from the published Trainium figures
//! (`shared/reference/hardware.md`), recording everything through `runtime-hooks`:
//! operators, allocations, kernel launches and queue submissions on the host; kernels,
//! engine instructions, semaphore waits and DMA transfers on the device.
//!
//! # Key types
//!
//! - [`Runtime`]: a [`DeviceProfile`] (`trn2` at LNC=2 by default, `trn2-lnc1`, `trn3`,
//!   or a JSON override) and its logical cores, each a [`Device`] (`neuron:i`).
//! - [`Tensor`]: f32, bf16 (round-to-nearest-even) or i64 values, or fp8 e4m3 matmul
//!   inputs, on the host or a device;
//!   ops are methods (`matmul`, `add`, `gelu`, `softmax`, ...). Every op goes through
//!   one dispatcher and returns a [`BackendError`] naming the op and shapes on bad input.
//! - [`Stream`] and [`Event`]: the execution queues (1 compute, 3 collective, 2 tensor-op
//!   per core, at most 8 kernels in flight each) and points in them.
//! - Memory: a caching allocator per device ([`MemoryStats`], [`MemoryCategory`],
//!   [`Device::empty_cache`]); out of memory is an error, never a panic.
//! - [`EngineTime`]: modeled busy time per engine.
//! - [`dist`]: ranks as threads ([`dist::World`], [`dist::Rank`]), process groups and
//!   collectives with real data and topology-based timing ([`dist::ProcessGroup`],
//!   [`dist::Topology`]); [`dist::rank_threads`] maps recording threads to ranks.
//! - [`autograd`]: reverse mode over these ops ([`autograd::Tape`], [`autograd::Var`]);
//!   backward ops are device ops carrying their forward op's sequence number.
//! - [`optim`]: SGD with momentum, AdamW, gradient clipping, as device ops.
//! - [`workloads`]: `mlp`, `gpt`, `gpt-infer` and a timing-only Llama-8B-shaped preset
//!   on N ranks (data and tensor parallelism, DDP-style gradient buckets, faults),
//!   driven by [`workloads::run`] with a per-step callback.
//! - [`monitor`]: the live endpoint every process publishes on (a private Unix socket
//!   answering neuron-monitor's JSON, one entry per rank), read by `neuronprof monitor`
//!   and `neuron-top`.
//! - [`ExternalLaunch`] and the `Device::external_*` calls: the device for a host
//!   program that computes numerics itself (the PyTorch extension in `python/`):
//!   allocator, launches placed by the timing model, real waits (see `external.rs`).
//!
//! # Ops
//!
//! Matmul (batched, shared or per-batch RHS) and linear; `add`/`sub`/`mul`/`div` (and
//! [`BinaryOp::Maximum`] through [`Tensor::binary`]) with broadcasting; scalar
//! `affine`/`add_scalar`/`mul_scalar`; `relu`, `gelu` (erf), `silu`, `exp` (and every
//! [`UnaryOp`] through [`Tensor::unary`]: log, tanh, sigmoid, sqrt, rsqrt); `softmax`,
//! `log_softmax`, `layer_norm`, `rms_norm` (last dimension); `embedding`;
//! `cross_entropy` (mean); `reshape` (a view), `transpose`, `slice`, `concat`, `copy`,
//! `cast`;
//! `sum`/`mean`/`max` along a dimension and `sum_all`; seeded `dropout`; copies
//! [`Tensor::to_device`]/[`Tensor::to_host`]; [`Device::full`]/`zeros`/`ones`/`randn`
//! (seeded). Backward ops are plain ops: `activation_backward` (GELU, SiLU, ReLU),
//! `softmax_backward`, `log_softmax_backward`, `layer_norm_backward`,
//! `rms_norm_backward`, `embedding_backward`, `cross_entropy_backward`.
//! Numerics run in `f32` with `f64` statistics; the tests compare them with an `f64`
//! reference (f32 within 1e-5 relative, bf16 within one rounding).
//!
//! # What is recorded, and how it is numbered
//!
//! - Host: an operator begin/end per op (`aten::…` name, input signature — `Input Dims`
//!   and `Input type` as Kineto writes them, format on `runtime_hooks::OperatorPayload`,
//!   interned once per distinct op/shapes/dtypes through a per-thread cache — sequence
//!   number, correlation id, FLOPs, bytes); a `nrt_execute` kernel-launch runtime call holding a
//!   `nrt_queue_submit` call and the start of the launch→kernel flow; memory
//!   allocate/free records with totals; `nrt_synchronize`, `nrt_event_*` and
//!   `nrt_tensor_read` calls.
//! - Device: kernels on `queue` = execution queue (0 compute, 1–3 collective, 4–5
//!   tensor-op), named `<op>_<dtype>` (for example `matmul_bf16`), copies named like
//!   Kineto's (`Memcpy HtoD (Host -> Neuron)`); the flow end at the kernel start.
//!   With [`RecordDetail::Instructions`]: instructions with `core` = physical core
//!   within the logical core and `engine` = [`Engine`] index (0 TensorE, 1 VectorE,
//!   2 ScalarE, 3 GpSimdE), `semaphore_wait` spans where an engine waited on another
//!   engine or a DMA, and DMA transfers with `queue` = core × 256 + engine × 16 + queue
//!   slot.
//!
//! # Time
//!
//! Host records use the host clock, which excludes the emulator's own work (timing
//! simulation and CPU numerics run inside `runtime_hooks::clock::emulation_scope`).
//! Device records are placed by the model; host waits ([`Device::synchronize`], reading
//! values) move the host clock to the modeled completion. With numerics off
//! ([`Device::set_numerics`]) the timeline is identical, only the values are missing.
//!
//! # Example
//!
//! ```
//! use neuron_backend::{DType, Runtime, Tensor};
//!
//! let runtime = Runtime::trn2();
//! let device = runtime.device(0)?;
//! let a = Tensor::from_f32(&[2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0])?.to_device(&device)?;
//! let b = device.ones(&[3, 2], DType::F32)?;
//! let c = a.matmul(&b)?.relu()?;
//! assert_eq!(c.to_vec_f32()?, vec![6.0, 6.0, 15.0, 15.0]);
//! device.synchronize();
//! let time = device.engine_time();
//! assert!(time.compute_busy_ns[0] > 0, "TensorE did the matmul");
//! # Ok::<(), neuron_backend::BackendError>(())
//! ```
#![warn(missing_docs)]

mod allocator;
pub mod autograd;
pub mod calibrate;
mod device;
mod dispatch;
pub mod dist;
mod dtype;
mod error;
mod external;
mod host_cost;
pub mod monitor;
mod ops;
pub mod optim;
mod profile;
mod tensor;
mod timing;
pub mod workloads;

pub use allocator::{
    size_class, BlockInfo, BlockState, CategoryStats, MemoryCategory, MemoryStats, PoolStats, Stat,
    StatArray, LARGE_POOL_STAT, SMALL_POOL_STAT,
};
pub use device::{host_wait_ns, Device, Event, QueueKind, Runtime, Stream, USER_STREAM_POOL};
pub use dtype::{bf16_to_f32, f32_to_bf16, f32_to_f8e4m3, f8e4m3_to_f32, round_bf16, DType};
pub use error::{BackendError, Result};
pub use external::{
    describe, external_launch_ns, modeled_launches, Description, ExternalCollective,
    ExternalCollectiveSpan, ExternalEvent, ExternalKernel, ExternalLaunch, ExternalLowering,
    ExternalOp, ExternalProgram, ExternalTensor, GroupCost, ProgramNode, ProgramNodeInfo,
    ProgramSegment, ProgramStats, ScalarType, SegmentKind, TypeClass,
};
pub use host_cost::{set_thread_host_cost, thread_host_cost, HostCost};
pub use ops::{BinaryOp, UnaryOp};
pub use profile::{DeviceProfile, Figure};
pub use tensor::Tensor;
pub use timing::{Engine, EngineTime, KernelSpan, RecordDetail};
