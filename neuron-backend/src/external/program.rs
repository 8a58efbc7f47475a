//! A compiled graph as one device program (`torch.compile(backend="neuron")`).
//!
//! The caller (the PyTorch extension's Dynamo backend) passes every node of an ATen graph
//! in execution order — its ATen name and its tensors as for [`describe`], plus an id
//! per tensor that says which node produced it (a tensor read before any node wrote it
//! is an input of the graph) — and the ids of the graph's outputs. [`ExternalProgram::
//! build`] lowers every node with the same lowerings as eager ([`describe`]), then
//! schedules them as a compiler would:
//!
//! - **Elementwise chains are fused into their producer's pass.** A node of the table's
//!   elementwise class whose tiles match the last row pass of the group before it (same
//!   rows and columns) and that reads a tensor the group produced joins that pass: its
//!   compute stages run on the tiles already in SBUF (the intermediate is not loaded
//!   again), and an intermediate nothing outside the group reads and that is no output
//!   of the graph is not stored to HBM. The pass is refitted to SBUF with its new loads
//!   and stores ([`RowPlan::fit`]: fewer buffers, or chunks, when they no longer fit),
//!   so SBUF capacity is respected. What fusion saved is counted
//!   ([`ProgramStats::hbm_bytes_saved`]).
//! - **Groups start when their inputs are ready**, not after everything before them: a
//!   group that reads nothing an earlier group wrote starts at the kernel's start, else
//!   at the end of the last group it reads from, so its loads run on the DMA engines
//!   while earlier groups compute (engines still serve instructions in issue order). A
//!   group with an in-place node (a name ending in `_`) waits for every earlier group.
//! - **Elementwise chains after a matmul are fused into its PSUM evacuation** (epilogue
//!   fusion). A matmul keeps its tiled TensorE lowering ([`crate::timing::lower`]); an
//!   elementwise node over as many elements as the matmul's output, reading what the
//!   group produced, joins the matmul's group: after each output tile is evacuated from
//!   PSUM to SBUF its stages run on that tile, its other streamed operands are loaded
//!   per tile (broadcast ones, a scalar or a bias row, once per core before the first
//!   tile), and at the end only what the graph still
//!   needs is stored ([`crate::timing::lower::Epilogue`]) — the matmul's own result is
//!   neither stored nor reloaded when only fused nodes read it.
//! - **Unknown ops fall back to eager.** A node the table does not know (costed by the
//!   default rule) ends the program segment before it and is launched as a kernel of
//!   its own ([`SegmentKind::EagerFallback`]), then the program goes on in a new
//!   segment; a graph without unknown ops is one kernel.
//!
//! Each group's modeled span is kept per launch ([`ExternalProgram::launch`] returns
//! them), so a profile can attribute a graph kernel's device time to the nodes it came
//! from.

use std::collections::{HashMap, HashSet};

use crate::timing::lower::{Epilogue, RowPlan};
use crate::timing::KernelRun;
use crate::{BackendError, Device, KernelSpan};

use super::describe::{is_elementwise, Piece};
use super::{describe, Description, ExternalLowering, ExternalOp};

/// One node of a graph: the op and an id for each of its tensors (`input_ids[i]` for
/// `op.inputs[i]`, `output_ids[i]` for `op.outputs[i]`).
#[derive(Debug, Clone, Copy)]
pub struct ProgramNode<'a> {
    /// The op, as for [`describe`].
    pub op: ExternalOp<'a>,
    /// Ids of its inputs.
    pub input_ids: &'a [u64],
    /// Ids of its outputs.
    pub output_ids: &'a [u64],
}

/// What kind of kernel a segment is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentKind {
    /// A scheduled, fused run of nodes.
    Program,
    /// One node the lowerings do not know, launched as in eager (default rule).
    EagerFallback {
        /// Its node index.
        node: usize,
    },
}

/// One group of nodes run as one pass (one node, or a producer and the elementwise
/// nodes fused into it).
#[derive(Debug, Clone)]
struct Group {
    nodes: Vec<usize>,
    lowering: ExternalLowering,
    /// Groups whose results it reads (indices into the segment's groups).
    after: Vec<usize>,
    /// Waits for every earlier group (it writes in place).
    barrier: bool,
    /// Elementwise nodes fused into its matmul's evacuation.
    epilogue: Option<Epilogue>,
    /// FLOPs of its nodes.
    flops: u64,
    /// HBM bytes it moves (after fusion).
    bytes: u64,
}

