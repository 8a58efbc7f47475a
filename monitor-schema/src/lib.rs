//! The neuron-monitor document, defined once: AWS's groups (AWS's neuron-monitor user
//! guide) plus neuronprof's `neuronprof` extension (`docs/LIVE.md`). The publisher in
//! `neuron-backend::monitor` builds its reports from these types and the readers
//! (`analysis::live`, so `neuronprof monitor`, neuron-top and the Prometheus exporter)
//! parse into them, so writer and readers cannot drift apart. A leaf crate (serde
//! only) so that both sides can depend on it without depending on each other.
//!
//! Every group is an `Option`: neuron-monitor leaves out the groups its configuration did
//! not enable, and our publisher fills only the runtime groups. Inside a group, counters
//! that AWS always writes default to zero when absent and latencies are `Option<f64>`
//! (`null` when nothing ran). Unknown keys are ignored on input (serde's default), so a
//! newer neuron-monitor with more fields still parses.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One neuron-monitor report: one JSON document of the stream.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MonitorDocument {
    /// One entry per monitored runtime (for us: one per rank).
    #[serde(default)]
    pub neuron_runtime_data: Vec<RuntimeEntry>,
    /// Whole-machine groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_data: Option<SystemData>,
    /// The EC2 instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_info: Option<InstanceInfo>,
    /// The Neuron devices of the machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub neuron_hardware_info: Option<HardwareInfo>,
}

/// One monitored runtime (a process, or one rank of a multi-rank emulator process).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RuntimeEntry {
    /// OS process id.
    #[serde(default)]
    pub pid: u32,
    /// Where the runtime is reached (a socket path for our publisher; often empty in AWS's).
    #[serde(default)]
    pub address: String,
    /// The runtime tag: `"<pid>"`, or `"<pid>/rank<N>"` for rank N of our multi-rank
    /// emulator processes.
    #[serde(default)]
    pub neuron_runtime_tag: String,
    /// Non-empty when the runtime could not be read.
    #[serde(default)]
    pub error: String,
    /// The runtime's metric groups.
    #[serde(default)]
    pub report: RuntimeReport,
}

/// The metric groups of one runtime.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RuntimeReport {
    /// Utilization and flops per NeuronCore.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub neuroncore_counters: Option<NeuroncoreCounters>,
    /// Executions, errors and latencies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_stats: Option<ExecutionStats>,
    /// Host and device memory by category.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_used: Option<MemoryUsed>,
    /// The runtime's own CPU use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub neuron_runtime_vcpu_usage: Option<RuntimeVcpuUsage>,
    /// Our extension (absent in AWS's neuron-monitor output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub neuronprof: Option<NeuronprofReport>,
}

/// `neuroncore_counters`: utilization per NeuronCore over the period.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NeuroncoreCounters {
    /// Seconds the values cover.
    #[serde(default)]
    pub period: f64,
    /// Per NeuronCore index.
    #[serde(default)]
    pub neuroncores_in_use: BTreeMap<u32, CoreCounters>,
    /// Non-empty when the group could not be collected.
    #[serde(default)]
    pub error: String,
}

/// Counters of one (logical) NeuronCore.
///
/// AWS's documentation names the flops counter `flops`; the reports neuron-monitor
/// writes name it `effective_flops`. Either is read into [`CoreCounters::flops`]
/// (`flops` when a report has both); it is written as `flops`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "CoreCountersIn")]
pub struct CoreCounters {
    /// Busy percentage over the period (0–100).
    pub neuroncore_utilization: f64,
    /// Floating-point operations per second over the period (`flops` or
    /// `effective_flops` on input).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flops: Option<f64>,
    /// Further keys. At LNC=2 AWS adds the physical cores under the core version, e.g.
    /// `"v3d": {"nc_v3.0": {"neuroncore_utilization": 21.01}, …}` (see
    /// [`CoreCounters::physical_cores`]); anything else unknown is kept as is.
    #[serde(flatten)]
    pub extra: BTreeMap<String, CoreExtra>,
}

/// [`CoreCounters`] as read: both names of the flops counter.
#[derive(Deserialize)]
struct CoreCountersIn {
    #[serde(default)]
    neuroncore_utilization: f64,
    #[serde(default)]
    flops: Option<f64>,
    #[serde(default)]
    effective_flops: Option<f64>,
    #[serde(flatten)]
    extra: BTreeMap<String, CoreExtra>,
}

