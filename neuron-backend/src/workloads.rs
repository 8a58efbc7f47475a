//! Built-in workloads: real models to train and serve on emulated ranks, the runs every
//! analysis profiles.
//!
//! - [`Workload::Mlp`]: a two-layer classifier on a generated dataset (Gaussian
//!   clusters), SGD with momentum; reports loss and held-out accuracy.
//! - [`Workload::Gpt`]: a tiny decoder-only transformer (token and position embeddings,
//!   pre-norm blocks of causal self-attention and a GELU MLP, tied nothing) trained
//!   with AdamW on a character-level public-domain text shipped in the crate
//!   (`data/tiny_corpus.txt`: Lincoln's Gettysburg Address, 1863, and the opening of
//!   Dickens's *A Tale of Two Cities*, 1859).
//! - [`Workload::GptInfer`]: the same model (untrained) serving a batch: prefill, then
//!   batched greedy decode with a KV cache; reports tokens per second of modeled time.
//!
//! Every workload runs on [`WorkloadConfig::ranks`] ranks ([`crate::dist::World`]):
//! data parallelism splits the global batch across `ranks / tp` data-parallel ranks
//! and averages gradients in buckets that overlap the backward (as DDP does); with
//! `tp > 1` the GPT's MLP is split column/row-wise over a tensor-parallel group.
//! The global batch and the data are the same whatever the rank count, so loss curves
//! on 1 and N ranks agree within floating-point tolerance.
//!
//! # Host time
//!
//! A workload's Rust code stands for the Python training script of an eager PyTorch
//! job, so it runs as emulation time: each rank's host clock advances only by the
//! modeled cost of the ops it dispatches ([`WorkloadConfig::host_cost`], eager PyTorch's
//! measured per-op figures by default, see [`HostCost`]) and by its modeled waits.
//! The timeline of a run — host and device — is then a function of the configuration
//! alone: the same with numerics on or off, in a debug or release build, on a quiet or
//! a loaded machine. Hooks (`on_start`, `on_step`) run inside that emulation time too.
//!
//! [`run`] calls `on_step` on each rank's thread after each step (with the rank's
//! [`StepReport`]); a profiler calls its `step()` there. [`run_with_hooks`] also calls
//! [`WorkloadHooks::on_start`] on each rank's thread just before its first step, where a
//! profiler begins `ProfilerStep#0` ([`FnHooks`] makes hooks of two closures).
//!
//! Measured in release on the shared 2-core VM (`cargo run --release --example
//! workload -- …`): `gpt` (tiny) on 4 ranks for 20 steps with numerics in 52 ms;
//! [`WorkloadConfig::llama8b_preset`] with all 32 layers, 64 ranks, one step, timing
//! only, in 36–50 s (two runs; 0.6 GB peak RSS); `gpt-infer` decodes at ~78k tokens/s of modeled
//! time.
//!
//! ```
//! use neuron_backend::workloads::{run, Workload, WorkloadConfig};
//!
//! let mut config = WorkloadConfig::new(Workload::Mlp);
//! config.steps = 3;
//! let report = run(&config, |step| assert!(step.loss.unwrap().is_finite()))?;
//! assert_eq!(report.steps.len(), 3);
//! # Ok::<(), neuron_backend::BackendError>(())
//! ```

mod ddp;
mod gpt;
mod infer;
mod mlp;

use std::time::Duration;

pub use gpt::GptShape;

use crate::dist::{Rank, Topology, World, WorldConfig};
use crate::{BackendError, DType, DeviceProfile, HostCost, RecordDetail};

/// Which model to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// Classifier on generated clusters.
    Mlp,
    /// Tiny decoder-only transformer training.
    Gpt,
    /// Prefill and batched decode with a KV cache.
    GptInfer,
}

impl Workload {
    /// The name the CLI uses: `mlp`, `gpt`, `gpt-infer`.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Mlp => "mlp",
            Workload::Gpt => "gpt",
            Workload::GptInfer => "gpt-infer",
        }
    }

    /// The workload named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        [Workload::Mlp, Workload::Gpt, Workload::GptInfer]
            .into_iter()
            .find(|w| w.name() == name)
    }
}