/// What one pass (group) of a program costs, for the roofline of its share of the graph
/// kernel (`analysis::analyses::roofline`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupCost {
    /// FLOPs of its nodes.
    pub flops: u64,
    /// HBM bytes it moves (after fusion).
    pub bytes: u64,
    /// Whether a matmul runs it on TensorE (the elementwise nodes fused into its
    /// evacuation count with it); else its work is on the vector engines.
    pub matrix: bool,
}

/// One kernel of a program.
#[derive(Debug, Clone)]
pub struct ProgramSegment {
    /// Fused program or eager fallback.
    pub kind: SegmentKind,
    groups: Vec<Group>,
    /// FLOPs of its nodes.
    pub flops: u64,
    /// HBM bytes it moves (after fusion).
    pub bytes: u64,
}

impl ProgramSegment {
    /// Node indices of each group, in issue order.
    pub fn groups(&self) -> impl Iterator<Item = &[usize]> {
        self.groups.iter().map(|g| g.nodes.as_slice())
    }

    /// What each group costs, in issue order.
    pub fn group_costs(&self) -> impl Iterator<Item = GroupCost> + '_ {
        self.groups.iter().map(|g| GroupCost {
            flops: g.flops,
            bytes: g.bytes,
            matrix: g
                .lowering
                .pieces
                .iter()
                .any(|p| matches!(p, Piece::Matmul(_))),
        })
    }

    fn lower(&self, run: &mut KernelRun<'_>) -> Vec<(u64, u64)> {
        let kernel_start = run.start_ns;
        let mut spans: Vec<(u64, u64)> = Vec::with_capacity(self.groups.len());
        let mut all_end = kernel_start;
        for group in &self.groups {
            let start = if group.barrier {
                all_end
            } else {
                group
                    .after
                    .iter()
                    .map(|&g| spans[g].1)
                    .fold(kernel_start, u64::max)
            };
            let end = run.place_from(start, |run| {
                for (i, piece) in group.lowering.pieces.iter().enumerate() {
                    // Pieces of one node run one after another.
                    if i > 0 {
                        run.begin_next_stage();
                    }
                    match piece {
                        Piece::Rows(plan) => plan.lower(run),
                        Piece::Matmul(plan) => plan.lower_with(run, group.epilogue.as_ref()),
                    }
                }
            });
            all_end = all_end.max(end);
            spans.push((start, end));
        }
        spans
    }
}

/// What scheduling did, for the kernel's args and the profile.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProgramStats {
    /// Nodes in the graph.
    pub nodes: usize,
    /// Nodes fused into their producer's pass.
    pub fused_nodes: usize,
    /// Groups (passes) after fusion.
    pub groups: usize,
    /// HBM traffic fusion removed: intermediates neither stored nor reloaded.
    pub hbm_bytes_saved: u64,
    /// Nodes launched as eager kernels (unknown to the lowerings), by ATen name.
    pub eager_fallbacks: Vec<String>,
}

/// One node as the program describes it.
#[derive(Debug, Clone)]
pub struct ProgramNodeInfo {
    /// ATen name.
    pub name: String,
    /// Its lowering in words (as an eager kernel's `lowering` arg).
    pub lowering: String,
    /// The kernel name its eager launch would have (`addmm_f32`): the dtype tag.
    pub dtype_tag: &'static str,
    /// FLOPs.
    pub flops: u64,
    /// Bytes an eager launch of it would move.
    pub bytes: u64,
}

/// A graph lowered and scheduled into device kernels (see the module docs).
#[derive(Debug, Clone)]
pub struct ExternalProgram {
    /// The kernels of one call, in order (one unless there are eager fallbacks).
    pub segments: Vec<ProgramSegment>,
    /// Every node, in graph order.
    pub nodes: Vec<ProgramNodeInfo>,
    /// What scheduling did.
    pub stats: ProgramStats,
}

/// A group being built, with the ids it produced.
struct OpenGroup {
    group: Group,
    produced: HashSet<u64>,
    /// Rows pass the elementwise nodes fuse into, when the group ends in one:
    /// `(rows, cols)`.
    tiles: Option<(u64, u64)>,
    /// `(node, output index)` of every output of the group's nodes.
    outputs: Vec<(usize, usize)>,
    bytes: u64,
    flops: u64,
    /// Elements of the fused nodes' tiles (set by the first fusion).
    elements: Option<u64>,
    /// A group of one matmul (its lowering one matmul piece): its output's elements, what
    /// an elementwise node must cover to fuse into its evacuation.
    matmul_elements: Option<u64>,
}

