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

#include <atomic>
#include <cstdlib>

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
// Set by an exit handler: the process is exiting (see ~NeuronSession).
std::atomic<bool> g_exiting{false};
// our corr id -> extra kernel args (key, JSON value)
std::unordered_map<uint64_t, std::vector<KernelArg>> g_kernel_args;

}  // namespace

uint64_t torch_correlation_id() { return t_torch_corr.empty() ? 0 : t_torch_corr.back(); }

void link_correlation(uint64_t corr_id, uint64_t torch_corr_id) {
  if (torch_corr_id == 0) return;
  std::lock_guard<std::mutex> lock(g_links_mutex);
  g_links[corr_id] = torch_corr_id;
}

void note_kernel_args(uint64_t corr_id, std::vector<KernelArg> args) {
  std::lock_guard<std::mutex> lock(g_links_mutex);
  g_kernel_args[corr_id] = std::move(args);
}

namespace {

using libkineto::ActivityType;

// How often the rings are drained while a window records (a ring holds 32,768 records).
constexpr uint64_t kDrainIntervalUs = 2000;

const std::set<ActivityType>& neuron_activities() {
  static const std::set<ActivityType> types{ActivityType::PRIVATEUSE1_RUNTIME,
                                            ActivityType::CONCURRENT_KERNEL,
                                            ActivityType::GPU_MEMCPY, ActivityType::GPU_MEMSET};
  return types;
}

std::string describe(size_t (*what)(uint16_t, char*, size_t), uint16_t device) {
  std::string text(what(device, nullptr, 0), '\0');
  what(device, text.data(), text.size() + 1);
  return text;
}

class NeuronSession final : public libkineto::IActivityProfilerSession {
 public:
  explicit NeuronSession(bool tracing) : tracing_(tracing) {}

  ~NeuronSession() override {
    if (recording_) {
      // Dropped without stop(): end the window (and its drain thread) all the same —
      // unless the process is exiting (a script that died while profiling): the runtime's
      // thread-local state is being torn down then, and the drain thread ends with it.
      nph_set_enabled(0);
      if (!g_exiting.load()) npc_window_free(npc_collect());
    }
    if (!g_exiting.load()) npc_window_free(window_);
  }