/// The optimizer of the `gpt` workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Optimizer {
    /// AdamW (two moment tensors per parameter).
    AdamW,
    /// Plain SGD without momentum: no optimizer state.
    Sgd,
}

/// How to run a workload.
#[derive(Debug, Clone)]
pub struct WorkloadConfig {
    /// The model.
    pub workload: Workload,
    /// Ranks (threads, one logical core each).
    pub ranks: usize,
    /// Tensor-parallel group size (GPT only; divides `ranks`).
    pub tp: usize,
    /// Training steps (decode steps for `gpt-infer`).
    pub steps: usize,
    /// Global batch (samples or sequences), split across data-parallel ranks.
    pub batch: usize,
    /// Whether values are computed (off: timing only, for large shapes).
    pub numerics: bool,
    /// bf16 compute with f32 master weights.
    pub mixed_precision: bool,
    /// Parameter and compute dtype without mixed precision.
    pub dtype: DType,
    /// GPT shape (ignored by `mlp`).
    pub gpt: GptShape,
    /// Seed of data and initial weights.
    pub seed: u64,
    /// Gradient bucket size for data parallelism, bytes.
    pub bucket_bytes: u64,
    /// Clip gradients to this global norm (0: off).
    pub clip_norm: f64,
    /// A slow rank: its device runs this many times slower.
    pub straggler: Option<(usize, f64)>,
    /// Up to this much extra host time before each step on every rank (seeded), ns.
    pub host_jitter_ns: u64,
    /// A rank that stops before the given step (its peers' next collective times out).
    pub stop: Option<(usize, usize)>,
    /// Collective timeout.
    pub timeout: Duration,
    /// Device profile.
    pub profile: DeviceProfile,
    /// Links between ranks; `None`: [`Topology::for_profile`] (a trn2.48xlarge for
    /// Trainium2, a 64-chip Trn3 UltraServer for Trainium3).
    pub topology: Option<Topology>,
    /// Recording detail.
    pub detail: RecordDetail,
    /// What each op costs the host (eager PyTorch's measured figures by default).
    pub host_cost: HostCost,
    /// The `gpt` workload's optimizer. `None`: AdamW with numerics and SGD without
    /// (the timing-only presets keep optimizer memory small). A run that must give the
    /// same trace with numerics on and off (the demo) names one.
    pub optimizer: Option<Optimizer>,
}

impl WorkloadConfig {
    /// Small, fast defaults for `workload` on one rank with numerics.
    pub fn new(workload: Workload) -> Self {
        WorkloadConfig {
            workload,
            ranks: 1,
            tp: 1,
            steps: match workload {
                Workload::Mlp => 60,
                Workload::Gpt => 30,
                Workload::GptInfer => 8,
            },
            batch: match workload {
                Workload::Mlp => 256,
                _ => 8,
            },
            numerics: true,
            mixed_precision: false,
            dtype: DType::F32,
            gpt: GptShape::tiny(),
            seed: 1,
            bucket_bytes: 4 * 1024,
            clip_norm: 0.0,
            straggler: None,
            host_jitter_ns: 0,
            stop: None,
            timeout: Duration::from_secs(30),
            profile: DeviceProfile::trn2(),
            topology: None,
            detail: RecordDetail::Instructions,
            host_cost: HostCost::eager_pytorch(),
            optimizer: None,
        }
    }

    /// The timing-only preset with the shapes of a Llama-class 8B model (d 4096,
    /// 32 heads, MLP 14336, vocabulary 128256, sequence 2048, `layers` layers of 32),
    /// tensor parallelism 8 and data parallelism 8: 64 ranks, 16 per instance over 4
    /// instances (EFA between them), kernels-only recording.
    pub fn llama8b_preset(layers: usize) -> Self {
        let profile = DeviceProfile::trn2();
        // 16 ranks (4 chips) per instance, so data parallelism crosses EFA.
        let topology = Topology {
            chips_per_instance: 4,
            ..Topology::trn2_48xlarge(&profile)
        };
        WorkloadConfig {
            topology: Some(topology),
            profile,
            ranks: 64,
            tp: 8,
            steps: 1,
            batch: 8,
            numerics: false,
            // Pure bf16 parameters and a stateless update keep 8B shapes within
            // a logical core's 24 GiB.
            mixed_precision: false,
            dtype: DType::BF16,
            gpt: GptShape::llama8b(layers),
            detail: RecordDetail::Kernels,
            ..Self::new(Workload::Gpt)
        }
    }

