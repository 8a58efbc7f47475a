// Compiled graphs (torch.compile(backend="neuron"), compile.py): a graph call runs its
// nodes with ATen's CPU kernels inside one cut, with the fallback's launches switched
// off on this thread (graph_note), then launches the graph's device program
// (npc_program_launch): one runtime call and one kernel per call, named after the graph.
// The first call with given shapes also records each node (its ATen name, its tensors,
// and an id per tensor: the node that wrote that memory last) for npc_program_build.
#include "neuron.h"

#include <atomic>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <torch/extension.h>

namespace neuronprof {
namespace {

struct TensorMeta {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  uint16_t dtype = 0;
  uint16_t list = 0;
  uint64_t id = 0;
};

struct Node {
  std::string name;
  std::vector<TensorMeta> inputs;
  std::vector<TensorMeta> outputs;
};

struct Capture {
  bool record = false;
  std::vector<Node> nodes;
  // The id of the tensor last written at each address (a freed intermediate's memory
  // may be reused by a later one: it gets a new id when written).
  std::unordered_map<const void*, uint64_t> ids;
  uint64_t next_id = 1;

  uint64_t read_id(const at::Tensor& t) {
    const void* p = t.data_ptr();
    auto it = ids.find(p);
    if (it != ids.end()) return it->second;
    const uint64_t id = next_id++;
    ids.emplace(p, id);
    return id;
  }

