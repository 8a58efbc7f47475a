// The c10d backend "neuron" (python/README.md, "Distributed"): one process per rank,
// collectives on neuron tensors with real data between the processes and modeled time
// on the device.
//
// Data path: gloo (ProcessGroupGloo, made by the Python creator over the same store) on
// CPU tensors that alias the device tensors' memory (device memory is host memory in
// the emulator), inside a process-wide cut: the real exchange, which may wait seconds
// for a slow rank's CPU numerics, is not host time. A second gloo group carries the
// control messages: each rank's modeled ready instant, its sequence number and the
// call's signature (checked equal on every rank), and for send/recv the ready instants
// of both ends.
//
// Time: npc_collective_issue records the launch on the group's collective queue and
// gives this core's ready instant; after the exchange npc_collective_place puts the
// kernel from there to the last rank's arrival plus the topology model's cost (the same
// instant on every rank). The Work's wait() makes the caller's current stream wait for
// that end (the host goes on, as NCCL), its future is completed on the collective queue
// (so a consumer's stream waits for it too: DDP's comm hook), barrier's wait() blocks the
// host until the end.
//
// Faults: a gloo error or timeout (the process group's timeout) becomes an error that
// names the collective, its sequence number and the ranks that did not take part
// (found through the store: every rank that saw the failure says so there).
#include "neuron.h"

#include <torch/extension.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/ParamCommsUtils.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <ATen/ThreadLocalState.h>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <sstream>
#include <string_view>
#include <thread>

namespace neuronprof {
namespace {

using c10d::OpType;

// A CPU tensor over a neuron tensor's memory (the emulator's device memory is host
// memory); CPU tensors pass through.
at::Tensor cpu_view(const at::Tensor& t) {
  if (!t.defined() || t.device().type() != c10::DeviceType::PrivateUse1) return t;
  return at::from_blob(t.data_ptr(), t.sizes(), t.strides(),
                       t.options().device(c10::DeviceType::CPU));
}

std::vector<at::Tensor> cpu_views(const std::vector<at::Tensor>& ts) {
  std::vector<at::Tensor> out;
  out.reserve(ts.size());
  for (const at::Tensor& t : ts) out.push_back(cpu_view(t));
  return out;
}

std::vector<std::vector<at::Tensor>> cpu_views(const std::vector<std::vector<at::Tensor>>& tss) {
  std::vector<std::vector<at::Tensor>> out;
  out.reserve(tss.size());
  for (const auto& ts : tss) out.push_back(cpu_views(ts));
  return out;
}

int64_t numel(const std::vector<at::Tensor>& ts) {
  int64_t n = 0;
  for (const at::Tensor& t : ts) n += t.numel();
  return n;
}

uint64_t nbytes(const std::vector<at::Tensor>& ts) {
  uint64_t n = 0;
  for (const at::Tensor& t : ts) n += t.numel() * t.element_size();
  return n;
}

const char* reduce_name(const c10d::ReduceOp& op) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM: return "Sum";
    case c10d::ReduceOp::AVG: return "Avg";
    case c10d::ReduceOp::PRODUCT: return "Prod";
    case c10d::ReduceOp::MIN: return "Min";
    case c10d::ReduceOp::MAX: return "Max";
    case c10d::ReduceOp::PREMUL_SUM: return "PreMulSum";
    case c10d::ReduceOp::BAND: return "BAnd";
    case c10d::ReduceOp::BOR: return "BOr";
    case c10d::ReduceOp::BXOR: return "BXor";
    default: return "Unknown";
  }
}

// gloo has no AVG or PREMUL_SUM: AVG is a SUM divided by the group size afterwards,
// PREMUL_SUM a SUM of the inputs multiplied by the factor first.
c10d::ReduceOp gloo_op(const c10d::ReduceOp& op) {
  if (op.op_ == c10d::ReduceOp::AVG || op.op_ == c10d::ReduceOp::PREMUL_SUM)
    return c10d::ReduceOp(c10d::ReduceOp::SUM);
  return op;
}

void premultiply(const c10d::ReduceOp& op, std::vector<at::Tensor>& cpu) {
  if (op.op_ != c10d::ReduceOp::PREMUL_SUM) return;
  auto* s = dynamic_cast<c10d::PreMulSumSupplement*>(op.supplement_.get());
  TORCH_CHECK(s != nullptr, "neuron: PREMUL_SUM without its factor");
  for (at::Tensor& t : cpu) {
    if (s->tensor_factor.defined())
      t.mul_(s->tensor_factor.to(c10::DeviceType::CPU));
    else
      t.mul_(s->double_factor);
  }
}

void finish_reduce(const c10d::ReduceOp& op, std::vector<at::Tensor>& cpu, int size) {
  if (op.op_ != c10d::ReduceOp::AVG) return;
  for (at::Tensor& t : cpu) {
    if (at::isIntegralType(t.scalar_type(), /*includeBool=*/true))
      t.div_(size, "floor");
    else
      t.div_(size);
  }
}

// A hash of a call's kind and sizes: every rank must make the same call.
uint64_t signature(const char* name, int64_t a, int64_t b, int64_t c) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  };
  for (const char* p = name; *p; ++p) mix(static_cast<unsigned char>(*p));
  mix(static_cast<uint64_t>(a));
  mix(static_cast<uint64_t>(b));
  mix(static_cast<uint64_t>(c));
  return h;
}

std::string json_list(const std::vector<int64_t>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i)
    out += (i ? ", " : "") + std::to_string(values[i]);
  return out + "]";
}

