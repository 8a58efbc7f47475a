// Python bindings of the neuron device (torch.neuron's functions).
#include "neuron.h"

#include <torch/extension.h>

namespace {

int init(const std::string& profile) {
  int32_t count = npc_init(profile.empty() ? nullptr : profile.c_str());
  if (count <= 0) neuronprof::throw_last_error("runtime start", NPC_ERR_NO_DEVICE);
  return count;
}

void synchronize(int device) {
  npc_synchronize(device);
  neuronprof::raise_pending_error(device);
}

// Rewrites a trace PyTorch wrote so its host events are on the cut timeline (the warp).
py::dict warp_trace_file(const std::string& path) {
  npc_warp_stats_t stats{};
  int32_t status = npc_warp_trace_file(path.c_str(), &stats);
  if (status != NPC_OK) neuronprof::throw_last_error("warping the trace", status);
  py::dict out;
  out["events"] = stats.events;
  out["warped"] = stats.warped;
  out["kept"] = stats.kept;
  out["inexact"] = stats.inexact;
  out["cut_ns"] = stats.cut_ns;
  out["engine_rows"] = stats.engine_rows;
  out["engine_rows_dropped"] = stats.engine_rows_dropped;
  out["host_ops_in_cuts"] = stats.host_ops_in_cuts;
  out["off_cpu_ns"] = stats.off_cpu_ns;
  return out;
}

// PyTorch's host instants (ns since the epoch) on the cut timeline.
std::vector<int64_t> warp_unix_ns(std::vector<int64_t> values) {
  npc_warp_unix_ns(values.data(), values.size());
  return values;
}

// PyTorch's host intervals (start, end pairs, ns since the epoch) on the cut timeline,
// and whether each lay inside one cut (a host op of the emulator's).
std::pair<std::vector<int64_t>, std::vector<bool>> warp_unix_intervals(
    std::vector<int64_t> values) {
  const size_t len = values.size() / 2;
  std::vector<uint8_t> inside(len, 0);
  npc_warp_unix_intervals(values.data(), inside.data(), len);
  return {std::move(values), std::vector<bool>(inside.begin(), inside.end())};
}

// The device allocator's statistics (c10 DeviceStats shape): {name: [all, small_pool,
// large_pool] of {current, peak, allocated, freed}}, plus the counters.
py::dict device_stats(int device) {
  npc_device_stats_t s{};
  int32_t status = npc_device_stats(static_cast<uint16_t>(device), &s);
  if (status != NPC_OK) neuronprof::throw_last_error("memory_stats", status);
  py::dict out;
  auto array = [&](const char* name, const npc_stat_t (&stats)[3]) {
    py::list pools;
    for (const npc_stat_t& stat : stats) {
      py::dict d;
      d["current"] = stat.current;
      d["peak"] = stat.peak;
      d["allocated"] = stat.allocated;
      d["freed"] = stat.freed;
      pools.append(d);
    }
    out[name] = pools;
  };
  array("allocation", s.allocation);
  array("segment", s.segment);
  array("active", s.active);
  array("inactive_split", s.inactive_split);
  array("allocated_bytes", s.allocated_bytes);
  array("reserved_bytes", s.reserved_bytes);
  array("active_bytes", s.active_bytes);
  array("inactive_split_bytes", s.inactive_split_bytes);
  array("requested_bytes", s.requested_bytes);
  out["num_alloc_retries"] = s.num_alloc_retries;
  out["num_ooms"] = s.num_ooms;
  out["num_device_alloc"] = s.num_device_alloc;
  out["num_device_free"] = s.num_device_free;
  out["num_sync_all_streams"] = s.num_sync_all_streams;
  out["capacity_bytes"] = s.capacity_bytes;
  return out;
}

void check(int32_t status, const char* what) {
  if (status != NPC_OK) neuronprof::throw_last_error(what, status);
}

// A text the capi writes (npc_device_properties, npc_device_name); empty: no device.
template <typename F>
std::string capi_text(F f, int device) {
  const size_t len = f(static_cast<uint16_t>(device), nullptr, 0);
  TORCH_CHECK(len > 0, "neuron: no device ", device, " (", npc_device_count(), " devices)");
  std::string text(len + 1, '\0');
  f(static_cast<uint16_t>(device), text.data(), text.size());
  text.resize(len);
  return text;
}

}  // namespace

