//! The `gpt` workload: a decoder-only transformer trained on a character-level text.
//!
//! Pre-norm blocks: `x + Wo·attn(LN(x))`, then `x + W2·gelu(W1·LN(x))`; causal
//! self-attention with `heads` heads; a final layer norm and an untied output head;
//! mean cross-entropy of the next character. With a tensor-parallel group of size
//! `tp`, attention heads and the MLP's hidden units are split across it (Megatron's
//! column-parallel `W1`/`Wq,k,v` and row-parallel `W2`/`Wo`, joined by an all-reduce
//! forward and backward).

use super::ddp::Reducer;
use super::mlp::{mean_loss, missing_grad};
use super::{begin_step, dp_group, RankResult, StepReport, WorkloadConfig, WorkloadHooks};
use crate::autograd::{Tape, Var};
use crate::dist::{ProcessGroup, Rank};
use crate::ops::random_u64;
use crate::optim::{clip_grad_norm, AdamW, Sgd};
use crate::{BackendError, DType, Device, Tensor};

/// The text the tiny model trains on (see the module docs of `workloads`).
pub(crate) const CORPUS: &str = include_str!("../../data/tiny_corpus.txt");

/// Dimensions of a GPT model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GptShape {
    /// Vocabulary size; 0: the characters of the built-in text.
    pub vocab: usize,
    /// Context length (tokens per sequence).
    pub context: usize,
    /// Model width.
    pub d_model: usize,
    /// Attention heads.
    pub heads: usize,
    /// Transformer blocks.
    pub layers: usize,
    /// MLP hidden width.
    pub ffn: usize,
}

impl GptShape {
    /// The demo's model (`neuronprof demo`, `run gpt --shape demo`): 2 blocks of width
    /// 512, 8 heads, context 128, MLP 2048, on the built-in text's characters — large
    /// enough that device time, not host dispatch, sets the pace of a step.
    pub const DEMO: GptShape = GptShape {
        vocab: 0,
        context: 128,
        d_model: 512,
        heads: 8,
        layers: 2,
        ffn: 2048,
    };

    /// The tiny model the tests train: 1 block, width 32, 2 heads, context 16.
    pub fn tiny() -> Self {
        GptShape {
            vocab: 0,
            context: 16,
            d_model: 32,
            heads: 2,
            layers: 1,
            ffn: 64,
        }
    }

    /// Llama-class 8B shapes with `layers` blocks (32 in the real model).
    pub fn llama8b(layers: usize) -> Self {
        GptShape {
            vocab: 128_256,
            context: 2048,
            d_model: 4096,
            heads: 32,
            layers,
            ffn: 14_336,
        }
    }
}

/// The characters of the corpus, sorted: the tiny model's vocabulary.
pub(crate) fn alphabet() -> Vec<char> {
    let mut chars: Vec<char> = CORPUS.chars().collect();
    chars.sort_unstable();
    chars.dedup();
    chars
}

/// The corpus as token ids.
pub(crate) fn corpus_tokens() -> Vec<i64> {
    let alphabet = alphabet();
    CORPUS
        .chars()
        .map(|c| alphabet.binary_search(&c).unwrap_or(0) as i64)
        .collect()
}

/// One block's parameters (this rank's shards under tensor parallelism).
pub(crate) struct Block {
    pub(crate) ln1: (usize, usize),
    pub(crate) qkv: [usize; 3],
    pub(crate) wo: usize,
    pub(crate) ln2: (usize, usize),
    pub(crate) w1: (usize, usize),
    pub(crate) w2: usize,
    pub(crate) b2: usize,
}

/// The model: parameter tensors and where each block's live.
pub(crate) struct Model {
    pub(crate) shape: GptShape,
    pub(crate) vocab: usize,
    pub(crate) tp: Option<ProcessGroup>,
    pub(crate) params: Vec<Tensor>,
    pub(crate) blocks: Vec<Block>,
}

