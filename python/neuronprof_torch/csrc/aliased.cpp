// The fallback's fast path: run an op's CPU kernel directly on the device tensors'
// memory (device memory is host memory in the emulator), instead of copying every
// operand to a CPU tensor and the results back as at::native::cpu_fallback does.
//
// Taken only where that is plainly right, else the caller uses cpu_fallback:
// - a functional op, an in-place op or an out= op (structured ops' functional and
//   in-place variants too: ops.cpp's register_structured_variants): no view
//   annotations, every written argument a plain tensor, every returned tensor fresh or
//   a written argument;
// - every device tensor dense, strided, non-empty and on one device; tensor arguments
//   are plain tensors or tensor lists (foreach ops);
// - results are tensors or tensor lists (or not tensors at all).
// Each device tensor becomes a CPU tensor over the same memory; device tensors sharing
// a storage share one CPU storage, so ATen's overlap checks see what they would on the
// CPU. A functional op's results are copied once into fresh device tensors (a result
// that shares an input's memory becomes a view of that input); an in-place op writes
// straight into device memory and returns the original device tensor; an out= kernel
// that resized its output (given an empty one) computed into CPU memory, and the device
// tensor is resized and takes the values (one copy). If the CPU kernel throws, the
// original arguments go back on the stack and cpu_fallback runs the op.
#include "neuron.h"

#include <unordered_map>

#include <ATen/native/Resize.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/resize_native.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

namespace neuronprof {

namespace {

bool is_plain_device_tensor(const at::Tensor& t) {
  return t.defined() && t.device().type() == c10::DeviceType::PrivateUse1 &&
         t.layout() == c10::kStrided && t.numel() > 0 && t.has_storage() &&
         !t.is_conj() && !t.is_neg();
}

bool is_device_tensor(const at::Tensor& t) {
  return t.defined() && t.device().type() == c10::DeviceType::PrivateUse1;
}

// Whether the schema allows the fast path (see the file comment): no view (an alias
// annotation that is not a write), every write on a plain tensor argument, every
// returned tensor either fresh (functional) or one of the written arguments.
bool eligible_schema(const c10::FunctionSchema& schema) {
  for (const c10::Argument& arg : schema.arguments()) {
    const c10::AliasInfo* alias = arg.alias_info();
    if (alias == nullptr) continue;
    if (!alias->isWrite() || arg.type()->kind() != c10::TypeKind::TensorType) return false;
  }
  for (const c10::Argument& ret : schema.returns()) {
    const c10::AliasInfo* alias = ret.alias_info();
    if (alias != nullptr && (!alias->isWrite() || !schema.is_mutable())) return false;
  }
  return true;
}

class Aliases {
 public:
  // A CPU tensor over `t`'s memory, sharing one CPU storage per device storage.
  at::Tensor alias(const at::Tensor& t) {
    originals_.push_back(t);
    const c10::StorageImpl* key = t.storage().unsafeGetStorageImpl();
    auto it = storages_.find(key);
    if (it == storages_.end()) {
      const c10::Storage& storage = t.storage();
      // Resizable with the CPU allocator: an out= kernel that resizes its output gets
      // fresh CPU memory, and sync_written() moves the result to the device.
      c10::Storage cpu(c10::Storage::use_byte_size_t(), storage.nbytes(),
                       c10::DataPtr(storage.mutable_data(), c10::Device(c10::DeviceType::CPU)),
                       c10::GetCPUAllocator(), /*resizable=*/true);
      it = storages_.emplace(key, cpu).first;
    }
    at::Tensor cpu = at::empty({0}, t.options().device(c10::DeviceType::CPU));
    cpu.set_(it->second, t.storage_offset(), t.sizes(), t.strides());
    by_impl_.emplace(cpu.unsafeGetTensorImpl(), t);
    return cpu;
  }

  // Notes that the kernel may write `alias`, which stands for device tensor `original`.
  void written(const at::Tensor& alias, const at::Tensor& original) {
    written_.push_back({alias, original, original.storage().data()});
  }

  // Where a kernel resized or re-strided a written argument (an out= kernel given an
  // empty output), its result sits in CPU memory or in a different layout: the device
  // tensor takes its shape and values.
  void sync_written() {
    for (const Written& w : written_) {
      const bool in_place = w.alias.storage().data() == w.device_data;
      if (in_place && w.alias.sizes().equals(w.original.sizes()) &&
          w.alias.strides().equals(w.original.strides()) &&
          w.alias.storage_offset() == w.original.storage_offset())
        continue;
      // The device memory may be freed by the resize below: keep the values first.
      at::Tensor values = in_place ? w.alias.clone() : w.alias;
      {
        c10::DeviceGuard guard(w.original.device());
        at::native::resize_(w.original, values.sizes(), std::nullopt);
      }
      at::Tensor target = alias(w.original);
      cpu_copy(target, values);
    }
  }

