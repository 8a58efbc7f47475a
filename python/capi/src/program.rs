//! Compiled graphs (`torch.compile(backend="neuron")`): a graph's nodes are built once
//! into a device program ([`neuron_backend::ExternalProgram`]: every node through the
//! eager lowerings, elementwise chains fused into their producer's pass, groups started
//! when their inputs are ready), and every call of the graph launches it — one kernel
//! per call, named after the graph, plus one eager kernel per node the lowerings do not
//! know.

use std::ffi::{c_char, CStr};
use std::fmt::Write as _;

use neuron_backend::{ExternalOp, ExternalProgram, ProgramNode, SegmentKind};

use crate::device::{device, span_of, NpcKernelSpan};
use crate::error::{fail, guard, NPC_ERR_ARGUMENT, NPC_OK};
use crate::ops::{kernel_name, note_kernel, tensors, KernelNote, NpcTensor};

/// One node of a graph (the Rust name of `npc_graph_node_t`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NpcGraphNode {
    /// ATen name, `name_len` bytes.
    pub name: *const c_char,
    /// Bytes of `name`.
    pub name_len: usize,
    /// Tensor inputs in schema order (no `out=` arguments).
    pub inputs: *const NpcTensor,
    /// An id per input: equal ids are the same tensor (the node that wrote it last).
    pub input_ids: *const u64,
    /// Count of `inputs` and `input_ids`.
    pub n_inputs: usize,
    /// Tensor results.
    pub outputs: *const NpcTensor,
    /// An id per output.
    pub output_ids: *const u64,
    /// Count of `outputs` and `output_ids`.
    pub n_outputs: usize,
}

/// A built program (opaque to C: `npc_program_t`).
#[derive(Debug)]
pub struct NpcProgram {
    program: ExternalProgram,
}

/// # Safety
///
/// `ptr` must be null with `len == 0` or point to `len` readable values.
unsafe fn slice<'a, T>(ptr: *const T, len: usize) -> &'a [T] {
    if ptr.is_null() || len == 0 {
        &[]
    } else {
        // SAFETY: the caller guarantees `len` values at `ptr`.
        unsafe { std::slice::from_raw_parts(ptr, len) }
    }
}

/// Builds the program of a graph of `n_nodes` nodes (execution order) whose results
/// are the tensors `output_ids`; null on error (see `npc_last_error`). Free it with
/// [`npc_program_free`].
///
/// # Safety
///
/// `nodes` must point to `n_nodes` valid nodes whose names, tensors, ids and arrays are
/// valid for the call; `output_ids` to `n_outputs` values (or be null with 0).
#[no_mangle]
pub unsafe extern "C" fn npc_program_build(
    nodes: *const NpcGraphNode,
    n_nodes: usize,
    output_ids: *const u64,
    n_outputs: usize,
) -> *mut NpcProgram {
    // SAFETY: forwarded from the caller.
    let (raw, outputs) = unsafe { (slice(nodes, n_nodes), slice(output_ids, n_outputs)) };
    let mut names = Vec::with_capacity(raw.len());
    let mut described = Vec::with_capacity(raw.len());
    for (i, node) in raw.iter().enumerate() {
        if node.name.is_null() {
            fail(
                NPC_ERR_ARGUMENT,
                format!("npc_program_build: node {i} has a null name"),
            );
            return std::ptr::null_mut();
        }
        // SAFETY: the caller guarantees `name_len` readable bytes at `name`.
        let bytes = unsafe { slice(node.name.cast::<u8>(), node.name_len) };
        names.push(String::from_utf8_lossy(bytes).into_owned());
        // SAFETY: forwarded from the caller.
        described.push(unsafe {
            (
                tensors(node.inputs, node.n_inputs),
                slice(node.input_ids, node.n_inputs),
                tensors(node.outputs, node.n_outputs),
                slice(node.output_ids, node.n_outputs),
            )
        });
    }
    let program_nodes: Vec<ProgramNode<'_>> = described
        .iter()
        .zip(&names)
        .map(
            |((inputs, input_ids, outputs, output_ids), name)| ProgramNode {
                op: ExternalOp {
                    name,
                    inputs,
                    outputs,
                },
                input_ids,
                output_ids,
            },
        )
        .collect();
    let mut built = None;
    let status = guard(|| {
        built = Some(ExternalProgram::build(&program_nodes, outputs));
        NPC_OK
    });
    match built {
        Some(program) if status == NPC_OK => Box::into_raw(Box::new(NpcProgram { program })),
        _ => std::ptr::null_mut(),
    }
}

