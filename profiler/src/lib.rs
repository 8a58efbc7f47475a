//! torch.profiler semantics over the runtime hooks (work in progress; see issue 5).
