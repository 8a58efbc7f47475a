// Errors of queued kernels (python/README.md, "Errors of queued kernels").
//
// The emulator computes an op's values at its launch, on the host, but a real device
// runs the kernel later: an error only the values can cause (an index out of range in
// index_select, gather, scatter, embedding, nll_loss's targets, ...) is found by the
// device while it runs, and the host learns of it at its next synchronizing call. The
// fallback tells the two kinds apart by the op's meta kernel (shapes and dtypes only): an
// error the meta kernel raises too is an argument check, raised at the op as on CUDA;
// an error only the CPU kernel raises is the kernel's. That one is kept per device
// (the first; later ones are counted) and raised as a RuntimeError, naming the op and its
// integer (index) inputs, by the next synchronizing call on that device: synchronize,
// `.item()`, a copy to the host, Event.synchronize, Stream.synchronize, Event.query,
// Stream.query (CUDA's queries return a kernel's error too). The op's outputs
// are fresh zero-filled tensors of the shapes the meta kernel gave (a device leaves them
// undefined), so the program runs on to that call.
//
// CUDA's error is "sticky": the context is unusable and every later call fails until the
// process ends. Here the emulated device is intact after the error, so it is reported
// once and cleared: a second synchronization succeeds and the device keeps working. An
// error still pending when the process ends is printed to stderr (device.py's atexit
// hook), so none is lost.
//
// NEURON_LAUNCH_BLOCKING=1 (read once, as CUDA_LAUNCH_BLOCKING) makes every launch wait
// for its kernel's modeled end on its stream, and a kernel error raises at the op itself.
#include "neuron.h"

#include <atomic>
#include <exception>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include <ATen/ops/empty_strided.h>
#include <c10/core/DeviceGuard.h>

