// Kernels of the neuron device: the explicit ones a device needs (empty, copies,
// views, resize, set_, scalar reads) and a boxed fallback for everything else that runs
// ATen's CPU kernel (directly on the device memory where aliased.cpp can, else through
// at::native::cpu_fallback) and records it as one device kernel:
// a launch on the calling thread and a kernel placed by the emulator's timing model
// (shape from the op: matmuls lowered like the emulator's matmul, everything else as
// a row kernel over its elements on the engine that would run it).
#include "neuron.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include <ATen/EmptyTensor.h>
#include <c10/core/DeviceGuard.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_local_scalar_dense_native.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/resize_native.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/view_native.h>
#include <torch/library.h>

namespace neuronprof {
namespace {

// Whether the fallback may run ops directly on device memory (aliased.cpp);
// NEURONPROF_TORCH_ALIASED=0 or set_aliased_fallback(false) forces cpu_fallback's copies.
std::atomic<bool> g_aliased{[] {
  const char* env = std::getenv("NEURONPROF_TORCH_ALIASED");
  return env == nullptr || std::string_view(env) != "0";
}()};

// Ops the fallback ran each way (fallback_counts()).
std::atomic<uint64_t> g_aliased_ops{0}, g_copied_ops{0};

// Depth of fallbacks and copies on this thread: the fallback's own copies to and from
// the CPU are part of its kernel, not launches of their own.
thread_local int t_depth = 0;

struct Nested {
  Nested() { ++t_depth; }
  ~Nested() { --t_depth; }
};

bool is_neuron(const at::Tensor& t) {
  return t.defined() && t.device().type() == c10::DeviceType::PrivateUse1;
}

// A CPU tensor over the same host memory (the emulator's device memory is host memory).
at::Tensor cpu_alias(const at::Tensor& t) {
  if (!is_neuron(t)) return t;
  return at::from_blob(t.data_ptr(), t.sizes(), t.strides(),
                       t.options().device(c10::DeviceType::CPU));
}

// ---------------------------------------------------------------------------------
// Explicit kernels.

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout> /*layout*/,
                               std::optional<c10::Device> device,
                               std::optional<bool> /*pin_memory*/,
                               std::optional<c10::MemoryFormat> memory_format) {
  // The allocator serves the current device: make it the requested one meanwhile.
  c10::OptionalDeviceGuard guard(device);
  constexpr c10::DispatchKeySet keys(c10::DispatchKey::PrivateUse1);
  return at::detail::empty_generic(size, neuron_allocator(), keys,
                                   c10::dtype_or_default(dtype), memory_format);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride,
                         std::optional<c10::ScalarType> dtype,
                         std::optional<c10::Layout> /*layout*/, std::optional<c10::Device> device,
                         std::optional<bool> /*pin_memory*/) {
  c10::OptionalDeviceGuard guard(device);
  constexpr c10::DispatchKeySet keys(c10::DispatchKey::PrivateUse1);
  return at::detail::empty_strided_generic(size, stride, neuron_allocator(), keys,
                                           c10::dtype_or_default(dtype));
}

npc_launch_t copy_launch(uint16_t kind, c10::DeviceIndex device, const at::Tensor& dst) {
  const char* name = kind == NPC_KERNEL_COPY_H2D   ? "Memcpy HtoD (Host -> Neuron)"
                     : kind == NPC_KERNEL_COPY_D2H ? "Memcpy DtoH (Neuron -> Host)"
                                                   : "Memcpy DtoD (Neuron -> Neuron)";
  npc_launch_t l{};
  l.name_id = intern(name);
  l.device = static_cast<uint16_t>(device);
  l.kind = kind;
  l.corr_id = nph_next_corr_id();
  l.bytes = dst.nbytes();
  l.dtype = npc_dtype(dst.scalar_type());
  l.queue = current_queue(device);
  return l;
}

// A copy is a launch on the current stream of the device side; the bytes move on the
// host inside a cut. A copy to the host makes the host wait for the modeled end of the
// copy (and so of the work queued before it on that stream), as a blocking device-to-host
// copy does; other copies return at once.
at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool /*non_blocking*/) {
  const bool from = is_neuron(self), to = is_neuron(dst);
  const uint16_t kind = from && to ? NPC_KERNEL_COPY_D2D
                        : to       ? NPC_KERNEL_COPY_H2D
                                   : NPC_KERNEL_COPY_D2H;
  const c10::DeviceIndex device = to ? dst.device().index() : self.device().index();
  const bool recorded = t_depth == 0;
  npc_kernel_span_t span{};
  uint64_t bytes = dst.nbytes();
  if (recorded && bytes > 0) {
    npc_launch_t l = copy_launch(kind, device, dst);
    span = launch(l);
  }
  {
    Nested nested;
    Cut cut;
    at::Tensor out = cpu_alias(dst);
    cpu_copy(out, cpu_alias(self));
  }
  // The host reads what it copied out only once the device has written it.
  if (recorded && bytes > 0 && kind == NPC_KERNEL_COPY_D2H) {
    npc_read_wait(static_cast<uint16_t>(device), &span, bytes);
  }
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  at::native::resize_(dst, self.sizes(), std::nullopt);
  return copy_from(self, dst, false);
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  // A read of one value: a small copy to the host that the host waits for.
  const c10::DeviceIndex device = self.device().index();
  if (t_depth == 0) {
    npc_launch_t l = copy_launch(NPC_KERNEL_COPY_D2H, device, self);
    l.bytes = self.element_size();
    npc_kernel_span_t span = launch(l);
    npc_read_wait(static_cast<uint16_t>(device), &span, l.bytes);
  }
  Cut cut;
  return at::native::_local_scalar_dense_cpu(cpu_alias(self));
}