impl OpenGroup {
    /// Node `i` (covering `elements`) fused into the group, `saved` bytes of HBM traffic
    /// not moved: its counts, ids and outputs join the group's.
    fn join(
        &mut self,
        node: &ProgramNode<'_>,
        d: &Description,
        i: usize,
        elements: u64,
        saved: u64,
        stats: &mut ProgramStats,
    ) {
        stats.hbm_bytes_saved += saved;
        stats.fused_nodes += 1;
        self.bytes += d.bytes.saturating_sub(saved);
        self.flops += d.flops;
        self.produced.extend(node.output_ids.iter().copied());
        self.outputs
            .extend((0..node.output_ids.len()).map(|o| (i, o)));
        self.group.nodes.push(i);
        self.elements = Some(elements);
    }
}

fn last_rows(lowering: &mut ExternalLowering) -> Option<&mut RowPlan> {
    match lowering.pieces.last_mut() {
        Some(Piece::Rows(plan)) => Some(plan),
        _ => None,
    }
}

fn writes_in_place(name: &str) -> bool {
    let name = name.strip_prefix("aten::").unwrap_or(name);
    let base = name.split('.').next().unwrap_or(name);
    base.ends_with('_') && !base.starts_with('_') || base == "_copy_from"
}

impl ExternalProgram {
    /// Lowers and schedules `nodes` (in execution order); `outputs` are the ids of the
    /// graph's results (they are stored even when fused).
    pub fn build(nodes: &[ProgramNode<'_>], outputs: &[u64]) -> ExternalProgram {
        let descriptions: Vec<Description> = nodes.iter().map(|n| describe(&n.op)).collect();
        let graph_outputs: HashSet<u64> = outputs.iter().copied().collect();
        // Who reads each id.
        let mut readers: HashMap<u64, Vec<usize>> = HashMap::new();
        for (i, node) in nodes.iter().enumerate() {
            for &id in node.input_ids {
                readers.entry(id).or_default().push(i);
            }
        }
        let mut stats = ProgramStats {
            nodes: nodes.len(),
            ..ProgramStats::default()
        };
        let mut segments = Vec::new();
        let mut groups: Vec<Group> = Vec::new();
        // Which group of the current segment produced each id.
        let mut producer: HashMap<u64, usize> = HashMap::new();
        let mut open: Option<OpenGroup> = None;
        let mut seg_flops = 0u64;
        let mut seg_bytes = 0u64;

        let close = |open: &mut Option<OpenGroup>,
                     groups: &mut Vec<Group>,
                     producer: &mut HashMap<u64, usize>,
                     stats: &mut ProgramStats,
                     seg_bytes: &mut u64,
                     seg_flops: &mut u64| {
            let Some(mut g) = open.take() else { return };
            if g.group.nodes.len() > 1 {
                // Intermediates nothing outside the group reads, and no graph output,
                // are not stored: take their bytes off the pass's store.
                let members: HashSet<usize> = g.group.nodes.iter().copied().collect();
                let mut saved_per_row = 0u64;
                let cols = g.tiles.map_or(0, |(_, c)| c);
                let elements = g.elements.unwrap_or(0);
                for &(n, o) in &g.outputs {
                    let id = nodes[n].output_ids[o];
                    let tensor = &nodes[n].op.outputs[o];
                    if tensor.numel() != elements {
                        continue;
                    }
                    let needed = graph_outputs.contains(&id)
                        || readers
                            .get(&id)
                            .is_some_and(|r| r.iter().any(|n| !members.contains(n)));
                    if !needed {
                        saved_per_row += cols * tensor.dtype.size_bytes();
                    }
                }
                if let Some(plan) = last_rows(&mut g.group.lowering) {
                    let saved = saved_per_row.min(plan.store_bytes_per_row);
                    plan.store_bytes_per_row -= saved;
                    stats.hbm_bytes_saved += saved * plan.rows;
                    g.bytes = g.bytes.saturating_sub(saved * plan.rows);
                } else if let Some(epilogue) = &mut g.group.epilogue {
                    // The matmul's result and the fused nodes': only those the graph
                    // still needs are stored.
                    let needed: u64 = g
                        .outputs
                        .iter()
                        .filter(|&&(n, o)| {
                            let id = nodes[n].output_ids[o];
                            nodes[n].op.outputs[o].numel() == elements
                                && (graph_outputs.contains(&id)
                                    || readers
                                        .get(&id)
                                        .is_some_and(|r| r.iter().any(|n| !members.contains(n))))
                        })
                        .map(|&(n, o)| nodes[n].op.outputs[o].dtype.size_bytes())
                        .sum();
                    let saved = epilogue.store_per_elem.saturating_sub(needed);
                    epilogue.store_per_elem -= saved;
                    stats.hbm_bytes_saved += saved * elements;
                    g.bytes = g.bytes.saturating_sub(saved * elements);
                }
            }
            let index = groups.len();
            for id in g.produced {
                producer.insert(id, index);
            }
            *seg_bytes += g.bytes;
            *seg_flops += g.flops;
            g.group.flops = g.flops;
            g.group.bytes = g.bytes;
            groups.push(g.group);
        };

        for (i, (node, d)) in nodes.iter().zip(&descriptions).enumerate() {
            if d.costed_by_default {
                close(
                    &mut open,
                    &mut groups,
                    &mut producer,
                    &mut stats,
                    &mut seg_bytes,
                    &mut seg_flops,
                );
                if !groups.is_empty() {
                    stats.groups += groups.len();
                    segments.push(ProgramSegment {
                        kind: SegmentKind::Program,
                        groups: std::mem::take(&mut groups),
                        flops: std::mem::take(&mut seg_flops),
                        bytes: std::mem::take(&mut seg_bytes),
                    });
                }
                producer.clear();
                stats.eager_fallbacks.push(node.op.name.to_owned());
                segments.push(ProgramSegment {
                    kind: SegmentKind::EagerFallback { node: i },
                    groups: vec![Group {
                        nodes: vec![i],
                        lowering: d.lowering_plan.clone(),
                        after: Vec::new(),
                        barrier: true,
                        epilogue: None,
                        flops: d.flops,
                        bytes: d.bytes,
                    }],
                    flops: d.flops,
                    bytes: d.bytes,
                });
                continue;
            }
            // Fuse into the open group?
            let fused = open
                .as_mut()
                .is_some_and(|g| try_fuse(g, node, d, i, &mut stats));
            if fused {
                continue;
            }
            close(
                &mut open,
                &mut groups,
                &mut producer,
                &mut stats,
                &mut seg_bytes,
                &mut seg_flops,
            );
            let mut after: Vec<usize> = node
                .input_ids
                .iter()
                .filter_map(|id| producer.get(id).copied())
                .collect();
            after.sort_unstable();
            after.dedup();
            let mut lowering = d.lowering_plan.clone();
            let tiles = last_rows(&mut lowering).map(|p| (p.rows, p.cols));
            let matmul_elements = match lowering.pieces.as_slice() {
                [Piece::Matmul(_)] if node.op.outputs.len() == 1 => {
                    Some(node.op.outputs[0].numel())
                }
                _ => None,
            };
            open = Some(OpenGroup {
                group: Group {
                    nodes: vec![i],
                    lowering,
                    after,
                    barrier: writes_in_place(node.op.name),
                    epilogue: None,
                    flops: 0,
                    bytes: 0,
                },
                produced: node.output_ids.iter().copied().collect(),
                tiles,
                outputs: (0..node.output_ids.len()).map(|o| (i, o)).collect(),
                bytes: d.bytes,
                flops: d.flops,
                elements: None,
                matmul_elements,
            });
        }
        close(
            &mut open,
            &mut groups,
            &mut producer,
            &mut stats,
            &mut seg_bytes,
            &mut seg_flops,
        );
        if !groups.is_empty() || segments.is_empty() {
            stats.groups += groups.len();
            segments.push(ProgramSegment {
                kind: SegmentKind::Program,
                groups,
                flops: seg_flops,
                bytes: seg_bytes,
            });
        }
        let infos = nodes
            .iter()
            .zip(&descriptions)
            .map(|(n, d)| ProgramNodeInfo {
                name: n.op.name.to_owned(),
                lowering: d.lowering.clone(),
                dtype_tag: d.dtype.tag(),
                flops: d.flops,
                bytes: d.bytes,
            })
            .collect();
        ExternalProgram {
            segments,
            nodes: infos,
            stats,
        }
    }
}

/// Fuses elementwise node `i` into the open group when its tiles match the group's last
/// row pass and it reads something the group produced; true when it did.
fn try_fuse(
    g: &mut OpenGroup,
    node: &ProgramNode<'_>,
    d: &Description,
    i: usize,
    stats: &mut ProgramStats,
) -> bool {
    let Some((rows, cols)) = g.tiles else {
        return try_fuse_epilogue(g, node, d, i, stats);
    };
    let Some(own) = fusable_rows(node, d) else {
        return false;
    };
    if (own.rows, own.cols) != (rows, cols) {
        return false;
    }
    let (elements, streamed) = streamed_inputs(node);
    if g.elements.is_some_and(|e| e != elements) {
        return false;
    }
    if streamed.len() != own.load_bytes_per_row.len()
        || !streamed
            .iter()
            .any(|&k| g.produced.contains(&node.input_ids[k]))
    {
        return false;
    }
    let Some(plan) = last_rows(&mut g.group.lowering) else {
        return false;
    };
    let mut saved = 0u64;
    for (&k, &load) in streamed.iter().zip(&own.load_bytes_per_row) {
        if g.produced.contains(&node.input_ids[k]) {
            saved += load * rows;
        } else {
            plan.load_bytes_per_row.push(load);
        }
    }
    plan.const_bytes += own.const_bytes;
    plan.stages.extend(own.stages.iter().copied());
    plan.store_bytes_per_row += own.store_bytes_per_row;
    plan.sixteen_bit &= own.sixteen_bit;
    g.join(node, d, i, elements, saved, stats);
    true
}

/// The one row pass of an elementwise node that may fuse into an earlier group: not in
/// place, no tensor lists, one piece.
fn fusable_rows<'d>(node: &ProgramNode<'_>, d: &'d Description) -> Option<&'d RowPlan> {
    let plain = is_elementwise(node.op.name)
        && !writes_in_place(node.op.name)
        && !node
            .op
            .inputs
            .iter()
            .chain(node.op.outputs)
            .any(|t| t.list > 0);
    match d.lowering_plan.pieces.as_slice() {
        [Piece::Rows(own)] if plain => Some(own),
        _ => None,
    }
}

/// The elements an elementwise node covers (`describe`'s rule: the larger of the
/// output's and the largest operand's), and which inputs are streamed, one load each,
/// in order (those of that size).
fn streamed_inputs(node: &ProgramNode<'_>) -> (u64, Vec<usize>) {
    let elements = node
        .op
        .inputs
        .iter()
        .chain(node.op.outputs.first())
        .map(|t| t.numel())
        .max()
        .unwrap_or(0);
    let streamed = (0..node.op.inputs.len())
        .filter(|&k| node.op.inputs[k].numel() == elements)
        .collect();
    (elements, streamed)
}

/// Fuses elementwise node `i` into the evacuation of the open group's matmul (see the
/// module docs); true when it did.
fn try_fuse_epilogue(
    g: &mut OpenGroup,
    node: &ProgramNode<'_>,
    d: &Description,
    i: usize,
    stats: &mut ProgramStats,
) -> bool {
    let Some(matmul_elements) = g.matmul_elements else {
        return false;
    };
    let Some(own) = fusable_rows(node, d) else {
        return false;
    };
    let (elements, streamed) = streamed_inputs(node);
    if elements != matmul_elements
        || own.cols == 0
        || streamed.len() != own.load_bytes_per_row.len()
        || !streamed
            .iter()
            .any(|&k| g.produced.contains(&node.input_ids[k]))
    {
        return false;
    }
    let Some(Piece::Matmul(matmul)) = g.group.lowering.pieces.first() else {
        return false;
    };
    let out_elem_bytes = matmul.out_elem_bytes;
    let epilogue = g.group.epilogue.get_or_insert_with(|| Epilogue {
        stages: Vec::new(),
        sixteen_bit: true,
        loads_per_elem: Vec::new(),
        const_bytes: 0,
        store_per_elem: out_elem_bytes,
    });
    epilogue.const_bytes += own.const_bytes;
    let mut saved = 0u64;
    for (&k, &load) in streamed.iter().zip(&own.load_bytes_per_row) {
        if g.produced.contains(&node.input_ids[k]) {
            saved += load * own.rows;
        } else {
            epilogue.loads_per_elem.push(load / own.cols);
        }
    }
    epilogue.stages.extend(own.stages.iter().copied());
    epilogue.store_per_elem += own.store_bytes_per_row / own.cols;
    epilogue.sixteen_bit &= own.sixteen_bit;
    g.join(node, d, i, elements, saved, stats);
    true
}

impl Device {
    /// Launches segment `segment` of `program` on execution queue `queue` as one kernel
    /// named `name_id` (a runtime call on this thread and a kernel placed by the timing
    /// model, as [`Device::external_launch`]); returns where it was placed and the
    /// modeled span of each of its groups.
    pub fn external_launch_program(
        &self,
        queue: usize,
        program: &ExternalProgram,
        segment: usize,
        name_id: runtime_hooks::NameId,
        corr_id: u64,
    ) -> Result<(KernelSpan, Vec<(u64, u64)>), BackendError> {
        let seg = program
            .segments
            .get(segment)
            .ok_or(BackendError::InvalidArgument {
                op: "external program launch",
                reason: format!(
                    "segment {segment} of a program of {}",
                    program.segments.len()
                ),
            })?;
        let mut spans = Vec::new();
        let span =
            self.external_launch_with(queue, name_id, corr_id, seg.flops, seg.bytes, |run| {
                spans = seg.lower(run);
            })?;
        Ok((span, spans))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::external::{ExternalKernel, ExternalLaunch, ExternalTensor, ScalarType};
    use crate::Runtime;

    const F32: ScalarType = ScalarType(6);

    fn t(sizes: &[i64]) -> ExternalTensor<'_> {
        ExternalTensor {
            dtype: F32,
            sizes,
            strides: &[],
            list: 0,
        }
    }