const char* algorithm_name(uint16_t algorithm) {
  switch (algorithm) {
    case 1: return "Ring";
    case 2: return "Mesh";
    case 3: return "Tree";
    case 4: return "Hierarchical";
    case 5: return "RecursiveDoubling";
    case 6: return "KangaRing";
    default: return "P2P";
  }
}

// The modeled end of a collective as a device event on its queue.
npc_event_t end_event(uint16_t device, uint16_t queue, const npc_collective_span_t& span) {
  npc_event_t ev{};
  ev.corr_id = span.corr_id;
  ev.ready_ns = span.end_ns;
  ev.device = device;
  ev.queue = queue;
  return ev;
}

class NeuronWork : public c10d::Work {
 public:
  NeuronWork(int rank, OpType type, std::vector<at::Tensor> outputs, npc_event_t end,
             bool host_waits, c10::intrusive_ptr<c10::ivalue::Future> future,
             std::function<void()> deferred = {})
      : c10d::Work(rank, type),
        outputs_(std::move(outputs)),
        end_(end),
        host_waits_(host_waits),
        future_(std::move(future)),
        deferred_(std::move(deferred)) {}

  // Complete once the modeled end has passed on the cut timeline.
  bool isCompleted() override {
    for (const auto& w : pending_)
      if (!w->isCompleted()) return false;
    settle();
    return npc_event_query(&end_) == 1;
  }
  bool isSuccess() const override { return true; }

  // NCCL's semantics: the caller's current stream waits for the collective on the
  // device and the host goes on; a barrier blocks the host.
  bool wait(std::chrono::milliseconds /*timeout*/) override {
    settle();
    if (host_waits_) {
      npc_event_synchronize(&end_);
    } else {
      const int32_t status = npc_event_wait(end_.device, current_queue(end_.device), &end_);
      if (status != NPC_OK) throw_last_error("collective wait", status);
    }
    return true;
  }
  void synchronize() override { wait(kNoTimeout); }
  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override {
    settle();
    return future_;
  }

  void set_end(npc_event_t end) { end_ = end; }
  void set_future(c10::intrusive_ptr<c10::ivalue::Future> future) { future_ = std::move(future); }
  void set_deferred(std::function<void()> deferred) { deferred_ = std::move(deferred); }
  // gloo work the deferred placement waits for (isCompleted() does not block on it).
  void set_pending(std::vector<c10::intrusive_ptr<c10d::Work>> pending) {
    pending_ = std::move(pending);
  }

 private:
  // send/recv are placed when the other end's ready instant has come (first wait).
  void settle() {
    if (deferred_) {
      auto run = std::move(deferred_);
      deferred_ = nullptr;
      run();
      pending_.clear();
    }
  }

  std::vector<at::Tensor> outputs_;
  npc_event_t end_;
  bool host_waits_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::function<void()> deferred_;
  std::vector<c10::intrusive_ptr<c10d::Work>> pending_;
};

// What one call does, before it meets the other ranks.
struct Call {
  const char* coll_name;  // record_param_comms' "Collective name" (NCCL's spelling)
  uint16_t op;            // NPC_COLL_*
  const char* stem;       // kernel name stem
  const char* reduce = nullptr;
  OpType type;
  std::vector<at::Tensor> inputs;
  std::vector<at::Tensor> outputs;
  int64_t in_nelems = 0;
  int64_t out_nelems = 0;
  // The size every rank must agree on (in_nelems unless a call says otherwise; -1: none).
  int64_t checked_nelems = 0;
  at::ScalarType dtype = at::kFloat;
  uint64_t message_bytes = 0;
  std::vector<int64_t> in_split, out_split;
  std::function<c10::intrusive_ptr<c10d::Work>()> exchange;  // the data, on CPU aliases
  std::function<void()> after;                              // AVG's divide and such
  bool host_waits = false;
};

std::atomic<uint32_t> g_groups{0};

// Ranks made different calls: every rank sees it in the same exchange, so no rank waits.
struct Mismatch : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class NeuronBackend : public c10d::Backend {
 public:
  NeuronBackend(c10::intrusive_ptr<c10d::Store> store, int rank, int size,
                c10::intrusive_ptr<c10d::Backend> data, c10::intrusive_ptr<c10d::Backend> control,
                std::chrono::milliseconds timeout, std::vector<int64_t> global_ranks)
      : c10d::Backend(rank, size),
        store_(std::move(store)),
        data_(std::move(data)),
        control_(std::move(control)),
        timeout_(timeout),
        slot_(g_groups.fetch_add(1)) {
    for (int64_t r : global_ranks) global_ranks_.push_back(static_cast<uint64_t>(r));
    if (global_ranks_.empty())
      for (int r = 0; r < size; ++r) global_ranks_.push_back(static_cast<uint64_t>(r));
    TORCH_CHECK(static_cast<int>(global_ranks_.size()) == size, "neuron: ",
                global_ranks_.size(), " global ranks for a group of ", size);
    std::ostringstream text;
    text << "[";
    for (size_t i = 0; i < global_ranks_.size(); ++i) text << (i ? ", " : "") << global_ranks_[i];
    text << "]";
    ranks_text_ = text.str();
    stride_ = global_ranks_.size() > 1
                  ? static_cast<int64_t>(global_ranks_[1]) - static_cast<int64_t>(global_ranks_[0])
                  : 1;
    for (size_t i = 1; i < global_ranks_.size(); ++i)
      if (static_cast<int64_t>(global_ranks_[i] - global_ranks_[i - 1]) != stride_) stride_ = -1;
    beat_ = std::thread([this] { heartbeat(); });
  }

  ~NeuronBackend() override {
    {
      std::lock_guard<std::mutex> lock(beat_mu_);
      stop_ = true;
    }
    beat_cv_.notify_all();
    if (beat_.joinable()) beat_.join();
  }

