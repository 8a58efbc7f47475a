// The neuron device for PyTorch: allocator, device guard and PrivateUse1 hooks
// (registration points from shared/reference/torch-privateuse1.md).
#include "neuron.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <vector>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/copy_ops.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/impl/alloc_cpu.h>
#include <c10/core/Allocator.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <torch/library.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

namespace neuronprof {

[[noreturn]] void throw_last_error(const char* what, int32_t status) {
  char buf[1024];
  npc_last_error(buf, sizeof buf);
  TORCH_CHECK(false, "neuron: ", what, " failed (status ", status, "): ", buf);
}

uint32_t intern(const std::string& name) {
  thread_local std::unordered_map<std::string, uint32_t> ids;
  auto it = ids.find(name);
  if (it != ids.end()) return it->second;
  uint32_t id = nph_intern(name.data(), name.size());
  ids.emplace(name, id);
  return id;
}

uint16_t npc_dtype(c10::ScalarType type) {
  switch (c10::elementSize(type)) {
    case 1: return NPC_DTYPE_F8E4M3;
    case 2: return NPC_DTYPE_BF16;
    case 8: return NPC_DTYPE_I64;
    default: return NPC_DTYPE_F32;
  }
}

const char* dtype_tag(c10::ScalarType type) {
  switch (type) {
    case c10::ScalarType::Float: return "f32";
    case c10::ScalarType::BFloat16: return "bf16";
    case c10::ScalarType::Half: return "f16";
    case c10::ScalarType::Double: return "f64";
    case c10::ScalarType::Long: return "i64";
    case c10::ScalarType::Int: return "i32";
    case c10::ScalarType::Bool: return "bool";
    case c10::ScalarType::Byte: return "u8";
    case c10::ScalarType::Char: return "i8";
    default: return "other";
  }
}

void cpu_copy(at::Tensor& dst, const at::Tensor& src) {
  at::_ops::copy_::redispatch(c10::DispatchKeySet(c10::DispatchKey::CPU), dst, src, false);
}

npc_kernel_span_t launch(npc_launch_t& launch) {
  npc_kernel_span_t span{};
  int32_t status = npc_launch(&launch, &span);
  if (status != NPC_OK) throw_last_error("kernel launch", status);
  if (nph_is_enabled()) link_correlation(launch.corr_id, torch_correlation_id());
  if (launch_blocking()) npc_stream_synchronize(launch.device, launch.queue);
  return span;
}

npc_kernel_span_t launch_op(const npc_op_t& op) {
  npc_kernel_span_t span{};
  int32_t status = npc_launch_op(&op, &span);
  if (status != NPC_OK) throw_last_error("kernel launch", status);
  if (nph_is_enabled()) link_correlation(op.corr_id, torch_correlation_id());
  if (launch_blocking()) npc_stream_synchronize(op.device, op.queue);
  return span;
}

// ---------------------------------------------------------------------------------
// Allocator: host memory for the values, a block of the device's caching allocator for
// the address, size and totals; both reported to PyTorch's profiler as CUDA's caching
// allocator does (c10::reportMemoryUsageToProfiler), so `profile_memory=True` gives
// `[memory]` events for the neuron device.
//
// It is a c10::DeviceAllocator (shared/reference/torch-runtime-c10d-dynamo.md, A: the
// torch.accelerator.memory_* functions dynamic_cast the registered allocator to one), so
// torch.accelerator.memory.* work on neuron; the statistics are the device allocator's
// (neuron-backend/src/allocator), in c10's DeviceStats shape.
//
// Stream order (as CUDA's caching allocator): a block is allocated for the current
// stream of the allocating thread, and reused only by that stream's later requests
// (neuron-backend's allocator keeps a free list per stream). `Tensor.record_stream(s)`
// (aten::record_stream, which has only a CUDA kernel in PyTorch, so the extension
// registers the PrivateUse1 one) notes another stream that uses the block; when the
// block is freed, it is reused only once the work queued on those streams so far has
// ended on the device. The values are computed at each launch (python/README.md, "The
// execution model"), so the host memory behind a freed block is released at once; the
// order is what the device addresses, the statistics (active vs allocated) and the
// trace's memory events show.

namespace {

struct Block {
  void* host;
  uint64_t addr;
  uint64_t bytes;
  c10::DeviceIndex device;
  uint16_t queue;                 // the stream it was allocated for
  std::vector<uint16_t> used_by;  // other streams that used it (record_stream)
};

std::mutex g_used_by_mutex;

void report(void* ptr, int64_t bytes, c10::DeviceIndex device) {
  npc_memory_stats_t stats{};
  if (npc_memory_stats(static_cast<uint16_t>(device), &stats) != NPC_OK) return;
  c10::reportMemoryUsageToProfiler(ptr, bytes, stats.allocated_bytes, stats.reserved_bytes,
                                   c10::Device(c10::DeviceType::PrivateUse1, device));
}

void free_block(void* ctx) {
  auto* block = static_cast<Block*>(ctx);
  uint64_t ready_ns = 0;
  {
    std::lock_guard<std::mutex> lock(g_used_by_mutex);
    ready_ns = npc_free(static_cast<uint16_t>(block->device), block->addr,
                        block->used_by.data(), static_cast<uint32_t>(block->used_by.size()));
  }
  history_free(block->device, block->addr, block->bytes, block->queue, ready_ns);
  report(block->host, -static_cast<int64_t>(block->bytes), block->device);
  {
    // Host memory standing in for device memory is the emulator's, not the host's
    // (returning a large block to the system costs hundreds of µs).
    Cut cut;
    std::free(block->host);
  }
  delete block;
}

void copy_stats(const npc_stat_t (&from)[3], c10::CachingAllocator::StatArray& to) {
  for (size_t i = 0; i < to.size(); ++i) {
    to[i].current = static_cast<int64_t>(from[i].current);
    to[i].peak = static_cast<int64_t>(from[i].peak);
    to[i].allocated = static_cast<int64_t>(from[i].allocated);
    to[i].freed = static_cast<int64_t>(from[i].freed);
  }
}

npc_device_stats_t device_stats(c10::DeviceIndex device) {
  npc_device_stats_t stats{};
  const int32_t status = npc_device_stats(static_cast<uint16_t>(device), &stats);
  if (status != NPC_OK) throw_last_error("memory statistics", status);
  return stats;
}

struct NeuronAllocator final : c10::DeviceAllocator {
  c10::DataPtr allocate(size_t nbytes) override {
    c10::DeviceIndex device = current_device();
    c10::Device where(c10::DeviceType::PrivateUse1, device);
    if (nbytes == 0) return {nullptr, nullptr, &c10::detail::deleteNothing, where};
    uint64_t addr = 0, bytes = 0;
    const uint16_t queue = current_queue(device);
    int32_t status =
        npc_allocate(static_cast<uint16_t>(device), queue, nbytes, &addr, &bytes);
    if (status == NPC_ERR_OUT_OF_MEMORY) {
      history_oom(device, nbytes, queue);
      char buf[1024];
      npc_last_error(buf, sizeof buf);
      TORCH_CHECK_WITH(OutOfMemoryError, false, "neuron: ", buf);
    }
    if (status != NPC_OK) throw_last_error("allocation", status);
    // 64-byte alignment like c10's CPU allocator; aligned_alloc wants a multiple.
    size_t host_bytes = (nbytes + 63) / 64 * 64;
    void* host = nullptr;
    {
      Cut cut;  // host memory standing in for device memory: the emulator's work
      host = std::aligned_alloc(64, host_bytes);
    }
    if (host == nullptr) {
      npc_free(static_cast<uint16_t>(device), addr, nullptr, 0);
      TORCH_CHECK_WITH(OutOfMemoryError, false, "neuron: host memory for ", nbytes,
                       " bytes of device memory could not be allocated");
    }
    auto* block = new Block{host, addr, bytes, device, queue, {}};
    history_alloc(device, addr, bytes, queue);
    report(host, static_cast<int64_t>(bytes), device);
    return {host, block, &free_block, where};
  }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }

