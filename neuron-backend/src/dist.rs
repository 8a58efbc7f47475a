//! Ranks, process groups and collectives: distributed training on emulated devices.
//!
//! A [`World`] of `N` ranks runs each rank on a thread of its own (named
//! `neuron-rank-<r>`), driving a logical core of its own: rank `r` is core
//! `r % cores_per_chip` of chip `r / cores_per_chip`, 16 chips to an instance
//! ([`Topology`]), and its device is `neuron:<local index>` as that instance numbers it.
//! Each rank records through its own thread, so its records form its own trace.
//!
//! # Telling ranks apart in the records
//!
//! Every rank thread is registered with `runtime-hooks` before it runs; [`rank_threads`]
//! lists, for every rank thread this process started, its rank, the world size, its
//! `runtime_hooks` thread index (the `thread_id` of its records and of
//! `runtime_hooks::ThreadStats`) and its device. [`rank_of_thread`] maps one thread
//! index back to its rank, and [`current_rank`] tells a rank's own code which rank it
//! is. A profiler splits the drained records by `thread_id` into one trace per rank
//! (with `distributedInfo` rank and world size from the same table).
//!
//! # A rank's host time
//!
//! Ranks are threads, and with more ranks than cores they take turns on the CPU. So a
//! rank thread's host clock follows its own CPU time
//! (`runtime_hooks::clock::follow_cpu_time`): time it spends descheduled while other
//! ranks compute is not host time. Each op it dispatches costs the host what
//! [`WorldConfig::host_cost`] says (eager PyTorch's measured figures by default, see
//! [`crate::HostCost`]) rather than what the emulator's own dispatch takes, and all
//! ranks start at the same instant ([`World::run`] aligns their clocks). What a rank's
//! own code does between ops counts at its CPU time.
//!
//! # Groups and collectives
//!
//! The world group is named `"0"` (as PyTorch names its default group); more groups
//! come from [`World::new_group`] or [`World::tp_dp_groups`] before [`World::run`].
//! A [`ProcessGroup`] offers `all_reduce` (sum, avg, max), `all_gather`,
//! `reduce_scatter`, `broadcast`, `all_to_all`, `barrier`, `send`/`recv` (and
//! `isend`/`irecv`: a send meets its receive like a collective, so both end at the
//! same instant), with real data, on the group's collective queue; timing comes from
//! [`Topology::cost`] ([`Topology::builtin`]: trn2.48xlarge, Trn2 and Trn3
//! UltraServers). A rank
//! that never arrives makes the others fail with [`BackendError::CollectiveTimeout`]
//! after [`WorldConfig::timeout`], naming it and the collective.
//!
//! ```
//! use neuron_backend::dist::{ReduceOp, World, WorldConfig};
//! use neuron_backend::Tensor;
//!
//! let world = World::new(WorldConfig::new(4))?;
//! let sums = world.run(|rank| {
//!     let x = Tensor::from_f32(&[2], vec![rank.rank() as f32, 1.0])?.to_device(rank.device())?;
//!     rank.world_group().all_reduce(&x, ReduceOp::Sum)?.to_vec_f32()
//! });
//! for sum in sums {
//!     assert_eq!(sum?, vec![6.0, 4.0]);
//! }
//! # Ok::<(), neuron_backend::BackendError>(())
//! ```

mod collective;

pub(crate) use collective::algorithm_name;
mod group;
pub(crate) mod links;
mod topology;

use std::cell::Cell;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use collective::{ReduceOp, Work};
pub use group::ProcessGroup;
pub use links::{LinkId, LinkUse};
pub use topology::{CollectiveCost, Topology};

use group::GroupShared;

use crate::{BackendError, Device, DeviceProfile, HostCost, RecordDetail};

/// How to build a [`World`].
#[derive(Debug, Clone)]
pub struct WorldConfig {
    /// Number of ranks.
    pub world_size: usize,
    /// The device every rank drives.
    pub profile: DeviceProfile,
    /// Links between ranks; `None`: [`Topology::for_profile`] (a trn2.48xlarge for
    /// Trainium2, a 64-chip Trn3 UltraServer for Trainium3).
    pub topology: Option<Topology>,
    /// How long (wall time) a rank waits in a collective for the others.
    pub timeout: Duration,
    /// Whether ranks compute values (off: timing only).
    pub numerics: bool,
    /// Recording detail of every rank's device.
    pub detail: RecordDetail,
    /// A slow rank: `(rank, factor)` runs every engine, DMA and HBM `factor` times
    /// slower (a throttled or faulty device).
    pub straggler: Option<(usize, f64)>,
    /// What each op costs a rank's host ([`HostCost`]; `None`: the emulator's own
    /// dispatch time, measured on the rank's CPU-time clock).
    pub host_cost: Option<HostCost>,
}