  const std::string getBackendName() const override { return "neuron"; }
  uint64_t getSequenceNumberForGroup() override { return seq_; }

  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override {
    check_dense("allreduce", tensors);
    Call c = base("allreduce", NPC_COLL_ALL_REDUCE, "AllReduce", OpType::ALLREDUCE, tensors,
                  tensors);
    c.reduce = reduce_name(opts.reduceOp);
    c.message_bytes = nbytes(tensors);
    auto cpu = std::make_shared<std::vector<at::Tensor>>(cpu_views(tensors));
    const c10d::ReduceOp op = opts.reduceOp;
    c10d::AllreduceOptions g = opts;
    g.reduceOp = gloo_op(op);
    c.exchange = [this, cpu, op, g] {
      premultiply(op, *cpu);
      return data_->allreduce(*cpu, g);
    };
    c.after = [cpu, op, n = getSize()] { finish_reduce(op, *cpu, n); };
    return run(std::move(c));
  }

  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override {
    check_dense("allreduce_coalesced", tensors);
    Call c = base("allreduce_coalesced", NPC_COLL_ALL_REDUCE, "AllReduce", OpType::ALLREDUCE,
                  tensors, tensors);
    c.reduce = reduce_name(opts.reduceOp);
    c.message_bytes = nbytes(tensors);
    auto cpu = std::make_shared<std::vector<at::Tensor>>(cpu_views(tensors));
    const c10d::ReduceOp op = opts.reduceOp;
    c10d::AllreduceOptions g;
    g.reduceOp = gloo_op(op);
    g.timeout = opts.timeout;
    c.exchange = [this, cpu, op, g] {
      premultiply(op, *cpu);
      c10::intrusive_ptr<c10d::Work> last;
      for (at::Tensor& t : *cpu) {
        std::vector<at::Tensor> one{t};
        last = data_->allreduce(one, g);
        last->wait();
      }
      return last;
    };
    c.after = [cpu, op, n = getSize()] { finish_reduce(op, *cpu, n); };
    return run(std::move(c));
  }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override {
    check_dense("broadcast", tensors);
    Call c = base("broadcast", NPC_COLL_BROADCAST, "Broadcast", OpType::BROADCAST, tensors,
                  tensors);
    c.message_bytes = nbytes(tensors);
    auto cpu = std::make_shared<std::vector<at::Tensor>>(cpu_views(tensors));
    c.exchange = [this, cpu, opts] { return data_->broadcast(*cpu, opts); };
    return run(std::move(c), opts.rootRank);
  }

  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override {
    check_dense("reduce", tensors);
    Call c = base("reduce", NPC_COLL_REDUCE, "Reduce", OpType::REDUCE, tensors, tensors);
    c.reduce = reduce_name(opts.reduceOp);
    c.message_bytes = nbytes(tensors);
    auto cpu = std::make_shared<std::vector<at::Tensor>>(cpu_views(tensors));
    const c10d::ReduceOp op = opts.reduceOp;
    c10d::ReduceOptions g = opts;
    g.reduceOp = gloo_op(op);
    const bool root = getRank() == opts.rootRank;
    c.exchange = [this, cpu, op, g] {
      premultiply(op, *cpu);
      return data_->reduce(*cpu, g);
    };
    c.after = [cpu, op, root, n = getSize()] {
      if (root) finish_reduce(op, *cpu, n);
    };
    return run(std::move(c), opts.rootRank);
  }

  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override {
    check_dense("allgather", inputs);
    std::vector<at::Tensor> flat;
    for (const auto& list : outputs) {
      check_dense("allgather", list);
      flat.insert(flat.end(), list.begin(), list.end());
    }
    Call c = base("allgather", NPC_COLL_ALL_GATHER, "AllGather", OpType::ALLGATHER, inputs, flat);
    c.message_bytes = nbytes(flat);
    auto in = std::make_shared<std::vector<at::Tensor>>(cpu_views(inputs));
    auto out = std::make_shared<std::vector<std::vector<at::Tensor>>>(cpu_views(outputs));
    c.exchange = [this, in, out, opts] { return data_->allgather(*out, *in, opts); };
    return run(std::move(c));
  }

  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override {
    std::vector<at::Tensor> ins{input}, outs{output};
    check_dense("all_gather_into_tensor", ins);
    check_dense("all_gather_into_tensor", outs);
    Call c = base("_allgather_base", NPC_COLL_ALL_GATHER, "AllGather", OpType::_ALLGATHER_BASE,
                  ins, outs);
    c.message_bytes = nbytes(outs);
    auto in = std::make_shared<at::Tensor>(cpu_view(input));
    auto out = std::make_shared<at::Tensor>(cpu_view(output));
    c.exchange = [this, in, out, opts] { return data_->_allgather_base(*out, *in, opts); };
    return run(std::move(c));
  }