  // The runtime starts when the package is imported (before any allocation).
  bool initialized() override { return npc_device_count() > 0; }

  // Releases the cached, fully free segments of every device (as CUDA's emptyCache;
  // there are no private pools).
  void emptyCache(c10::MempoolId_t /*mempool_id*/) override {
    for (int32_t d = 0; d < npc_device_count(); ++d) npc_empty_cache(static_cast<uint16_t>(d));
  }

  void recordStream(const c10::DataPtr& ptr, c10::Stream stream) override {
    if (ptr.get_deleter() != &free_block) return;  // empty: nothing to order
    auto* block = static_cast<Block*>(ptr.get_context());
    TORCH_CHECK(stream.device_type() == c10::DeviceType::PrivateUse1 &&
                    stream.device_index() == block->device,
                "neuron: record_stream of a tensor on neuron:", int(block->device),
                " with a stream of ", stream.device());
    TORCH_CHECK(stream.id() >= 0 &&
                    stream.id() < static_cast<c10::StreamId>(
                                      npc_queue_count(static_cast<uint16_t>(block->device))),
                "neuron: stream ", stream.id(), " is not a stream of neuron:",
                int(block->device));
    const auto queue = static_cast<uint16_t>(stream.id());
    if (queue == block->queue) return;  // its own stream runs in order
    std::lock_guard<std::mutex> lock(g_used_by_mutex);
    if (std::find(block->used_by.begin(), block->used_by.end(), queue) == block->used_by.end())
      block->used_by.push_back(queue);
  }

  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    const npc_device_stats_t s = device_stats(device);
    c10::CachingDeviceAllocator::DeviceStats out;
    copy_stats(s.allocation, out.allocation);
    copy_stats(s.segment, out.segment);
    copy_stats(s.active, out.active);
    copy_stats(s.inactive_split, out.inactive_split);
    copy_stats(s.allocated_bytes, out.allocated_bytes);
    copy_stats(s.reserved_bytes, out.reserved_bytes);
    copy_stats(s.active_bytes, out.active_bytes);
    copy_stats(s.inactive_split_bytes, out.inactive_split_bytes);
    copy_stats(s.requested_bytes, out.requested_bytes);
    out.num_alloc_retries = static_cast<int64_t>(s.num_alloc_retries);
    out.num_ooms = static_cast<int64_t>(s.num_ooms);
    out.num_sync_all_streams = static_cast<int64_t>(s.num_sync_all_streams);
    out.num_device_alloc = static_cast<int64_t>(s.num_device_alloc);
    out.num_device_free = static_cast<int64_t>(s.num_device_free);
    // Every block may be split (there is no max_split_size), so no request is
    // "oversize"; CUDA reports its unlimited default as SIZE_MAX, i.e. -1 here.
    out.max_split_size = -1;
    return out;
  }

