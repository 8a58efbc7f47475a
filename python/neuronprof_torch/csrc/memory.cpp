// Memory snapshots of the neuron device (python/README.md, "Memory snapshots"):
// torch.neuron.memory._record_memory_history / _snapshot / _dump_snapshot, in the format
// PyTorch's memory visualizer (torch.cuda._memory_viz, MemoryViz.js) reads.
//
// The format facts relied on (shared/reference/torch-runtime-c10d-dynamo.md, D):
// - top-level keys `segments`, `device_traces`, `allocator_settings`,
//   `external_annotations`, `host_segments`, `host_traces`;
// - a segment: `device, address, total_size, allocated_size, active_size,
//   requested_size, stream` (an int), `segment_type` ("large"/"small"),
//   `segment_pool_id, is_expandable, frames, blocks`; _memory_viz's segsum asserts that
//   the blocks' sizes sum to `total_size`, and MemoryViz.js computes block addresses as
//   the segment's address plus the running sizes, so the blocks tile the segment in
//   address order;
// - a block: `address, size, requested_size, state, frames`, the state one of
//   `active_allocated`, `active_pending_free`, `inactive`;
// - `device_traces[i]` lists device i's entries `action, addr, size, stream, time_us,
//   frames`; the actions used here are `alloc`, `free_requested`, `free_completed` and
//   `oom` (whose `addr` is the device's free bytes);
// - a frame: `filename, line, name` (PyTorch's own py_symbolize makes them);
// - the pickle holds plain dicts, lists, tuples, strings, ints, bools and None only.
//
// What is recorded: each allocation (`alloc`), each free by the host (`free_requested`),
// and the instant the block is reusable (`free_completed`: at once for a block only its
// own stream used; for a block another stream used — record_stream — at the first
// allocation after that stream passed the free, which is when the allocator makes it
// reusable). Segment reservations and releases (`segment_alloc` / `segment_free`) are
// not recorded: the device allocator reserves segments inside an allocation, and the
// segments' state is in the snapshot's `segments`. `time_us` is µs since the epoch on
// the cut timeline (as the traces' host events). Frames: Python frames (stacks "python")
// or Python and C++ frames (stacks "all"), gathered with PyTorch's CapturedTraceback as
// torch.cuda does.
#include "neuron.h"

#include <climits>
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>

#include <torch/csrc/Export.h>
#include <torch/csrc/profiler/combined_traceback.h>
#include <torch/extension.h>

// libtorch_python's symbolizer and Python unwinder, as declared in
// torch/csrc/profiler/python/combined_traceback.h, which the wheel ships without the
// nlohmann/json header it includes.
namespace torch {
TORCH_API std::vector<pybind11::object> py_symbolize(
    std::vector<CapturedTraceback*>& to_symbolize);
TORCH_PYTHON_API void freeDeadCapturedTracebackFrames();
TORCH_PYTHON_API void installCapturedTracebackPython();
}  // namespace torch

