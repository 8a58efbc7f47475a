// The Kineto plugin: hands the neuron device's activity to PyTorch's own profiler
// (torch.profiler with ProfilerActivity.PrivateUse1). Session calls and conventions
// from shared/reference/torch-privateuse1.md ("The Kineto plugin").
//
// start() switches our recording on (runtime-hooks), stop() off and drains the window;
// processTrace() converts it (npc_collect, the profiler crate's plugin_window) into
// GenericTraceActivity objects: privateuse1_runtime calls on the OS thread that made
// them, kernels and copies on pid = device, tid = queue, each linked to PyTorch's
// operator through the correlation id PyTorch pushed while the op ran, and ac2g flows
// from each launch to its kernel.
#include "neuron.h"

#include <unistd.h>

#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

#include <GenericTraceActivity.h>
#include <IActivityProfiler.h>
#include <libkineto.h>
#include <output_base.h>
#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>

namespace neuronprof {

namespace {

thread_local std::vector<uint64_t> t_torch_corr;

std::mutex g_links_mutex;
std::unordered_map<uint64_t, uint64_t> g_links;  // our corr id -> PyTorch's

}  // namespace

uint64_t torch_correlation_id() { return t_torch_corr.empty() ? 0 : t_torch_corr.back(); }

void link_correlation(uint64_t corr_id, uint64_t torch_corr_id) {
  if (torch_corr_id == 0) return;
  std::lock_guard<std::mutex> lock(g_links_mutex);
  g_links[corr_id] = torch_corr_id;
}

namespace {

using libkineto::ActivityType;

const std::set<ActivityType>& neuron_activities() {
  static const std::set<ActivityType> types{ActivityType::PRIVATEUSE1_RUNTIME,
                                            ActivityType::CONCURRENT_KERNEL,
                                            ActivityType::GPU_MEMCPY, ActivityType::GPU_MEMSET};
  return types;
}

class NeuronSession final : public libkineto::IActivityProfilerSession {
 public:
  explicit NeuronSession(bool tracing) : tracing_(tracing) {}

  ~NeuronSession() override {
    if (recording_) nph_set_enabled(0);
    npc_window_free(window_);
  }

  void start() override {
    if (!tracing_) return;
    npc_discard();
    {
      std::lock_guard<std::mutex> lock(g_links_mutex);
      g_links.clear();
    }
    nph_set_enabled(1);
    recording_ = true;
    status_ = libkineto::TraceStatus::RECORDING;
  }

  void stop() override {
    if (!recording_) return;
    nph_set_enabled(0);
    recording_ = false;
    npc_window_free(window_);
    window_ = npc_collect();
    {
      std::lock_guard<std::mutex> lock(g_links_mutex);
      links_.swap(g_links);
    }
    status_ = libkineto::TraceStatus::PROCESSING;
  }

  std::vector<std::string> errors() override { return errors_; }

  void processTrace(libkineto::ActivityLogger& logger) override {
    processTrace(logger, [](int32_t) -> const libkineto::ITraceActivity* { return nullptr; },
                 0, 0);
  }