  void resetAccumulatedStats(c10::DeviceIndex device) override {
    const int32_t status = npc_reset_accumulated_memory_stats(static_cast<uint16_t>(device));
    if (status != NPC_OK) throw_last_error("reset_accumulated_memory_stats", status);
  }

  void resetPeakStats(c10::DeviceIndex device) override {
    const int32_t status = npc_reset_peak_memory_stats(static_cast<uint16_t>(device));
    if (status != NPC_OK) throw_last_error("reset_peak_memory_stats", status);
  }

  // (free, total) bytes of the device's HBM: free is the capacity less what the caching
  // allocator reserved (this process is the device's only user).
  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    const npc_device_stats_t s = device_stats(device);
    return {s.capacity_bytes - s.reserved_bytes[0].current, s.capacity_bytes};
  }
};

NeuronAllocator g_allocator;
REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &g_allocator);

// aten::record_stream(Tensor(a!) self, Stream s) for neuron tensors.
void record_stream(at::Tensor& self, c10::Stream stream) {
  g_allocator.recordStream(self.storage().data_ptr(), stream);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("record_stream", record_stream); }

thread_local c10::DeviceIndex t_device = 0;

}  // namespace

c10::Allocator* neuron_allocator() { return &g_allocator; }

uint64_t device_address(const at::Tensor& tensor) {
  const c10::DataPtr& ptr = tensor.storage().data_ptr();
  if (ptr.get_deleter() != &free_block) return 0;
  return static_cast<Block*>(ptr.get_context())->addr;
}