  // The device tensor a CPU result stands for: the original when it is an alias, a
  // view of an original when it shares one's memory, else a copy on `device`.
  at::Tensor to_device(const at::Tensor& result, c10::Device device) {
    if (!result.defined() || !result.device().is_cpu()) return result;
    // A sparse result (to_sparse): `_to_copy` moves its indices and values (sparse.cpp).
    if (result.layout() != c10::kStrided) return result.to(device);
    auto same = by_impl_.find(result.unsafeGetTensorImpl());
    if (same != by_impl_.end()) return same->second;
    for (const at::Tensor& original : originals_) {
      const c10::StorageImpl* key = original.storage().unsafeGetStorageImpl();
      auto cpu = storages_.find(key);
      if (cpu != storages_.end() && result.storage().is_alias_of(cpu->second)) {
        return at::native::as_strided_tensorimpl(original, result.sizes(), result.strides(),
                                                 result.storage_offset());
      }
    }
    at::Tensor out = result.is_non_overlapping_and_dense()
                         ? at::empty_strided(result.sizes(), result.strides(),
                                             result.options().device(device))
                         : at::empty(result.sizes(), result.options().device(device));
    at::Tensor view = alias(out);
    cpu_copy(view, result);
    return out;
  }

 private:
  struct Written {
    at::Tensor alias;
    at::Tensor original;
    const void* device_data;
  };
  std::vector<Written> written_;
  std::vector<at::Tensor> originals_;  // keeps the device memory alive
  std::unordered_map<const c10::StorageImpl*, c10::Storage> storages_;
  std::unordered_map<const c10::TensorImpl*, at::Tensor> by_impl_;
};

}  // namespace

bool run_aliased(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const c10::FunctionSchema& schema = op.schema();
  if (!eligible_schema(schema)) return false;
  const size_t n = schema.arguments().size();
  const size_t first = stack->size() - n;
  std::optional<c10::Device> device;
  auto accept = [&](const at::Tensor& t) {
    if (!is_device_tensor(t)) return true;
    if (!is_plain_device_tensor(t)) return false;
    if (device && *device != t.device()) return false;
    device = t.device();
    return true;
  };
  for (size_t i = first; i < stack->size(); ++i) {
    const c10::IValue& v = (*stack)[i];
    if (v.isTensor()) {
      if (!accept(v.toTensor())) return false;
    } else if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorList().vec())
        if (!accept(t)) return false;
    } else if (v.isList()) {
      for (const c10::IValue& e : v.toListRef())
        if (e.isTensor() && is_device_tensor(e.toTensor())) return false;
    }
  }
  if (!device) return false;

  const std::vector<c10::IValue> saved(stack->begin() + first, stack->end());
  Aliases aliases;
  for (size_t i = first; i < stack->size(); ++i) {
    c10::IValue& v = (*stack)[i];
    if (v.isTensor() && is_device_tensor(v.toTensor())) {
      at::Tensor original = v.toTensor();
      v = aliases.alias(original);
      const c10::AliasInfo* info = schema.arguments()[i - first].alias_info();
      if (info != nullptr && info->isWrite()) aliases.written(v.toTensor(), original);
    } else if (v.isTensorList()) {
      c10::List<at::Tensor> list;
      for (const at::Tensor& t : v.toTensorList().vec())
        list.push_back(is_device_tensor(t) ? aliases.alias(t) : t);
      v = list;
    }
  }
  try {
    // Straight to the CPU kernel: a second dispatch from the top would record the op a
    // second time (a nested `aten::` row in the profiler) for nothing. Ops reach this
    // fallback only when no composite kernel took them, so the CPU kernel is the one.
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
  } catch (const c10::Error&) {
    // Let cpu_fallback run the op from its original arguments (and report the error
    // itself if it has one).
    stack->erase(stack->begin() + static_cast<std::ptrdiff_t>(first), stack->end());
    stack->insert(stack->end(), saved.begin(), saved.end());
    return false;
  }
  aliases.sync_written();
  const size_t returns = schema.returns().size();
  for (size_t i = stack->size() - returns; i < stack->size(); ++i) {
    c10::IValue& v = (*stack)[i];
    if (v.isTensor()) {
      v = aliases.to_device(v.toTensor(), *device);
    } else if (v.isTensorList()) {
      c10::List<at::Tensor> list;
      for (const at::Tensor& t : v.toTensorList().vec()) list.push_back(aliases.to_device(t, *device));
      v = list;
    }
  }
  return true;
}

}  // namespace neuronprof
