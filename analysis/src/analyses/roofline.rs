//! How far each operator is from what the device allows: per operator and unique
//! arguments, its kernels' time, the FLOPs and bytes the performance model
//! ([`perf_model`]) gives for its arguments, the achieved TFLOP/s and TB/s, and the
//! roofline of the device (TraceLens's performance report, and beyond).
//!
//! # What is counted
//! - **Kernels of an operator.** Every device row (kernel, copy, memset) is given to the
//!   innermost host operator running on the thread of its launch (the runtime call with
//!   its `correlation`) when the launch was made ([`attribute`]): the operator that
//!   launched it *directly*. That operator and its category give the category table
//!   ([`RankRoofline::categories`]: count and direct kernel time per category, as
//!   TraceLens's `ops_summary_by_category`).
//! - **Modeled calls.** Every operator call the model costs that launched kernels,
//!   itself or through nested operators, is a call of its row, with all the kernels of
//!   its subtree (as TraceLens counts them): `_scaled_dot_product_flash_attention` with
//!   its `_flash_attention_forward`'s and `fill_`'s kernels, `layer_norm` with
//!   `native_layer_norm`'s. Wrappers whose children launch the kernels are not costed
//!   (`linear` over `addmm`: [`perf_model::is_wrapper`]) unless they launch kernels
//!   themselves. A call inside another costed call (a convolution's bias `add_`) is
//!   *nested*: it has its row, but the time to win and the modeled total count only the
//!   outermost call of a chain, so no kernel counts twice there. A call's kernel time
//!   is the **union** of its kernels' intervals (not their sum: kernels of one call on
//!   two streams overlap).
//! - **Not covered.** A kernel whose chain holds no operator the model costs counts in
//!   [`RankRoofline::uncovered`] under its launching operator's name, with the reason;
//!   a kernel no operator launched in [`RankRoofline::unattributed`]. Nothing is
//!   guessed.
//! - **Per row** (operator name and unique `Input Dims`, `Input type`, `Input Strides`,
//!   `Concrete Inputs`): calls, kernel time (sum, mean, median, min, max), GFLOPS and
//!   bytes per call, FLOPs/byte, achieved TFLOP/s and TB/s per call (mean, median, min,
//!   max; TB = 10¹² bytes), and with a device: the roofline time per call, the percent
//!   of it reached (roofline time / mean kernel time), the binding limit, and the time a
//!   user could win, kernel time × (1 − fraction of roofline) = Σ kernel time − calls ×
//!   roofline time. Rows are ranked by that time. Each row lists its kernels by name with
//!   their own count and times.
//! - **Compiled graphs** (neuron traces of `torch.compile`): a graph kernel that states its
//!   passes' costs is a row of its own, whatever launched it, with its passes' shares of
//!   its time and their rooflines ([`graphs`]).
//! - **Engines** (neuron traces whose kernels state `<engine> busy (ns)`): each row's
//!   kernel time split by engine, the engine its roofline says should bind and the
//!   busiest one ([`engines`]).
//! - **The device**: `--device-spec NAME|FILE` ([`RooflineOptions::device`]), else the
//!   trace's `deviceProperties` (name, SM count, memory; a neuron device's profile and
//!   LNC, with the peaks the trace states), else none: then the table has no roofline
//!   columns and says why.
//!
//! JSON ([`RankRoofline`]): `{"rank", "device", "device_source", "ops": [RooflineOp…],
//! "uncovered": [UncoveredOp…], "unattributed": {"count", "kernel_time_us"},
//! "categories": [{"category", "count", "kernel_time_us"}…], "kernel_time_us",
//! "modeled_kernel_time_us"}`. Times in µs.

mod attribute;
pub mod diff;
pub mod engines;
pub mod graphs;
pub mod rows;

/// The device a roofline is against (`perf_model`'s), for crates that reach the model
/// only through `analysis` (neuron-top: DESIGN.md's arrows).
pub use perf_model::DeviceSpec;
use perf_model::{Bound, Category, Model, OpArgs, OpCost};
use serde::Serialize;