c10::DeviceIndex current_device() { return t_device; }

void set_current_device(c10::DeviceIndex index) {
  TORCH_CHECK(index >= 0 && index < npc_device_count(), "neuron: no device ", int(index),
              " (", npc_device_count(), " devices)");
  t_device = index;
}

// ---------------------------------------------------------------------------------
// Device guard: one thread-local current device and, per device, a thread-local current
// stream (as torch.cuda keeps them). A stream is a queue of the emulated device, its
// StreamId the queue index: 0 is the default stream, new streams come from the device's
// pool (npc_stream_pool). Events are points in a queue's work (npc_event_*).

namespace {

// The most devices a thread keeps a current stream for (trn2 has 4 logical cores per
// chip; 64 covers every built-in profile).
constexpr int kMaxDevices = 64;
thread_local std::array<uint16_t, kMaxDevices> t_queue{};

// An event's state behind PyTorch's `void*`.
struct NeuronEvent {
  npc_event_t event{};
  c10::EventFlag flag;
};

c10::DeviceIndex index_of(c10::Device device) {
  return device.has_index() ? device.index() : current_device();
}

c10::Stream stream_of(c10::DeviceIndex device, uint16_t queue) {
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, device),
                     static_cast<c10::StreamId>(queue));
}

uint16_t queue_of(const c10::Stream& stream) {
  TORCH_CHECK(stream.id() >= 0 &&
                  stream.id() < static_cast<c10::StreamId>(
                                    npc_queue_count(static_cast<uint16_t>(stream.device_index()))),
              "neuron: stream ", stream.id(), " is not a stream of neuron:",
              int(stream.device_index()));
  return static_cast<uint16_t>(stream.id());
}

uint16_t pool_stream(c10::DeviceIndex device) {
  const int32_t queue = npc_stream_pool(static_cast<uint16_t>(device));
  TORCH_CHECK(queue >= 0, "neuron: no device ", int(device));
  return static_cast<uint16_t>(queue);
}

}  // namespace

uint16_t current_queue(c10::DeviceIndex device) {
  return device >= 0 && device < kMaxDevices ? t_queue[device] : 0;
}

void set_current_queue(c10::DeviceIndex device, uint16_t queue) {
  TORCH_CHECK(device >= 0 && device < kMaxDevices, "neuron: no device ", int(device));
  t_queue[device] = queue;
}

namespace {

struct NeuronGuardImpl final : c10::impl::DeviceGuardImplInterface {
  static constexpr c10::DeviceType static_type = c10::DeviceType::PrivateUse1;

  c10::DeviceType type() const override { return c10::DeviceType::PrivateUse1; }

  c10::Device exchangeDevice(c10::Device device) const override {
    c10::Device old = getDevice();
    if (device.index() >= 0) set_current_device(device.index());
    return old;
  }

  c10::Device getDevice() const override {
    return c10::Device(c10::DeviceType::PrivateUse1, current_device());
  }

  void setDevice(c10::Device device) const override {
    if (device.index() >= 0) set_current_device(device.index());
  }

  void uncheckedSetDevice(c10::Device device) const noexcept override {
    if (device.index() >= 0 && device.index() < npc_device_count()) t_device = device.index();
  }

  c10::Stream getStream(c10::Device device) const override {
    const c10::DeviceIndex index = index_of(device);
    return stream_of(index, current_queue(index));
  }

