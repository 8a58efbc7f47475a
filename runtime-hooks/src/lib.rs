//! Near-zero-overhead event recording for neuronprof.
//!
//! `runtime-hooks` is the leaf crate that a Neuron runtime (the emulated
//! `neuron-backend`, or a C/C++ PyTorch PrivateUse1 extension through the C ABI) calls at
//! every dispatch and engine-queue point. It records fixed-size [`Record`]s into
//! per-thread rings with no allocation, no lock and no system call, and lets a collector
//! (the `profiler` crate) drain every thread's records while recording goes on. It
//! depends on nothing but `std` and `libc`, and knows nothing of trace formats: turning
//! records into Kineto events happens in `profiler`.
//!
//! # Key types and calls
//!
//! - Recording: [`set_enabled`], then one call per [record kind](RecordKind):
//!   [`operator_begin`]/[`operator_end`] (or [`OperatorScope`]), [`range_begin`]/
//!   [`range_end`] (or [`RangeScope`], [`range_scope!`]), [`runtime_call`] (or
//!   [`RuntimeCallScope`]), [`kernel`], [`instruction`], [`dma`], [`memory`],
//!   [`collective`] (and [`collective_begin`]/[`collective_end`]), [`counter`],
//!   [`flow_start`]/[`flow_end`]; [`record`], [`record_now`] and [`record_span`] for
//!   anything else. [`next_corr_id`] hands out correlation (and flow) ids.
//! - Records: [`Record`] (64 bytes, `#[repr(C)]`, the same as `nph_record` in
//!   `include/neuronprof_hooks.h`), its [`Payload`] union and [`Record::event`] to decode.
//! - Names: [`name!`] interns a literal once per call site; [`intern`] for run-time
//!   names; [`resolve`] and [`names_from`] turn ids back into strings.
//! - Collecting: [`drain`]/[`drain_with`], [`thread_stats`] (per-thread recorded,
//!   dropped, drained, OS thread id and name), [`dropped_total`]; [`register_thread`] to
//!   set a thread up ahead of its first record; [`current_thread_id`] for the calling
//!   thread's index in records.
//! - Time: [`clock::now_ns`] (this thread's host clock), [`clock::anchor`] (the wall-time
//!   anchor for `baseTimeNanoseconds`), [`clock::emulation_scope`] and
//!   [`clock::advance_to`] for the emulation-time contract; [`clock::follow_cpu_time`]
//!   makes a thread's host clock advance only while the thread runs (its CPU time, read
//!   at the runtime's boundaries: [`clock::sync`]); [`clock::cut_scope`] (and
//!   [`clock::cut_run_delay`]) cut emulation work and preemption from the whole
//!   process's timeline, and [`clock::cut_log`] warps other profilers' real-clock
//!   instants onto it.
//!
//! # C ABI
//!
//! `include/neuronprof_hooks.h` declares the same calls with an `nph_` prefix
//! (`nph_set_enabled`, `nph_intern`, `nph_operator_begin`, `nph_record_now`,
//! `nph_record_raw`, `nph_emulation_begin`, `nph_advance_to`, `nph_follow_cpu_time`,
//! `nph_drain`, ...), the
//! `nph_record` struct (laid out exactly like [`Record`]) and the kind constants. The
//! crate builds as a static library too (`libruntime_hooks.a`); link it with
//! `-lpthread -ldl -lm -lrt -lutil`. `tests/c_program_records_through_header.rs` builds
//! and runs a C program that way and checks the layout and records field by field.
//!
//! # Example
//!
//! ```
//! use runtime_hooks::{clock, Event, KernelPayload, OperatorPayload, OperatorScope};
//!
//! runtime_hooks::set_enabled(true);
//! let corr_id = runtime_hooks::next_corr_id();
//! {
//!     let _op = OperatorScope::new(OperatorPayload {
//!         name_id: runtime_hooks::name!("aten::matmul"),
//!         corr_id,
//!         ..Default::default()
//!     });
//!     // The emulator's CPU numerics do not count as host time.
//!     let _numerics = clock::emulation_scope();
//!     let start_ns = clock::now_ns() + 5_000; // placed by the timing model
//!     runtime_hooks::kernel(start_ns, start_ns + 20_000, KernelPayload {
//!         name_id: runtime_hooks::intern("matmul_kernel"),
//!         corr_id,
//!         ..Default::default()
//!     });
//! }
//!
//! let mut records = Vec::new();
//! runtime_hooks::drain(&mut records);
//! assert_eq!(records.len(), 3); // operator begin, kernel, operator end
//! let Some(Event::Kernel(kernel)) = records[1].event() else { unreachable!() };
//! assert_eq!(kernel.corr_id, corr_id);
//! assert_eq!(records[1].dur_ns(), 20_000);
//! assert_eq!(runtime_hooks::resolve(kernel.name_id).as_deref(), Some("matmul_kernel"));
//! assert_eq!(runtime_hooks::dropped_total(), 0);
//! ```
//!
//! # Measured overhead
//!
//! Medians from one run of `cargo bench -p runtime-hooks` on the development machine
//! (2-core AMD EPYC VM, shared with other builds while measuring: indicative only; the
//! full table with ratios is in `docs/PERFORMANCE.md`):
//!
//! | what                                                     | median   | × clock read |
//! |----------------------------------------------------------|---------:|-------------:|
//! | do-nothing baseline                                      | 0.24 ns  | 0.01         |
//! | `rdtsc` alone                                            | 9.11 ns  | 0.44         |
//! | `clock_gettime(CLOCK_MONOTONIC)` alone (the clock read)  | 20.91 ns | 1.00         |
//! | record, disabled                                         | 1.67 ns  | 0.08         |
//! | record, enabled                                          | 28.26 ns | 1.35         |
//! | record, enabled, ring full (dropped, counted)            | 24.34 ns | 1.16         |
//! | record, two threads at once (CPU time per thread)        | 28.33 ns | 1.35         |
//! | [`OperatorScope`] begin + end (two records)              | 54.67 ns | 2.61         |
//! | `tracing` span create + enter + exit, no-op subscriber   | 23.87 ns | 1.14         |
//! | thread registration (once per thread), cold / warm       | 704 µs / 2.4 µs |      |
//!
//! Once a process has cut its timeline (the PyTorch path), a clock read is a
//! sequence-lock read with two fences: 1.21× the clock read, and a record 2.0×, in one
//! run on a loaded machine (`docs/PERFORMANCE.md`, "The process-wide cut"); processes
//! that never cut keep the figures above.
//!
//! # Design choices
//!
//! - **Clock.** `CLOCK_MONOTONIC` through the vDSO rather than a self-calibrated TSC:
//!   every process on a host shares it exactly (ranks line up), it needs no calibration
//!   or invariant-TSC detection, and the kernel reads the TSC underneath anyway; see
//!   [`clock`] for the reasoning. The price is the difference between the clock and
//!   `rdtsc` rows above. A disabled hook reads no clock at all: the enabled flag is
//!   checked first.
//! - **Records.** 64 bytes, aligned to a cache line, so a record is one line write. The
//!   payload is a union of padding-free plain-data structs, so every byte is always
//!   initialized and decoding is safe.
//! - **Rings.** One single-producer ring per thread, [`DEFAULT_RING_CAPACITY`] records
//!   (2 MiB) unless [`set_ring_capacity`] says otherwise before the thread's first
//!   record. Producer and consumer positions sit on separate 128-byte-aligned lines; the
//!   producer keeps a cached copy of the consumer position and reads the shared one only
//!   when the ring looks full. Consumers take a per-ring lock that producers never touch.
//!   The last eighth of a ring is kept for user ranges (the steps) and flow ends, so a
//!   ring that overflows drops other records first.
//! - **One-time thread registration.** A thread's first record (enabled) allocates its
//!   ring, touches each of its pages (so the recording path never page-faults later),
//!   takes the registry lock and reads its OS thread id and name: about 0.7 ms for the
//!   default ring, once per thread. A runtime moves that cost out of the first record by
//!   calling [`register_thread`] when it starts the thread. After that the recording
//!   path is lock-free, allocation-free and system-call-free. Rings are shared (`Arc`) with the registry, so records of exited
//!   threads stay until a drain empties them; the ring is then freed and its final
//!   [`ThreadStats`] kept.
//! - **Collection.** A collector drains into [`RecordBlocks`]: 2 MiB blocks that never
//!   move, each mapped in one call, so a drain costs what it moves and never stalls on
//!   copying what a window already holds (a growing `Vec` did, and the rings overflowed
//!   meanwhile).
//! - **Drops are counted, never waited for.** A full ring drops the new record and
//!   bumps the thread's counter (single writer: a plain store, no atomic
//!   read-modify-write); for every thread `recorded + dropped == attempted` exactly.
//!   Records attempted while a thread tears down its thread locals cannot be stored and
//!   are counted in [`records_lost_at_exit`], which [`dropped_total`] includes.
//! - **Names.** A call site interns once and keeps the id in a static (one relaxed load
//!   afterwards); run-time names go through a locked interner, off the hot path.
#![warn(missing_docs)]

mod blocks;
pub mod clock;
pub mod collector;
mod ffi;
mod hooks;
mod local;
mod names;
mod record;
mod ring;

/// Saying that a test could not run (the repository's skip mechanism).
#[cfg(test)]
#[path = "../../tests/support/skip.rs"]
mod skip;

pub use blocks::{RecordBlocks, BLOCK_RECORDS};
pub use collector::{
    current_thread_id, drain, drain_with, dropped_total, records_lost_at_exit, register_thread,
    ring_capacity, set_ring_capacity, thread_stats, ThreadStats, DEFAULT_RING_CAPACITY,
    MAX_RING_CAPACITY,
};
pub use hooks::{
    collective, collective_begin, collective_end, counter, counter_at, dma, flow_end, flow_end_at,
    flow_start, instruction, is_enabled, kernel, memory, next_corr_id, operator_begin,
    operator_end, range_begin, range_end, record, record_now, record_span, runtime_call,
    set_enabled, OperatorScope, RangeScope, RuntimeCallScope,
};
pub use names::{intern, names_from, resolve, NameId, NameSite};
pub use record::*;