use crate::error::AnalysisError;
use crate::model::{FastMap, NameId, RankTrace};
use attribute::{attribute, NONE};

/// What [`roofline_table`] uses.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct RooflineOptions {
    /// The device, when named (`--device-spec`); `None`: from `deviceProperties`.
    pub device: Option<DeviceSpec>,
    /// Whether to fill [`RankRoofline::row_models`] (one entry per device row).
    pub row_models: bool,
}

impl RooflineOptions {
    /// Sets [`RooflineOptions::device`].
    pub fn with_device(mut self, device: Option<DeviceSpec>) -> Self {
        self.device = device;
        self
    }

    /// Sets [`RooflineOptions::row_models`].
    pub fn with_row_models(mut self, row_models: bool) -> Self {
        self.row_models = row_models;
        self
    }
}

/// Five numbers of a per-call quantity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Spread {
    /// Mean.
    pub mean: f64,
    /// Median (the mean of the middle two for an even count).
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
}

impl Spread {
    fn of(values: &mut [f64]) -> Spread {
        if values.is_empty() {
            return Spread::default();
        }
        values.sort_by(f64::total_cmp);
        let n = values.len();
        let median = if n % 2 == 1 {
            values[n / 2]
        } else {
            (values[n / 2 - 1] + values[n / 2]) / 2.0
        };
        Spread {
            mean: values.iter().sum::<f64>() / n as f64,
            median,
            min: values[0],
            max: values[n - 1],
        }
    }
}

/// One kernel name under a row.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KernelStats {
    /// Kernel name.
    pub name: String,
    /// Launches.
    pub count: u64,
    /// Σ duration, µs.
    pub total_us: f64,
    /// Durations, µs.
    pub dur_us: Spread,
}

/// One operator with one set of arguments.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RooflineOp {
    /// Operator name.
    pub name: String,
    /// Its category (TraceLens's labels where TraceLens has the family).
    pub category: Category,
    /// `Input Dims` as written.
    pub input_dims: String,
    /// `Input type` as written.
    pub input_types: String,
    /// `Input Strides` as written.
    pub input_strides: String,
    /// `Concrete Inputs` as written.
    pub concrete_inputs: String,
    /// The parameters the model read (`B=1 M=8944 N=2816 K=1024`).
    pub params: String,
    /// The units and type whose peak bounds it (`matrix_bf16`).
    pub compute_spec: String,
    /// Calls.
    pub count: u64,
    /// Of them, calls made inside another call the model costs (a convolution's bias
    /// `add_`, a `copy_` inside an `upsample`): their kernels count in that call's row
    /// too, so [`RooflineOp::win_us`] and [`RankRoofline::modeled_kernel_time_us`] leave
    /// them out.
    pub nested_calls: u64,
    /// Σ kernel time of the calls, µs.
    pub kernel_time_us: f64,
    /// Of it, the calls not nested in another modeled call, µs: what a share of the
    /// rank's kernel time may add up (a nested call's kernels are its parent's too).
    pub unnested_kernel_time_us: f64,
    /// Kernel time per call (the union of its kernels), µs.
    pub kernel_time_per_call_us: Spread,
    /// GFLOP per call.
    pub gflops: f64,
    /// Bytes moved per call.
    pub data_moved_bytes: f64,
    /// FLOPs per byte.
    pub flops_per_byte: f64,
    /// Achieved TFLOP/s per call.
    pub tflops_per_sec: Spread,
    /// Achieved TB/s per call (10¹² bytes).
    pub tb_per_sec: Spread,
    /// The roofline time of one call, µs (`null` without a device).
    pub roofline_time_us: Option<f64>,
    /// Roofline time / mean kernel time per call, % (`null` without a device).
    pub roofline_pct: Option<f64>,
    /// Compute- or memory-bound on the device.
    pub bound: Option<Bound>,
    /// The device peak used (`vector_fp32` for a 16-bit vector op on a device that
    /// publishes no 16-bit vector peak), and its TFLOP/s.
    pub peak: Option<(String, f64)>,
    /// FLOPs per call that the kernels themselves state (their `flops` args, as the
    /// neuron emulator writes them), when every kernel of the row has one.
    pub device_flops_per_call: Option<f64>,
    /// Σ kernel time − calls × roofline time over the calls not nested in another
    /// modeled call, µs: what reaching the roofline would win.
    pub win_us: f64,
    /// On neuron traces with engine busy times: the split by engine, the engine that
    /// should bind and the busiest ([`engines`]); `null` otherwise.
    pub engines: Option<engines::EngineSplit>,
    /// Its kernels, by name, most time first.
    pub kernels: Vec<KernelStats>,
    /// A compiled graph's row ([`Category::CompiledGraph`]): its passes by label with
    /// their share of its time and their roofline ([`graphs`]); `null` for an operator.
    pub passes: Option<Vec<graphs::GraphPass>>,
}