impl Model {
    pub(crate) fn new(
        device: &Device,
        shape: GptShape,
        tp: Option<ProcessGroup>,
        seed: u64,
        dtype: DType,
    ) -> Result<Model, BackendError> {
        let vocab = if shape.vocab == 0 {
            alphabet().len()
        } else {
            shape.vocab
        };
        let (tp_size, tp_rank) = tp.as_ref().map_or((1, 0), |g| (g.size(), g.rank()));
        let c = shape.d_model;
        let (cl, fl) = (c / tp_size, shape.ffn / tp_size);
        let mut params = Vec::new();
        let mut counter = seed * 1_000 + tp_rank as u64 * 100_000;
        let mut add = |t: Tensor| {
            params.push(t);
            params.len() - 1
        };
        let mut randn = |shape: &[usize], scale: f64| -> Result<Tensor, BackendError> {
            counter += 1;
            device.randn(shape, dtype, counter)?.mul_scalar(scale)
        };
        let std = 0.02f64.max(1.0 / (c as f64).sqrt() * 0.5);
        let tok = add(randn(&[vocab, c], std)?);
        let pos = add(randn(&[shape.context, c], std)?);
        let mut blocks = Vec::new();
        for _ in 0..shape.layers {
            let ln1 = (
                add(device.ones(&[c], dtype)?),
                add(device.zeros(&[c], dtype)?),
            );
            let qkv = [
                add(randn(&[cl, c], std)?),
                add(randn(&[cl, c], std)?),
                add(randn(&[cl, c], std)?),
            ];
            let wo = add(randn(&[c, cl], std)?);
            let ln2 = (
                add(device.ones(&[c], dtype)?),
                add(device.zeros(&[c], dtype)?),
            );
            let w1 = (add(randn(&[fl, c], std)?), add(device.zeros(&[fl], dtype)?));
            let w2 = add(randn(&[c, fl], std)?);
            let b2 = add(device.zeros(&[c], dtype)?);
            blocks.push(Block {
                ln1,
                qkv,
                wo,
                ln2,
                w1,
                w2,
                b2,
            });
        }
        let lnf = (
            add(device.ones(&[c], dtype)?),
            add(device.zeros(&[c], dtype)?),
        );
        let head = add(randn(&[vocab, c], std)?);
        debug_assert_eq!(
            (tok, pos, lnf.0, lnf.1, head),
            (0, 1, params.len() - 3, params.len() - 2, params.len() - 1)
        );
        Ok(Model {
            shape,
            vocab,
            tp,
            params,
            blocks,
        })
    }

    /// Logits `[batch · context, vocab]` of `tokens` (`[batch, context]`), with `p` the
    /// parameters as tape variables (cast to the compute dtype).
    pub(crate) fn forward(
        &self,
        p: &[Var],
        tokens: &Tensor,
        mask: &Var,
    ) -> Result<Var, BackendError> {
        let s = self.shape;
        let batch = tokens.shape()[0];
        let t = tokens.shape()[1];
        let heads = s.heads / self.tp.as_ref().map_or(1, ProcessGroup::size);
        let hd = s.d_model / s.heads;
        let pos = if t == s.context {
            p[1].clone()
        } else {
            p[1].reshape(&[s.context as isize, -1])?
        };
        let mut x = p[0].embedding(tokens)?.add(&pos)?;
        let split = |v: Var| -> Result<Var, BackendError> {
            v.reshape(&[batch as isize, t as isize, heads as isize, hd as isize])?
                .transpose(1, 2)
        };
        for b in &self.blocks {
            let mut h = x.layer_norm(&p[b.ln1.0], &p[b.ln1.1], 1e-5)?;
            if let Some(tp) = &self.tp {
                h = h.tp_copy(tp)?;
            }
            let q = split(h.linear(&p[b.qkv[0]], None)?)?;
            let k = split(h.linear(&p[b.qkv[1]], None)?)?;
            let v = split(h.linear(&p[b.qkv[2]], None)?)?;
            let scores = q
                .matmul(&k.transpose(-1, -2)?)?
                .mul_scalar(1.0 / (hd as f64).sqrt())?
                .add(mask)?;
            let att = scores.softmax()?.matmul(&v)?.transpose(1, 2)?.reshape(&[
                batch as isize,
                t as isize,
                (heads * hd) as isize,
            ])?;
            let mut o = att.linear(&p[b.wo], None)?;
            if let Some(tp) = &self.tp {
                o = o.tp_reduce(tp)?;
            }
            x = x.add(&o)?;
            let mut h = x.layer_norm(&p[b.ln2.0], &p[b.ln2.1], 1e-5)?;
            if let Some(tp) = &self.tp {
                h = h.tp_copy(tp)?;
            }
            let mut m = h
                .linear(&p[b.w1.0], Some(&p[b.w1.1]))?
                .gelu()?
                .linear(&p[b.w2], None)?;
            if let Some(tp) = &self.tp {
                m = m.tp_reduce(tp)?;
            }
            x = x.add(&m.add(&p[b.b2])?)?;
        }
        let n = self.params.len();
        let x = x.layer_norm(&p[n - 3], &p[n - 2], 1e-5)?;
        x.linear(&p[n - 1], None)?
            .reshape(&[(batch * t) as isize, self.vocab as isize])
    }
}

