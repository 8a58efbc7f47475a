// Convolution and the fused RNN cells on neuron: ops PyTorch sends to a PrivateUse1
// device's own kernels, which the CPU has none of, so the boxed fallback cannot run them.
//
// - `convolution_overrideable` / `convolution_backward_overrideable`: ATen's
//   `_convolution` picks the Overrideable backend for a PrivateUse1 tensor (Conv1d-3d,
//   ConvTranspose1d-3d, any groups, stride, dilation, padding; padding modes other than
//   zeros are F.pad ops before it, which the fallback runs). The numerics are the CPU's
//   `at::convolution` / `at::convolution_backward` on the device memory (so a neuron run
//   gets the CPU run's values), the launch is one kernel named `conv<d>d` /
//   `conv_transpose<d>d` (and `_backward`), which the emulator lowers as TensorE implicit
//   GEMMs (neuron-backend/src/external/describe.rs, `convolution`).
// - `_thnn_fused_lstm_cell` / `_thnn_fused_gru_cell` and their backwards: ATen's RNN
//   (nn.LSTM, nn.GRU, LSTMCell, GRUCell) uses them on CUDA, XPU and PrivateUse1 devices
//   (aten/src/ATen/native/RNN.cpp: the gates' matmuls are separate ops, the cell's
//   pointwise part one fused kernel), where the CPU runs the cell as separate pointwise
//   ops. The kernels compute that pointwise part with the CPU's own ops in the CPU's
//   order (the gates summed as `(hgates + b_hh) + (igates + b_ih)`, then sigmoid, tanh),
//   and the backward with ATen's sigmoid/tanh backward formulas; one launch each, costed
//   as an elementwise kernel over the gates (describe's default rule: no table entry).
#include "neuron.h"

#include <string>

#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>
#include <ATen/ops/sigmoid_backward.h>
#include <ATen/ops/tanh_backward.h>
#include <torch/library.h>