/// Frees a program of [`npc_program_build`] (null: nothing).
///
/// # Safety
///
/// `program` must be null or a program of `npc_program_build` not freed before.
#[no_mangle]
pub unsafe extern "C" fn npc_program_free(program: *mut NpcProgram) {
    crate::error::guard_value("npc_program_free", (), || {
        if !program.is_null() {
            // SAFETY: the caller guarantees it came from npc_program_build, once.
            drop(unsafe { Box::from_raw(program) });
        }
    })
}

/// Kernels one call of the program launches (0 for null).
///
/// # Safety
///
/// `program` must be null or a live program.
#[no_mangle]
pub unsafe extern "C" fn npc_program_segments(program: *const NpcProgram) -> usize {
    crate::error::guard_value("npc_program_segments", 0, || {
        // SAFETY: the caller guarantees a live program or null.
        unsafe { program.as_ref() }.map_or(0, |p| p.program.segments.len())
    })
}

fn json_string(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The program as JSON: `{"nodes": [{"name", "lowering", "dtype", "flops", "bytes"}],
/// "segments": [{"kind": "program"|"eager", "node" (eager), "groups": [[node, ...]],
/// "group_costs": [[flops, bytes, "matrix"|"vector"], ...], "flops", "bytes"}],
/// "fused_nodes", "groups", "hbm_bytes_saved", "eager_fallbacks": [name]}`. A node's
/// `dtype` is its eager kernel's dtype tag (`f32`, `bf16`); a group's cost is its nodes'
/// FLOPs, the HBM bytes it moves after fusion, and the units its work runs on.
fn describe_json(program: &ExternalProgram) -> String {
    let mut out = String::from("{\"nodes\":[");
    for (i, node) in program.nodes.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"name\":");
        json_string(&mut out, &node.name);
        out.push_str(",\"lowering\":");
        json_string(&mut out, &node.lowering);
        out.push_str(",\"dtype\":");
        json_string(&mut out, node.dtype_tag);
        let _ = write!(out, ",\"flops\":{},\"bytes\":{}}}", node.flops, node.bytes);
    }
    out.push_str("],\"segments\":[");
    for (s, seg) in program.segments.iter().enumerate() {
        if s > 0 {
            out.push(',');
        }
        match seg.kind {
            SegmentKind::Program => out.push_str("{\"kind\":\"program\""),
            SegmentKind::EagerFallback { node } => {
                let _ = write!(out, "{{\"kind\":\"eager\",\"node\":{node}");
            }
        }
        out.push_str(",\"groups\":[");
        for (g, nodes) in seg.groups().enumerate() {
            if g > 0 {
                out.push(',');
            }
            let list: Vec<String> = nodes.iter().map(usize::to_string).collect();
            let _ = write!(out, "[{}]", list.join(","));
        }
        out.push_str("],\"group_costs\":[");
        for (g, cost) in seg.group_costs().enumerate() {
            if g > 0 {
                out.push(',');
            }
            let unit = if cost.matrix { "matrix" } else { "vector" };
            let _ = write!(out, "[{},{},\"{unit}\"]", cost.flops, cost.bytes);
        }
        let _ = write!(out, "],\"flops\":{},\"bytes\":{}}}", seg.flops, seg.bytes);
    }
    let s = &program.stats;
    let _ = write!(
        out,
        "],\"fused_nodes\":{},\"groups\":{},\"hbm_bytes_saved\":{},\"eager_fallbacks\":[",
        s.fused_nodes, s.groups, s.hbm_bytes_saved
    );
    for (i, name) in s.eager_fallbacks.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        json_string(&mut out, name);
    }
    out.push_str("]}");
    out
}

/// Writes the program's description (JSON, see `describe_json`) NUL-terminated into
/// `buf` (as much as fits); returns its full length (0 for null).
///
/// # Safety
///
/// `program` must be null or a live program; `buf` null with `buf_len == 0` or valid
/// for `buf_len` bytes of writes.
#[no_mangle]
pub unsafe extern "C" fn npc_program_describe(
    program: *const NpcProgram,
    buf: *mut c_char,
    buf_len: usize,
) -> usize {
    crate::error::guard_value("npc_program_describe", 0, || {
        // SAFETY: the caller guarantees a live program or null.
        let Some(program) = (unsafe { program.as_ref() }) else {
            return 0;
        };
        let text = describe_json(&program.program);
        if !buf.is_null() && buf_len > 0 {
            let n = text.len().min(buf_len - 1);
            // SAFETY: the caller guarantees `buf_len` writable bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), n);
                *buf.add(n) = 0;
            }
        }
        text.len()
    })
}

