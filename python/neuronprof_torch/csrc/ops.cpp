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
#include <optional>
#include <string>
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
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
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

// A CPU alias that keeps a lazily conjugated or negated view's bit (`x.conj()`,
// `_neg_view`): the CPU copy kernel then resolves the bit as it copies.
at::Tensor cpu_alias_with_bits(const at::Tensor& t) {
  at::Tensor alias = cpu_alias(t);
  if (is_neuron(t)) {
    alias._set_conj(t.is_conj());
    alias._set_neg(t.is_neg());
  }
  return alias;
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

// Whether `self.data = from` may swap `self`'s contents in place (VariableHooks::set_data),
// which is how Module.to / .cuda() keep each Parameter object, and so tied weights (an
// embedding shared with an LM head) tied. c10's TensorImpl::has_compatible_shallow_copy_type
// knows only its own dense backends and leaves PrivateUse1 to the backend, which registers
// this operator (c10/core/TensorImpl.h, torch 2.15); without it Module.to("neuron") makes a
// new Parameter per module and a tied pair becomes two. A neuron tensor is a plain strided
// TensorImpl (empty_generic above), so it is compatible with a CPU or neuron dense one.
bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  const auto plain = [](const at::Tensor& t) {
    return t.layout() == c10::kStrided && (t.is_cpu() || t.is_privateuseone());
  };
  return self.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(from.key_set()) ||
         (plain(self) && plain(from));
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

// A copy inside a compiled graph: a node of the graph's program (compile.cpp).
at::Tensor graph_copy(const at::Tensor& self, const at::Tensor& dst);

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
  if (recorded && in_graph()) return graph_copy(self, dst);
  if (recorded && bytes > 0) {
    npc_launch_t l = copy_launch(kind, device, dst);
    span = launch(l);
  }
  {
    Nested nested;
    Cut cut;
    at::Tensor out = cpu_alias_with_bits(dst);
    cpu_copy(out, cpu_alias_with_bits(self));
  }
  // The host reads what it copied out only once the device has written it.
  if (recorded && bytes > 0 && kind == NPC_KERNEL_COPY_D2H) {
    npc_read_wait(static_cast<uint16_t>(device), &span, bytes);
  }
  if (recorded && kind == NPC_KERNEL_COPY_D2H) raise_pending_error(device);
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
    raise_pending_error(device);
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
// The fallback: the op's numerics on the host inside a cut, then one launch described to
// the emulator by the op's name and its tensors (neuron_backend::describe picks the
// lowering of its kind).

// The tensors of an op, for npc_launch_op (they keep the sizes and strides alive).
struct OpTensors {
  std::vector<at::Tensor> tensors;
  std::vector<uint16_t> lists;

  void add(const at::Tensor& t, uint16_t list) {
    if (!t.defined()) return;
    tensors.push_back(t);
    lists.push_back(list);
  }

  void add_value(const c10::IValue& v, uint16_t& next_list) {
    if (v.isTensor()) {
      add(v.toTensor(), 0);
    } else if (v.isTensorList()) {
      const uint16_t list = ++next_list;
      for (const at::Tensor& t : v.toTensorList().vec()) add(t, list);
    } else if (v.isList()) {
      bool any = false;
      const uint16_t list = next_list + 1;
      for (const c10::IValue& e : v.toListRef())
        if (e.isTensor() && e.toTensor().defined()) {
          add(e.toTensor(), list);
          any = true;
        }
      if (any) ++next_list;
    }
  }

  std::vector<npc_tensor_t> describe() const {
    std::vector<npc_tensor_t> out;
    out.reserve(tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      const at::Tensor& t = tensors[i];
      npc_tensor_t d{};
      d.sizes = t.sizes().data();
      d.strides = t.layout() == c10::kStrided ? t.strides().data() : nullptr;
      d.ndim = static_cast<uint32_t>(t.dim());
      d.dtype = static_cast<uint16_t>(t.scalar_type());
      d.list = lists[i];
      out.push_back(d);
    }
    return out;
  }

  const at::Tensor* first_device_tensor() const {
    for (const at::Tensor& t : tensors)
      if (is_neuron(t)) return &t;
    return nullptr;
  }
};

at::Tensor graph_copy(const at::Tensor& self, const at::Tensor& dst) {
  {
    Nested nested;
    Cut cut;
    at::Tensor out = cpu_alias_with_bits(dst);
    cpu_copy(out, cpu_alias_with_bits(self));
  }
  OpTensors in, out;
  in.add(self, 0);
  out.add(dst, 0);
  graph_note("aten::copy_", in.tensors, in.describe(), out.tensors, out.describe());
  return dst;
}

// The op's tensor arguments (out= arguments excluded) from the stack, before it runs.
OpTensors input_tensors(const c10::OperatorHandle& op, const torch::jit::Stack& stack) {
  OpTensors out;
  const auto& args = op.schema().arguments();
  const size_t n = args.size();
  uint16_t lists = 0;
  for (size_t i = 0; i < n; ++i) {
    if (args[i].is_out()) continue;
    out.add_value(stack[stack.size() - n + i], lists);
  }
  return out;
}

// The op's tensor results from the stack, after it ran; an op returning nothing (the
// in-place _foreach_ ops) gives its written arguments.
OpTensors output_tensors(const c10::OperatorHandle& op, const torch::jit::Stack& stack,
                         const OpTensors& inputs, const std::vector<c10::IValue>& written) {
  OpTensors out;
  const size_t returns = op.schema().returns().size();
  uint16_t lists = 0;
  for (size_t i = stack.size() - returns; i < stack.size(); ++i) out.add_value(stack[i], lists);
  if (out.tensors.empty()) {
    for (const c10::IValue& v : written) out.add_value(v, lists);
  }
  (void)inputs;
  return out;
}

// The CPU dispatch key the op's CPU copies select: a sparse operand (sparse.cpp) selects
// the sparse layout's CPU kernel, as its key would.
c10::DispatchKey cpu_key(const c10::OperatorHandle& op, const torch::jit::Stack& stack) {
  const size_t n = op.schema().arguments().size();
  c10::DispatchKey key = c10::DispatchKey::CPU;
  auto see = [&key](const at::Tensor& t) {
    if (!t.defined() || t.layout() == c10::kStrided) return;
    if (t.layout() == c10::kSparse) {
      if (key == c10::DispatchKey::CPU) key = c10::DispatchKey::SparseCPU;
    } else if (t.layout() != c10::kMkldnn) {
      key = c10::DispatchKey::SparseCsrCPU;
    }
  };
  for (size_t i = stack.size() - n; i < stack.size(); ++i) {
    const c10::IValue& v = stack[i];
    if (v.isTensor()) {
      see(v.toTensor());
    } else if (v.isList()) {
      for (const c10::IValue& e : v.toListRef())
        if (e.isTensor()) see(e.toTensor());
    }
  }
  return key;
}

// Runs the op's CPU kernel (directly on device memory where aliased.cpp can, else
// through cpu_fallback's copies).
void run_on_cpu(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  if (g_aliased.load(std::memory_order_relaxed) && run_aliased(op, stack)) {
    g_aliased_ops.fetch_add(1, std::memory_order_relaxed);
  } else {
    g_copied_ops.fetch_add(1, std::memory_order_relaxed);
    at::native::cpu_fallback(op, stack, /*error_on_views=*/false, cpu_key(op, *stack));
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
  // The whole op is the emulator's dispatch, cut from the timeline: what stays is the
  // modeled launch call and a real wait for a queue slot (npc_launch_op leaves the cut
  // for those; ARCHITECTURE.md, the clock contract).
  Cut dispatch;
  const c10::FunctionSchema& schema = op.schema();
  OpTensors inputs = input_tensors(op, *stack);
  const size_t n = schema.arguments().size();
  const size_t first = stack->size() - n;
  // The arguments, for an error of the kernel (errors.cpp).
  const std::vector<c10::IValue> args(stack->begin() + static_cast<std::ptrdiff_t>(first),
                                      stack->end());
  // Written arguments (in-place and out= ops), for ops that return nothing.
  std::vector<c10::IValue> written;
  for (size_t i = 0; i < n; ++i) {
    const c10::AliasInfo* alias = schema.arguments()[i].alias_info();
    if (alias != nullptr && alias->isWrite()) written.push_back(args[i]);
  }
  {
    Nested nested;
    try {
      run_on_cpu(op, stack);
    } catch (const c10::Error& error) {
      const at::Tensor* on = inputs.first_device_tensor();
      if (on == nullptr) throw;
      kernel_failed(op, args, error, std::current_exception(), on->device(), stack, first);
    }
  }
  OpTensors outputs = output_tensors(op, *stack, inputs, written);
  const at::Tensor* device = inputs.first_device_tensor();
  if (device == nullptr) device = outputs.first_device_tensor();
  if (device == nullptr) return;
  const std::vector<npc_tensor_t> in = inputs.describe();
  const std::vector<npc_tensor_t> out = outputs.describe();
  const std::string& name = schema.name();
  npc_op_t o{};
  o.name = name.data();
  o.name_len = name.size();
  o.inputs = in.data();
  o.n_inputs = in.size();
  o.outputs = out.data();
  o.n_outputs = out.size();
  o.corr_id = nph_next_corr_id();
  o.device = static_cast<uint16_t>(device->device().index());
  o.queue = current_queue(device->device().index());
  if (graph_note(name, inputs.tensors, in, outputs.tensors, out)) return;
  launch_op(o);
}

}  // namespace

// The functional and in-place variants of PyTorch's structured ops (mm, addmm, add,
// mul, sum, softmax, ...: 447 in 2.15) have a CompositeExplicitAutogradNonFunctional
// kernel, which every backend without its own kernel for them gets: it allocates the
// output through the dispatcher (`aten::empty_strided`) and calls the `.out` variant
// through the dispatcher again. On a backend whose only kernel is this fallback, every
// such call would be profiled twice under one name (`aten::mm` holding `aten::mm`, its
// `.out` overload, which is where the launch happens), so key_averages() would count two
// calls per call and a trace would show an `aten::empty_strided` the CPU and CUDA, whose
// codegen gives structured ops a kernel of their own per backend, do not show. So each
// of them whose PrivateUse1 slot is empty goes to the fallback directly: one profiled
// operator, as on the CPU, and its CPU kernel (the fallback's, through run_aliased; a
// functional result is copied once into device memory, inside the cut). Runs once, at
// module load (after every static registration of this library, so ops with a kernel of
// ours keep it); returns how many ops it registered.
size_t register_structured_variants() {
  static torch::Library* library = nullptr;
  static size_t registered = 0;
  if (library != nullptr) return registered;
  library = new torch::Library(torch::Library::IMPL, "aten", c10::DispatchKey::PrivateUse1,
                               __FILE__, __LINE__);
  c10::Dispatcher& dispatcher = c10::Dispatcher::singleton();
  for (const c10::OperatorName& name : dispatcher.getAllOpNamesForDispatchKey(
           c10::DispatchKey::CompositeExplicitAutogradNonFunctional)) {
    constexpr std::string_view ns = "aten::";
    if (std::string_view(name.name).substr(0, ns.size()) != ns) continue;
    // An allocation, not a computation: its composite calls empty_strided, ours.
    if (name.name == "aten::new_empty_strided") continue;
    const std::optional<c10::OperatorHandle> op = dispatcher.findOp(name);
    if (!op || op->hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1)) continue;
    std::string qualified = name.name.substr(ns.size());
    if (!name.overload_name.empty()) qualified += "." + name.overload_name;
    library->impl(qualified.c_str(),
                  torch::CppFunction::makeFromBoxedFunction<&neuronprof::fallback>());
    ++registered;
  }
  return registered;
}

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
  // Views of complex values as pairs of reals and back (torch.istft, complex autograd):
  // views of the same memory, as on the CPU (the fallback would copy).
  m.impl("view_as_complex", at::native::view_as_complex);
  m.impl("view_as_real", at::native::view_as_real);
  m.impl("_reshape_alias", at::native::_reshape_alias);
  m.impl("resize_", resize_);
  m.impl("set_.source_Storage", set_source_storage);
  m.impl("set_.source_Storage_storage_offset", set_source_storage_offset);
  m.impl("set_.source_Tensor", set_source_tensor);
  m.impl("set_", set_empty);
  m.impl("_has_compatible_shallow_copy_type", has_compatible_shallow_copy_type);
}