  uint64_t write_id(const at::Tensor& t) {
    const uint64_t id = next_id++;
    ids[t.data_ptr()] = id;
    return id;
  }
};

// The graph running on this thread (null: none).
thread_local Capture* t_graph = nullptr;
// Ops run inside graphs, and ops of graphs that are not described (counted).
std::atomic<uint64_t> g_graph_ops{0};

TensorMeta meta(const at::Tensor& t, const npc_tensor_t& d, uint64_t id) {
  TensorMeta m;
  m.sizes.assign(t.sizes().begin(), t.sizes().end());
  if (t.layout() == c10::kStrided) m.strides.assign(t.strides().begin(), t.strides().end());
  m.dtype = d.dtype;
  m.list = d.list;
  m.id = id;
  return m;
}

void begin(bool record) {
  TORCH_CHECK(t_graph == nullptr, "neuron: a compiled graph is already running on this thread");
  t_graph = new Capture();
  t_graph->record = record;
  nph_cut_begin();
}

std::unique_ptr<Capture> finish() {
  TORCH_CHECK(t_graph != nullptr, "neuron: no compiled graph is running on this thread");
  std::unique_ptr<Capture> capture(t_graph);
  t_graph = nullptr;
  nph_cut_end();
  return capture;
}

py::list tensors_py(const std::vector<TensorMeta>& list) {
  py::list out;
  for (const TensorMeta& m : list)
    out.append(py::make_tuple(m.sizes, m.strides, m.dtype, m.list, m.id));
  return out;
}

// Ends the graph run; returns (nodes, output ids) when it recorded, else None.
py::object end(const std::vector<at::Tensor>& outputs) {
  std::unique_ptr<Capture> capture = finish();
  if (!capture->record) return py::none();
  py::list nodes;
  for (const Node& n : capture->nodes)
    nodes.append(py::make_tuple(n.name, tensors_py(n.inputs), tensors_py(n.outputs)));
  py::list ids;
  for (const at::Tensor& t : outputs)
    if (t.defined()) ids.append(capture->read_id(t));
  return py::make_tuple(nodes, ids);
}

void abort_graph() {
  if (t_graph != nullptr) finish();
}

// A built program and what its launches say.
struct Program {
  npc_program_t* program = nullptr;
  size_t segments = 0;
  ~Program() { npc_program_free(program); }
};

// Owned arrays for npc_program_build.
struct Built {
  std::vector<std::vector<int64_t>> arrays;
  std::vector<std::vector<npc_tensor_t>> tensors;
  std::vector<std::vector<uint64_t>> ids;
  std::vector<std::string> names;
};

void add_tensors(Built& b, const py::list& list, std::vector<npc_tensor_t>& out,
                 std::vector<uint64_t>& ids) {
  for (const py::handle& h : list) {
    const py::tuple t = h.cast<py::tuple>();
    b.arrays.push_back(t[0].cast<std::vector<int64_t>>());
    const std::vector<int64_t>& sizes = b.arrays.back();
    b.arrays.push_back(t[1].cast<std::vector<int64_t>>());
    const std::vector<int64_t>& strides = b.arrays.back();
    npc_tensor_t d{};
    d.sizes = sizes.data();
    d.strides = strides.size() == sizes.size() && !strides.empty() ? strides.data() : nullptr;
    d.ndim = static_cast<uint32_t>(sizes.size());
    d.dtype = t[2].cast<uint16_t>();
    d.list = t[3].cast<uint16_t>();
    out.push_back(d);
    ids.push_back(t[4].cast<uint64_t>());
  }
}

std::shared_ptr<Program> build(const py::list& nodes, const std::vector<uint64_t>& output_ids) {
  Built b;
  // Reserve so the pointers into the vectors stay valid.
  size_t tensor_count = 0;
  for (const py::handle& h : nodes) {
    const py::tuple n = h.cast<py::tuple>();
    tensor_count += py::len(n[1]) + py::len(n[2]);
  }
  b.arrays.reserve(2 * tensor_count);
  b.tensors.reserve(2 * nodes.size());
  b.ids.reserve(2 * nodes.size());
  b.names.reserve(nodes.size());
  std::vector<npc_graph_node_t> raw;
  raw.reserve(nodes.size());
  for (const py::handle& h : nodes) {
    const py::tuple n = h.cast<py::tuple>();
    b.names.push_back(n[0].cast<std::string>());
    b.tensors.emplace_back();
    b.ids.emplace_back();
    add_tensors(b, n[1].cast<py::list>(), b.tensors.back(), b.ids.back());
    std::vector<npc_tensor_t>& ins = b.tensors.back();
    std::vector<uint64_t>& in_ids = b.ids.back();
    b.tensors.emplace_back();
    b.ids.emplace_back();
    add_tensors(b, n[2].cast<py::list>(), b.tensors.back(), b.ids.back());
    std::vector<npc_tensor_t>& outs = b.tensors.back();
    std::vector<uint64_t>& out_ids = b.ids.back();
    npc_graph_node_t node{};
    node.name = b.names.back().data();
    node.name_len = b.names.back().size();
    node.inputs = ins.data();
    node.input_ids = in_ids.data();
    node.n_inputs = ins.size();
    node.outputs = outs.data();
    node.output_ids = out_ids.data();
    node.n_outputs = outs.size();
    raw.push_back(node);
  }
  auto program = std::make_shared<Program>();
  program->program =
      npc_program_build(raw.data(), raw.size(), output_ids.data(), output_ids.size());
  if (program->program == nullptr) throw_last_error("building the graph's program", NPC_ERR_ARGUMENT);
  program->segments = npc_program_segments(program->program);
  return program;
}

std::string describe(const Program& p) {
  const size_t len = npc_program_describe(p.program, nullptr, 0);
  std::string text(len + 1, '\0');
  npc_program_describe(p.program, text.data(), text.size());
  text.resize(len);
  return text;
}

// One call's kernels: each segment launched on the current stream of `device`, linked to
// PyTorch's current operator, with `args[s]` (pairs) and the modeled time of each of its
// passes (`labels[s][g]`: the group's nodes) as kernel args. Returns (corr_id, start_ns,
// end_ns) per kernel.
py::list launch_program(const Program& p, const std::string& graph, int device,
                        const std::vector<std::vector<std::pair<std::string, py::object>>>& args,
                        const std::vector<std::vector<std::string>>& labels) {
  py::list out;
  const c10::DeviceIndex index = static_cast<c10::DeviceIndex>(device);
  const uint16_t queue = current_queue(index);
  for (size_t s = 0; s < p.segments; ++s) {
    const size_t groups = s < labels.size() ? labels[s].size() : 0;
    std::vector<uint64_t> spans(2 * groups, 0);
    npc_kernel_span_t span{};
    const uint64_t corr = nph_next_corr_id();
    const int32_t status =
        npc_program_launch(p.program, s, graph.c_str(), corr, static_cast<uint16_t>(device), queue,
                           &span, spans.data(), groups);
    if (status != NPC_OK) throw_last_error("launching the graph", status);
    if (nph_is_enabled()) {
      link_correlation(corr, torch_correlation_id());
      std::vector<KernelArg> extra;
      if (s < args.size()) {
        for (const auto& [key, value] : args[s]) {
          if (py::isinstance<py::int_>(value))
            extra.push_back(arg(key, value.cast<int64_t>()));
          else
            extra.push_back(arg(key, py::str(value).cast<std::string>()));
        }
      }
      if (groups > 0) {
        // `passes`: each pass's nodes and modeled time, for reading; `pass_spans_ns`:
        // each pass's start and end after the kernel's start, in the same order, which
        // `neuronprof analyze` splits the kernel's time by (passes overlap on the
        // engines, so their times add up to more than the kernel's).
        std::string passes, pass_spans;
        for (size_t g = 0; g < groups; ++g) {
          if (g > 0) {
            passes += "; ";
            pass_spans += "; ";
          }
          passes += labels[s][g] + " " +
                    std::to_string(spans[2 * g + 1] - spans[2 * g]) + " ns";
          pass_spans += std::to_string(spans[2 * g] - span.start_ns) + "-" +
                        std::to_string(spans[2 * g + 1] - span.start_ns);
        }
        extra.push_back(arg("passes", passes));
        extra.push_back(arg("pass_spans_ns", pass_spans));
      }
      note_kernel_args(corr, std::move(extra));
    }
    if (launch_blocking()) npc_stream_synchronize(static_cast<uint16_t>(device), queue);
    out.append(py::make_tuple(corr, span.start_ns, span.end_ns));
  }
  return out;
}

}  // namespace

bool graph_note(const std::string& name, const std::vector<at::Tensor>& inputs,
                const std::vector<npc_tensor_t>& in, const std::vector<at::Tensor>& outputs,
                const std::vector<npc_tensor_t>& out) {
  Capture* g = t_graph;
  if (g == nullptr) return false;
  g_graph_ops.fetch_add(1, std::memory_order_relaxed);
  if (!g->record) return true;
  Node node;
  node.name = name;
  for (size_t i = 0; i < inputs.size(); ++i)
    node.inputs.push_back(meta(inputs[i], in[i], g->read_id(inputs[i])));
  for (size_t i = 0; i < outputs.size(); ++i)
    node.outputs.push_back(meta(outputs[i], out[i], g->write_id(outputs[i])));
  g->nodes.push_back(std::move(node));
  return true;
}

bool in_graph() { return t_graph != nullptr; }

void register_compile(py::module& m) {
  py::class_<Program, std::shared_ptr<Program>>(m, "_Program")
      .def_property_readonly("kernels", [](const Program& p) { return p.segments; })
      .def("describe", &describe, "The program as JSON (groups, fusion, eager fallbacks)");
  m.def("_graph_begin", &begin,
        "Runs a compiled graph's nodes on this thread from now on: one cut, no launches; "
        "record=True also records each node for _program_build");
  m.def("_graph_end", &end,
        "Ends the graph run; returns (nodes, output ids) when it recorded, else None");
  m.def("_graph_abort", &abort_graph, "Ends a graph run that failed (no-op when none)");
  m.def("_program_build", &build, "Lowers and schedules a recorded graph into a device program");
  m.def("_program_launch", &launch_program,
        "Launches one call of a program; returns (corr_id, start_ns, end_ns) per kernel");
  m.def("_graph_op_count", [] { return g_graph_ops.load(std::memory_order_relaxed); },
        "Ops run inside compiled graphs so far");
}

}  // namespace neuronprof
