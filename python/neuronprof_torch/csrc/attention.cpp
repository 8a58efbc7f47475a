// scaled_dot_product_attention on neuron takes the CPU's path (PyTorch 2.15,
// aten/src/ATen/native/transformers/attention.cpp and attention.h): the composite asks
// `_fused_sdp_choice_stub` for a backend when the stub has a kernel for the query's
// device type, else it takes the math path (matmul, softmax, matmul: a different
// rounding from the CPU's fused kernel, 2.4e-7 on one attention). A PrivateUse1
// backend may register into a DispatchStub, so the neuron choice here is the CPU's
// own (`_fused_sdp_choice_cpp`: flash attention for the CPU when its constraints
// hold, else math). The flash choice then calls
// `_scaled_dot_product_flash_attention_for_cpu` (its derivative:
// `..._for_cpu_backward`), which have only a CPU kernel, so the boxed fallback of
// ops.cpp runs that kernel on the device memory and launches one kernel, costed by
// the emulator's attention lowering (QKᵀ and PV on TensorE around a softmax on
// VectorE/ScalarE).
#include "neuron.h"

#include <ATen/native/transformers/attention.h>
#include <ATen/ops/_fused_sdp_choice_native.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

namespace neuronprof {
namespace {

// The CPU's choice for these inputs. The CPU's constraints read only shapes, strides,
// dtypes and flags; one of them depends on the device: off the CPU, a mask whose last
// dimension is strided rules flash out (GPU kernels need stride 1), on the CPU it does
// not. Such a mask is replaced by a contiguous meta tensor of its shape and dtype, so
// the check sees what it sees for the CPU.
int64_t cpu_choice(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                   const std::optional<at::Tensor>& attn_mask, double dropout_p,
                   bool is_causal, std::optional<double> scale, bool enable_gqa) {
  std::optional<at::Tensor> mask = attn_mask;
  if (mask.has_value() && mask->defined() && mask->dim() > 0 && mask->sym_stride(-1) != 1) {
    mask = at::empty_symint(mask->sym_sizes(), mask->options().device(c10::kMeta));
  }
  return at::native::_fused_sdp_choice_cpp(query, key, value, mask, dropout_p, is_causal,
                                           scale, enable_gqa);
}

}  // namespace
}  // namespace neuronprof

// The stub's PrivateUse1 entry (the macro names the stub's own type, so it is used in
// the stub's namespace).
namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &neuronprof::cpu_choice)
}  // namespace at::native

// `torch._fused_sdp_choice` on neuron: the same choice, with no kernel (the fallback
// would launch one for an op that reads no tensor values).
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_fused_sdp_choice", &neuronprof::cpu_choice);
}