const at::Tensor& resize_(const at::Tensor& self, c10::IntArrayRef size,
                          std::optional<c10::MemoryFormat> memory_format) {
  c10::DeviceGuard guard(self.device());  // new memory belongs to the tensor's device
  return at::native::resize_(self, size, memory_format);
}

at::Tensor& set_source_storage(at::Tensor& self, c10::Storage source) {
  const int64_t numel = static_cast<int64_t>(source.nbytes() / self.dtype().itemsize());
  return at::native::set_storage_cpu_(self, source, 0, {numel}, {});
}

at::Tensor& set_source_storage_offset(at::Tensor& self, c10::Storage source,
                                      int64_t storage_offset, c10::IntArrayRef size,
                                      c10::IntArrayRef stride) {
  return at::native::set_storage_cpu_(self, source, storage_offset, size, stride);
}

at::Tensor& set_source_tensor(at::Tensor& self, const at::Tensor& source) {
  return at::native::set_tensor_(self, source);
}

at::Tensor& set_empty(at::Tensor& self) {
  c10::Storage storage(c10::Storage::use_byte_size_t(), 0, neuron_allocator(), true);
  return at::native::set_storage_cpu_(self, storage, 0, {0}, {});
}

// ---------------------------------------------------------------------------------
// The fallback and how it describes each op to the timing model.

bool has_any(std::string_view name, std::initializer_list<std::string_view> parts) {
  return std::any_of(parts.begin(), parts.end(),
                     [&](std::string_view p) { return name.find(p) != std::string_view::npos; });
}

// Engine that would run an elementwise op: activations on ScalarE, gathers and random
// numbers on GpSimdE, arithmetic and reductions on VectorE.
uint16_t engine_of(std::string_view op) {
  if (has_any(op, {"gelu", "tanh", "sigmoid", "exp", "log", "silu", "softmax", "erf", "sqrt",
                   "rsqrt", "pow", "sin", "cos"}))
    return NPC_ENGINE_SCALAR;
  if (has_any(op, {"index", "gather", "scatter", "embedding", "random", "uniform", "normal",
                   "bernoulli", "dropout", "nll_loss", "arange", "where", "masked"}))
    return NPC_ENGINE_GPSIMD;
  return NPC_ENGINE_VECTOR;
}

struct TensorArgs {
  std::vector<at::Tensor> tensors;
  size_t lists = 0;  // tensor-list arguments (foreach ops)
};

TensorArgs tensor_args(const c10::OperatorHandle& op, const torch::jit::Stack& stack) {
  TensorArgs out;
  const size_t n = op.schema().arguments().size();
  for (size_t i = stack.size() - n; i < stack.size(); ++i) {
    const c10::IValue& v = stack[i];
    if (v.isTensor()) {
      if (v.toTensor().defined()) out.tensors.push_back(v.toTensor());
    } else if (v.isTensorList()) {
      ++out.lists;
      for (const at::Tensor& t : v.toTensorList().vec())
        if (t.defined()) out.tensors.push_back(t);
    } else if (v.isList()) {
      bool any = false;
      for (const c10::IValue& e : v.toListRef())
        if (e.isTensor() && e.toTensor().defined()) {
          out.tensors.push_back(e.toTensor());
          any = true;
        }
      out.lists += any;
    }
  }
  return out;
}