impl WorldConfig {
    /// `world_size` ranks of `trn2`, numerics on, a 30 s collective timeout.
    pub fn new(world_size: usize) -> Self {
        WorldConfig {
            world_size,
            profile: DeviceProfile::trn2(),
            topology: None,
            timeout: Duration::from_secs(30),
            numerics: true,
            detail: RecordDetail::Instructions,
            straggler: None,
            host_cost: Some(HostCost::eager_pytorch()),
        }
    }
}

/// `profile` with every rate divided by `factor`.
impl DeviceProfile {
    /// This profile with every engine clock and bandwidth divided by `factor` (a
    /// straggler's device: `--straggler`, `NEURONPROF_STRAGGLER`); named
    /// `<name>-slowed-<factor>`.
    pub fn slowed(&self, factor: f64) -> DeviceProfile {
        let f = factor.max(1e-3);
        DeviceProfile {
            name: format!("{}-slowed-{factor}", self.name),
            tensor_clock_ghz: self.tensor_clock_ghz / f,
            tensor_bf16_tflops: self.tensor_bf16_tflops / f,
            vector_clock_ghz: self.vector_clock_ghz / f,
            scalar_clock_ghz: self.scalar_clock_ghz / f,
            gpsimd_clock_ghz: self.gpsimd_clock_ghz / f,
            dma_engine_bytes_per_ns: self.dma_engine_bytes_per_ns / f,
            hbm_bytes_per_sec: self.hbm_bytes_per_sec / f,
            ..self.clone()
        }
    }
}

/// A set of ranks, their devices and process groups. Cheap to clone.
#[derive(Debug, Clone)]
pub struct World {
    shared: Arc<WorldShared>,
}

#[derive(Debug)]
struct WorldShared {
    config: WorldConfig,
    topology: Arc<Topology>,
    links: Arc<Mutex<links::LinkBook>>,
    devices: Vec<Device>,
    groups: Mutex<Vec<Arc<GroupShared>>>,
}

/// One rank thread, as [`rank_threads`] lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RankThread {
    /// Global rank.
    pub rank: usize,
    /// Ranks in its world.
    pub world_size: usize,
    /// Its `runtime_hooks` thread index (`Record::thread_id`).
    pub hooks_thread_id: u32,
    /// Its device index (`neuron:i` on its instance; the `device` of its records).
    pub device_index: usize,
    /// Its instance.
    pub instance: usize,
}

static RANK_THREADS: Mutex<Vec<RankThread>> = Mutex::new(Vec::new());

thread_local! {
    static CURRENT_RANK: Cell<Option<(usize, usize)>> = const { Cell::new(None) };
}

/// Every rank thread this process has started (oldest first).
pub fn rank_threads() -> Vec<RankThread> {
    RANK_THREADS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
}

/// The rank of the thread whose records carry `hooks_thread_id`, if it is a rank thread.
pub fn rank_of_thread(hooks_thread_id: u32) -> Option<RankThread> {
    rank_threads()
        .into_iter()
        .rev()
        .find(|t| t.hooks_thread_id == hooks_thread_id)
}

/// `(rank, world_size)` of the calling thread, if it is a rank thread.
pub fn current_rank() -> Option<(usize, usize)> {
    CURRENT_RANK.with(Cell::get)
}

impl World {
    /// A world of `config.world_size` ranks with the world group `"0"`.
    pub fn new(config: WorldConfig) -> Result<World, BackendError> {
        config
            .profile
            .validate()
            .map_err(|reason| BackendError::Profile {
                source_name: config.profile.name.clone(),
                reason,
            })?;
        if config.world_size == 0 {
            return Err(BackendError::InvalidArgument {
                op: "World::new",
                reason: "a world needs at least one rank".into(),
            });
        }
        let topology = Arc::new(
            config
                .topology
                .clone()
                .unwrap_or_else(|| Topology::for_profile(&config.profile)),
        );
        let profile = Arc::new(config.profile.clone());
        let devices = (0..config.world_size)
            .map(|rank| {
                let profile = match config.straggler {
                    Some((slow, factor)) if slow == rank => Arc::new(profile.slowed(factor)),
                    _ => Arc::clone(&profile),
                };
                let device = Device::new(profile, topology.local_device_of(rank) as u16);
                device.set_numerics(config.numerics);
                device.set_detail(config.detail);
                device
            })
            .collect::<Vec<_>>();
        crate::monitor::register_world(&devices);
        let world = World {
            shared: Arc::new(WorldShared {
                config,
                topology,
                links: Arc::default(),
                devices,
                groups: Mutex::new(Vec::new()),
            }),
        };
        let all: Vec<usize> = (0..world.world_size()).collect();
        world.new_group("0", &all)?;
        Ok(world)
    }