/// A causal mask `[t, t]`: 0 on and below the diagonal, a large negative number above.
pub(crate) fn causal_mask(device: &Device, t: usize, dtype: DType) -> Result<Tensor, BackendError> {
    let values = (0..t * t)
        .map(|i| if i % t > i / t { -1e9 } else { 0.0 })
        .collect();
    Tensor::from_f32(&[t, t], values)?
        .to_device(device)?
        .cast(dtype)
}

/// Sequence `index` of step `step`: `context + 1` tokens from a seeded position.
fn sequence(tokens: &[i64], seed: u64, step: usize, index: usize, context: usize) -> &[i64] {
    let span = tokens.len().saturating_sub(context + 1).max(1);
    let start = (random_u64(seed, (step * 1_000_003 + index) as u64) % span as u64) as usize;
    &tokens[start..(start + context + 1).min(tokens.len())]
}

pub(crate) fn train(
    config: &WorkloadConfig,
    rank: &Rank,
    hooks: &(impl WorkloadHooks + ?Sized),
) -> Result<RankResult, BackendError> {
    let device = rank.device();
    let s = config.gpt;
    let dtype = config.compute_dtype();
    let master = config.master_dtype();
    let tp = rank.group_with_prefix("tp")?;
    let tp = (tp.size() > 1).then_some(tp);
    if tp
        .as_ref()
        .is_some_and(|g| !s.heads.is_multiple_of(g.size()) || !s.ffn.is_multiple_of(g.size()))
    {
        return Err(BackendError::InvalidArgument {
            op: "gpt",
            reason: format!(
                "tp {} must divide heads {} and ffn {}",
                config.tp, s.heads, s.ffn
            ),
        });
    }
    let dp = dp_group(rank)?;
    let (dp_size, dp_rank) = dp.as_ref().map_or((1, 0), |g| (g.size(), g.rank()));
    let local = config.batch / dp_size;
    let mut model = Model::new(device, s, tp, config.seed, master)?;
    let corpus = corpus_tokens();
    let mask = causal_mask(device, s.context, dtype)?;
    let mut adamw = AdamW::new(3e-3);
    adamw.weight_decay = 0.0;
    let mut sgd = Sgd::new(1e-3, 0.0);
    let mut result = RankResult::default();
    hooks.on_start(rank.rank());
    for step in 0..config.steps {
        if !begin_step(config, rank, step) {
            return Ok(result);
        }
        let (mut inputs, mut targets) = (Vec::new(), Vec::new());
        for j in 0..local {
            let seq = if config.numerics {
                sequence(&corpus, config.seed, step, dp_rank * local + j, s.context).to_vec()
            } else {
                vec![0; s.context + 1]
            };
            inputs.extend_from_slice(&seq[..s.context]);
            targets.extend_from_slice(&seq[1..]);
        }
        let inputs = Tensor::from_i64(&[local, s.context], inputs)?.to_device(device)?;
        let targets = Tensor::from_i64(&[local * s.context], targets)?.to_device(device)?;
        let tape = Tape::new();
        let vars: Vec<Var> = model.params.iter().map(|p| tape.param(p.clone())).collect();
        let cast: Vec<Var> = vars
            .iter()
            .map(|v| v.cast(dtype))
            .collect::<Result<_, _>>()?;
        let logits = model.forward(&cast, &inputs, &tape.constant(mask.clone()))?;
        let loss = logits.cross_entropy(&targets)?;
        let mut reducer = Reducer::new(dp.clone(), vars.len(), config.bucket_bytes);
        tape.backward_with(&loss, &vars, |i, g| reducer.ready(i, g))?;
        let (grads, buckets) = reducer.finish()?;
        let mut grads: Vec<Tensor> = grads
            .into_iter()
            .map(|g| g.ok_or_else(|| missing_grad("gpt")))
            .collect::<Result<_, _>>()?;
        if config.clip_norm > 0.0 {
            clip_grad_norm(&mut grads, config.clip_norm)?;
        }
        let optimizer = config.optimizer.unwrap_or(if config.numerics {
            super::Optimizer::AdamW
        } else {
            // Timing-only presets: a stateless update keeps optimizer memory small.
            super::Optimizer::Sgd
        });
        match optimizer {
            super::Optimizer::AdamW => adamw.step(&mut model.params, &grads)?,
            super::Optimizer::Sgd => sgd.step(&mut model.params, &grads)?,
        }
        let report = StepReport {
            rank: rank.rank(),
            step,
            loss: mean_loss(config, dp.as_ref(), loss.tensor())?,
            end_ns: runtime_hooks::clock::now_ns(),
            buckets,
        };
        hooks.on_step(&report);
        result.steps.push(report);
    }
    Ok(result)
}
