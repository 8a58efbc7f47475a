//! What a profiling session records and how the trace describes the devices and ranks.

/// What to record, like `torch.profiler.ProfilerActivity`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Activity {
    /// Host activity: operators (`cpu_op`), user ranges (`user_annotation`, including
    /// `ProfilerStep#N`), `[memory]` events and the host side of collectives.
    Cpu,
    /// Device activity of the `neuron` device (PyTorch's PrivateUse1): runtime calls
    /// (`privateuse1_runtime`), kernels, copies, collectives, engine instructions, DMA,
    /// `ac2g` flows and queue-depth counters.
    Neuron,
}

/// How much device detail goes into the trace: the analogue of Neuron's RUNTIME and
/// DEVICE profiling modes.
///
/// The profiler filters what it converts; the device decides what it records. To save
/// the recording cost as well, set the backend to the same level (the emulated device's
/// `Runtime::set_detail`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeviceDetail {
    /// Kernels, copies and collectives on the execution queues only.
    Kernels,
    /// Kernels plus every engine instruction, semaphore wait and DMA transfer, each on
    /// its own track.
    #[default]
    Instructions,
}

impl DeviceDetail {
    /// The spelling written into the trace metadata (`neuron_device_detail`).
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceDetail::Kernels => "kernels",
            DeviceDetail::Instructions => "instructions",
        }
    }
}

/// One neuron device (a logical NeuronCore, `neuron:i`) as the trace describes it:
/// `deviceProperties`, process and thread names.
///
/// The profiler does not depend on the device crate; whoever drives the device (the CLI,
/// a test) fills this in from the device profile. With the emulated device
/// (`neuron_backend::Device`), as the crate's tests do:
///
/// ```text
/// let p = device.profile();
/// let bf16 = p.tensor_bf16_tflops * f64::from(p.lnc);
/// DeviceInfo {
///     core_version: if p.name.starts_with("trn3") { "v4" } else { "v3" }.to_owned(),
///     lnc: p.lnc,
///     hbm_bytes: device.memory_capacity_bytes(),
///     peak_tflops: vec![("bf16".into(), bf16), ("fp8".into(), bf16 * p.tensor_fp8_speedup),
///                       ("fp32".into(), bf16 / p.tensor_fp32_slowdown)],
///     compute_queues: p.compute_queues,
///     collective_queues: p.collective_queues,
///     tensor_op_queues: p.tensor_op_queues,
///     ..DeviceInfo::new(device.index() as u16, &p.name)
/// }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceInfo {
    /// The index `i` of `neuron:i`: the `pid` of the device's events.
    pub index: u16,
    /// Profile name, for example `trn2`.
    pub profile_name: String,
    /// NeuronCore version, for example `v3` (Trainium2) or `v4` (Trainium3).
    pub core_version: String,
    /// Physical cores per logical core (the LNC setting).
    pub lnc: u32,
    /// HBM capacity of the logical core in bytes.
    pub hbm_bytes: u64,
    /// Peak dense TFLOPS of the logical core per data type, for example
    /// `("bf16", 158.0)`.
    pub peak_tflops: Vec<(String, f64)>,
    /// Compute execution queues (numbered first).
    pub compute_queues: u32,
    /// Collective execution queues (numbered after the compute queues).
    pub collective_queues: u32,
    /// Tensor-op execution queues (numbered last).
    pub tensor_op_queues: u32,
    /// Engine names by engine index of instruction records.
    pub engine_names: Vec<String>,
}

impl DeviceInfo {
    /// A device with the Trainium2 defaults of `shared/reference/hardware.md` (LNC=2,
    /// 1 compute, 3 collective and 2 tensor-op queues, engines TensorE, VectorE, ScalarE,
    /// GpSimdE) and no capacity or peak figures; set the fields you know.
    pub fn new(index: u16, profile_name: &str) -> Self {
        DeviceInfo {
            index,
            profile_name: profile_name.to_owned(),
            core_version: String::new(),
            lnc: 2,
            hbm_bytes: 0,
            peak_tflops: Vec::new(),
            compute_queues: 1,
            collective_queues: 3,
            tensor_op_queues: 2,
            engine_names: ["TensorE", "VectorE", "ScalarE", "GpSimdE"]
                .map(String::from)
                .to_vec(),
        }
    }

    /// The device's entry in the trace's `deviceProperties`: `id`, `name`,
    /// `totalGlobalMem`, `deviceType`, `profile`, `coreVersion`, `lnc`, `peakTflops` per
    /// dtype and the queue counts.
    pub fn properties(&self) -> serde_json::Value {
        let peak: serde_json::Map<String, serde_json::Value> = self
            .peak_tflops
            .iter()
            .map(|(dtype, tflops)| (dtype.clone(), serde_json::json!(tflops)))
            .collect();
        serde_json::json!({
            "id": self.index,
            "name": self.process_name(),
            "totalGlobalMem": self.hbm_bytes,
            "deviceType": "neuron",
            "profile": self.profile_name,
            "coreVersion": self.core_version,
            "lnc": self.lnc,
            "peakTflops": peak,
            "computeQueues": self.compute_queues,
            "collectiveQueues": self.collective_queues,
            "tensorOpQueues": self.tensor_op_queues,
        })
    }

    /// The process name of the device's rows: `NeuronCore 0 (trn2, LNC=2)`.
    pub fn process_name(&self) -> String {
        format!(
            "NeuronCore {} ({}, LNC={})",
            self.index, self.profile_name, self.lnc
        )
    }