    /// Number of ranks.
    pub fn world_size(&self) -> usize {
        self.shared.config.world_size
    }

    /// The topology.
    pub fn topology(&self) -> &Topology {
        &self.shared.topology
    }

    /// The device of `rank`.
    pub fn device(&self, rank: usize) -> Result<Device, BackendError> {
        self.shared
            .devices
            .get(rank)
            .cloned()
            .ok_or(BackendError::NoSuchDevice {
                index: rank,
                count: self.world_size(),
            })
    }

    /// Adds a process group `name` of the global `ranks` (in group-rank order).
    pub fn new_group(&self, name: &str, ranks: &[usize]) -> Result<(), BackendError> {
        let bad = |reason: String| BackendError::InvalidArgument {
            op: "new_group",
            reason: format!("group {name:?} of ranks {ranks:?}: {reason}"),
        };
        if ranks.is_empty() {
            return Err(bad("no ranks".into()));
        }
        if let Some(&r) = ranks.iter().find(|&&r| r >= self.world_size()) {
            return Err(bad(format!(
                "rank {r} is not in a world of {}",
                self.world_size()
            )));
        }
        let mut seen = ranks.to_vec();
        seen.sort_unstable();
        seen.dedup();
        if seen.len() != ranks.len() {
            return Err(bad("a rank appears twice".into()));
        }
        let mut groups = self.shared.groups.lock().unwrap_or_else(|p| p.into_inner());
        if groups.iter().any(|g| g.name == name) {
            return Err(bad("a group of that name exists".into()));
        }
        let slot = groups.len();
        groups.push(Arc::new(GroupShared::new(
            name,
            ranks.to_vec(),
            slot,
            Arc::clone(&self.shared.topology),
            Arc::clone(&self.shared.links),
            self.shared.config.timeout,
        )));
        Ok(())
    }

    /// Tensor-parallel groups `tp0, tp1, …` of `tp_size` consecutive ranks and
    /// data-parallel groups `dp0, dp1, …` of the ranks with the same position in their
    /// tensor-parallel group (Megatron's layout: tensor parallelism inside a chip or
    /// instance, where links are fastest).
    pub fn tp_dp_groups(&self, tp_size: usize) -> Result<(), BackendError> {
        let n = self.world_size();
        if tp_size == 0 || !n.is_multiple_of(tp_size) {
            return Err(BackendError::InvalidArgument {
                op: "tp_dp_groups",
                reason: format!("tensor-parallel size {tp_size} does not divide world size {n}"),
            });
        }
        for t in 0..n / tp_size {
            let ranks: Vec<usize> = (t * tp_size..(t + 1) * tp_size).collect();
            self.new_group(&format!("tp{t}"), &ranks)?;
        }
        for d in 0..tp_size {
            let ranks: Vec<usize> = (d..n).step_by(tp_size).collect();
            self.new_group(&format!("dp{d}"), &ranks)?;
        }
        Ok(())
    }

    /// Runs `body` once per rank, each on its own thread, and returns the results in
    /// rank order. Every rank's host clock starts at the same instant (the latest of
    /// their threads' clocks when all have started). A panic on a rank thread is
    /// re-raised here.
    pub fn run<R: Send>(&self, body: impl Fn(&Rank) -> R + Sync) -> Vec<R> {
        self.run_ranks(false, body)
    }

    /// Like [`run`](Self::run), with every rank's whole body, from its aligned start
    /// on, as emulation time: its host clock moves only by modeled host costs and
    /// waits (the built-in workloads, whose Rust code stands for a training script).
    pub(crate) fn run_modeled<R: Send>(&self, body: impl Fn(&Rank) -> R + Sync) -> Vec<R> {
        self.run_ranks(true, body)
    }