    fn compute_dtype(&self) -> DType {
        if self.mixed_precision {
            DType::BF16
        } else {
            self.dtype
        }
    }

    fn master_dtype(&self) -> DType {
        if self.mixed_precision {
            DType::F32
        } else {
            self.dtype
        }
    }
}

/// What one rank did in one step.
#[derive(Debug, Clone, PartialEq)]
pub struct StepReport {
    /// Global rank.
    pub rank: usize,
    /// Step index (0-based).
    pub step: usize,
    /// Training loss averaged over the data-parallel group (`None` without numerics or
    /// for inference).
    pub loss: Option<f64>,
    /// Host clock at the end of the step, ns.
    pub end_ns: u64,
    /// Gradient buckets all-reduced in the step.
    pub buckets: usize,
}

/// What a run did (the per-step reports of rank 0, and totals).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunReport {
    /// Rank 0's step reports.
    pub steps: Vec<StepReport>,
    /// Held-out accuracy after training (`mlp` with numerics).
    pub accuracy: Option<f64>,
    /// Generated tokens per second of modeled time (`gpt-infer`).
    pub tokens_per_sec: Option<f64>,
    /// Modeled end of the run on each rank (host clock after a final synchronize).
    pub rank_end_ns: Vec<u64>,
}

/// Per-rank result of a workload's loop.
#[derive(Debug, Default)]
pub(crate) struct RankResult {
    pub(crate) steps: Vec<StepReport>,
    pub(crate) accuracy: Option<f64>,
    pub(crate) tokens_per_sec: Option<f64>,
}

/// Per-rank callbacks of [`run_with_hooks`], called on each rank's own thread (where
/// a profiler keeps the rank's step marker). Both do nothing by default.
pub trait WorkloadHooks: Sync {
    /// The rank is set up (model, data, and for `gpt-infer` the prefill) and is about
    /// to begin its first step: a profiler begins `ProfilerStep#0` here.
    fn on_start(&self, rank: usize) {
        let _ = rank;
    }

    /// The rank finished a step: a profiler calls its `step()` here.
    fn on_step(&self, step: &StepReport) {
        let _ = step;
    }
}

/// [`WorkloadHooks`] from two closures: `on_start(rank)` and `on_step(&report)`.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use neuron_backend::workloads::{run_with_hooks, FnHooks, Workload, WorkloadConfig};
///
/// let mut config = WorkloadConfig::new(Workload::Mlp);
/// config.steps = 2;
/// let (started, stepped) = (AtomicUsize::new(0), AtomicUsize::new(0));
/// let hooks = FnHooks {
///     on_start: |_rank| {
///         assert_eq!(stepped.load(Ordering::SeqCst), 0, "before the first step");
///         started.fetch_add(1, Ordering::SeqCst);
///     },
///     on_step: |_step: &_| {
///         stepped.fetch_add(1, Ordering::SeqCst);
///     },
/// };
/// run_with_hooks(&config, &hooks)?;
/// assert_eq!((started.into_inner(), stepped.into_inner()), (1, 2));
/// # Ok::<(), neuron_backend::BackendError>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct FnHooks<S, T> {
    /// Called by [`WorkloadHooks::on_start`].
    pub on_start: S,
    /// Called by [`WorkloadHooks::on_step`].
    pub on_step: T,
}

impl<S, T> WorkloadHooks for FnHooks<S, T>
where
    S: Fn(usize) + Sync,
    T: Fn(&StepReport) + Sync,
{
    fn on_start(&self, rank: usize) {
        (self.on_start)(rank);
    }

    fn on_step(&self, step: &StepReport) {
        (self.on_step)(step);
    }
}

/// Runs `config`, calling `on_step` on every rank's thread after each step (no start
/// hook: see [`run_with_hooks`]).
pub fn run(
    config: &WorkloadConfig,
    on_step: impl Fn(&StepReport) + Sync,
) -> Result<RunReport, BackendError> {
    run_with_hooks(
        config,
        &FnHooks {
            on_start: |_rank| {},
            on_step,
        },
    )
}