impl From<CoreCountersIn> for CoreCounters {
    fn from(read: CoreCountersIn) -> Self {
        CoreCounters {
            neuroncore_utilization: read.neuroncore_utilization,
            flops: read.flops.or(read.effective_flops),
            extra: read.extra,
        }
    }
}

impl CoreCounters {
    /// The physical cores of this logical core, `(core version, physical core name,
    /// utilization %)`, from the version groups such as `"v3d"`.
    pub fn physical_cores(&self) -> Vec<(&str, &str, f64)> {
        let mut out = Vec::new();
        for (version, extra) in &self.extra {
            if let CoreExtra::Physical(cores) = extra {
                for (name, core) in cores {
                    out.push((version.as_str(), name.as_str(), core.neuroncore_utilization));
                }
            }
        }
        out
    }
}

/// A key of [`CoreCounters`] other than utilization and flops.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CoreExtra {
    /// Physical cores by name (`"nc_v3.0"`), as AWS writes under the core version at LNC=2.
    Physical(BTreeMap<String, PhysicalCore>),
    /// Any other value, kept so the document round-trips.
    Other(serde_json::Value),
}

/// One physical core inside a logical core.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhysicalCore {
    /// Busy percentage over the period.
    pub neuroncore_utilization: f64,
}

/// `execution_stats`: executions over the period.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecutionStats {
    /// Seconds the values cover.
    #[serde(default)]
    pub period: f64,
    /// Errors by kind.
    #[serde(default)]
    pub error_summary: ErrorSummary,
    /// Executions by outcome.
    #[serde(default)]
    pub execution_summary: ExecutionSummary,
    /// Latency percentiles.
    #[serde(default)]
    pub latency_stats: LatencyStats,
    /// Non-empty when the group could not be collected.
    #[serde(default)]
    pub error: String,
}

/// Execution errors by kind over the period.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct ErrorSummary {
    #[serde(default)]
    pub generic: u64,
    #[serde(default)]
    pub numerical: u64,
    #[serde(default)]
    pub transient: u64,
    #[serde(default)]
    pub model: u64,
    #[serde(default)]
    pub runtime: u64,
    #[serde(default)]
    pub hardware: u64,
}

impl ErrorSummary {
    /// All errors together.
    pub fn total(&self) -> u64 {
        self.generic + self.numerical + self.transient + self.model + self.runtime + self.hardware
    }
}

/// Executions by outcome over the period.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct ExecutionSummary {
    #[serde(default)]
    pub completed: u64,
    #[serde(default)]
    pub completed_with_err: u64,
    #[serde(default)]
    pub completed_with_num_err: u64,
    #[serde(default)]
    pub timed_out: u64,
    #[serde(default)]
    pub incorrect_input: u64,
    #[serde(default)]
    pub failed_to_queue: u64,
}

/// Latency percentiles of executions: end to end and on the device.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyStats {
    /// From submission to completion; `null` when nothing ran.
    #[serde(default)]
    pub total_latency: Option<LatencyPercentiles>,
    /// On the device only; `null` when nothing ran.
    #[serde(default)]
    pub device_latency: Option<LatencyPercentiles>,
}

/// Percentiles in seconds, each `null` when nothing ran.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct LatencyPercentiles {
    #[serde(default)]
    pub p0: Option<f64>,
    #[serde(default)]
    pub p1: Option<f64>,
    #[serde(default)]
    pub p25: Option<f64>,
    #[serde(default)]
    pub p50: Option<f64>,
    #[serde(default)]
    pub p75: Option<f64>,
    #[serde(default)]
    pub p99: Option<f64>,
    #[serde(default)]
    pub p100: Option<f64>,
}

impl LatencyPercentiles {
    /// `(label, seconds)` in AWS's order.
    pub fn entries(&self) -> [(&'static str, Option<f64>); 7] {
        [
            ("p0", self.p0),
            ("p1", self.p1),
            ("p25", self.p25),
            ("p50", self.p50),
            ("p75", self.p75),
            ("p99", self.p99),
            ("p100", self.p100),
        ]
    }
}

/// `memory_used`: memory of the runtime at the end of the period.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryUsed {
    /// Seconds since the last report.
    #[serde(default)]
    pub period: f64,
    /// Totals and categories.
    #[serde(default)]
    pub neuron_runtime_used_bytes: RuntimeUsedBytes,
    /// Models loaded by the runtime, with their memory.
    #[serde(default)]
    pub loaded_models: Vec<LoadedModel>,
    /// Non-empty when the group could not be collected.
    #[serde(default)]
    pub error: String,
}