// Fills the kernel's shape, FLOPs and bytes from the op and its inputs.
void describe(std::string_view op, const TensorArgs& args, npc_launch_t& l) {
  const at::Tensor& first = args.tensors.front();
  const uint64_t elem = first.element_size();
  uint64_t in_bytes = 0, max_numel = 0, total_numel = 0;
  for (const at::Tensor& t : args.tensors) {
    in_bytes += t.nbytes();
    max_numel = std::max<uint64_t>(max_numel, t.numel());
    total_numel += t.numel();
  }
  l.dtype = npc_dtype(first.scalar_type());
  const auto& ts = args.tensors;
  const bool mm = op == "mm" && ts.size() == 2 && ts[0].dim() == 2 && ts[1].dim() == 2;
  const bool addmm = op == "addmm" && ts.size() == 3 && ts[1].dim() == 2 && ts[2].dim() == 2;
  const bool bmm = (op == "bmm" || op == "baddbmm") && ts.size() >= 2 &&
                   ts[ts.size() - 2].dim() == 3 && ts.back().dim() == 3;
  if (mm || addmm || bmm) {
    const at::Tensor& a = ts[ts.size() - 2];
    const at::Tensor& b = ts.back();
    l.kind = NPC_KERNEL_MATMUL;
    l.batch = bmm ? a.size(0) : 1;
    l.m = a.size(-2);
    l.k = a.size(-1);
    l.n = b.size(-1);
    l.bias = addmm || op == "baddbmm";
    l.flops = 2 * l.batch * l.m * l.k * l.n;
    l.bytes = in_bytes + l.batch * l.m * l.n * elem;
    return;
  }
  l.kind = NPC_KERNEL_ELEMENTWISE;
  // foreach ops: one pass over each list's elements; others over the largest operand.
  const uint64_t elements = args.lists > 0 ? total_numel / args.lists : max_numel;
  l.elements = std::max<uint64_t>(elements, 1);
  l.inputs = static_cast<uint32_t>(args.lists > 0 ? args.lists : args.tensors.size());
  l.engine = engine_of(op);
  l.flops = l.elements * std::max<uint32_t>(l.inputs, 1);
  l.bytes = in_bytes + l.elements * elem;
}

// Runs the op's CPU kernel (directly on device memory where aliased.cpp can, else
// through cpu_fallback's copies).
void run_on_cpu(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  if (g_aliased.load(std::memory_order_relaxed) && run_aliased(op, stack)) {
    g_aliased_ops.fetch_add(1, std::memory_order_relaxed);
  } else {
    g_copied_ops.fetch_add(1, std::memory_order_relaxed);
    at::native::cpu_fallback(op, stack);
  }
}

// Every op without a kernel of its own: the numerics on the host inside a cut (so no
// host clock sees them), then one launch on the current stream of the op's device (a
// runtime call on this thread and a kernel placed by the timing model, asynchronous in
// modeled time). Ops nested in our own work (the fallback's copies) are part of it.
void fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  if (t_depth > 0) {
    run_on_cpu(op, stack);
    return;
  }
  TensorArgs args = tensor_args(op, *stack);
  auto device = std::find_if(args.tensors.begin(), args.tensors.end(), is_neuron);
  {
    Nested nested;
    Cut cut;
    run_on_cpu(op, stack);
  }
  if (device == args.tensors.end()) return;
  std::string_view name = op.schema().name();
  if (name.rfind("aten::", 0) == 0) name.remove_prefix(6);
  npc_launch_t l{};
  l.device = static_cast<uint16_t>(device->device().index());
  l.queue = current_queue(device->device().index());
  l.corr_id = nph_next_corr_id();
  describe(name, args, l);
  l.name_id = intern(std::string(name) + "_" + dtype_tag(args.tensors.front().scalar_type()));
  launch(l);
}

}  // namespace

void set_aliased_fallback(bool on) { g_aliased.store(on, std::memory_order_relaxed); }

std::pair<uint64_t, uint64_t> fallback_counts() {
  return {g_aliased_ops.load(std::memory_order_relaxed),
          g_copied_ops.load(std::memory_order_relaxed)};
}

}  // namespace neuronprof

using namespace neuronprof;

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", empty_memory_format);
  m.impl("empty_strided", empty_strided);
  m.impl("_copy_from", copy_from);
  m.impl("_copy_from_and_resize", copy_from_and_resize);
  m.impl("_local_scalar_dense", local_scalar_dense);
  m.impl("as_strided", at::native::as_strided_tensorimpl);
  m.impl("view", at::native::view);
  m.impl("_reshape_alias", at::native::_reshape_alias);
  m.impl("resize_", resize_);
  m.impl("set_.source_Storage", set_source_storage);
  m.impl("set_.source_Storage_storage_offset", set_source_storage_offset);
  m.impl("set_.source_Tensor", set_source_tensor);
  m.impl("set_", set_empty);
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&neuronprof::fallback>());
}