/// Kernels launched by operators the model does not cost, per launching operator name.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct UncoveredOp {
    /// The launching operator.
    pub name: String,
    /// Its category.
    pub category: Category,
    /// Calls that launched kernels.
    pub count: u64,
    /// Σ kernel time (the union per call), µs.
    pub kernel_time_us: f64,
    /// Why the model does not cost it.
    pub reason: String,
}

/// Device rows no operator launched.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Unattributed {
    /// Rows.
    pub count: u64,
    /// Σ duration, µs.
    pub kernel_time_us: f64,
}

/// Direct kernel time per category of the launching operator.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CategoryTime {
    /// The category.
    pub category: Category,
    /// Operator calls that launched kernels.
    pub count: u64,
    /// Σ kernel time (the union per call), µs.
    pub kernel_time_us: f64,
}

/// The roofline table of one rank.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RankRoofline {
    /// The rank.
    pub rank: i64,
    /// The device's name in the table, when known.
    pub device: Option<String>,
    /// Where the device came from (`--device-spec`, `deviceProperties: NVIDIA H100 80GB
    /// HBM3`) or why there is none.
    pub device_source: String,
    /// Rows, most time to win first (then most kernel time).
    pub ops: Vec<RooflineOp>,
    /// Operators the model does not cost, most kernel time first.
    pub uncovered: Vec<UncoveredOp>,
    /// Device rows no operator launched.
    pub unattributed: Unattributed,
    /// Per category of the launching operator.
    pub categories: Vec<CategoryTime>,
    /// Σ kernel time over every operator call (the union per call), µs.
    pub kernel_time_us: f64,
    /// Of it, in calls the model costs (not counting nested calls twice), µs.
    pub modeled_kernel_time_us: f64,
    /// The device of the table (not serialized: [`RankRoofline::device`] names it).
    #[serde(skip)]
    pub device_spec: Option<DeviceSpec>,
    /// Per device row, its launching operator's category and its modeled call, when
    /// [`RooflineOptions::row_models`] asked for them (not serialized).
    #[serde(skip)]
    pub row_models: Vec<rows::RowModel>,
}

/// The device for `trace`: `options.device`, else from `deviceProperties`.
fn device_of(trace: &RankTrace, options: &RooflineOptions) -> (Option<DeviceSpec>, String) {
    if let Some(d) = &options.device {
        return (Some(d.clone()), "--device-spec".to_owned());
    }
    for d in &trace.devices {
        let spec = DeviceSpec::detect(
            d.name.as_deref(),
            d.num_sms,
            d.memory_bytes,
            d.profile.as_deref(),
            d.lnc,
        );
        if let Some(spec) = spec {
            let label = d.name.clone().or(d.profile.clone()).unwrap_or_default();
            return (
                Some(spec.with_matrix_peaks_tflops(&d.peak_tflops)),
                format!("deviceProperties: {label}"),
            );
        }
    }
    let names: Vec<&str> = trace
        .devices
        .iter()
        .filter_map(|d| d.name.as_deref())
        .collect();
    let why = if names.is_empty() {
        "no deviceProperties; name one with --device-spec".to_owned()
    } else {
        format!(
            "deviceProperties name {} is not in the device table; name one with --device-spec",
            names.join(", ")
        )
    };
    (None, why)
}