/// Host and device bytes with their categories.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RuntimeUsedBytes {
    /// Host bytes in use.
    #[serde(default)]
    pub host: u64,
    /// Device bytes in use.
    #[serde(default)]
    pub neuron_device: u64,
    /// By category.
    #[serde(default)]
    pub usage_breakdown: UsageBreakdown,
}

/// Memory by category: host, and device per NeuronCore.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageBreakdown {
    /// Host categories.
    #[serde(default)]
    pub host: HostMemory,
    /// Device categories per NeuronCore index.
    #[serde(default)]
    pub neuroncore_memory_usage: BTreeMap<u32, DeviceMemory>,
}

/// Host memory categories (bytes), as neuron-top's memory summary shows them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct HostMemory {
    #[serde(default)]
    pub application_memory: u64,
    #[serde(default)]
    pub constants: u64,
    #[serde(default)]
    pub dma_buffers: u64,
    #[serde(default)]
    pub tensors: u64,
}

impl HostMemory {
    /// `(label, bytes)` for display.
    pub fn entries(&self) -> [(&'static str, u64); 4] {
        [
            ("tensors", self.tensors),
            ("constants", self.constants),
            ("DMA buffers", self.dma_buffers),
            ("app memory", self.application_memory),
        ]
    }
}

/// Device memory categories of one NeuronCore (bytes).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct DeviceMemory {
    #[serde(default)]
    pub constants: u64,
    #[serde(default)]
    pub model_code: u64,
    #[serde(default)]
    pub model_shared_scratchpad: u64,
    #[serde(default)]
    pub runtime_memory: u64,
    #[serde(default)]
    pub tensors: u64,
}

impl DeviceMemory {
    /// `(label, bytes)` for display.
    pub fn entries(&self) -> [(&'static str, u64); 5] {
        [
            ("tensors", self.tensors),
            ("constants", self.constants),
            ("model code", self.model_code),
            ("runtime", self.runtime_memory),
            ("scratchpad", self.model_shared_scratchpad),
        ]
    }

    /// Adds another core's categories.
    pub fn add(&mut self, other: &DeviceMemory) {
        self.constants += other.constants;
        self.model_code += other.model_code;
        self.model_shared_scratchpad += other.model_shared_scratchpad;
        self.runtime_memory += other.runtime_memory;
        self.tensors += other.tensors;
    }

    /// All categories together.
    pub fn total(&self) -> u64 {
        self.constants
            + self.model_code
            + self.model_shared_scratchpad
            + self.runtime_memory
            + self.tensors
    }
}

/// One model (NEFF) loaded by the runtime.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadedModel {
    /// Model name.
    #[serde(default)]
    pub name: String,
    /// Model uuid.
    #[serde(default)]
    pub uuid: String,
    /// The runtime's model id.
    #[serde(default)]
    pub model_id: u64,
    /// Whether it is executing now.
    #[serde(default)]
    pub is_running: bool,
    /// Subgraphs by name (`"sg_00"`), each placed on one NeuronCore.
    #[serde(default)]
    pub subgraphs: BTreeMap<String, Subgraph>,
}

/// One subgraph of a loaded model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Subgraph {
    /// Its memory.
    #[serde(default)]
    pub memory_used_bytes: SubgraphMemory,
    /// The NeuronCore it runs on.
    #[serde(default)]
    pub neuroncore_index: u32,
    /// The Neuron device it runs on.
    #[serde(default)]
    pub neuron_device_index: u32,
}

/// Memory of one subgraph.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SubgraphMemory {
    /// Host bytes.
    #[serde(default)]
    pub host: u64,
    /// Device bytes.
    #[serde(default)]
    pub neuron_device: u64,
    /// By category.
    #[serde(default)]
    pub usage_breakdown: SubgraphBreakdown,
}

/// Categories of one subgraph's memory.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SubgraphBreakdown {
    /// Host categories.
    #[serde(default)]
    pub host: HostMemory,
    /// Device categories.
    #[serde(default)]
    pub neuron_device: DeviceMemory,
}