/// Runs `config`, calling `hooks` on every rank's thread: [`WorkloadHooks::on_start`]
/// once before the rank's first step, [`WorkloadHooks::on_step`] after each step.
pub fn run_with_hooks(
    config: &WorkloadConfig,
    hooks: &(impl WorkloadHooks + ?Sized),
) -> Result<RunReport, BackendError> {
    if config.ranks == 0 || config.tp == 0 || !config.ranks.is_multiple_of(config.tp) {
        return Err(BackendError::InvalidArgument {
            op: "workloads::run",
            reason: format!("tp {} must divide ranks {}", config.tp, config.ranks),
        });
    }
    let dp = config.ranks / config.tp;
    if config.batch == 0 || !config.batch.is_multiple_of(dp) {
        return Err(BackendError::InvalidArgument {
            op: "workloads::run",
            reason: format!(
                "batch {} must be a multiple of the {dp} data-parallel ranks",
                config.batch
            ),
        });
    }
    let mut world_config = WorldConfig::new(config.ranks);
    world_config.profile = config.profile.clone();
    world_config.numerics = config.numerics;
    world_config.detail = config.detail;
    world_config.timeout = config.timeout;
    world_config.straggler = config.straggler;
    world_config.topology = config.topology.clone();
    world_config.host_cost = Some(config.host_cost);
    crate::monitor::set_workload(config.workload.name());
    let world = World::new(world_config)?;
    world.tp_dp_groups(config.tp)?;
    let hooks = &LiveSteps {
        hooks,
        world: &world,
    };
    // The workload's own Rust code plays the training script: its host time is the
    // modeled cost of the ops it dispatches (`config.host_cost`), not what the emulator
    // takes to run it, so a workload's timeline is the same on any machine, build and
    // load.
    let results = world.run_modeled(|rank| -> Result<(RankResult, u64), BackendError> {
        let result = match config.workload {
            Workload::Mlp => mlp::train(config, rank, hooks),
            Workload::Gpt => gpt::train(config, rank, hooks),
            Workload::GptInfer => infer::serve(config, rank, hooks),
        }?;
        Ok((result, rank.device().synchronize()))
    });
    let mut report = RunReport::default();
    for (rank, result) in results.into_iter().enumerate() {
        let (result, end_ns) = result?;
        if rank == 0 {
            report.steps = result.steps;
            report.accuracy = result.accuracy;
            report.tokens_per_sec = result.tokens_per_sec;
        }
        report.rank_end_ns.push(end_ns);
    }
    Ok(report)
}

/// Passes each finished step to the live monitor, then to the caller's hooks.
struct LiveSteps<'a, H: ?Sized> {
    hooks: &'a H,
    world: &'a World,
}

impl<H: WorkloadHooks + ?Sized> WorkloadHooks for LiveSteps<'_, H> {
    fn on_start(&self, rank: usize) {
        self.hooks.on_start(rank);
    }

    fn on_step(&self, step: &StepReport) {
        if let Ok(device) = self.world.device(step.rank) {
            crate::monitor::note_step(&device, step.step as u64);
        }
        self.hooks.on_step(step);
    }
}

/// Host-side start of a step: jitter, and the stop fault.
pub(crate) fn begin_step(config: &WorkloadConfig, rank: &Rank, step: usize) -> bool {
    if config.stop == Some((rank.rank(), step)) {
        return false;
    }
    if config.host_jitter_ns > 0 {
        let r = crate::ops::random_u64(
            config.seed ^ 0x6a17,
            (rank.rank() * 1_000_003 + step) as u64,
        );
        let now = runtime_hooks::clock::now_ns();
        runtime_hooks::clock::advance_to(now + r % config.host_jitter_ns);
    }
    true
}

/// The data-parallel group of `rank` (`None` with one data-parallel rank).
pub(crate) fn dp_group(rank: &Rank) -> Result<Option<crate::dist::ProcessGroup>, BackendError> {
    let group = rank.group_with_prefix("dp")?;
    Ok((group.size() > 1).then_some(group))
}