namespace neuronprof {
void register_distributed(py::module& m);  // distributed.cpp
void register_compile(py::module& m);      // compile.cpp
void register_memory(py::module& m);       // memory.cpp
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "The emulated neuron device (neuronprof) for PyTorch";
  m.def("_init", &init, "Starts the runtime with a built-in device profile; returns the device count");
  m.def("device_count", [] { return npc_device_count(); });
  m.def("current_device", [] { return static_cast<int>(neuronprof::current_device()); });
  m.def("set_device", [](int index) {
    neuronprof::set_current_device(static_cast<c10::DeviceIndex>(index));
  });
  m.def("synchronize", &synchronize, "Waits for the device's work (-1: every device)");
  m.def("_device_stats", &device_stats,
        "The device allocator's statistics per pool (c10 DeviceStats shape) and counters");
  m.def("_device_address", &neuronprof::device_address,
        "Device address of a neuron tensor's storage block (0: none)");
  m.def("reset_peak_memory_stats", [](int device) {
    check(npc_reset_peak_memory_stats(static_cast<uint16_t>(device)), "reset_peak_memory_stats");
  });
  m.def("reset_accumulated_memory_stats", [](int device) {
    check(npc_reset_accumulated_memory_stats(static_cast<uint16_t>(device)),
          "reset_accumulated_memory_stats");
  });
  m.def("_device_properties", [](int device) { return capi_text(npc_device_properties, device); },
        "The device's deviceProperties entry (JSON), as in the traces");
  m.def("_take_pending_error", &neuronprof::take_pending_error,
        "The error of a queued kernel not yet reported on `device` (-1: any), cleared");
  m.def("_set_aliased_fallback", &neuronprof::set_aliased_fallback,
        "Whether the fallback runs ops directly on device memory (else cpu_fallback's copies)");
  m.def("_fallback_counts", &neuronprof::fallback_counts,
        "(ops run directly on device memory, ops run through cpu_fallback) so far");
  m.def("empty_cache", [](int device) { return npc_empty_cache(static_cast<uint16_t>(device)); });
  m.def("_warp_trace_file", &warp_trace_file,
        "Puts the host events of a trace PyTorch wrote onto the cut timeline, in place");
  m.def("_warp_unix_ns", &warp_unix_ns,
        "PyTorch's host instants (ns since the epoch) on the cut timeline");
  m.def("_warp_unix_intervals", &warp_unix_intervals,
        "PyTorch's host intervals (start, end pairs) on the cut timeline, and whether each "
        "lay inside one cut");
  m.def("_set_record_detail",
        [](bool instructions) {
          uint8_t previous = NPC_DETAIL_KERNELS;
          check(npc_set_record_detail(instructions ? NPC_DETAIL_INSTRUCTIONS : NPC_DETAIL_KERNELS,
                                      &previous),
                "setting the record detail");
          return previous == NPC_DETAIL_INSTRUCTIONS;
        },
        "Whether the devices record engine instructions and DMA transfers from now on; "
        "returns the setting it replaced");
  m.def("_cut_total_ns", [] { return npc_cut_total_ns(); },
        "Time cut from the process timeline so far (the emulator's work on the host), ns");
  neuronprof::register_distributed(m);
  neuronprof::register_compile(m);
  neuronprof::register_memory(m);
  // Last, once this library's own kernels are registered (ops.cpp says why).
  m.attr("_structured_variants") = neuronprof::register_structured_variants();

}