/// `neuron_runtime_vcpu_usage`: the runtime's CPU use over the period.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RuntimeVcpuUsage {
    /// Seconds the values cover.
    #[serde(default)]
    pub period: f64,
    /// The runtime's CPU use in percent, user and system, as AWS reports it.
    #[serde(default)]
    pub vcpu_usage: UserSystem,
    /// Non-empty when the group could not be collected.
    #[serde(default)]
    pub error: String,
}

/// User and system CPU percentages.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct UserSystem {
    #[serde(default)]
    pub user: f64,
    #[serde(default)]
    pub system: f64,
}

/// `system_data`: whole-machine groups.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SystemData {
    /// Hardware error counters per device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub neuron_hw_counters: Option<HwCounters>,
    /// Machine CPU use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vcpu_usage: Option<SystemVcpuUsage>,
    /// Machine memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_info: Option<MemoryInfo>,
}

/// `neuron_hw_counters`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HwCounters {
    /// Seconds the values cover.
    #[serde(default)]
    pub period: f64,
    /// Per device.
    #[serde(default)]
    pub neuron_devices: Vec<DeviceHwCounters>,
    /// Non-empty when the group could not be collected.
    #[serde(default)]
    pub error: String,
}

/// Hardware error counters of one Neuron device over the period.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct DeviceHwCounters {
    #[serde(default)]
    pub neuron_device_index: u32,
    #[serde(default)]
    pub mem_ecc_corrected: u64,
    #[serde(default)]
    pub mem_ecc_uncorrected: u64,
    #[serde(default)]
    pub sram_ecc_corrected: u64,
    #[serde(default)]
    pub sram_ecc_uncorrected: u64,
}

/// `vcpu_usage` of the machine.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SystemVcpuUsage {
    /// Seconds the values cover.
    #[serde(default)]
    pub period: f64,
    /// Average over all vCPUs.
    #[serde(default)]
    pub average_usage: CpuTimes,
    /// Per vCPU (keyed by vCPU index as AWS writes it).
    #[serde(default)]
    pub usage_data: BTreeMap<String, CpuTimes>,
    /// Context switches over the period.
    #[serde(default)]
    pub context_switch_count: u64,
    /// Non-empty when the group could not be collected.
    #[serde(default)]
    pub error: String,
}

/// CPU time shares in percent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct CpuTimes {
    #[serde(default)]
    pub user: f64,
    #[serde(default)]
    pub nice: f64,
    #[serde(default)]
    pub system: f64,
    #[serde(default)]
    pub idle: f64,
    #[serde(default)]
    pub io_wait: f64,
    #[serde(default)]
    pub irq: f64,
    #[serde(default)]
    pub soft_irq: f64,
}

/// `memory_info` of the machine.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct MemoryInfo {
    #[serde(default)]
    pub period: f64,
    #[serde(default)]
    pub memory_total_bytes: u64,
    #[serde(default)]
    pub memory_used_bytes: u64,
    #[serde(default)]
    pub swap_total_bytes: u64,
    #[serde(default)]
    pub swap_used_bytes: u64,
    #[serde(default)]
    pub error: String,
}

/// `instance_info`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct InstanceInfo {
    #[serde(default)]
    pub instance_name: String,
    #[serde(default)]
    pub instance_id: String,
    #[serde(default)]
    pub instance_type: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub instance_availability_zone: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub instance_availability_zone_id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub instance_region: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ami_id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub subnet_id: String,
    #[serde(default)]
    pub error: String,
}

/// `neuron_hardware_info`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct HardwareInfo {
    #[serde(default)]
    pub neuron_device_type: String,
    #[serde(default)]
    pub neuron_device_version: String,
    /// `v2`, `v3` or `v3d` (Trn2 at LNC=2): the label neuron-top puts on its utilization pane.
    #[serde(default)]
    pub neuroncore_version: String,
    #[serde(default)]
    pub neuron_device_count: u32,
    /// Bytes of device memory per device.
    #[serde(default)]
    pub neuron_device_memory_size: u64,
    #[serde(default)]
    pub neuroncore_per_device_count: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logical_neuroncore_config: Option<u32>,
    #[serde(default)]
    pub error: String,
}