    fn run_ranks<R: Send>(&self, modeled: bool, body: impl Fn(&Rank) -> R + Sync) -> Vec<R> {
        let body = &body;
        let start_line = &StartLine::new(self.world_size());
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..self.world_size())
                .map(|rank| {
                    let world = self.clone();
                    std::thread::Builder::new()
                        .name(format!("neuron-rank-{rank}"))
                        .spawn_scoped(scope, move || {
                            let rank = Rank::enter(world, rank);
                            crate::monitor::rank_started(&rank.device);
                            let _modeled = modeled.then(runtime_hooks::clock::emulation_scope);
                            start_line.cross();
                            let result = body(&rank);
                            crate::monitor::rank_finished(&rank.device);
                            result
                        })
                        .expect("spawning a rank thread")
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                })
                .collect()
        })
    }

    fn group_shared(&self, name: &str) -> Option<Arc<GroupShared>> {
        let groups = self.shared.groups.lock().unwrap_or_else(|p| p.into_inner());
        groups.iter().find(|g| g.name == name).cloned()
    }
}

/// Where the ranks of one [`World::run`] start: every rank thread's host clock moves
/// to the latest of them, so all ranks begin at the same instant whatever order their
/// threads were started and scheduled in (as a job's ranks leave their initial
/// rendezvous together).
struct StartLine {
    latest_ns: std::sync::atomic::AtomicU64,
    barrier: std::sync::Barrier,
}

impl StartLine {
    fn new(ranks: usize) -> Self {
        StartLine {
            latest_ns: std::sync::atomic::AtomicU64::new(0),
            barrier: std::sync::Barrier::new(ranks),
        }
    }

    fn cross(&self) {
        let now_ns = runtime_hooks::clock::now_ns();
        self.latest_ns
            .fetch_max(now_ns, std::sync::atomic::Ordering::SeqCst);
        self.barrier.wait();
        runtime_hooks::clock::advance_to(self.latest_ns.load(std::sync::atomic::Ordering::SeqCst));
    }
}

/// One rank, as its thread sees it.
#[derive(Debug)]
pub struct Rank {
    world: World,
    rank: usize,
    device: Device,
}

impl Rank {
    /// Sets the calling thread up as `rank`: registers its recording ring and its rank
    /// tag.
    fn enter(world: World, rank: usize) -> Rank {
        runtime_hooks::register_thread();
        // A rank's host clock advances only while its thread runs (plus modeled waits
        // and host costs): ranks outnumbering cores do not see each other's CPU time.
        runtime_hooks::clock::follow_cpu_time(true);
        crate::host_cost::set_thread_host_cost(world.shared.config.host_cost);
        let device = world.shared.devices[rank].clone();
        CURRENT_RANK.with(|c| c.set(Some((rank, world.world_size()))));
        if let Some(hooks_thread_id) = runtime_hooks::current_thread_id() {
            RANK_THREADS
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(RankThread {
                    rank,
                    world_size: world.world_size(),
                    hooks_thread_id,
                    device_index: device.index(),
                    instance: world.topology().instance_of(rank),
                });
        }
        Rank {
            world,
            rank,
            device,
        }
    }

    /// The global rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Ranks in the world.
    pub fn world_size(&self) -> usize {
        self.world.world_size()
    }

    /// The world.
    pub fn world(&self) -> &World {
        &self.world
    }

    /// The device this rank drives.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The world group (`"0"`).
    pub fn world_group(&self) -> ProcessGroup {
        self.group("0").expect("every world has group \"0\"")
    }

    /// This rank's handle on group `name`; an error if there is no such group or this
    /// rank is not in it.
    pub fn group(&self, name: &str) -> Result<ProcessGroup, BackendError> {
        let shared =
            self.world
                .group_shared(name)
                .ok_or_else(|| BackendError::InvalidArgument {
                    op: "group",
                    reason: format!("no process group named {name:?}"),
                })?;
        let group_rank = shared
            .ranks
            .iter()
            .position(|&r| r == self.rank)
            .ok_or_else(|| BackendError::InvalidArgument {
                op: "group",
                reason: format!(
                    "rank {} is not in process group {name:?} {:?}",
                    self.rank, shared.ranks
                ),
            })?;
        Ok(ProcessGroup {
            shared,
            group_rank,
            device: self.device.clone(),
        })
    }

    /// The first group whose name starts with `prefix` (`"tp"`, `"dp"`) that holds
    /// this rank.
    pub fn group_with_prefix(&self, prefix: &str) -> Result<ProcessGroup, BackendError> {
        let name = {
            let groups = self
                .world
                .shared
                .groups
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            groups
                .iter()
                .find(|g| g.name.starts_with(prefix) && g.ranks.contains(&self.rank))
                .map(|g| g.name.clone())
        };
        match name {
            Some(name) => self.group(&name),
            None => Err(BackendError::InvalidArgument {
                op: "group",
                reason: format!("no process group named {prefix}… holds rank {}", self.rank),
            }),
        }
    }
}