  void processTrace(libkineto::ActivityLogger& logger,
                    libkineto::getLinkedActivityCallback getLinkedActivity, int64_t startTime,
                    int64_t endTime) override {
    buffer_ = std::make_unique<libkineto::CpuTraceBuffer>();
    buffer_->span = libkineto::TraceSpan(startTime, endTime, "neuron");
    buffer_->gpuOpCount = 0;
    if (window_ == nullptr) {
      if (tracing_) errors_.push_back("neuron: no recorded window (npc_collect failed)");
      return;
    }
    const int32_t pid = static_cast<int32_t>(getpid());
    const size_t count = npc_window_len(window_);
    for (size_t i = 0; i < count; ++i) {
      const npc_activity_t* a = npc_window_get(window_, i);
      ActivityType type;
      switch (a->kind) {
        case NPC_ACTIVITY_RUNTIME:
        case NPC_ACTIVITY_RUNTIME_LAUNCH: type = ActivityType::PRIVATEUSE1_RUNTIME; break;
        case NPC_ACTIVITY_MEMCPY: type = ActivityType::GPU_MEMCPY; break;
        case NPC_ACTIVITY_MEMSET: type = ActivityType::GPU_MEMSET; break;
        default: type = ActivityType::CONCURRENT_KERNEL; break;
      }
      buffer_->emplace_activity(buffer_->span, type, std::string(a->name));
      libkineto::GenericTraceActivity& act = *buffer_->activities.back();
      act.startTime = a->start_unix_ns;
      act.endTime = a->end_unix_ns;
      act.id = static_cast<int32_t>(a->corr_id);
      auto link = links_.find(a->corr_id);
      if (link != links_.end()) act.linked = getLinkedActivity(static_cast<int32_t>(link->second));
      const bool host = type == ActivityType::PRIVATEUSE1_RUNTIME;
      if (host) {
        act.device = pid;
        act.resource = static_cast<int64_t>(a->os_tid);
        act.threadId = static_cast<int32_t>(a->os_tid);
      } else {
        act.device = a->device;
        act.resource = a->queue;
        act.threadId = a->queue;
        act.addTypedMetadata("stream", static_cast<int64_t>(a->queue));
        act.addTypedMetadata("flops", static_cast<int64_t>(a->flops));
        act.addTypedMetadata("bytes", static_cast<int64_t>(a->bytes));
        devices_.insert(a->device);
        queues_.insert({a->device, a->queue});
        ++buffer_->gpuOpCount;
      }
      act.addTypedMetadata("device", static_cast<int64_t>(a->device));
      act.addTypedMetadata("correlation", static_cast<int64_t>(a->corr_id));
      if (a->kind == NPC_ACTIVITY_RUNTIME_LAUNCH || !host) {
        act.flow.id = static_cast<uint32_t>(a->corr_id);
        act.flow.type = libkineto::kLinkAsyncCpuGpu;
        act.flow.start = host ? 1 : 0;
      }
      logger.handleActivity(act);
    }
  }

  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override {
    const int64_t device = devices_.empty() ? 0 : *devices_.begin();
    return std::make_unique<libkineto::DeviceInfo>(libkineto::DeviceInfo{
        device, libkineto::kExceedMaxPid + device, "NeuronCore " + std::to_string(device),
        "neuron:" + std::to_string(device)});
  }

  std::vector<libkineto::ResourceInfo> getResourceInfos() override {
    std::vector<libkineto::ResourceInfo> out;
    for (const auto& [device, queue] : queues_) {
      out.push_back(libkineto::ResourceInfo{queue, queue, device,
                                            "stream " + std::to_string(queue)});
    }
    return out;
  }

  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override {
    return std::move(buffer_);
  }

  void pushCorrelationId(uint64_t id) override { t_torch_corr.push_back(id); }

  void popCorrelationId() override {
    if (!t_torch_corr.empty()) t_torch_corr.pop_back();
  }

  std::string getDeviceProperties() override {
    npc_memory_stats_t stats{};
    npc_memory_stats(0, &stats);
    return "{\"id\": 0, \"name\": \"NeuronCore 0\", \"deviceType\": \"neuron\", "
           "\"totalGlobalMem\": " +
           std::to_string(stats.capacity_bytes) + "}";
  }

 private:
  bool tracing_;
  bool recording_ = false;
  npc_window_t* window_ = nullptr;
  std::unordered_map<uint64_t, uint64_t> links_;
  std::unique_ptr<libkineto::CpuTraceBuffer> buffer_;
  std::vector<std::string> errors_;
  std::set<int64_t> devices_;
  std::set<std::pair<int64_t, int64_t>> queues_;
};

class NeuronActivityProfiler final : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override { return name_; }

  const std::set<ActivityType>& availableActivities() const override {
    return neuron_activities();
  }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      const std::set<ActivityType>& activity_types, const libkineto::Config& /*config*/) override {
    // PyTorch lists the PrivateUse1 runtime type among CPU-only activities too; trace
    // only when device activity (kernels or copies) was asked for.
    const bool tracing = activity_types.count(ActivityType::CONCURRENT_KERNEL) > 0 ||
                         activity_types.count(ActivityType::GPU_MEMCPY) > 0;
    return std::make_unique<NeuronSession>(tracing);
  }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      int64_t /*ts_ms*/, int64_t /*duration_ms*/, const std::set<ActivityType>& activity_types,
      const libkineto::Config& config) override {
    return configure(activity_types, config);
  }

 private:
  std::string name_ = "NeuronActivityProfiler";
};

}  // namespace
}  // namespace neuronprof

using neuronprof::NeuronActivityProfiler;
REGISTER_PRIVATEUSE1_PROFILER(NeuronActivityProfiler);
