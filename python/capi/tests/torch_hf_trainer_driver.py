"""A Hugging Face ``Trainer`` script as a TorchNeuron user writes it, for the test
torch_hf_trainer.rs: no device code at all (no ``.to(...)``, no ``device=``, no
``import neuronprof_torch``): transformers' ``Trainer`` and accelerate pick the device
themselves, and the ``neuron`` device is there because PyTorch's backend autoloading
imported ``neuronprof_torch`` at ``import torch`` (the test puts the package's entry
point on the path, as ``pip install -e python/`` does). The profile uses TorchNeuron's
documented API (``torch_neuronx.profiling``) from a ``TrainerCallback``.

A small GPT-2 (``GPT2Config``: 2 layers, width 64; nothing downloaded) trains 8 steps
on a fixed synthetic dataset; a forward hook keeps each step's loss. Prints one
``RESULT {json}`` line.

argv: output folder, then ``--use-cpu`` for the CPU reference run
(``TrainingArguments(use_cpu=True)``), which is not profiled.
"""

import json
import sys

import accelerate
import torch
import transformers
from torch.profiler import ProfilerActivity, profile, schedule
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments

out_dir = sys.argv[1]
use_cpu = "--use-cpu" in sys.argv[2:]
STEPS = 8


class Tokens(torch.utils.data.Dataset):
    """Fixed random token sequences (the labels are the inputs: causal LM)."""

    def __init__(self, n=64, length=32, vocab=128):
        g = torch.Generator().manual_seed(1234)
        self.ids = torch.randint(0, vocab, (n, length), generator=g)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


class Profiled(TrainerCallback):
    """torch.profiler around steps 3-4 (wait 1, warm up 1, active 2), configured as
    TorchNeuron documents it."""

    def __init__(self, folder):
        from torch_neuronx.profiling import NeuronConfig, NeuronProfiler, ProfileMode

        self.config = NeuronConfig(
            modes=[ProfileMode.DEVICE, ProfileMode.RUNTIME, ProfileMode.CPU_UTIL, ProfileMode.HOST_MEMORY],
            profile_output_dir=folder,
        )
        self.exporter = NeuronProfiler(self.config)
        self.prof = profile(
            activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1],
            schedule=schedule(wait=1, warmup=1, active=2, repeat=1),
            experimental_config=self.config,
            on_trace_ready=self.exporter.export_trace,
        )

    def on_train_begin(self, args, state, control, **kwargs):
        self.prof.start()

    def on_step_end(self, args, state, control, **kwargs):
        self.prof.step()

    def on_train_end(self, args, state, control, **kwargs):
        self.prof.stop()


transformers.set_seed(0)
model = GPT2LMHeadModel(GPT2Config(vocab_size=128, n_positions=32, n_embd=64, n_layer=2, n_head=4))
losses = []
model.register_forward_hook(lambda module, inputs, output: losses.append(output.loss.detach()))
args = TrainingArguments(
    output_dir=f"{out_dir}/trainer",
    max_steps=STEPS,
    per_device_train_batch_size=4,
    learning_rate=1e-2,
    logging_steps=1,
    save_strategy="no",
    report_to=[],
    seed=0,
    dataloader_num_workers=0,
    use_cpu=use_cpu,
)
callbacks = [] if use_cpu else [Profiled(f"{out_dir}/profile")]
trainer = Trainer(model=model, args=args, train_dataset=Tokens(), callbacks=callbacks)
trainer.train()

import torch_neuronx  # noqa: E402  (only to report what the run found; the shim or AWS's)

result = {
    "args_device": str(args.device),
    "model_device": str(next(model.parameters()).device),
    "accelerate_device": str(trainer.accelerator.device),
    "losses": [float(loss) for loss in losses],
    "logged_losses": [log["loss"] for log in trainer.state.log_history if "loss" in log],
    "torch_neuronx_shim": bool(getattr(torch_neuronx, "__neuronprof__", False)),
    "autoloaded": "neuronprof_torch" in sys.modules,
    "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                 "accelerate": accelerate.__version__},
    "trace": callbacks[0].exporter.last_trace if callbacks else None,
}
print("RESULT " + json.dumps(result))
