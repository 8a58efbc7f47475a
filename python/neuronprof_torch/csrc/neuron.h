// Shared declarations of the neuron PrivateUse1 extension (python/README.md).
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

extern "C" {
#include "neuronprof_capi.h"
#include "neuronprof_hooks.h"
}

namespace neuronprof {

// The allocator of neuron tensors (device memory is host memory in the emulator; each
// block also holds a block of the device's caching allocator).
c10::Allocator* neuron_allocator();
// The device address of `tensor`'s storage block (0: no block, e.g. empty).
uint64_t device_address(const at::Tensor& tensor);

// Memory history (memory.cpp): no-ops unless _record_memory_history is on. `ready_ns`
// of a free: the modeled instant the block is reusable (0: at once).
void history_alloc(int device, uint64_t addr, uint64_t size, uint16_t stream);
void history_free(int device, uint64_t addr, uint64_t size, uint16_t stream, uint64_t ready_ns);
void history_oom(int device, uint64_t size, uint16_t stream);

// This thread's current device (the device guard's).
c10::DeviceIndex current_device();
void set_current_device(c10::DeviceIndex index);

// This thread's current stream on `device`: the queue index (0: the default stream).
uint16_t current_queue(c10::DeviceIndex device);
void set_current_queue(c10::DeviceIndex device, uint16_t queue);

// PyTorch's correlation id of the innermost operator on this thread (the Kineto
// plugin's push/popCorrelationId), 0 when none.
uint64_t torch_correlation_id();
// Notes that our launch `corr_id` ran inside PyTorch's operator `torch_corr_id` (only
// while a profiling session records).
void link_correlation(uint64_t corr_id, uint64_t torch_corr_id);

// An extra arg of a device kernel: a number, or else a string.
struct KernelArg {
  std::string key;
  std::string text;
  int64_t number = 0;
  bool is_number = false;
};
inline KernelArg arg(std::string key, std::string text) { return {std::move(key), std::move(text)}; }
inline KernelArg arg(std::string key, int64_t number) { return {std::move(key), {}, number, true}; }

// Extra args of a device kernel, written into its trace event by the Kineto plugin: the
// collective's NCCL-style args (only while a profiling session records).
void note_kernel_args(uint64_t corr_id, std::vector<KernelArg> args);

// Launches a kernel on launch.queue (recorded launch + kernel placed by the timing
// model) and links it to PyTorch's current operator. Throws on a runtime error.
npc_kernel_span_t launch(npc_launch_t& launch);
// Launches an op costed by the emulator's lowering of its kind (npc_launch_op) and links
// it to PyTorch's current operator.
npc_kernel_span_t launch_op(const npc_op_t& op);

// A process-wide cut of emulation time (runtime-hooks): while one is alive on any
// thread, every thread's host clock stands still. Wraps the numerics the emulator
// computes on the host for the device.
struct Cut {
  Cut() { nph_cut_begin(); }
  ~Cut() { nph_cut_end(); }
  Cut(const Cut&) = delete;
  Cut& operator=(const Cut&) = delete;
};

// Runs a boxed op's CPU kernel directly on the device tensors' memory when that is
// plainly right (aliased.cpp); false when the caller must use cpu_fallback.
bool run_aliased(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// Sends the functional and in-place variants of structured ops to the fallback instead
// of their `.out` composite (ops.cpp); once, at module load. Returns how many.
size_t register_structured_variants();

// Lets the fallback use run_aliased (the default) or always cpu_fallback.
void set_aliased_fallback(bool on);
// Ops the fallback ran directly on device memory and through cpu_fallback, so far.
std::pair<uint64_t, uint64_t> fallback_counts();

// Errors of queued kernels (errors.cpp). The fallback calls kernel_failed when an op's
// CPU kernel threw `error` (`original`, the exception) from arguments `args`: it rethrows
// an argument error at once, else (unless launch_blocking()) puts zero results on the
// stack from `first` on and keeps the error for the device's next synchronizing call.
void kernel_failed(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args,
                   const c10::Error& error, const std::exception_ptr& original,
                   c10::Device device, torch::jit::Stack* stack, size_t first);
// Raises (a RuntimeError) and clears the kept error of `device` (-1: of any device).
void raise_pending_error(int device);
// The kept error of `device` (-1: of any), cleared; nullopt when none.
std::optional<std::string> take_pending_error(int device);
// NEURON_LAUNCH_BLOCKING=1: every launch waits for its kernel's modeled end.
bool launch_blocking();

// dst.copy_(src) for CPU tensors, straight to the CPU kernel (no second `aten::copy_`
// row in the profiler under the op that copies).
void cpu_copy(at::Tensor& dst, const at::Tensor& src);

// Compiled graphs (compile.cpp): while a graph runs on this thread, the fallback notes
// each op here (its tensors, and their descriptions for the capi) instead of launching
// it; false when no graph runs.
bool graph_note(const std::string& name, const std::vector<at::Tensor>& inputs,
                const std::vector<npc_tensor_t>& in, const std::vector<at::Tensor>& outputs,
                const std::vector<npc_tensor_t>& out);
bool in_graph();

// Interns a name once per thread.
uint32_t intern(const std::string& name);

// Throws a c10::Error with the capi's last error message.
[[noreturn]] void throw_last_error(const char* what, int32_t status);

// The `NPC_DTYPE_*` of a scalar type (by element size) and its short name.
uint16_t npc_dtype(c10::ScalarType type);
const char* dtype_tag(c10::ScalarType type);

}  // namespace neuronprof
