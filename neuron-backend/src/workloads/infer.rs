//! The `gpt-infer` workload: prefill a batch of prompts, then decode greedily with a
//! KV cache, one token per sequence per step.
//!
//! Prompts are `context / 2` characters of the built-in text; each decode step embeds
//! the new tokens, appends their keys and values to each layer's cache (`aten::cat`
//! along the sequence), attends over the cache, and reads the logits back to pick the
//! next tokens (a host synchronization per step, as a serving loop has). Tokens per
//! second are counted over the decode steps in modeled time.

use super::gpt::{causal_mask, corpus_tokens, Model};
use super::mlp::argmax;
use super::{begin_step, RankResult, StepReport, WorkloadConfig, WorkloadHooks};
use crate::dist::Rank;
use crate::{BackendError, Tensor};

struct Cache {
    keys: Vec<Tensor>,
    values: Vec<Tensor>,
}

/// Runs `tokens` (`[batch, t]`, positions `start..start + t`) through the model,
/// appending to (or filling) the cache; returns the last position's logits
/// `[batch, vocab]`.
fn step(
    model: &Model,
    cache: &mut Cache,
    tokens: &Tensor,
    start: usize,
    mask: Option<&Tensor>,
) -> Result<Tensor, BackendError> {
    let s = model.shape;
    let p = &model.params;
    let (batch, t) = (tokens.shape()[0], tokens.shape()[1]);
    let hd = s.d_model / s.heads;
    let pos = p[1].slice(0, start, start + t)?;
    let mut x = p[0].embedding(tokens)?.add(&pos)?;
    let split = |v: Tensor| {
        v.reshape(&[batch as isize, t as isize, s.heads as isize, hd as isize])?
            .transpose(1, 2)
    };
    for (layer, b) in model.blocks.iter().enumerate() {
        let h = x.layer_norm(&p[b.ln1.0], &p[b.ln1.1], 1e-5)?;
        let q = split(h.linear(&p[b.qkv[0]], None)?)?;
        let k = split(h.linear(&p[b.qkv[1]], None)?)?;
        let v = split(h.linear(&p[b.qkv[2]], None)?)?;
        let (k, v) = if cache.keys.len() > layer {
            (
                Tensor::concat(&[&cache.keys[layer], &k], 2)?,
                Tensor::concat(&[&cache.values[layer], &v], 2)?,
            )
        } else {
            (k, v)
        };
        let mut scores = q
            .matmul(&k.transpose(-1, -2)?)?
            .mul_scalar(1.0 / (hd as f64).sqrt())?;
        if let Some(mask) = mask {
            scores = scores.add(mask)?;
        }
        let att = scores.softmax()?.matmul(&v)?.transpose(1, 2)?.reshape(&[
            batch as isize,
            t as isize,
            s.d_model as isize,
        ])?;
        x = x.add(&att.linear(&p[b.wo], None)?)?;
        let h = x.layer_norm(&p[b.ln2.0], &p[b.ln2.1], 1e-5)?;
        let m = h
            .linear(&p[b.w1.0], Some(&p[b.w1.1]))?
            .gelu()?
            .linear(&p[b.w2], None)?;
        x = x.add(&m.add(&p[b.b2])?)?;
        if cache.keys.len() > layer {
            cache.keys[layer] = k;
            cache.values[layer] = v;
        } else {
            cache.keys.push(k);
            cache.values.push(v);
        }
    }
    let n = p.len();
    let last = x
        .slice(1, t - 1, t)?
        .reshape(&[batch as isize, s.d_model as isize])?;
    last.layer_norm(&p[n - 3], &p[n - 2], 1e-5)?
        .linear(&p[n - 1], None)
}

/// Greedy next tokens from logits `[batch, vocab]` (zeros without numerics).
fn next_tokens(
    config: &WorkloadConfig,
    logits: &Tensor,
    vocab: usize,
) -> Result<Vec<i64>, BackendError> {
    let batch = logits.shape()[0];
    if !config.numerics {
        // Timing only: the read still waits for the device.
        logits.device().map(crate::Device::synchronize);
        return Ok(vec![0; batch]);
    }
    let values = logits.to_vec_f32()?;
    Ok(values.chunks(vocab).map(|row| argmax(row) as i64).collect())
}

pub(crate) fn serve(
    config: &WorkloadConfig,
    rank: &Rank,
    hooks: &(impl WorkloadHooks + ?Sized),
) -> Result<RankResult, BackendError> {
    if config.tp != 1 {
        return Err(BackendError::InvalidArgument {
            op: "gpt-infer",
            reason: "serving runs data-parallel only (tp 1)".into(),
        });
    }
    let device = rank.device();
    let s = config.gpt;
    let dtype = config.compute_dtype();
    let model = Model::new(device, s, None, config.seed, dtype)?;
    let local = config.batch / rank.world_size();
    let prompt = s.context / 2;
    if prompt + config.steps > s.context {
        return Err(BackendError::InvalidArgument {
            op: "gpt-infer",
            reason: format!(
                "a {prompt}-token prompt and {} decode steps exceed the context {}",
                config.steps, s.context
            ),
        });
    }
    let corpus = corpus_tokens();
    let mut prompts = Vec::with_capacity(local * prompt);
    for j in 0..local {
        let start = ((rank.rank() * local + j) * 131) % corpus.len().saturating_sub(prompt).max(1);
        prompts.extend((0..prompt).map(|i| {
            if config.numerics {
                corpus[start + i]
            } else {
                0
            }
        }));
    }
    let prompts = Tensor::from_i64(&[local, prompt], prompts)?.to_device(device)?;
    let mask = causal_mask(device, prompt, dtype)?;
    let mut cache = Cache {
        keys: Vec::new(),
        values: Vec::new(),
    };
    let logits = step(&model, &mut cache, &prompts, 0, Some(&mask))?;
    let mut next = next_tokens(config, &logits, model.vocab)?;
    let decode_start_ns = runtime_hooks::clock::now_ns();
    let mut result = RankResult::default();
    hooks.on_start(rank.rank());
    for i in 0..config.steps {
        if !begin_step(config, rank, i) {
            return Ok(result);
        }
        let tokens = Tensor::from_i64(&[local, 1], next.clone())?.to_device(device)?;
        let logits = step(&model, &mut cache, &tokens, prompt + i, None)?;
        next = next_tokens(config, &logits, model.vocab)?;
        let report = StepReport {
            rank: rank.rank(),
            step: i,
            loss: None,
            end_ns: runtime_hooks::clock::now_ns(),
            buckets: 0,
        };
        hooks.on_step(&report);
        result.steps.push(report);
    }
    let elapsed_ns = runtime_hooks::clock::now_ns()
        .saturating_sub(decode_start_ns)
        .max(1);
    result.tokens_per_sec = Some((local * config.steps) as f64 / (elapsed_ns as f64 * 1e-9));
    Ok(result)
}