namespace neuronprof {

namespace {

using Frames = std::shared_ptr<torch::CapturedTraceback>;

// Which frames are kept, as torch.cuda.memory._record_memory_history's `context`.
enum class Context { None = 0, State = 1, Alloc = 2, All = 3 };

struct Entry {
  const char* action;
  uint64_t addr;
  uint64_t size;
  uint16_t stream;
  int64_t time_us;
  Frames frames;
};

struct PendingFree {
  int device;
  uint64_t addr;
  uint64_t size;
  uint16_t stream;
  uint64_t ready_ns;
};

struct History {
  std::mutex mutex;
  bool trace = false;  // enabled="all": keep trace entries (else only block frames)
  Context context = Context::None;
  bool cpp = false;
  size_t max_entries = SIZE_MAX;
  std::unordered_map<int, std::deque<Entry>> traces;
  std::unordered_map<uint64_t, Frames> block_frames;  // device addresses are distinct per device
  std::vector<PendingFree> pending;
};

// Never destroyed: frames hold Python objects, which must not be released after the
// interpreter is gone.
History& history() {
  static History* h = new History;
  return *h;
}

std::atomic<bool> g_recording{false};

int64_t unix_us(uint64_t ns) {
  uint64_t mono = 0, unix_ns = 0;
  nph_clock_anchor(&mono, &unix_ns);
  return (static_cast<int64_t>(unix_ns) + (static_cast<int64_t>(ns) - static_cast<int64_t>(mono))) /
         1000;
}

Frames gather(bool cpp) { return torch::CapturedTraceback::gather(true, false, cpp); }

void push(History& h, int device, Entry entry) {
  auto& trace = h.traces[device];
  trace.push_back(std::move(entry));
  while (trace.size() > h.max_entries) trace.pop_front();
}

// Blocks whose streams passed their free by `now_ns` are reusable: `free_completed`.
void complete_due(History& h, uint64_t now_ns) {
  auto due = std::stable_partition(h.pending.begin(), h.pending.end(),
                                   [&](const PendingFree& p) { return p.ready_ns > now_ns; });
  for (auto it = due; it != h.pending.end(); ++it) {
    if (h.trace) push(h, it->device, {"free_completed", it->addr, it->size, it->stream, unix_us(now_ns), {}});
    h.block_frames.erase(it->addr);
  }
  h.pending.erase(due, h.pending.end());
}

}  // namespace

void history_alloc(int device, uint64_t addr, uint64_t size, uint16_t stream) {
  if (!g_recording.load(std::memory_order_relaxed)) return;
  History& h = history();
  Frames frames = h.context != Context::None ? gather(h.cpp) : nullptr;
  std::lock_guard<std::mutex> lock(h.mutex);
  const uint64_t now_ns = nph_now_ns();
  complete_due(h, now_ns);
  if (h.context >= Context::State) h.block_frames[addr] = frames;
  if (h.trace)
    push(h, device, {"alloc", addr, size, stream, unix_us(now_ns),
                     h.context >= Context::Alloc ? frames : nullptr});
}

void history_free(int device, uint64_t addr, uint64_t size, uint16_t stream, uint64_t ready_ns) {
  if (!g_recording.load(std::memory_order_relaxed)) return;
  History& h = history();
  Frames frames = h.context == Context::All ? gather(h.cpp) : nullptr;
  std::lock_guard<std::mutex> lock(h.mutex);
  const uint64_t now_ns = nph_now_ns();
  if (h.trace) push(h, device, {"free_requested", addr, size, stream, unix_us(now_ns), frames});
  if (ready_ns == 0) {
    if (h.trace) push(h, device, {"free_completed", addr, size, stream, unix_us(now_ns), frames});
    h.block_frames.erase(addr);
  } else {
    h.pending.push_back({device, addr, size, stream, ready_ns});
  }
}

void history_oom(int device, uint64_t size, uint16_t stream) {
  if (!g_recording.load(std::memory_order_relaxed)) return;
  History& h = history();
  Frames frames = h.context != Context::None ? gather(h.cpp) : nullptr;
  npc_device_stats_t stats{};
  npc_device_stats(static_cast<uint16_t>(device), &stats);
  std::lock_guard<std::mutex> lock(h.mutex);
  if (h.trace)
    push(h, device, {"oom", stats.capacity_bytes - stats.reserved_bytes[0].current, size, stream,
                     unix_us(nph_now_ns()), frames});
}

// torch.cuda.memory._record_memory_history's arguments: enabled None (stop), "state"
// (frames of live blocks only) or "all" (and the trace); context None, "state", "alloc",
// "all"; stacks "python" or "all" (Python and C++ frames); max_entries of each device's
// trace. Enabling clears what an earlier recording kept.
void record_memory_history(std::optional<std::string> enabled, std::optional<std::string> context,
                           const std::string& stacks, size_t max_entries) {
  TORCH_CHECK(!enabled || *enabled == "state" || *enabled == "all",
              "neuron: _record_memory_history: enabled must be None, 'state' or 'all', got '",
              *enabled, "'");
  TORCH_CHECK(stacks == "python" || stacks == "all",
              "neuron: _record_memory_history: stacks must be 'python' or 'all', got '", stacks,
              "'");
  Context ctx = Context::None;
  if (context) {
    if (*context == "state") ctx = Context::State;
    else if (*context == "alloc") ctx = Context::Alloc;
    else if (*context == "all") ctx = Context::All;
    else
      TORCH_CHECK(false, "neuron: _record_memory_history: context must be None, 'state', ",
                  "'alloc' or 'all', got '", *context, "'");
  }
  torch::installCapturedTracebackPython();
  History& h = history();
  std::lock_guard<std::mutex> lock(h.mutex);
  if (!enabled) {
    g_recording.store(false);
    return;
  }
  h.trace = *enabled == "all";
  h.context = ctx;
  h.cpp = stacks == "all";
  h.max_entries = max_entries == 0 ? SIZE_MAX : max_entries;
  h.traces.clear();
  h.block_frames.clear();
  h.pending.clear();
  g_recording.store(true);
}

// The snapshot of every device (the GIL is held: it builds Python objects).
py::dict memory_snapshot() {
  History& h = history();
  std::lock_guard<std::mutex> lock(h.mutex);
  // No complete_due here: a pending block becomes reusable at the allocator's next
  // allocation, so the trace and the blocks' states agree.
  torch::freeDeadCapturedTracebackFrames();

  // Frames are symbolized in one batch; `targets` are the dicts that get them.
  std::vector<torch::CapturedTraceback*> to_symbolize;
  std::vector<py::dict> targets;
  auto frames_of = [&](py::dict& into, const Frames& frames) {
    if (frames) {
      to_symbolize.push_back(frames.get());
      targets.push_back(into);
    } else {
      into["frames"] = py::list();
    }
  };

  const int devices = npc_device_count();
  py::list segments;
  py::list device_traces;
  for (int d = 0; d < devices; ++d) {
    const int64_t n = npc_memory_blocks(static_cast<uint16_t>(d), nullptr, 0);
    if (n < 0) throw_last_error("npc_memory_blocks", static_cast<int32_t>(n));
    std::vector<npc_block_t> blocks(static_cast<size_t>(n));
    if (n > 0 && npc_memory_blocks(static_cast<uint16_t>(d), blocks.data(), blocks.size()) < 0) {
      throw_last_error("npc_memory_blocks", -1);
    }
    for (size_t i = 0; i < blocks.size();) {
      const npc_block_t& first = blocks[i];
      py::dict segment;
      py::list seg_blocks;
      uint64_t allocated = 0, active = 0, requested = 0;
      for (; i < blocks.size() && blocks[i].segment_addr == first.segment_addr; ++i) {
        const npc_block_t& b = blocks[i];
        py::dict block;
        block["address"] = b.addr;
        block["size"] = b.bytes;
        block["requested_size"] = b.requested_bytes;
        const char* state = b.state == NPC_BLOCK_ALLOCATED      ? "active_allocated"
                            : b.state == NPC_BLOCK_PENDING_FREE ? "active_pending_free"
                                                                : "inactive";
        block["state"] = state;
        if (b.state == NPC_BLOCK_ALLOCATED) {
          allocated += b.bytes;
          requested += b.requested_bytes;
        }
        if (b.state != NPC_BLOCK_FREE) active += b.bytes;
        auto it = h.block_frames.find(b.addr);
        frames_of(block, b.state != NPC_BLOCK_FREE && it != h.block_frames.end() ? it->second
                                                                                   : nullptr);
        seg_blocks.append(block);
      }
      segment["device"] = d;
      segment["address"] = first.segment_addr;
      segment["total_size"] = first.segment_bytes;
      segment["allocated_size"] = allocated;
      segment["active_size"] = active;
      segment["requested_size"] = requested;
      segment["stream"] = first.stream;
      segment["segment_type"] = first.small_pool ? "small" : "large";
      segment["segment_pool_id"] = py::make_tuple(0, 0);
      segment["is_expandable"] = false;
      segment["frames"] = py::list();  // reservations are not recorded (see above)
      segment["blocks"] = seg_blocks;
      segments.append(segment);
    }
    py::list trace;
    auto it = h.traces.find(d);
    if (it != h.traces.end()) {
      for (const Entry& e : it->second) {
        py::dict entry;
        entry["action"] = e.action;
        entry["addr"] = e.addr;
        entry["size"] = e.size;
        entry["stream"] = e.stream;
        entry["time_us"] = e.time_us;
        frames_of(entry, e.frames);
        trace.append(entry);
      }
    }
    device_traces.append(trace);
  }
  if (!to_symbolize.empty()) {
    std::vector<py::object> symbolized = torch::py_symbolize(to_symbolize);
    for (size_t i = 0; i < targets.size(); ++i) targets[i]["frames"] = symbolized[i];
  }

  py::dict settings;
  settings["max_split_size"] = -1;  // no limit: every block may be split
  settings["expandable_segments"] = false;
  py::dict out;
  out["segments"] = segments;
  out["device_traces"] = device_traces;
  out["allocator_settings"] = settings;
  out["external_annotations"] = py::list();
  out["host_segments"] = py::list();
  out["host_traces"] = py::list();
  return out;
}

void register_memory(py::module& m) {
  m.def("_record_memory_history", &record_memory_history, py::arg("enabled"),
        py::arg("context"), py::arg("stacks"), py::arg("max_entries"),
        "Starts (or stops: enabled None) recording the allocator's history");
  m.def("_memory_snapshot", &memory_snapshot,
        "The allocator's segments and recorded history, torch.cuda.memory._snapshot's format");
}

}  // namespace neuronprof