  c10::intrusive_ptr<c10d::Work> all_gather_single(at::Tensor& output, at::Tensor& input,
                                                   const c10d::AllgatherOptions& opts) override {
    return _allgather_base(output, input, opts);
  }

  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override {
    TORCH_CHECK(outputs.size() == inputs.size(), "neuron: allgather_into_tensor_coalesced: ",
                outputs.size(), " outputs for ", inputs.size(), " inputs");
    check_dense("allgather_into_tensor_coalesced", inputs);
    check_dense("allgather_into_tensor_coalesced", outputs);
    Call c = base("allgather_into_tensor_coalesced", NPC_COLL_ALL_GATHER, "AllGather",
                  OpType::COALESCED, inputs, outputs);
    c.message_bytes = nbytes(outputs);
    auto in = std::make_shared<std::vector<at::Tensor>>(cpu_views(inputs));
    auto out = std::make_shared<std::vector<at::Tensor>>(cpu_views(outputs));
    c.exchange = [this, in, out, opts] {
      c10::intrusive_ptr<c10d::Work> last;
      for (size_t i = 0; i < in->size(); ++i) {
        last = data_->_allgather_base((*out)[i], (*in)[i], opts);
        last->wait();
      }
      return last;
    };
    return run(std::move(c));
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override {
    check_dense("reduce_scatter", outputs);
    std::vector<at::Tensor> flat;
    for (const auto& list : inputs) {
      check_dense("reduce_scatter", list);
      flat.insert(flat.end(), list.begin(), list.end());
    }
    Call c = base("reduce_scatter", NPC_COLL_REDUCE_SCATTER, "ReduceScatter",
                  OpType::REDUCE_SCATTER, flat, outputs);
    c.reduce = reduce_name(opts.reduceOp);
    c.message_bytes = nbytes(flat);
    auto in = std::make_shared<std::vector<std::vector<at::Tensor>>>(cpu_views(inputs));
    auto out = std::make_shared<std::vector<at::Tensor>>(cpu_views(outputs));
    const c10d::ReduceOp op = opts.reduceOp;
    c10d::ReduceScatterOptions g = opts;
    g.reduceOp = gloo_op(op);
    c.exchange = [this, in, out, op, g] {
      for (auto& list : *in) premultiply(op, list);
      return data_->reduce_scatter(*out, *in, g);
    };
    c.after = [out, op, n = getSize()] { finish_reduce(op, *out, n); };
    return run(std::move(c));
  }

  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override {
    std::vector<at::Tensor> ins{input}, outs{output};
    check_dense("reduce_scatter_tensor", ins);
    check_dense("reduce_scatter_tensor", outs);
    Call c = base("_reduce_scatter_base", NPC_COLL_REDUCE_SCATTER, "ReduceScatter",
                  OpType::_REDUCE_SCATTER_BASE, ins, outs);
    c.reduce = reduce_name(opts.reduceOp);
    c.message_bytes = nbytes(ins);
    // The input is a temporary of this call for gloo: PREMUL_SUM scales a copy.
    auto in = std::make_shared<std::vector<at::Tensor>>(std::vector<at::Tensor>{cpu_view(input)});
    auto out = std::make_shared<std::vector<at::Tensor>>(std::vector<at::Tensor>{cpu_view(output)});
    const c10d::ReduceOp op = opts.reduceOp;
    c10d::ReduceScatterOptions g = opts;
    g.reduceOp = gloo_op(op);
    c.exchange = [this, in, out, op, g] {
      if (op.op_ == c10d::ReduceOp::PREMUL_SUM) (*in)[0] = (*in)[0].clone();
      premultiply(op, *in);
      return data_->_reduce_scatter_base((*out)[0], (*in)[0], g);
    };
    c.after = [out, op, n = getSize()] { finish_reduce(op, *out, n); };
    return run(std::move(c));
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter_single(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override {
    return _reduce_scatter_base(output, input, opts);
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts) override {
    TORCH_CHECK(outputs.size() == inputs.size(), "neuron: reduce_scatter_tensor_coalesced: ",
                outputs.size(), " outputs for ", inputs.size(), " inputs");
    check_dense("reduce_scatter_tensor_coalesced", inputs);
    check_dense("reduce_scatter_tensor_coalesced", outputs);
    Call c = base("reduce_scatter_tensor_coalesced", NPC_COLL_REDUCE_SCATTER, "ReduceScatter",
                  OpType::COALESCED, inputs, outputs);
    c.reduce = reduce_name(opts.reduceOp);
    c.message_bytes = nbytes(inputs);
    auto in = std::make_shared<std::vector<at::Tensor>>(cpu_views(inputs));
    auto out = std::make_shared<std::vector<at::Tensor>>(cpu_views(outputs));
    const c10d::ReduceOp op = opts.reduceOp;
    c10d::ReduceScatterOptions g = opts;
    g.reduceOp = gloo_op(op);
    c.exchange = [this, in, out, op, g] {
      c10::intrusive_ptr<c10d::Work> last;
      for (size_t i = 0; i < in->size(); ++i) {
        at::Tensor src = op.op_ == c10d::ReduceOp::PREMUL_SUM ? (*in)[i].clone() : (*in)[i];
        std::vector<at::Tensor> one{src};
        premultiply(op, one);
        last = data_->_reduce_scatter_base((*out)[i], one[0], g);
        last->wait();
      }
      return last;
    };
    c.after = [out, op, n = getSize()] { finish_reduce(op, *out, n); };
    return run(std::move(c));
  }

  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& out_split,
                                               std::vector<int64_t>& in_split,
                                               const c10d::AllToAllOptions& opts) override {
    std::vector<at::Tensor> ins{input}, outs{output};
    check_dense("all_to_all_single", ins);
    check_dense("all_to_all_single", outs);
    Call c = base(in_split.empty() && out_split.empty() ? "all_to_all" : "all_to_allv",
                  NPC_COLL_ALL_TO_ALL, "AllToAll", OpType::ALLTOALL_BASE, ins, outs);
    c.message_bytes = nbytes(ins);
    if (std::string_view(c.coll_name) == "all_to_allv")
      c.checked_nelems = -1;  // the inputs may differ in size from rank to rank
    c.in_split = in_split;
    c.out_split = out_split;
    auto in = std::make_shared<at::Tensor>(cpu_view(input));
    auto out = std::make_shared<at::Tensor>(cpu_view(output));
    c.exchange = [this, in, out, out_split, in_split, opts]() mutable {
      return data_->alltoall_base(*out, *in, out_split, in_split, opts);
    };
    return run(std::move(c));
  }

  c10::intrusive_ptr<c10d::Work> all_to_all_single(at::Tensor& output, at::Tensor& input,
                                                   std::vector<int64_t>& out_split,
                                                   std::vector<int64_t>& in_split,
                                                   const c10d::AllToAllOptions& opts) override {
    return alltoall_base(output, input, out_split, in_split, opts);
  }

  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override {
    check_dense("all_to_all", inputs);
    check_dense("all_to_all", outputs);
    Call c = base("all_to_all", NPC_COLL_ALL_TO_ALL, "AllToAll", OpType::ALLTOALL, inputs,
                  outputs);
    c.message_bytes = nbytes(inputs);
    auto in = std::make_shared<std::vector<at::Tensor>>(cpu_views(inputs));
    auto out = std::make_shared<std::vector<at::Tensor>>(cpu_views(outputs));
    c.exchange = [this, in, out, opts] { return data_->alltoall(*out, *in, opts); };
    return run(std::move(c));
  }

  // scatter and gather move (N-1)/N of the whole buffer through the root's link, as
  // every rank's link carries in an all-to-all: the topology model costs them as an
  // all-to-all of the whole buffer (flat across instances, like an all-to-all). The
  // buffer's size is the same on every rank (the root's list, N of this rank's tensor),
  // so every rank computes the same end.
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override {
    check_dense("scatter", outputs);
    const bool root = getRank() == opts.rootRank;
    check_root_list("scatter", opts.rootRank, inputs, outputs);
    Call c = base("scatter", NPC_COLL_ALL_TO_ALL, "Scatter", OpType::SCATTER,
                  root ? inputs[0] : std::vector<at::Tensor>{}, outputs);
    c.message_bytes = nbytes(outputs) * static_cast<uint64_t>(getSize());
    c.checked_nelems = c.out_nelems;
    auto in = std::make_shared<std::vector<std::vector<at::Tensor>>>(cpu_views(inputs));
    auto out = std::make_shared<std::vector<at::Tensor>>(cpu_views(outputs));
    c.exchange = [this, in, out, opts] { return data_->scatter(*out, *in, opts); };
    return run(std::move(c), opts.rootRank);
  }

  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override {
    check_dense("gather", inputs);
    const bool root = getRank() == opts.rootRank;
    check_root_list("gather", opts.rootRank, outputs, inputs);
    Call c = base("gather", NPC_COLL_ALL_TO_ALL, "Gather", OpType::GATHER, inputs,
                  root ? outputs[0] : std::vector<at::Tensor>{});
    c.message_bytes = nbytes(inputs) * static_cast<uint64_t>(getSize());
    auto in = std::make_shared<std::vector<at::Tensor>>(cpu_views(inputs));
    auto out = std::make_shared<std::vector<std::vector<at::Tensor>>>(cpu_views(outputs));
    c.exchange = [this, in, out, opts] { return data_->gather(*out, *in, opts); };
    return run(std::move(c), opts.rootRank);
  }

  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& /*opts*/) override {
    Call c = base("barrier", NPC_COLL_BARRIER, "Barrier", OpType::BARRIER, {}, {});
    c.host_waits = true;
    return run(std::move(c));
  }

  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst,
                                      int tag) override {
    check_dense("send", tensors);
    check_peer("send", dst);
    return point_to_point(true, tensors, dst, tag);
  }

  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src,
                                      int tag) override {
    check_dense("recv", tensors);
    check_peer("recv", src);
    return point_to_point(false, tensors, src, tag);
  }

 private:
  void check_dense(const char* what, const std::vector<at::Tensor>& ts) const {
    for (const at::Tensor& t : ts) {
      TORCH_CHECK(t.device().type() == c10::DeviceType::PrivateUse1, "neuron: ", what,
                  " takes neuron tensors; got one on ", t.device(),
                  " (use \"cpu:gloo,neuron:neuron\" for CPU tensors)");
      TORCH_CHECK(t.is_non_overlapping_and_dense(), "neuron: ", what,
                  " takes dense tensors; got one of sizes ", t.sizes(), " strides ",
                  t.strides());
    }
  }

  // The root's list of scatter's inputs (gather's outputs): one list of one tensor per
  // rank, each like this rank's own; no list on the other ranks.
  void check_root_list(const char* what, int64_t root,
                       const std::vector<std::vector<at::Tensor>>& lists,
                       const std::vector<at::Tensor>& mine) const {
    TORCH_CHECK(mine.size() == 1, "neuron: ", what, " takes one tensor per rank; got ",
                mine.size());
    TORCH_CHECK(root >= 0 && root < getSize(), "neuron: ", what, " from root ", root,
                " in a group of ", getSize());
    if (getRank() != root) {
      TORCH_CHECK(lists.empty() || (lists.size() == 1 && lists[0].empty()), "neuron: ", what,
                  ": only the root (rank ", root, ") passes a list; rank ", getRank(),
                  " passed one");
      return;
    }
    TORCH_CHECK(lists.size() == 1 && static_cast<int>(lists[0].size()) == getSize(),
                "neuron: ", what, " on the root needs one list of ", getSize(),
                " tensors (one per rank)");
    check_dense(what, lists[0]);
    for (const at::Tensor& t : lists[0])
      TORCH_CHECK(t.sizes() == mine[0].sizes() && t.scalar_type() == mine[0].scalar_type(),
                  "neuron: ", what, ": the root's tensors must be like rank ", getRank(),
                  "'s own (", mine[0].sizes(), " ", c10::toString(mine[0].scalar_type()),
                  "); got ", t.sizes(), " ", c10::toString(t.scalar_type()));
  }

  void check_peer(const char* what, int peer) const {
    TORCH_CHECK(peer >= 0 && peer < getSize() && peer != getRank(), "neuron: ", what,
                " to/from rank ", peer, " of a group of ", getSize(), " (this is rank ",
                getRank(), ")");
  }

  Call base(const char* name, uint16_t op, const char* stem, OpType type,
            std::vector<at::Tensor> inputs, std::vector<at::Tensor> outputs) {
    Call c{name, op, stem};
    c.type = type;
    c.in_nelems = numel(inputs);
    c.out_nelems = numel(outputs);
    c.checked_nelems = c.in_nelems;
    if (!inputs.empty())
      c.dtype = inputs[0].scalar_type();
    else if (!outputs.empty())
      c.dtype = outputs[0].scalar_type();
    c.inputs = std::move(inputs);
    c.outputs = std::move(outputs);
    return c;
  }

  // The kernel's NCCL-style args (as PyTorch writes them on record_param_comms), so
  // tools match each collective across the rank traces.
  // Point-to-point calls have a sequence of their own: no `Seq` (it would collide with
  // the collectives' in the group).
  void note_args(const Call& c, uint64_t seq, const npc_collective_span_t& span,
                 const std::vector<uint64_t>& ranks, bool with_seq = true) {
    if (!nph_is_enabled()) return;
    std::vector<KernelArg> args{
        arg("Collective name", c.coll_name),
        arg("In msg nelems", c.in_nelems),
        arg("Out msg nelems", c.out_nelems),
        arg("Group size", static_cast<int64_t>(ranks.size())),
        arg("dtype", std::string(c10::toString(c.dtype))),
        arg("In split size", json_list(c.in_split)),
        arg("Out split size", json_list(c.out_split)),
        arg("Process Group Name", getGroupUid()),
        arg("Process Group Description", getGroupDesc()),
        arg("Process Group Ranks", ranks_text_),
        arg("Rank", static_cast<int64_t>(getRank())),
        arg("algorithm", std::string(algorithm_name(span.algorithm))),
        arg("last rank", static_cast<int64_t>(ranks[span.last])),
        arg("waited (ns)", static_cast<int64_t>(span.waited_ns))};
    if (with_seq) args.push_back(arg("Seq", static_cast<int64_t>(seq)));
    note_kernel_args(span.corr_id, std::move(args));
  }

  c10::DeviceIndex device_of(const Call& c) const {
    if (!c.inputs.empty()) return c.inputs[0].device().index();
    if (!c.outputs.empty()) return c.outputs[0].device().index();
    return current_device();
  }

  npc_collective_t describe(const Call& c, c10::DeviceIndex device, uint64_t corr) {
    npc_collective_t d{};
    d.kernel_stem = c.stem;
    d.reduce = c.reduce;
    d.dtype_name = dtype_tag(c.dtype);
    d.group_name = getGroupUid().c_str();
    d.ranks = global_ranks_.data();
    d.n_ranks = static_cast<uint32_t>(global_ranks_.size());
    d.me = static_cast<uint32_t>(getRank());
    d.corr_id = corr;
    d.message_bytes = c.message_bytes;
    d.input_bytes = nbytes(c.inputs);
    d.op = c.op;
    d.device = static_cast<uint16_t>(device);
    d.queue = queue(device);
    d.inputs_queue = current_queue(device);
    d.dtype = static_cast<uint16_t>(c.dtype);
    return d;
  }

  uint16_t queue(c10::DeviceIndex device) {
    const int32_t q = npc_collective_queue(static_cast<uint16_t>(device), slot_);
    TORCH_CHECK(q >= 0, "neuron: no device ", int(device));
    return static_cast<uint16_t>(q);
  }

  // The future a DDP comm hook reads: completed on the collective's queue, so a
  // consumer's current stream waits for the collective's end.
  c10::intrusive_ptr<c10::ivalue::Future> completed_future(const std::vector<at::Tensor>& outs,
                                                           c10::DeviceIndex device,
                                                           uint16_t queue) {
    auto future = c10::make_intrusive<c10::ivalue::Future>(
        c10::ListType::create(c10::TensorType::get()),
        std::vector<c10::Device>{c10::Device(c10::DeviceType::PrivateUse1, device)});
    const uint16_t saved = current_queue(device);
    set_current_queue(device, queue);
    try {
      future->markCompleted(c10::IValue(outs));
    } catch (...) {
      set_current_queue(device, saved);
      throw;
    }
    set_current_queue(device, saved);
    return future;
  }

  // The ranks that did not reach collective `seq`: every rank's heartbeat thread
  // publishes, twice a second, the last collective it entered; after three periods a rank
  // whose published number is still below `seq` (or that never published: a dead
  // process) is missing.
  std::vector<int> missing_ranks(uint64_t seq) {
    std::vector<int> missing;
    try {
      std::this_thread::sleep_for(3 * kHeartbeat);
      for (int r = 0; r < getSize(); ++r) {
        if (r == getRank()) continue;
        const std::string key = heartbeat_key(r);
        uint64_t reached = 0;
        if (store_->check({key})) {
          const std::vector<uint8_t> v = store_->get(key);
          reached = std::stoull(std::string(v.begin(), v.end()));
        }
        if (reached < seq) missing.push_back(r);
      }
    } catch (const std::exception&) {
      missing.clear();  // the store is gone too: say nothing rather than guess
    }
    return missing;
  }

  std::string describe_failure(const char* name, uint64_t seq, const std::string& why) {
    const std::vector<int> missing = missing_ranks(seq);
    std::ostringstream msg;
    msg << "neuron: " << name << " #" << seq << " of process group " << getGroupUid() << " "
        << ranks_text_ << " failed on rank " << getRank() << " (global "
        << global_ranks_[getRank()] << "): ";
    if (missing.empty()) {
      msg << "no rank is known to be missing";
    } else {
      msg << (missing.size() == 1 ? "rank " : "ranks ");
      for (size_t i = 0; i < missing.size(); ++i)
        msg << (i ? ", " : "") << missing[i] << " (global " << global_ranks_[missing[i]] << ")";
      msg << " did not take part";
    }
    msg << " (timeout " << timeout_.count() << " ms): " << why;
    return msg.str();
  }

  // Runs fn (real blocking work with the other ranks) inside a cut; a failure becomes
  // the error that names the collective, its sequence number and the missing ranks.
  template <typename F>
  void exchange(const char* name, uint64_t seq, F&& fn) {
    Cut cut;
    try {
      fn();
    } catch (const Mismatch&) {
      throw;
    } catch (const std::exception& e) {
      throw std::runtime_error(describe_failure(name, seq, e.what()));
    }
  }

  c10::intrusive_ptr<c10d::Work> run(Call c, int64_t root = 0) {
    const uint64_t seq = ++seq_;
    entered_.store(seq);
    const c10::DeviceIndex device = device_of(c);
    RECORD_PARAM_COMMS_DATA(std::make_tuple(static_cast<int64_t>(seq), false),
                            std::make_tuple(getGroupUid(), getGroupDesc()), c.inputs, c.outputs,
                            getRank(), c.coll_name, c.in_nelems, c.out_nelems, c.dtype,
                            c.in_split, c.out_split, static_cast<int64_t>(global_ranks_[0]),
                            stride_, getSize());
    const uint64_t corr = nph_next_corr_id();
    npc_collective_t d = describe(c, device, corr);
    uint64_t ready = 0;
    int32_t status = npc_collective_issue(&d, &ready);
    if (status != NPC_OK) throw_last_error("collective launch", status);
    if (nph_is_enabled()) link_correlation(corr, torch_correlation_id());

    // Every rank's ready instant, sequence number and signature, then the data.
    std::vector<uint64_t> ready_all(getSize());
    exchange(c.coll_name, seq, [&] {
      const int64_t sig = static_cast<int64_t>(
          signature(c.coll_name, c.checked_nelems, static_cast<int64_t>(c.dtype), root));
      at::Tensor mine = at::empty({3}, at::kLong);
      int64_t* m = mine.data_ptr<int64_t>();
      m[0] = static_cast<int64_t>(ready);
      m[1] = static_cast<int64_t>(seq);
      m[2] = sig;
      std::vector<at::Tensor> in{mine};
      std::vector<std::vector<at::Tensor>> out(1);
      for (int r = 0; r < getSize(); ++r) out[0].push_back(at::empty({3}, at::kLong));
      control_->allgather(out, in)->wait();
      for (int r = 0; r < getSize(); ++r) {
        const int64_t* v = out[0][r].data_ptr<int64_t>();
        if (v[1] != static_cast<int64_t>(seq) || v[2] != sig) {
          std::ostringstream msg;
          msg << "neuron: " << c.coll_name << " #" << seq << " of process group "
              << getGroupUid() << " " << ranks_text_ << ": rank " << r << " made call #" << v[1]
              << (v[1] == static_cast<int64_t>(seq) ? " with other sizes, type or root" : "")
              << " while rank " << getRank() << " made this one (" << c.in_nelems
              << " elements of " << c10::toString(c.dtype) << ")";
          throw Mismatch(msg.str());
        }
        ready_all[r] = static_cast<uint64_t>(v[0]);
      }
      if (c.exchange) {
        auto work = c.exchange();
        if (work) work->wait();
      }
      if (c.after) c.after();
    });
    npc_collective_span_t span{};
    status = npc_collective_place(&d, ready_all.data(), &span);
    if (status != NPC_OK) throw_last_error("collective placement", status);
    note_args(c, seq, span, global_ranks_);
    auto future = completed_future(c.outputs, device, d.queue);
    return c10::make_intrusive<NeuronWork>(getRank(), c.type, c.outputs,
                                           end_event(d.device, d.queue, span), c.host_waits,
                                           std::move(future));
  }

  // send/recv: each end posts, without blocking, its ready instant to the other, a
  // receive of the other's, and the data's send or receive; its Work waits for them
  // (inside a cut) at its first wait, and places the transfer from the later of the two
  // ready instants plus the model's point-to-point cost: the same end on both sides. No
  // order of isend/irecv/wait calls can deadlock on the control messages.
  c10::intrusive_ptr<c10d::Work> point_to_point(bool sending, std::vector<at::Tensor>& tensors,
                                                int peer, int tag) {
    const uint64_t seq = ++p2p_seq_;
    const char* name = sending ? "send" : "recv";
    Call c = base(name, sending ? NPC_COLL_SEND : NPC_COLL_RECV, sending ? "Send" : "Recv",
                  sending ? OpType::SEND : OpType::RECV, tensors, tensors);
    c.message_bytes = nbytes(tensors);
    const c10::DeviceIndex device = device_of(c);
    RECORD_PARAM_COMMS_DATA(std::make_tuple(static_cast<int64_t>(seq), true),
                            std::make_tuple(getGroupUid(), getGroupDesc()), c.inputs, c.outputs,
                            getRank(), name, c.in_nelems, c.out_nelems, c.dtype, c.in_split,
                            c.out_split, static_cast<int64_t>(global_ranks_[0]), stride_,
                            getSize());
    const uint64_t corr = nph_next_corr_id();
    npc_collective_t d = describe(c, device, corr);
    // The pair in (sender, receiver) order.
    const int sender = sending ? getRank() : peer, receiver = sending ? peer : getRank();
    auto pair = std::make_shared<std::vector<uint64_t>>(
        std::vector<uint64_t>{global_ranks_[sender], global_ranks_[receiver]});
    d.ranks = pair->data();
    d.n_ranks = 2;
    d.me = sending ? 0 : 1;
    uint64_t ready = 0;
    int32_t status = npc_collective_issue(&d, &ready);
    if (status != NPC_OK) throw_last_error("collective launch", status);
    if (nph_is_enabled()) link_correlation(corr, torch_correlation_id());

    auto cpu = std::make_shared<std::vector<at::Tensor>>(cpu_views(tensors));
    auto mine = std::make_shared<at::Tensor>(at::full({1}, static_cast<int64_t>(ready), at::kLong));
    auto theirs = std::make_shared<at::Tensor>(at::empty({1}, at::kLong));
    std::vector<c10::intrusive_ptr<c10d::Work>> posted;
    exchange(name, seq, [&] {
      std::vector<at::Tensor> m{*mine}, t{*theirs};
      posted.push_back(control_->send(m, peer, tag));
      posted.push_back(control_->recv(t, peer, tag));
      posted.push_back(sending ? data_->send(*cpu, peer, tag) : data_->recv(*cpu, peer, tag));
    });
    auto work = c10::make_intrusive<NeuronWork>(getRank(), c.type, tensors, npc_event_t{},
                                                false, nullptr);
    NeuronWork* raw = work.get();  // the work owns the function that uses it
    auto strings = std::make_shared<std::vector<std::string>>(
        std::vector<std::string>{c.stem, d.dtype_name, getGroupUid()});
    work->set_pending(posted);
    work->set_deferred([this, raw, posted, d, pair, strings, mine, theirs, cpu, ready, name,
                        seq, sending, c]() mutable {
      exchange(name, seq, [&] {
        for (auto& w : posted) w->wait();
      });
      d.kernel_stem = (*strings)[0].c_str();
      d.dtype_name = (*strings)[1].c_str();
      d.group_name = (*strings)[2].c_str();
      d.ranks = pair->data();
      const uint64_t other = static_cast<uint64_t>(theirs->data_ptr<int64_t>()[0]);
      const uint64_t both[2] = {sending ? ready : other, sending ? other : ready};
      npc_collective_span_t span{};
      const int32_t s = npc_collective_place(&d, both, &span);
      if (s != NPC_OK) throw_last_error("collective placement", s);
      note_args(c, seq, span, *pair, false);
      raw->set_end(end_event(d.device, d.queue, span));
      raw->set_future(
          completed_future(c.outputs, static_cast<c10::DeviceIndex>(d.device), d.queue));
    });
    return work;
  }

  static constexpr std::chrono::milliseconds kHeartbeat{500};

  // The store is the group's own (c10d prefixes it with the group's name).
  static std::string heartbeat_key(int rank) { return "neuron-reached/" + std::to_string(rank); }

  // Publishes the last collective this rank entered (see missing_ranks) until the
  // backend is destroyed or the store fails.
  void heartbeat() {
    const std::string key = heartbeat_key(getRank());
    std::unique_lock<std::mutex> lock(beat_mu_);
    while (!stop_) {
      const std::string text = std::to_string(entered_.load());
      lock.unlock();
      try {
        store_->set(key, std::vector<uint8_t>(text.begin(), text.end()));
      } catch (const std::exception&) {
        return;
      }
      lock.lock();
      beat_cv_.wait_for(lock, kHeartbeat, [this] { return stop_; });
    }
  }

  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::Backend> data_;
  c10::intrusive_ptr<c10d::Backend> control_;
  std::chrono::milliseconds timeout_;
  uint32_t slot_;
  std::vector<uint64_t> global_ranks_;
  std::string ranks_text_;
  int64_t stride_ = 1;
  uint64_t seq_ = 0;
  uint64_t p2p_seq_ = 0;
  std::atomic<uint64_t> entered_{0};
  std::mutex beat_mu_;
  std::condition_variable beat_cv_;
  bool stop_ = false;
  std::thread beat_;
};

}  // namespace

void register_distributed(py::module& m) {
  py::class_<NeuronBackend, c10d::Backend, c10::intrusive_ptr<NeuronBackend>>(
      m, "NeuronBackend", "The c10d backend of the emulated neuron device")
      .def(py::init([](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                       const c10::intrusive_ptr<c10d::Backend>& data,
                       const c10::intrusive_ptr<c10d::Backend>& control, double timeout_s,
                       std::vector<int64_t> global_ranks) {
             return c10::make_intrusive<NeuronBackend>(
                 store, rank, size, data, control,
                 std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000.0)),
                 std::move(global_ranks));
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("data"),
           py::arg("control"), py::arg("timeout_s"), py::arg("global_ranks"),
           py::call_guard<py::gil_scoped_release>());
  m.def(
      "monitor_set_rank",
      [](uint32_t rank, uint32_t world_size) {
        const int32_t status = npc_monitor_set_rank(rank, world_size);
        if (status != NPC_OK) throw_last_error("monitor rank", status);
      },
      "Tags this process's live-monitoring entry with its rank in the job (neuronprof "
      "monitor, neuron-top)",
      py::arg("rank"), py::arg("world_size"));
}

}  // namespace neuronprof