// Ops whose CPU kernel PyTorch 2.15 gives every other backend as a composite
// (math_native_layer_norm as native_batch_norm + addcmul, math_group_norm, silu_backward's
// formula, ...): the composite rounds differently from the CPU kernel, so a neuron run
// would not have the CPU's values (a LayerNorm differs in the last bit). Their CPU kernels
// run through the fallback instead, as one launch named after the op (the describe
// table's norm rows). Autograd is unchanged: each has its own derivative formula.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  for (const char* name : {"native_layer_norm", "native_group_norm", "silu_backward", "addr",
                           "addr.out", "_stack", "_stack.out", "any.dims", "any.dims_out",
                           "all.dims", "all.dims_out"})
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&neuronprof::fallback>());
}

// Copies of a lazily conjugated or negated neuron tensor (`x.conj()`, which torch.fft's
// hfft/ihfft and complex autograd make; `_neg_view`). ATen's copy hands such a source to
// `_copy_from`, and the Conjugate and Negative keys' fallback would first materialize
// it with `clone`, which copies through `_copy_from` again: an endless recursion that
// overflowed the stack (every torch.fft op killed the process with a segmentation
// fault). `_copy_from` resolves the bits itself (copy_from above), so both keys pass it
// through, as they pass `copy_` through for the CPU and CUDA, whose copy resolves them.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&neuronprof::fallback>());
}

// Computations on sparse neuron tensors (sparse.cpp has their bookkeeping): the same
// fallback, whose cpu_fallback path moves sparse operands to the CPU and sparse results
// back (`_to_copy` copies a sparse tensor's indices and values).
TORCH_LIBRARY_IMPL(_, SparsePrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&neuronprof::fallback>());
}

TORCH_LIBRARY_IMPL(_, SparseCsrPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&neuronprof::fallback>());
}