/// The key of a row: name and the four `record_shapes` arrays (interned ids).
type ArgsKey = [NameId; 5];

/// One op's model, cached per arguments.
enum Cached {
    Cost(Box<OpCost>),
    No(String),
}

/// The roofline table of one rank.
pub fn roofline_table(
    trace: &RankTrace,
    options: &RooflineOptions,
) -> Result<RankRoofline, AnalysisError> {
    let host = trace
        .host_ops
        .as_ref()
        .ok_or_else(|| AnalysisError::NotApplicable {
            analysis: "roofline",
            reason: format!(
                "rank {}: the traces were loaded without host operators",
                trace.rank
            ),
        })?;
    let (device, device_source) = device_of(trace, options);
    let tree = attribute(trace, host);
    let empty = host.names.lookup("").unwrap_or(NameId::MAX);
    // The shape arrays are in operator order (`HostOps::shape_args`): found by binary
    // search for the few operators the table looks at, rather than a map of them all
    // (most of the table's cost on a large trace). A map if the order ever breaks.
    let sorted = host.shape_args.is_sorted_by_key(|s| s.op);
    let shape_map: FastMap<u32, [NameId; 3]> = if sorted {
        FastMap::default()
    } else {
        host.shape_args
            .iter()
            .map(|s| (s.op, [s.input_types, s.input_strides, s.concrete_inputs]))
            .collect()
    };
    let shape_of = |op: u32| -> Option<[NameId; 3]> {
        if sorted {
            let i = host.shape_args.binary_search_by_key(&op, |s| s.op).ok()?;
            let s = &host.shape_args[i];
            Some([s.input_types, s.input_strides, s.concrete_inputs])
        } else {
            shape_map.get(&op).copied()
        }
    };
    let key_of = |op: u32| -> ArgsKey {
        let o = &host.operators[op as usize];
        let [t, s, c] = shape_of(op).unwrap_or([empty; 3]);
        [o.name, o.input_dims, t, s, c]
    };
    let text = |id: NameId| {
        if id == NameId::MAX {
            ""
        } else {
            host.names.get(id)
        }
    };
    let mut models: FastMap<ArgsKey, Cached> = FastMap::default();
    let mut model_of = |op: u32| -> Result<(), String> {
        let key = key_of(op);
        let cached = models.entry(key).or_insert_with(|| {
            let name = text(key[0]);
            match OpArgs::parse(text(key[1]), text(key[2]), text(key[3]), text(key[4])) {
                Err(e) => Cached::No(format!("its arguments do not parse: {e}")),
                Ok(args) => match perf_model::model(name, &args) {
                    Model::Cost(cost) => Cached::Cost(Box::new(cost)),
                    Model::NotModeled { reason, .. } => Cached::No(reason),
                    Model::Unknown => Cached::No(format!("no model for `{name}`")),
                },
            }
        });
        match cached {
            Cached::Cost(_) => Ok(()),
            Cached::No(reason) => Err(reason.clone()),
        }
    };
    let mut category_of_name: FastMap<NameId, Category> = FastMap::default();
    let mut category = |op: u32| -> Category {
        let name = host.operators[op as usize].name;
        *category_of_name
            .entry(name)
            .or_insert_with(|| perf_model::category_of(host.names.get(name)))
    };

    // Per launching operator: its category's time, and the operator that carries it.
    let mut categories: FastMap<Category, (u64, i64)> = FastMap::default();
    let mut uncovered: FastMap<NameId, (Category, u64, i64, String)> = FastMap::default();
    let mut carried: FastMap<u32, Vec<u32>> = FastMap::default();
    let mut nested: crate::model::FastSet<u32> = crate::model::FastSet::default();
    let mut modeled: Vec<u32> = Vec::new();
    // Compiled graphs' kernels that state their passes' costs are rows of their own
    // ([`graphs`]), whatever launched them.
    let graph_of: FastMap<u32, &crate::model::GraphPasses> = trace
        .graph_passes
        .iter()
        .filter(|g| g.costs.is_some())
        .map(|g| (g.row as u32, g))
        .collect();
    let mut graph_calls: FastMap<graphs::GraphKey, Vec<(u32, &crate::model::GraphPasses)>> =
        FastMap::default();
    let mut leaves: Vec<(&u32, &Vec<u32>)> = tree.direct.iter().collect();
    leaves.sort_unstable_by_key(|(op, _)| **op);
    let mut own_rows: Vec<u32> = Vec::new();
    // With `options.row_models`: (row, its launcher's category, its outermost modeled
    // call or NONE).
    let mut row_owners: Vec<(u32, Category, u32)> = Vec::new();
    for (&leaf, all_rows) in leaves {
        let leaf_ns = union_ns(trace, all_rows.iter().copied());
        let leaf_category = category(leaf);
        if options.row_models {
            row_owners.extend(all_rows.iter().map(|&r| (r, leaf_category, NONE)));
        }
        let entry = categories.entry(leaf_category).or_default();
        entry.0 += 1;
        entry.1 += leaf_ns;
        let rows: &Vec<u32> = if graph_of.is_empty() {
            all_rows
        } else {
            own_rows.clear();
            for &r in all_rows {
                match graph_of.get(&r) {
                    Some(&passes) => {
                        let row = &trace.rows[r as usize];
                        graph_calls
                            .entry((row.name, row.flops, row.bytes))
                            .or_default()
                            .push((r, passes));
                    }
                    None => own_rows.push(r),
                }
            }
            if own_rows.is_empty() {
                continue;
            }
            &own_rows
        };
        let leaf_ns = if rows.len() == all_rows.len() {
            leaf_ns
        } else {
            union_ns(trace, rows.iter().copied())
        };
        modeled.clear();
        let mut first_reason: Option<String> = None;
        let mut cur = leaf;
        while cur != NONE {
            let name = host.names.get(host.operators[cur as usize].name);
            if category(cur) != Category::Other && (cur == leaf || !perf_model::is_wrapper(name)) {
                match model_of(cur) {
                    Ok(()) => modeled.push(cur),
                    Err(reason) => {
                        first_reason.get_or_insert(reason);
                    }
                }
            }
            cur = tree.parent[cur as usize];
        }
        if let Some((&outermost, inner)) = modeled.split_last() {
            for &op in &modeled {
                carried.entry(op).or_default().extend(rows.iter().copied());
            }
            nested.extend(inner.iter().copied());
            if options.row_models {
                // This leaf's rows are the last pushed; a compiled graph's among them
                // (not in `rows`) stay without a call.
                let all_own = rows.len() == all_rows.len();
                for owner in row_owners.iter_mut().rev().take(all_rows.len()) {
                    if all_own || rows.contains(&owner.0) {
                        owner.2 = outermost;
                    }
                }
            }
        } else {
            let name = host.operators[leaf as usize].name;
            let reason =
                first_reason.unwrap_or_else(|| format!("no model for `{}`", host.names.get(name)));
            let e = uncovered
                .entry(name)
                .or_insert_with(|| (leaf_category, 0, 0, reason));
            e.1 += 1;
            e.2 += leaf_ns;
        }
    }

    // Rows: the carrying calls grouped by arguments.
    struct Group {
        /// Per call: kernel time (µs), kernels, whether inside another modeled call.
        calls: Vec<(f64, Vec<u32>, bool)>,
    }
    let mut groups: FastMap<ArgsKey, Group> = FastMap::default();
    let mut carriers: Vec<(&u32, &Vec<u32>)> = carried.iter().collect();
    carriers.sort_unstable_by_key(|(op, _)| **op);
    for (&op, rows) in carriers {
        let ns = union_ns(trace, rows.iter().copied());
        groups
            .entry(key_of(op))
            .or_insert_with(|| Group { calls: Vec::new() })
            .calls
            .push((ns as f64 / 1e3, rows.clone(), nested.contains(&op)));
    }
    let mut ops = Vec::with_capacity(groups.len());
    let mut modeled_ns = 0.0;
    for (key, group) in groups {
        let Some(Cached::Cost(cost)) = models.get(&key) else {
            continue;
        };
        let us: Vec<f64> = group.calls.iter().map(|c| c.0).collect();
        let total_us: f64 = us.iter().sum();
        let (top_calls, top_us) = group
            .calls
            .iter()
            .filter(|c| !c.2)
            .fold((0u64, 0.0), |(n, t), c| (n + 1, t + c.0));
        modeled_ns += top_us * 1e3;
        let per_call = |f: &dyn Fn(f64) -> f64| {
            let mut v: Vec<f64> = us.iter().filter(|&&t| t > 0.0).map(|&t| f(t)).collect();
            Spread::of(&mut v)
        };
        let tflops = per_call(&|t| cost.flops / (t * 1e-6) / 1e12);
        let tbps = per_call(&|t| cost.bytes / (t * 1e-6) / 1e12);
        let time = Spread::of(&mut us.clone());
        let line = device.as_ref().map(|d| perf_model::roofline(cost, d));
        let roofline_us = line.as_ref().map(|l| l.time_s * 1e6);
        let win_us = roofline_us.map_or(0.0, |r| (top_us - r * top_calls as f64).max(0.0));
        let kernels = kernel_stats(trace, group.calls.iter().flat_map(|c| c.1.iter().copied()));
        let engines = engines::engine_split(
            trace,
            group.calls.iter().flat_map(|c| c.1.iter().copied()),
            us.len(),
            total_us,
            line.as_ref()
                .filter(|l| l.peak.is_some() || l.bound == Bound::Memory)
                .map(|l| (l.bound, cost.compute.unit)),
        );
        let device_flops = group
            .calls
            .iter()
            .flat_map(|c| c.1.iter())
            .map(|&r| trace.rows[r as usize].flops)
            .try_fold(0.0, |sum, f| (f >= 0).then_some(sum + f as f64))
            .map(|sum| sum / us.len() as f64);
        ops.push(RooflineOp {
            name: text(key[0]).to_owned(),
            category: cost.category,
            input_dims: text(key[1]).to_owned(),
            input_types: text(key[2]).to_owned(),
            input_strides: text(key[3]).to_owned(),
            concrete_inputs: text(key[4]).to_owned(),
            params: cost.params.clone(),
            compute_spec: cost.compute.label(),
            count: us.len() as u64,
            nested_calls: us.len() as u64 - top_calls,
            kernel_time_us: total_us,
            unnested_kernel_time_us: top_us,
            kernel_time_per_call_us: time,
            gflops: cost.flops / 1e9,
            data_moved_bytes: cost.bytes,
            flops_per_byte: cost.flops_per_byte(),
            tflops_per_sec: tflops,
            tb_per_sec: tbps,
            roofline_time_us: roofline_us,
            roofline_pct: roofline_us
                .filter(|_| time.mean > 0.0)
                .map(|r| r / time.mean * 100.0),
            bound: line.as_ref().map(|l| l.bound),
            peak: line
                .and_then(|l| l.peak)
                .map(|p| (p.spec, p.flops_per_sec / 1e12)),
            device_flops_per_call: device_flops,
            win_us,
            engines,
            kernels,
            passes: None,
        });
    }
    for graph in graphs::graph_rows(trace, graph_calls, device.as_ref()) {
        modeled_ns += graph.kernel_time_us * 1e3;
        ops.push(graph);
    }
    ops.sort_by(|a, b| {
        b.win_us
            .total_cmp(&a.win_us)
            .then(b.kernel_time_us.total_cmp(&a.kernel_time_us))
            .then_with(|| (&a.name, &a.input_dims).cmp(&(&b.name, &b.input_dims)))
    });
    let mut uncovered: Vec<UncoveredOp> = uncovered
        .into_iter()
        .map(|(name, (category, count, ns, reason))| UncoveredOp {
            name: host.names.get(name).to_owned(),
            category,
            count,
            kernel_time_us: ns as f64 / 1e3,
            reason,
        })
        .collect();
    uncovered.sort_by(|a, b| {
        b.kernel_time_us
            .total_cmp(&a.kernel_time_us)
            .then_with(|| a.name.cmp(&b.name))
    });
    let mut categories: Vec<CategoryTime> = categories
        .into_iter()
        .map(|(category, (count, ns))| CategoryTime {
            category,
            count,
            kernel_time_us: ns as f64 / 1e3,
        })
        .collect();
    categories.sort_by(|a, b| {
        b.kernel_time_us
            .total_cmp(&a.kernel_time_us)
            .then(a.category.cmp(&b.category))
    });
    let unattributed = Unattributed {
        count: tree.unattributed.len() as u64,
        kernel_time_us: tree
            .unattributed
            .iter()
            .map(|&r| trace.rows[r as usize].dur_ns as f64 / 1e3)
            .sum(),
    };
    let row_models = if options.row_models {
        row_owners.extend(
            tree.unattributed
                .iter()
                .map(|&r| (r, Category::Other, NONE)),
        );
        let mut calls: FastMap<u32, Option<rows::CallModel>> = FastMap::default();
        row_owners
            .iter()
            .map(|&(row, category, op)| {
                let call = (op != NONE)
                    .then(|| {
                        calls
                            .entry(op)
                            .or_insert_with(|| match models.get(&key_of(op)) {
                                Some(Cached::Cost(cost)) => Some(rows::CallModel {
                                    cost: std::sync::Arc::new((**cost).clone()),
                                    kernel_time_us: carried.get(&op).map_or(0.0, |rows| {
                                        union_ns(trace, rows.iter().copied()) as f64 / 1e3
                                    }),
                                }),
                                _ => None,
                            })
                            .clone()
                    })
                    .flatten();
                rows::RowModel {
                    row,
                    category,
                    call,
                }
            })
            .collect()
    } else {
        Vec::new()
    };
    Ok(RankRoofline {
        rank: trace.rank,
        device_spec: device.clone(),
        row_models,
        device: device.map(|d| d.name),
        device_source,
        kernel_time_us: categories.iter().map(|c| c.kernel_time_us).sum(),
        modeled_kernel_time_us: modeled_ns / 1e3,
        ops,
        uncovered,
        unattributed,
        categories,
    })
}