/// Our extension under `report.neuronprof` (schema 1, `docs/LIVE.md`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NeuronprofReport {
    /// Schema version of this object (1).
    #[serde(default)]
    pub schema: u32,
    /// The rank of this runtime, when distributed.
    #[serde(default)]
    pub rank: Option<u32>,
    /// World size, when distributed.
    #[serde(default)]
    pub world_size: Option<u32>,
    /// The workload's name, or empty.
    #[serde(default)]
    pub workload: String,
    /// `"trn2"` or `"trn3"`.
    #[serde(default)]
    pub device: String,
    /// Logical NeuronCore configuration (1 or 2).
    #[serde(default)]
    pub lnc: u32,
    /// The machine the emulated device sits in, e.g. `"trn2.48xlarge"` (empty when not
    /// known).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub topology: String,
    /// `"running"` or `"finished"`.
    #[serde(default)]
    pub state: String,
    /// Seconds the period values cover.
    #[serde(default)]
    pub period: f64,
    /// Seconds since the endpoint started.
    #[serde(default)]
    pub uptime_s: f64,
    /// Last completed step, if any.
    #[serde(default)]
    pub step: Option<u64>,
    /// Busy percent over the period per core index, then per engine name (`"tensor"`,
    /// `"vector"`, …, as the backend's timing model names them).
    #[serde(default)]
    pub engine_utilization: BTreeMap<u32, BTreeMap<String, f64>>,
    /// Device memory (HBM).
    #[serde(default)]
    pub hbm: Option<Hbm>,
    /// Device bytes allocated per core index, then per category (`"parameters"`,
    /// `"activations"`, `"gradients"`, `"optimizer_state"`, `"other"`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub memory_categories: BTreeMap<u32, BTreeMap<String, u64>>,
    /// Collectives.
    #[serde(default)]
    pub collectives: Option<Collectives>,
    /// Top operators by device time over the period (at most 10).
    #[serde(default)]
    pub top_operators: Vec<TopOperator>,
    /// Records the rings dropped since start.
    #[serde(default)]
    pub dropped_records: u64,
}

impl NeuronprofReport {
    /// True when the publisher said its workload finished.
    pub fn is_finished(&self) -> bool {
        self.state == "finished"
    }
}

/// HBM use in bytes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct Hbm {
    #[serde(default)]
    pub used_bytes: u64,
    #[serde(default)]
    pub peak_bytes: u64,
    #[serde(default)]
    pub capacity_bytes: u64,
}

/// Collectives of one rank.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Collectives {
    /// Started and not yet finished.
    #[serde(default)]
    pub in_flight: Vec<InFlightCollective>,
    /// Finished since start.
    #[serde(default)]
    pub completed: u64,
    /// Latency percentiles since start.
    #[serde(default)]
    pub latency_s: CollectiveLatency,
    /// `(upper bound in seconds, count)` buckets since start.
    #[serde(default)]
    pub histogram: Vec<(f64, u64)>,
    /// The rank the others waited for most over the period.
    #[serde(default)]
    pub slowest_rank: Option<u32>,
}

/// One collective in flight.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InFlightCollective {
    /// `"all_reduce"`, `"all_gather"`, …
    #[serde(default)]
    pub op: String,
    /// Process group name.
    #[serde(default)]
    pub group: String,
    /// Sequence number in its group.
    #[serde(default)]
    pub seq: u64,
    /// Payload bytes.
    #[serde(default)]
    pub bytes: u64,
    /// Seconds since it started on this rank.
    #[serde(default)]
    pub age_s: f64,
    /// Ranks that have not joined yet.
    #[serde(default)]
    pub waiting_for_ranks: Vec<u32>,
}

/// Collective latency percentiles in seconds (`null` when none finished).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct CollectiveLatency {
    #[serde(default)]
    pub count: u64,
    #[serde(default)]
    pub p50: Option<f64>,
    #[serde(default)]
    pub p90: Option<f64>,
    #[serde(default)]
    pub p99: Option<f64>,
    #[serde(default)]
    pub p100: Option<f64>,
}

/// One operator with its device time over the period.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TopOperator {
    /// Operator name, e.g. `aten::mm`.
    #[serde(default)]
    pub name: String,
    /// Calls over the period.
    #[serde(default)]
    pub calls: u64,
    /// Device seconds over the period.
    #[serde(default)]
    pub device_time_s: f64,
}