  c10::Stream getDefaultStream(c10::Device device) const override {
    return stream_of(index_of(device), 0);
  }

  c10::Stream getStreamFromGlobalPool(c10::Device device,
                                      bool /*isHighPriority*/) const override {
    const c10::DeviceIndex index = index_of(device);
    return stream_of(index, pool_stream(index));
  }

  // Priorities are accepted and have no effect: the timing model does not preempt.
  c10::Stream getNewStream(c10::Device device, int /*priority*/) const override {
    const c10::DeviceIndex index = index_of(device);
    return stream_of(index, pool_stream(index));
  }

  c10::Stream exchangeStream(c10::Stream stream) const override {
    const c10::DeviceIndex index = stream.device_index();
    c10::Stream old = stream_of(index, current_queue(index));
    set_current_queue(index, queue_of(stream));
    return old;
  }

  c10::DeviceIndex deviceCount() const noexcept override {
    return static_cast<c10::DeviceIndex>(npc_device_count());
  }

  // PyTorch passes the address of its event pointer (null until the first record).
  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex /*device*/,
              const c10::EventFlag flag) const override {
    if (*event == nullptr) *event = new NeuronEvent{{}, flag};
    auto* e = static_cast<NeuronEvent*>(*event);
    const int32_t status = npc_event_record(static_cast<uint16_t>(stream.device_index()),
                                            queue_of(stream), &e->event);
    if (status != NPC_OK) throw_last_error("event record", status);
  }

  void block(void* event, const c10::Stream& stream) const override {
    if (event == nullptr) return;  // never recorded: nothing to wait for
    auto* e = static_cast<NeuronEvent*>(event);
    const int32_t status = npc_event_wait(static_cast<uint16_t>(stream.device_index()),
                                          queue_of(stream), &e->event);
    if (status != NPC_OK) throw_last_error("event wait", status);
  }

  // A query reports the error of a kernel that failed on the device, as synchronize
  // does (and as cudaEventQuery/cudaStreamQuery return a kernel's error): the emulator
  // finds it at the launch, before any query can follow.
  bool queryEvent(void* event) const override {
    if (event == nullptr) return true;
    const auto& e = static_cast<NeuronEvent*>(event)->event;
    const bool done = npc_event_query(&e) == 1;
    if (e.corr_id != 0) raise_pending_error(e.device);
    return done;
  }

  void synchronizeEvent(void* event) const override {
    if (event == nullptr) return;
    npc_event_synchronize(&static_cast<NeuronEvent*>(event)->event);
    raise_pending_error(static_cast<NeuronEvent*>(event)->event.device);
  }

  void destroyEvent(void* event, const c10::DeviceIndex /*device*/) const noexcept override {
    delete static_cast<NeuronEvent*>(event);
  }

  // Milliseconds of modeled device time between two recorded, completed events
  // (InlineEvent has checked both were created with timing enabled).
  double elapsedTime(void* start, void* end, const c10::DeviceIndex /*device*/) const override {
    TORCH_CHECK(start != nullptr && end != nullptr,
                "neuron: both events must be recorded before elapsed_time");
    const auto& a = static_cast<NeuronEvent*>(start)->event;
    const auto& b = static_cast<NeuronEvent*>(end)->event;
    TORCH_CHECK(npc_event_query(&a) == 1 && npc_event_query(&b) == 1,
                "neuron: both events must have completed before elapsed_time "
                "(synchronize one of them first)");
    return (static_cast<double>(b.ready_ns) - static_cast<double>(a.ready_ns)) / 1e6;
  }

  bool queryStream(const c10::Stream& stream) const override {
    const int32_t done =
        npc_stream_query(static_cast<uint16_t>(stream.device_index()), queue_of(stream));
    if (done < 0) throw_last_error("stream query", NPC_ERR_ARGUMENT);
    raise_pending_error(stream.device_index());
    return done == 1;
  }