/// Launches kernel `segment` of `program` on `device`'s `queue` with correlation id
/// `corr_id`: a program segment as a kernel named `graph_name`, an eager fallback as
/// the node's eager kernel (`<op>_<dtype>`). Writes where it was placed to `span` (may
/// be null) and the modeled `(start, end)` of each of its groups to `group_spans` (two
/// values per group, at most `max_groups` groups; may be null). Returns the status.
///
/// # Safety
///
/// `program` must be a live program; `graph_name` a NUL-terminated string; `span` null
/// or valid for writes; `group_spans` null or valid for `2 * max_groups` writes.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn npc_program_launch(
    program: *const NpcProgram,
    segment: usize,
    graph_name: *const c_char,
    corr_id: u64,
    device_index: u16,
    queue: u16,
    span: *mut NpcKernelSpan,
    group_spans: *mut u64,
    max_groups: usize,
) -> i32 {
    // SAFETY: the caller guarantees a live program or null.
    let Some(program) = (unsafe { program.as_ref() }) else {
        return fail(NPC_ERR_ARGUMENT, "npc_program_launch: null program");
    };
    if graph_name.is_null() {
        return fail(NPC_ERR_ARGUMENT, "npc_program_launch: null graph name");
    }
    // SAFETY: the caller guarantees a NUL-terminated string.
    let graph = unsafe { CStr::from_ptr(graph_name) }.to_string_lossy();
    let program = &program.program;
    guard(|| {
        let device = match device(device_index) {
            Ok(device) => device,
            Err((status, message)) => return fail(status, message),
        };
        let Some(seg) = program.segments.get(segment) else {
            return fail(
                NPC_ERR_ARGUMENT,
                format!(
                    "npc_program_launch: {graph} has {} kernels, not {}",
                    program.segments.len(),
                    segment + 1
                ),
            );
        };
        let (name, note) = match seg.kind {
            SegmentKind::Program => {
                let groups = seg.groups().count();
                let nodes: usize = seg.groups().map(<[usize]>::len).sum();
                let lowering = format!(
                    "compiled graph: {nodes} nodes in {groups} passes ({} fused)",
                    nodes - groups
                );
                (graph.to_string(), (lowering, false))
            }
            SegmentKind::EagerFallback { node } => {
                let info = &program.nodes[node];
                let name = kernel_name(&info.name, info.dtype_tag);
                let lowering = format!("{} (eager fallback in {graph})", info.lowering);
                (name, (lowering, true))
            }
        };
        let name_id = runtime_hooks::intern(&name);
        if runtime_hooks::is_enabled() {
            note_kernel(
                corr_id,
                KernelNote {
                    lowering: runtime_hooks::intern(&note.0),
                    costed_by_default: note.1,
                },
            );
        }
        match device.external_launch_program(usize::from(queue), program, segment, name_id, corr_id)
        {
            Ok((placed, spans)) => {
                if !span.is_null() {
                    // SAFETY: non-null; the caller guarantees it is valid for writes.
                    unsafe { span.write(span_of(&placed)) };
                }
                if !group_spans.is_null() {
                    for (g, &(start, end)) in spans.iter().take(max_groups).enumerate() {
                        // SAFETY: the caller guarantees 2 * max_groups writable values.
                        unsafe {
                            group_spans.add(2 * g).write(start);
                            group_spans.add(2 * g + 1).write(end);
                        }
                    }
                }
                NPC_OK
            }
            Err(e) => fail(NPC_ERR_ARGUMENT, e.to_string()),
        }
    })
}