namespace neuronprof {

namespace {

struct Pending {
  std::string message;
  uint64_t later = 0;  // kernels that failed after the first, before it was reported
};

std::mutex g_mutex;
std::unordered_map<int, Pending> g_pending;
std::atomic<int> g_pending_devices{0};

std::string shape(const at::Tensor& t) {
  std::ostringstream s;
  s << dtype_tag(t.scalar_type()) << '[';
  for (int64_t i = 0; i < t.dim(); ++i) s << (i ? ", " : "") << t.size(i);
  s << ']';
  return s.str();
}

bool is_index(const at::Tensor& t) {
  return t.defined() && c10::isIntegralType(t.scalar_type(), /*includeBool=*/false);
}

// The value range of an integer tensor (on the host: device memory is host memory).
std::string value_range(const at::Tensor& t) {
  if (t.numel() == 0) return "empty";
  at::Tensor cpu = t.device().is_cpu()
                       ? t
                       : at::from_blob(t.data_ptr(), t.sizes(), t.strides(),
                                       t.options().device(c10::DeviceType::CPU));
  const at::Tensor flat = cpu.reshape({-1}).to(at::kLong);
  int64_t lo = 0, hi = 0;
  const int64_t* data = flat.data_ptr<int64_t>();
  lo = hi = data[0];
  for (int64_t i = 1; i < flat.numel(); ++i) {
    lo = std::min(lo, data[i]);
    hi = std::max(hi, data[i]);
  }
  return "values " + std::to_string(lo) + ".." + std::to_string(hi);
}

// "aten::index_select(self: f32[10, 4], dim: 0, index: i64[3])" and the index inputs.
void describe_call(const c10::FunctionSchema& schema, const std::vector<c10::IValue>& args,
                   std::string& call, std::string& indices) {
  std::ostringstream c, ix;
  c << schema.name();
  if (!schema.overload_name().empty()) c << '.' << schema.overload_name();
  c << '(';
  for (size_t i = 0; i < args.size() && i < schema.arguments().size(); ++i) {
    const std::string& name = schema.arguments()[i].name();
    c << (i ? ", " : "") << name << ": ";
    const c10::IValue& v = args[i];
    if (v.isTensor()) {
      const at::Tensor& t = v.toTensor();
      c << (t.defined() ? shape(t) : "undefined");
      if (is_index(t)) ix << (ix.tellp() > 0 ? "; " : "") << name << " (" << shape(t) << ", "
                          << value_range(t) << ')';
    } else if (v.isList()) {
      c << "list of " << v.toListRef().size();
      size_t k = 0;
      for (const c10::IValue& e : v.toListRef()) {
        if (e.isTensor() && is_index(e.toTensor()))
          ix << (ix.tellp() > 0 ? "; " : "") << name << '[' << k << "] (" << shape(e.toTensor())
             << ", " << value_range(e.toTensor()) << ')';
        ++k;
      }
    } else if (v.isScalar() || v.isBool() || v.isNone()) {
      c << v;
    } else {
      c << v.tagKind();
    }
  }
  c << ')';
  call = c.str();
  indices = ix.str();
}

at::Tensor meta_of(const at::Tensor& t) {
  if (!t.defined()) return t;
  return at::empty_strided(t.sizes(), t.strides(), t.options().device(c10::kMeta));
}

c10::IValue meta_value(const c10::IValue& v) {
  if (v.isTensor()) return meta_of(v.toTensor());
  if (v.isList()) {
    c10::List<c10::IValue> list = v.toList();
    c10::impl::GenericList out(list.elementType());
    out.reserve(list.size());
    for (const c10::IValue& e : list) out.push_back(e.isTensor() ? c10::IValue(meta_of(e.toTensor())) : e);
    return out;
  }
  return v;
}

// The device tensor standing for one meta result: fresh zeros of its shape.
at::Tensor device_result(const at::Tensor& meta, c10::Device device) {
  if (!meta.defined()) return meta;
  c10::DeviceGuard guard(device);
  at::Tensor out = at::empty_strided(meta.sizes(), meta.strides(), meta.options().device(device));
  if (out.numel() > 0) {
    at::Tensor host = at::from_blob(out.data_ptr(), out.sizes(), out.strides(),
                                    out.options().device(c10::DeviceType::CPU));
    host.zero_();
  }
  return out;
}

bool launch_blocking_env() {
  const char* env = std::getenv("NEURON_LAUNCH_BLOCKING");
  return env != nullptr && std::string_view(env) == "1";
}

}  // namespace

bool launch_blocking() {
  static const bool on = launch_blocking_env();
  return on;
}

void kernel_failed(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args,
                   const c10::Error& error, const std::exception_ptr& original,
                   c10::Device device, torch::jit::Stack* stack, size_t first) {
  const c10::FunctionSchema& schema = op.schema();
  // A sparse operand has no strided meta twin to check its arguments with: the error is
  // raised at the op.
  for (const c10::IValue& v : args) {
    if (v.isTensor() && v.toTensor().defined() && v.toTensor().layout() != c10::kStrided)
      std::rethrow_exception(original);
  }
  // The meta kernel: an error it raises too is an argument check (raised at the op).
  torch::jit::Stack meta;
  meta.reserve(args.size());
  for (const c10::IValue& v : args) meta.push_back(meta_value(v));
  try {
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::Meta), &meta);
  } catch (...) {
    // Python meta kernels raise Python errors (not c10::Error): any error counts.
    std::rethrow_exception(original);
  }
  std::string call, indices;
  describe_call(schema, args, call, indices);
  std::ostringstream m;
  m << "neuron: kernel " << call << " failed on " << device << ": " << error.msg();
  if (!indices.empty()) m << "\n  index inputs: " << indices;
  if (launch_blocking()) {
    m << "\n  (raised at the op: NEURON_LAUNCH_BLOCKING=1)";
    TORCH_CHECK(false, m.str());
  }
  // Results in place of the failed kernel's, for the program to run on to its next
  // synchronizing call.
  const auto& returns = schema.returns();
  std::vector<c10::IValue> results;
  for (size_t r = 0; r < returns.size(); ++r) {
    const c10::IValue& v = meta[meta.size() - returns.size() + r];
    const c10::AliasInfo* alias = returns[r].alias_info();
    if (alias != nullptr && alias->isWrite()) {
      // In-place or out=: the written argument of the same alias set, resized to the
      // meta result's shape.
      for (size_t i = 0; i < schema.arguments().size(); ++i) {
        const c10::AliasInfo* a = schema.arguments()[i].alias_info();
        if (a != nullptr && a->beforeSets() == alias->beforeSets()) {
          results.push_back(args[i]);
          break;
        }
      }
      TORCH_CHECK(results.size() == r + 1, "neuron: ", call, " failed (", error.msg(),
                  ") and its result could not be matched to an argument");
      continue;
    }
    if (v.isTensor()) {
      results.emplace_back(device_result(v.toTensor(), device));
    } else if (v.isTensorList()) {
      c10::List<at::Tensor> list;
      for (const at::Tensor& t : v.toTensorList().vec()) list.push_back(device_result(t, device));
      results.emplace_back(list);
    } else {
      results.push_back(v);
    }
  }
  if (stack->size() > first)
    stack->erase(stack->begin() + static_cast<std::ptrdiff_t>(first), stack->end());
  stack->insert(stack->end(), results.begin(), results.end());

  m << "\n  (the kernel was launched asynchronously, so this is reported at the next "
       "synchronizing call; NEURON_LAUNCH_BLOCKING=1 raises it at the op)";
  std::lock_guard<std::mutex> lock(g_mutex);
  auto [it, fresh] = g_pending.try_emplace(device.index());
  if (fresh) {
    it->second.message = m.str();
    g_pending_devices.fetch_add(1, std::memory_order_release);
  } else {
    ++it->second.later;
  }
}

std::optional<std::string> take_pending_error(int device) {
  if (g_pending_devices.load(std::memory_order_acquire) == 0) return std::nullopt;
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = device < 0 ? g_pending.begin() : g_pending.find(device);
  if (it == g_pending.end()) return std::nullopt;
  std::string message = it->second.message;
  if (it->second.later > 0)
    message += "\n  (" + std::to_string(it->second.later) +
               " later kernel(s) on this device failed too before this call)";
  g_pending.erase(it);
  g_pending_devices.fetch_sub(1, std::memory_order_release);
  return message;
}

void raise_pending_error(int device) {
  if (std::optional<std::string> message = take_pending_error(device)) {
    TORCH_CHECK(false, *message);
  }
}

}  // namespace neuronprof