/// The union of rows' intervals, ns.
fn union_ns(trace: &RankTrace, rows: impl Iterator<Item = u32>) -> i64 {
    let spans: Vec<(i64, i64)> = rows
        .map(|r| {
            let row = &trace.rows[r as usize];
            (row.ts_rel_ns, row.ts_rel_ns + row.dur_ns.max(0))
        })
        .collect();
    crate::stats::union_length(spans)
}

fn kernel_stats(trace: &RankTrace, rows: impl Iterator<Item = u32>) -> Vec<KernelStats> {
    let mut by_name: FastMap<NameId, Vec<f64>> = FastMap::default();
    for r in rows {
        let row = &trace.rows[r as usize];
        by_name
            .entry(row.name)
            .or_default()
            .push(row.dur_ns as f64 / 1e3);
    }
    let mut out: Vec<KernelStats> = by_name
        .into_iter()
        .map(|(name, mut durs)| KernelStats {
            name: trace.names.get(name).to_owned(),
            count: durs.len() as u64,
            total_us: durs.iter().sum(),
            dur_us: Spread::of(&mut durs),
        })
        .collect();
    out.sort_by(|a, b| {
        b.total_us
            .total_cmp(&a.total_us)
            .then_with(|| a.name.cmp(&b.name))
    });
    out
}