    /// The thread name of execution queue `queue`: `stream 0 (compute)`,
    /// `stream 1 (collective 0)`, `stream 4 (tensor-op 0)`, `stream 6 (user 0)` (the
    /// emulator's user-stream pool after the hardware queues).
    pub fn queue_name(&self, queue: u16) -> String {
        let q = u32::from(queue);
        let collective_start = self.compute_queues;
        let tensor_op_start = collective_start + self.collective_queues;
        let kind = if q < collective_start {
            if self.compute_queues == 1 {
                "compute".to_owned()
            } else {
                format!("compute {q}")
            }
        } else if q < tensor_op_start {
            format!("collective {}", q - collective_start)
        } else if q < tensor_op_start + self.tensor_op_queues {
            format!("tensor-op {}", q - tensor_op_start)
        } else {
            // Beyond the hardware queues: the emulator's pool of user streams.
            format!("user {}", q - tensor_op_start - self.tensor_op_queues)
        };
        format!("stream {queue} ({kind})")
    }

    /// The name of engine `engine` (`TensorE`), or `engine <n>` when unknown.
    pub fn engine_name(&self, engine: u8) -> String {
        self.engine_names
            .get(usize::from(engine))
            .cloned()
            .unwrap_or_else(|| format!("engine {engine}"))
    }
}

/// One process group of `distributedInfo.pg_config`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessGroup {
    /// `pg_name` (PyTorch numbers groups `"0"`, `"1"`, …); collectives name their group
    /// with it.
    pub name: String,
    /// `pg_desc`, for example `default_pg`.
    pub desc: String,
    /// `backend_config`, for example `neuron:nccom`.
    pub backend_config: String,
    /// Global ranks in the group.
    pub ranks: Vec<u32>,
}

/// The rank's place in a distributed run: `distributedInfo` of the trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DistributedConfig {
    /// `backend`, for example `nccom` (the Neuron collectives library).
    pub backend: String,
    /// This process's global rank.
    pub rank: u32,
    /// Number of ranks.
    pub world_size: u32,
    /// Process groups, the default group first.
    pub process_groups: Vec<ProcessGroup>,
}

impl DistributedConfig {
    /// A run of `world_size` ranks with one default group `"0"` holding all of them.
    pub fn new(backend: &str, rank: u32, world_size: u32) -> Self {
        DistributedConfig {
            backend: backend.to_owned(),
            rank,
            world_size,
            process_groups: vec![ProcessGroup {
                name: "0".to_owned(),
                desc: "default_pg".to_owned(),
                backend_config: format!("neuron:{backend}"),
                ranks: (0..world_size).collect(),
            }],
        }
    }

    /// The group named `name`.
    pub fn group(&self, name: &str) -> Option<&ProcessGroup> {
        self.process_groups.iter().find(|g| g.name == name)
    }
}

/// Everything a session is configured with (see [`crate::ProfilerBuilder`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ProfilerConfig {
    /// What to record.
    pub activities: Vec<Activity>,
    /// Write `Input Dims` and `Input type` on operators (when the records carry them)
    /// and allow grouping `key_averages` by input shape.
    pub record_shapes: bool,
    /// Write `[memory]` events and HBM counters.
    pub profile_memory: bool,
    /// Write `flops` on operators and fill the FLOPs column of `key_averages`.
    pub with_flops: bool,
    /// torch's `with_stack`: accepted, and written to the metadata, but it adds no
    /// `Call stack` args. torch fills them with the Python frames that called each
    /// operator; a Rust program has no Python frames, and Rust frames (a backtrace per
    /// operator, microseconds each) would break the recording-overhead bound while
    /// naming only the dispatcher's own functions.
    pub with_stack: bool,
    /// Device detail level.
    pub device_detail: DeviceDetail,
    /// Devices described in the trace (`deviceProperties`, names).
    pub devices: Vec<DeviceInfo>,
    /// Rank and process groups, for `distributedInfo`.
    pub distributed: Option<DistributedConfig>,
    /// Top-level members written into one rank's trace only (the caller's facts about
    /// the rank, such as the emulator's `neuron_topology`): `(rank, key, value)`.
    pub rank_metadata: Vec<(u32, String, serde_json::Value)>,
}

impl Default for ProfilerConfig {
    fn default() -> Self {
        ProfilerConfig {
            activities: vec![Activity::Cpu, Activity::Neuron],
            record_shapes: false,
            profile_memory: false,
            with_flops: false,
            with_stack: false,
            device_detail: DeviceDetail::default(),
            devices: Vec::new(),
            distributed: None,
            rank_metadata: Vec::new(),
        }
    }
}

impl ProfilerConfig {
    /// Whether `activity` is recorded.
    pub fn has(&self, activity: Activity) -> bool {
        self.activities.contains(&activity)
    }

    /// The description of device `index`, if given.
    pub fn device(&self, index: u16) -> Option<&DeviceInfo> {
        self.devices.iter().find(|d| d.index == index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names_follow_the_queue_layout() {
        let d = DeviceInfo::new(0, "trn2");
        assert_eq!(d.process_name(), "NeuronCore 0 (trn2, LNC=2)");
        assert_eq!(d.queue_name(0), "stream 0 (compute)");
        assert_eq!(d.queue_name(2), "stream 2 (collective 1)");
        assert_eq!(d.queue_name(5), "stream 5 (tensor-op 1)");
        assert_eq!(d.queue_name(9), "stream 9 (user 3)");
        assert_eq!(d.engine_name(0), "TensorE");
        assert_eq!(d.engine_name(7), "engine 7");
    }

    #[test]
    fn distributed_default_group_holds_every_rank() {
        let d = DistributedConfig::new("nccom", 1, 4);
        assert_eq!(d.group("0").unwrap().ranks, vec![0, 1, 2, 3]);
        assert!(d.group("1").is_none());
    }
}