    /// A matmul, then gelu, a scale and an add of the matmul's result: the chain fuses
    /// into the matmul's evacuation.
    fn chain<'a>(
        x: &'a [ExternalTensor<'a>],
        y: &'a [ExternalTensor<'a>],
        yy: &'a [ExternalTensor<'a>],
    ) -> Vec<ProgramNode<'a>> {
        let op = |name, inputs, outputs| ExternalOp {
            name,
            inputs,
            outputs,
        };
        vec![
            ProgramNode {
                op: op("aten::mm", x, y),
                input_ids: &[1, 2],
                output_ids: &[3],
            },
            ProgramNode {
                op: op("aten::gelu", y, y),
                input_ids: &[3],
                output_ids: &[4],
            },
            ProgramNode {
                op: op("aten::mul.Scalar", y, y),
                input_ids: &[4],
                output_ids: &[5],
            },
            ProgramNode {
                op: op("aten::add.Tensor", yy, y),
                input_ids: &[5, 3],
                output_ids: &[6],
            },
        ]
    }

    #[test]
    fn an_elementwise_chain_fuses_and_the_program_beats_eager() {
        let (a, b, c) = ([1024i64, 1024], [1024i64, 1024], [1024i64, 1024]);
        let x = [t(&a), t(&b)];
        let y = [t(&c)];
        let yy = [t(&c), t(&c)];
        let nodes = chain(&x, &y, &yy);
        let program = ExternalProgram::build(&nodes, &[6]);
        assert_eq!(program.segments.len(), 1);
        let groups: Vec<&[usize]> = program.segments[0].groups().collect();
        assert_eq!(groups, vec![&[0, 1, 2, 3][..]]);
        assert_eq!(program.stats.fused_nodes, 3);
        // The matmul's, gelu's and mul's results are neither stored nor reloaded (the add
        // reads the matmul's result from SBUF too): 3 stores and 4 loads of 4 MiB.
        assert_eq!(program.stats.hbm_bytes_saved, 7 * 1024 * 1024 * 4);

        let runtime = Runtime::trn2();
        let device = runtime.device(0).unwrap();
        let name = runtime_hooks::intern("graph_test_forward");
        let (compiled, spans) = device
            .external_launch_program(0, &program, 0, name, runtime_hooks::next_corr_id())
            .unwrap();
        assert_eq!(spans.len(), 1);
        device.external_synchronize();
        // The same nodes launched one by one, as eager does.
        let first = device
            .external_launch(
                0,
                &ExternalLaunch {
                    name_id: name,
                    corr_id: runtime_hooks::next_corr_id(),
                    flops: 0,
                    bytes: 0,
                    kernel: ExternalKernel::Lowered(describe(&nodes[0].op).lowering_plan),
                },
            )
            .unwrap();
        let mut last = first;
        for node in &nodes[1..] {
            last = device
                .external_launch(
                    0,
                    &ExternalLaunch {
                        name_id: name,
                        corr_id: runtime_hooks::next_corr_id(),
                        flops: 0,
                        bytes: 0,
                        kernel: ExternalKernel::Lowered(describe(&node.op).lowering_plan),
                    },
                )
                .unwrap();
        }
        let eager_ns = last.end_ns - first.start_ns;
        assert!(
            compiled.dur_ns() < eager_ns,
            "compiled {} ns vs eager {eager_ns} ns",
            compiled.dur_ns()
        );
    }

    #[test]
    fn an_epilogue_loads_other_operands_and_stores_what_the_graph_needs() {
        let (a, b, c) = ([256i64, 512], [512i64, 256], [256i64, 256]);
        let x = [t(&a), t(&b)];
        let y = [t(&c)];
        let yy = [t(&c), t(&c)];
        let row = [256i64];
        let biased = [t(&c), t(&row)];
        let op = |name, inputs, outputs| ExternalOp {
            name,
            inputs,
            outputs,
        };
        // mm → relu → add of a graph input (a residual) → add of a broadcast bias row:
        // all fuse, the residual is loaded per tile and the bias row once per core; the
        // relu's result is an output of the graph too, so it is stored.
        let nodes = [
            ProgramNode {
                op: op("aten::mm", &x, &y),
                input_ids: &[1, 2],
                output_ids: &[3],
            },
            ProgramNode {
                op: op("aten::relu", &y, &y),
                input_ids: &[3],
                output_ids: &[4],
            },
            ProgramNode {
                op: op("aten::add.Tensor", &yy, &y),
                input_ids: &[4, 9],
                output_ids: &[5],
            },
            ProgramNode {
                op: op("aten::add.Tensor", &biased, &y),
                input_ids: &[5, 8],
                output_ids: &[6],
            },
        ];
        let program = ExternalProgram::build(&nodes, &[4, 6]);
        let groups: Vec<&[usize]> = program.segments[0].groups().collect();
        assert_eq!(groups, vec![&[0, 1, 2, 3][..]]);
        let epilogue = program.segments[0].groups[0].epilogue.as_ref().unwrap();
        assert_eq!(epilogue.loads_per_elem, vec![4], "the residual, f32");
        assert_eq!(epilogue.const_bytes, 256 * 4, "the bias row");
        // Stored: the relu's result and the last add's (graph outputs); not the
        // matmul's nor the first add's.
        assert_eq!(epilogue.store_per_elem, 8);
        let elements = 256 * 256;
        // Not loaded: relu's input, the adds' first inputs; not stored: the matmul's
        // and the first add's results.
        assert_eq!(program.stats.hbm_bytes_saved, 5 * 4 * elements);
        let runtime = Runtime::trn2();
        let device = runtime.device(0).unwrap();
        let name = runtime_hooks::intern("graph_test_forward");
        let (span, spans) = device
            .external_launch_program(0, &program, 0, name, runtime_hooks::next_corr_id())
            .unwrap();
        assert_eq!(spans.len(), 1);
        assert!(span.end_ns >= spans[0].1 && spans[0].0 >= span.start_ns);
    }

    #[test]
    fn an_unknown_node_is_an_eager_kernel_between_program_parts() {
        let s = [256i64, 256];
        let one = [t(&s)];
        let op = |name| ExternalOp {
            name,
            inputs: &one,
            outputs: &one,
        };
        let nodes = [
            ProgramNode {
                op: op("aten::relu"),
                input_ids: &[1],
                output_ids: &[2],
            },
            ProgramNode {
                op: op("aten::renorm"),
                input_ids: &[2],
                output_ids: &[3],
            },
            ProgramNode {
                op: op("aten::neg"),
                input_ids: &[3],
                output_ids: &[4],
            },
        ];
        let program = ExternalProgram::build(&nodes, &[4]);
        let kinds: Vec<SegmentKind> = program.segments.iter().map(|s| s.kind).collect();
        assert_eq!(
            kinds,
            vec![
                SegmentKind::Program,
                SegmentKind::EagerFallback { node: 1 },
                SegmentKind::Program
            ]
        );
        assert_eq!(program.stats.eager_fallbacks, vec!["aten::renorm"]);
        assert_eq!(program.stats.fused_nodes, 0);
    }
}