/// Node index → the group of the program segment it is in, for tests.
#[cfg(test)]
fn groups_of(program: &ExternalProgram) -> std::collections::HashMap<usize, (usize, usize)> {
    let mut out = std::collections::HashMap::new();
    for (s, seg) in program.segments.iter().enumerate() {
        for (g, nodes) in seg.groups().enumerate() {
            for &n in nodes {
                out.insert(n, (s, g));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(sizes: &[i64]) -> NpcTensor {
        NpcTensor {
            sizes: sizes.as_ptr(),
            strides: std::ptr::null(),
            ndim: sizes.len() as u32,
            dtype: 6,
            list: 0,
        }
    }

    #[test]
    fn a_graph_is_built_launched_and_described() {
        let _recording = crate::tests::recording();
        let (x, w, y) = ([256i64, 512], [512i64, 512], [256i64, 512]);
        let mm_in = [tensor(&x), tensor(&w)];
        let mm_out = [tensor(&y)];
        let one = [tensor(&y)];
        let two = [tensor(&y), tensor(&y)];
        let node = |name: &'static str,
                    ins: &[NpcTensor],
                    ids: &[u64],
                    outs: &[NpcTensor],
                    oids: &[u64]| {
            NpcGraphNode {
                name: name.as_ptr().cast(),
                name_len: name.len(),
                inputs: ins.as_ptr(),
                input_ids: ids.as_ptr(),
                n_inputs: ins.len(),
                outputs: outs.as_ptr(),
                output_ids: oids.as_ptr(),
                n_outputs: outs.len(),
            }
        };
        let nodes = [
            node("aten::mm", &mm_in, &[1, 2], &mm_out, &[3]),
            node("aten::gelu", &one, &[3], &one, &[4]),
            node("aten::mul.Tensor", &two, &[4, 3], &one, &[5]),
            node("aten::renorm", &one, &[5], &one, &[6]),
            node("aten::relu", &one, &[6], &one, &[7]),
            node("aten::neg", &one, &[7], &one, &[8]),
        ];
        // SAFETY: valid nodes and ids.
        let program = unsafe { npc_program_build(nodes.as_ptr(), nodes.len(), [8u64].as_ptr(), 1) };
        assert!(!program.is_null());
        // SAFETY: a live program.
        assert_eq!(unsafe { npc_program_segments(program) }, 3);
        // SAFETY: a live program; a null buffer of length 0 only measures.
        let len = unsafe { npc_program_describe(program, std::ptr::null_mut(), 0) };
        let mut buf = vec![0 as c_char; len + 1];
        // SAFETY: `buf` holds len + 1 bytes.
        unsafe { npc_program_describe(program, buf.as_mut_ptr(), buf.len()) };
        // SAFETY: NUL-terminated by the call.
        let text = unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        let json: serde_json::Value = serde_json::from_str(&text).expect(&text);
        assert_eq!(json["eager_fallbacks"][0], "aten::renorm");
        assert_eq!(json["segments"][1]["kind"], "eager");
        // gelu and mul fused into mm's evacuation (mul reads gelu's and mm's outputs,
        // both in SBUF), relu+neg fused.
        assert_eq!(
            json["segments"][0]["groups"],
            serde_json::json!([[0, 1, 2]])
        );
        assert_eq!(json["segments"][2]["groups"], serde_json::json!([[4, 5]]));
        assert_eq!(json["fused_nodes"], 3);
        // Not reloaded: mm's output by gelu and by mul, gelu's by mul; not stored: mm's
        // and gelu's (only mul's, which renorm reads); relu's neither reloaded nor
        // stored.
        let intermediate = 256 * 512 * 4;
        assert_eq!(json["hbm_bytes_saved"], 7 * intermediate);
        // SAFETY: the program is live.
        let groups = groups_of(&unsafe { &*program }.program);
        assert_eq!(groups[&2], (0, 0));
        let name = c"graph_0_forward";
        let mut span = NpcKernelSpan::default();
        let mut group_spans = [0u64; 4];
        // SAFETY: live program, valid name, span and 2 groups' room.
        let status = unsafe {
            npc_program_launch(
                program,
                0,
                name.as_ptr(),
                runtime_hooks::next_corr_id(),
                0,
                0,
                &mut span,
                group_spans.as_mut_ptr(),
                2,
            )
        };
        assert_eq!(status, NPC_OK);
        assert!(span.end_ns > span.start_ns);
        // One pass, inside the kernel; the room for a second group is left alone.
        assert!(group_spans[0] >= span.start_ns && group_spans[1] <= span.end_ns);
        assert!(group_spans[1] > group_spans[0], "{group_spans:?}");
        assert_eq!(&group_spans[2..], &[0, 0]);
        // SAFETY: a live program; segment 3 does not exist.
        let status = unsafe {
            npc_program_launch(
                program,
                3,
                name.as_ptr(),
                1,
                0,
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            )
        };
        assert_eq!(status, NPC_ERR_ARGUMENT);
        // SAFETY: freed once.
        unsafe { npc_program_free(program) };
    }
}