  void start() override {
    if (!tracing_) return;
    // Registered after Kineto's profiler exists, so it runs before Kineto's exit-time
    // destruction of this session.
    static const bool registered = [] {
      std::atexit([] { g_exiting.store(true); });
      return true;
    }();
    (void)registered;
    // Drops earlier records and keeps the rings drained while the window records.
    npc_window_begin(kDrainIntervalUs);
    {
      std::lock_guard<std::mutex> lock(g_links_mutex);
      g_links.clear();
      g_kernel_args.clear();
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
    if (window_ == nullptr) {
      char buf[1024];
      npc_last_error(buf, sizeof buf);
      errors_.push_back(std::string("neuron: collecting the window failed: ") + buf);
    }
    {
      std::lock_guard<std::mutex> lock(g_links_mutex);
      links_.swap(g_links);
      kernel_args_.swap(g_kernel_args);
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
    if (window_ == nullptr) return;
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
        // Device-side spans that are not device work: PyTorch 2.15's parser knows no
        // device for CUDA_SYNC/CUDA_EVENT from a plugin (it warns and files them as CPU
        // events), so they go as device annotations, which it and HTA leave out of
        // kernel time.
        case NPC_ACTIVITY_EVENT_RECORD:
        case NPC_ACTIVITY_STREAM_WAIT: type = ActivityType::GPU_USER_ANNOTATION; break;
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
      const bool sync = a->kind == NPC_ACTIVITY_EVENT_RECORD || a->kind == NPC_ACTIVITY_STREAM_WAIT;
      if (host) {
        act.device = pid;
        act.resource = static_cast<int64_t>(a->os_tid);
        act.threadId = static_cast<int32_t>(a->os_tid);
      } else {
        act.device = a->device;
        act.resource = a->queue;
        act.threadId = a->queue;
        devices_.insert(a->device);
        queues_.insert({a->device, a->queue});
      }
      act.addTypedMetadata("device", static_cast<int64_t>(a->device));
      if (sync) {
        // No `stream`/`correlation` args: tools that take any event with both for a
        // kernel (HTA) must not count a wait as device work (the profiler crate's
        // traces write the same args).
        if (a->kind == NPC_ACTIVITY_EVENT_RECORD) {
          act.addTypedMetadata("event_record_corr_id", static_cast<int64_t>(a->corr_id));
        } else {
          if (a->wait_on_queue >= 0) {
            act.addTypedMetadata("wait_on_device", static_cast<int64_t>(a->wait_on_device));
            act.addTypedMetadata("wait_on_stream", static_cast<int64_t>(a->wait_on_queue));
          }
          act.addTypedMetadata("wait_on_event_record_corr_id",
                               static_cast<int64_t>(a->corr_id));
        }
      } else {
        if (!host) {
          act.addTypedMetadata("stream", static_cast<int64_t>(a->queue));
          act.addTypedMetadata("flops", static_cast<int64_t>(a->flops));
          act.addTypedMetadata("bytes", static_cast<int64_t>(a->bytes));
          // How the emulator costed the kernel, and whether only by its default rule
          // (an op its table does not know): `neuronprof analyze` counts those.
          if (a->lowering != nullptr) act.addMetadataQuoted("lowering", a->lowering);
          if (a->costed_by_default != 0) act.addMetadataQuoted("costed_by", "default");
          auto extra = kernel_args_.find(a->corr_id);
          if (extra != kernel_args_.end())
            for (const KernelArg& x : extra->second) {
              if (x.is_number)
                act.addTypedMetadata(x.key, x.number);
              else
                act.addMetadataQuoted(x.key, x.text);
            }
          ++buffer_->gpuOpCount;
        }
        act.addTypedMetadata("correlation", static_cast<int64_t>(a->corr_id));
      }
      if (a->flow != NPC_FLOW_NONE) {
        act.flow.id = static_cast<uint32_t>(a->corr_id);
        act.flow.type = libkineto::kLinkAsyncCpuGpu;
        act.flow.start = a->flow == NPC_FLOW_START ? 1 : 0;
      }
      logger.handleActivity(act);
    }
  }

  // One DeviceInfo per session: the first device with activity (Kineto names the
  // process of its rows; further devices' rows go unnamed).
  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override {
    const int64_t device = devices_.empty() ? 0 : *devices_.begin();
    return std::make_unique<libkineto::DeviceInfo>(libkineto::DeviceInfo{
        device, libkineto::kExceedMaxPid + device,
        describe(npc_device_name, static_cast<uint16_t>(device)),
        "neuron:" + std::to_string(device)});
  }

  std::vector<libkineto::ResourceInfo> getResourceInfos() override {
    std::vector<libkineto::ResourceInfo> out;
    for (const auto& [device, queue] : queues_) {
      char buf[256];
      npc_queue_name(static_cast<uint16_t>(device), static_cast<uint16_t>(queue), buf,
                     sizeof buf);
      out.push_back(libkineto::ResourceInfo{queue, queue, device, buf});
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

  // Top-level trace metadata: records lost to full rings, under the key the profiler
  // crate's own traces use (`neuronprof inspect` reads it), and unpaired records.
  std::unordered_map<std::string, std::string> getMetadata() override {
    if (window_ == nullptr) return {};
    return {{"dropped_records", std::to_string(npc_window_dropped(window_))},
            {"neuron_unpaired_records", std::to_string(npc_window_unpaired(window_))}};
  }

  // deviceProperties entries (as the profiler crate writes them, with the peak
  // TFLOPs `neuronprof analyze` uses for MFU) of the devices with activity.
  std::string getDeviceProperties() override {
    std::string out;
    for (int64_t device : devices_.empty() ? std::set<int64_t>{0} : devices_) {
      if (!out.empty()) out += ", ";
      out += describe(npc_device_properties, static_cast<uint16_t>(device));
    }
    return out;
  }

 private:
  bool tracing_;
  bool recording_ = false;
  npc_window_t* window_ = nullptr;
  std::unordered_map<uint64_t, uint64_t> links_;
  std::unordered_map<uint64_t, std::vector<KernelArg>> kernel_args_;
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