  void synchronizeStream(const c10::Stream& stream) const override {
    const int32_t status =
        npc_stream_synchronize(static_cast<uint16_t>(stream.device_index()), queue_of(stream));
    if (status != NPC_OK) throw_last_error("stream synchronize", status);
    raise_pending_error(stream.device_index());
  }

  void synchronizeDevice(const c10::DeviceIndex device) const override {
    npc_synchronize(device);
    raise_pending_error(device);
  }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, NeuronGuardImpl);

// ---------------------------------------------------------------------------------
// PrivateUse1 hooks (torch.accelerator, generators, storage resizing).

// Page-locked host memory for `pin_memory()`. The emulated device copies host memory
// on the host (python/README.md, "The execution model"), so pinned memory is plain host
// memory; its blocks are remembered so `is_pinned()` is true for them, as on CUDA.
class PinnedHostAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override {
    void* data = nbytes == 0 ? nullptr : c10::alloc_cpu(nbytes);
    if (data != nullptr) {
      std::lock_guard<std::mutex> lock(mutex());
      blocks().insert(data);
    }
    return {data, data, &release, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
  static bool holds(const void* data) {
    std::lock_guard<std::mutex> lock(mutex());
    return blocks().count(const_cast<void*>(data)) > 0;
  }

 private:
  static void release(void* data) {
    if (data == nullptr) return;
    {
      std::lock_guard<std::mutex> lock(mutex());
      blocks().erase(data);
    }
    c10::free_cpu(data);
  }
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  static std::unordered_set<void*>& blocks() {
    static std::unordered_set<void*> b;
    return b;
  }
};

PinnedHostAllocator g_pinned;

struct NeuronHooks final : at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return npc_device_count() > 0; }
  bool hasPrimaryContext(c10::DeviceIndex /*device*/) const override { return true; }
  c10::DeviceIndex deviceCount() const override {
    return static_cast<c10::DeviceIndex>(npc_device_count());
  }
  void setCurrentDevice(c10::DeviceIndex device) const override { set_current_device(device); }
  c10::DeviceIndex getCurrentDevice() const override { return current_device(); }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override {
    c10::DeviceIndex old = current_device();
    set_current_device(device);
    return old;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override {
    return exchangeDevice(device);
  }
  // Ops run on the CPU (the fallback), so random numbers come from the CPU generator,
  // which torch.manual_seed seeds.
  const at::Generator& getDefaultGenerator(c10::DeviceIndex /*device*/) const override {
    return at::detail::getDefaultCPUGenerator();
  }
  // Pinned host memory (`Tensor.pin_memory()`, a DataLoader with pin_memory=True, which
  // transformers' Trainer sets by default): PinnedHostAllocator above.
  bool isPinnedPtr(const void* data) const override { return PinnedHostAllocator::holds(data); }
  c10::Allocator* getPinnedMemoryAllocator() const override { return &g_pinned; }
  c10::Device getDeviceFromPtr(void* /*data*/) const override {
    return c10::Device(c10::DeviceType::PrivateUse1, current_device());
  }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t new_bytes) const override {
    auto* impl = storage.unsafeGetStorageImpl();
    const c10::DeviceIndex saved = current_device();
    if (storage.device().has_index()) set_current_device(storage.device().index());
    size_t old_bytes = impl->nbytes();
    c10::DataPtr fresh = g_allocator.allocate(new_bytes);
    set_current_device(saved);
    if (old_bytes > 0 && new_bytes > 0) {
      Cut cut;  // the device's copy, computed on the host
      std::memcpy(fresh.get(), impl->data(), std::min(old_bytes, new_bytes));
    }
    impl->set_data_ptr_noswap(std::move(fresh));
    impl->set_nbytes(new_bytes);
  }
};

NeuronHooks g_hooks;

struct RegisterHooks {
  RegisterHooks() { at::RegisterPrivateUse1HooksInterface(&g_hooks); }
} g_register_hooks;

}  // namespace

}  // namespace neuronprof