namespace neuronprof {
namespace {

bool on_neuron(const at::Tensor& t) {
  return t.defined() && t.device().type() == c10::DeviceType::PrivateUse1;
}

// A CPU tensor over a device tensor's memory (the emulator's device memory is host
// memory); undefined stays undefined.
at::Tensor host_view(const at::Tensor& t) {
  if (!on_neuron(t)) return t;
  return at::from_blob(t.data_ptr(), t.sizes(), t.strides(),
                       t.options().device(c10::DeviceType::CPU));
}

std::optional<at::Tensor> host_view(const std::optional<at::Tensor>& t) {
  if (!t.has_value() || !t->defined()) return std::nullopt;
  return host_view(*t);
}

// A device tensor with a CPU result's values (same sizes and strides where dense).
at::Tensor to_neuron(const at::Tensor& result, c10::Device device) {
  if (!result.defined()) return result;
  at::Tensor out = result.is_non_overlapping_and_dense()
                       ? at::empty_strided(result.sizes(), result.strides(),
                                           result.options().device(device))
                       : at::empty(result.sizes(), result.options().device(device));
  at::Tensor view = host_view(out);
  cpu_copy(view, result);
  return out;
}

// One launch named `name` (an ATen-style name the emulator's describe table knows)
// with these tensors; inside a compiled graph, a node of its program instead.
void launch_named(const std::string& name, c10::Device device,
                  const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs) {
  std::vector<at::Tensor> in_tensors, out_tensors;
  for (const at::Tensor& t : inputs)
    if (t.defined()) in_tensors.push_back(t);
  for (const at::Tensor& t : outputs)
    if (t.defined()) out_tensors.push_back(t);
  auto describe = [](const std::vector<at::Tensor>& tensors) {
    std::vector<npc_tensor_t> out;
    for (const at::Tensor& t : tensors) {
      npc_tensor_t d{};
      d.sizes = t.sizes().data();
      d.strides = t.strides().data();
      d.ndim = static_cast<uint32_t>(t.dim());
      d.dtype = static_cast<uint16_t>(t.scalar_type());
      out.push_back(d);
    }
    return out;
  };
  const std::vector<npc_tensor_t> in = describe(in_tensors), out = describe(out_tensors);
  if (graph_note(name, in_tensors, in, out_tensors, out)) return;
  npc_op_t o{};
  o.name = name.data();
  o.name_len = name.size();
  o.inputs = in.data();
  o.n_inputs = in.size();
  o.outputs = out.data();
  o.n_outputs = out.size();
  o.corr_id = nph_next_corr_id();
  o.device = static_cast<uint16_t>(device.index());
  o.queue = current_queue(device.index());
  launch_op(o);
}

// `aten::conv2d`, `aten::conv_transpose3d`, … (`_backward` appended for the backward).
std::string conv_name(const at::Tensor& weight, bool transposed, bool backward) {
  std::string name = transposed ? "aten::conv_transpose" : "aten::conv";
  name += std::to_string(std::max<int64_t>(weight.dim() - 2, 1)) + "d";
  if (backward) name += "_backward";
  return name;
}

at::Tensor convolution_overrideable(const at::Tensor& input, const at::Tensor& weight,
                                    const std::optional<at::Tensor>& bias,
                                    c10::IntArrayRef stride, c10::IntArrayRef padding,
                                    c10::IntArrayRef dilation, bool transposed,
                                    c10::IntArrayRef output_padding, int64_t groups) {
  const c10::Device device = input.device();
  at::Tensor out;
  {
    Cut cut;
    at::Tensor result = at::convolution(host_view(input), host_view(weight), host_view(bias),
                                        stride, padding, dilation, transposed, output_padding,
                                        groups);
    out = to_neuron(result, device);
  }
  std::vector<at::Tensor> inputs{input, weight};
  if (bias.has_value()) inputs.push_back(*bias);
  launch_named(conv_name(weight, transposed, false), device, inputs, {out});
  return out;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward_overrideable(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
    c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation, bool transposed,
    c10::IntArrayRef output_padding, int64_t groups, std::array<bool, 3> output_mask) {
  const c10::Device device = input.device();
  // The bias has one value per output channel: weight (out, in / groups, k…), or
  // (in, out / groups, k…) when transposed.
  const int64_t channels = transposed ? weight.size(1) * groups : weight.size(0);
  const std::vector<int64_t> bias_sizes{channels};
  at::Tensor grad_input, grad_weight, grad_bias;
  {
    Cut cut;
    auto [gi, gw, gb] = at::convolution_backward(
        host_view(grad_output), host_view(input), host_view(weight),
        output_mask[2] ? std::optional<c10::IntArrayRef>(bias_sizes) : std::nullopt, stride,
        padding, dilation, transposed, output_padding, groups, output_mask);
    grad_input = to_neuron(gi, device);
    grad_weight = to_neuron(gw, device);
    grad_bias = to_neuron(gb, device);
  }
  launch_named(conv_name(weight, transposed, true), device, {grad_output, input, weight},
               {grad_input, grad_weight, grad_bias});
  return {grad_input, grad_weight, grad_bias};
}

// ---------------------------------------------------------------------------------
// The fused RNN cells (the pointwise part; the gates' matmuls are ops of their own).

// The CPU cell's gate sum: linear_hh(hx) + linear_ih(x), each linear with its bias.
at::Tensor gate_sum(const at::Tensor& igates, const at::Tensor& hgates,
                    const std::optional<at::Tensor>& input_bias,
                    const std::optional<at::Tensor>& hidden_bias) {
  at::Tensor h = hidden_bias.has_value() && hidden_bias->defined() ? hgates + *hidden_bias
                                                                   : hgates.clone();
  at::Tensor i = input_bias.has_value() && input_bias->defined() ? igates + *input_bias : igates;
  return h.add_(i);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_lstm_cell(
    const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& cx,
    const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias) {
  const c10::Device device = cx.device();
  at::Tensor hy, cy, workspace;
  {
    Cut cut;
    at::Tensor gates =
        gate_sum(host_view(input_gates), host_view(hidden_gates), host_view(input_bias),
                 host_view(hidden_bias));
    auto chunks = gates.unsafe_chunk(4, 1);
    at::Tensor ingate = chunks[0].sigmoid_();
    at::Tensor forgetgate = chunks[1].sigmoid_();
    at::Tensor cellgate = chunks[2].tanh_();
    at::Tensor outgate = chunks[3].sigmoid_();
    at::Tensor c = (forgetgate * host_view(cx)).add_(ingate * cellgate);
    at::Tensor h = outgate * c.tanh();
    hy = to_neuron(h, device);
    cy = to_neuron(c, device);
    // The activated gates (i, f, g, o), what the backward needs (CUDA's workspace).
    workspace = to_neuron(gates, device);
  }
  std::vector<at::Tensor> inputs{input_gates, hidden_gates, cx};
  if (input_bias.has_value()) inputs.push_back(*input_bias);
  if (hidden_bias.has_value()) inputs.push_back(*hidden_bias);
  launch_named("aten::_thnn_fused_lstm_cell", device, inputs, {hy, cy, workspace});
  return {hy, cy, workspace};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_lstm_cell_backward_impl(
    const std::optional<at::Tensor>& grad_hy_opt, const std::optional<at::Tensor>& grad_cy_opt,
    const at::Tensor& cx, const at::Tensor& cy, const at::Tensor& workspace, bool has_bias) {
  const c10::Device device = workspace.device();
  at::Tensor grad_gates, grad_cx, grad_bias;
  {
    Cut cut;
    auto chunks = host_view(workspace).chunk(4, 1);
    const at::Tensor &i = chunks[0], &f = chunks[1], &g = chunks[2], &o = chunks[3];
    at::Tensor c = host_view(cy);
    at::Tensor tanh_c = c.tanh();
    at::Tensor grad_hy = grad_hy_opt.has_value() && grad_hy_opt->defined()
                             ? host_view(*grad_hy_opt)
                             : at::zeros_like(tanh_c);
    at::Tensor grad_c = at::tanh_backward(grad_hy * o, tanh_c);
    if (grad_cy_opt.has_value() && grad_cy_opt->defined()) grad_c = host_view(*grad_cy_opt) + grad_c;
    at::Tensor gi = at::sigmoid_backward(grad_c * g, i);
    at::Tensor gf = at::sigmoid_backward(grad_c * host_view(cx), f);
    at::Tensor gg = at::tanh_backward(grad_c * i, g);
    at::Tensor go = at::sigmoid_backward(grad_hy * tanh_c, o);
    at::Tensor gates = at::cat({gi, gf, gg, go}, 1);
    grad_gates = to_neuron(gates, device);
    grad_cx = to_neuron(grad_c * f, device);
    if (has_bias) grad_bias = to_neuron(gates.sum(0, /*keepdim=*/false), device);
  }
  launch_named("aten::_thnn_fused_lstm_cell_backward", device, {cx, cy, workspace},
               {grad_gates, grad_cx, grad_bias});
  return {grad_gates, grad_cx, grad_bias};
}

std::tuple<at::Tensor, at::Tensor> fused_gru_cell(const at::Tensor& input_gates,
                                                  const at::Tensor& hidden_gates,
                                                  const at::Tensor& hx,
                                                  const std::optional<at::Tensor>& input_bias,
                                                  const std::optional<at::Tensor>& hidden_bias) {
  const c10::Device device = hx.device();
  at::Tensor hy, workspace;
  {
    Cut cut;
    // The CPU's GRUCell: chunked_igates = linear_ih(x), chunked_hgates = linear_hh(h).
    at::Tensor ig = host_view(input_gates), hg = host_view(hidden_gates);
    if (input_bias.has_value() && input_bias->defined()) ig = ig + host_view(*input_bias);
    if (hidden_bias.has_value() && hidden_bias->defined()) hg = hg + host_view(*hidden_bias);
    auto ic = ig.unsafe_chunk(3, 1);
    auto hc = hg.unsafe_chunk(3, 1);
    at::Tensor h = host_view(hx);
    at::Tensor resetgate = ic[0].add(hc[0]).sigmoid_();
    at::Tensor inputgate = ic[1].add(hc[1]).sigmoid_();
    at::Tensor newgate = ic[2].add(hc[2].mul(resetgate)).tanh_();
    at::Tensor out = (h - newgate).mul_(inputgate).add_(newgate);
    hy = to_neuron(out, device);
    // r, z, n, the hidden gates' new-gate part, and hx: what the backward needs.
    workspace = to_neuron(at::cat({resetgate, inputgate, newgate, hc[2], h}, 1), device);
  }
  std::vector<at::Tensor> inputs{input_gates, hidden_gates, hx};
  if (input_bias.has_value()) inputs.push_back(*input_bias);
  if (hidden_bias.has_value()) inputs.push_back(*hidden_bias);
  launch_named("aten::_thnn_fused_gru_cell", device, inputs, {hy, workspace});
  return {hy, workspace};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>
fused_gru_cell_backward(const at::Tensor& grad_hy, const at::Tensor& workspace, bool has_bias) {
  const c10::Device device = workspace.device();
  at::Tensor grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias, grad_hidden_bias;
  {
    Cut cut;
    auto chunks = host_view(workspace).chunk(5, 1);
    const at::Tensor &r = chunks[0], &z = chunks[1], &n = chunks[2], &hn = chunks[3],
                     &h = chunks[4];
    at::Tensor gh = host_view(grad_hy);
    // hy = (h - n) * z + n
    at::Tensor gz = at::sigmoid_backward(gh * (h - n), z);
    at::Tensor gn = at::tanh_backward(gh * (1 - z), n);
    at::Tensor gr = at::sigmoid_backward(gn * hn, r);
    at::Tensor gi = at::cat({gr, gz, gn}, 1);
    at::Tensor ghg = at::cat({gr, gz, gn * r}, 1);
    grad_input_gates = to_neuron(gi, device);
    grad_hidden_gates = to_neuron(ghg, device);
    grad_hx = to_neuron(gh * z, device);
    if (has_bias) {
      grad_input_bias = to_neuron(gi.sum(0), device);
      grad_hidden_bias = to_neuron(ghg.sum(0), device);
    }
  }
  launch_named("aten::_thnn_fused_gru_cell_backward", device, {grad_hy, workspace},
               {grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias, grad_hidden_bias});
  return {grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias, grad_hidden_bias};
}

}  // namespace
}  // namespace neuronprof

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("convolution_overrideable", neuronprof::convolution_overrideable);
  m.impl("convolution_backward_overrideable", neuronprof::convolution_backward_overrideable);
  m.impl("_thnn_fused_lstm_cell", neuronprof::fused_lstm_cell);
  m.impl("_thnn_fused_lstm_cell_backward_impl", neuronprof::fused_lstm_cell_backward_impl);
  m.impl("_thnn_fused_gru_cell", neuronprof::fused_gru_cell);
  m.impl("_thnn_fused_gru_cell_backward", neuronprof::fused_gru_cell_backward);
}
