/*
 * neuronprof_hooks.h - C ABI of neuronprof's runtime-hooks crate.
 *
 * Link against the crate's static library (libruntime_hooks.a, built by
 * `cargo build -p runtime-hooks`) plus the system libraries Rust's std needs:
 *   cc app.c libruntime_hooks.a -lpthread -ldl -lm -lrt -lutil
 *
 * Every record is a 64-byte, 64-byte-aligned nph_record: a 24-byte header and a
 * 40-byte payload union whose live member is chosen by `kind`. The layout is identical
 * to runtime_hooks::Record (checked by the crate's tests). Reserved fields must be 0.
 *
 * Recording calls check the global enabled flag first and return at once when it is off.
 * They never block, allocate or make a system call, except that the first record of a
 * thread registers the thread's ring once. A full ring drops the record and counts it.
 * All functions may be called from any thread.
 */
#ifndef NEURONPROF_HOOKS_H
#define NEURONPROF_HOOKS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define NPH_ALIGN64 alignas(64)
#define NPH_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
extern "C" {
#else
#define NPH_ALIGN64 _Alignas(64)
#define NPH_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

/* Record kinds (nph_record.kind). */
#define NPH_KIND_OPERATOR 1     /* payload: host_op */
#define NPH_KIND_USER_RANGE 2   /* payload: range */
#define NPH_KIND_RUNTIME_CALL 3 /* payload: runtime_call, op: NPH_RUNTIME_* */
#define NPH_KIND_KERNEL 4       /* payload: kernel */
#define NPH_KIND_INSTRUCTION 5  /* payload: instruction */
#define NPH_KIND_DMA 6          /* payload: dma, op: NPH_DMA_* */
#define NPH_KIND_MEMORY 7       /* payload: memory, op: NPH_MEMORY_* */
#define NPH_KIND_COLLECTIVE 8   /* payload: collective, op: NPH_COLLECTIVE_* */
#define NPH_KIND_COUNTER 9      /* payload: counter */
#define NPH_KIND_FLOW 10        /* payload: flow, op: NPH_FLOW_* */

/* Phases (nph_record.phase). */
#define NPH_PHASE_BEGIN 1
#define NPH_PHASE_END 2
#define NPH_PHASE_COMPLETE 3 /* start_ns..end_ns */
#define NPH_PHASE_INSTANT 4

/* Runtime call sub-kinds (op of NPH_KIND_RUNTIME_CALL). */
#define NPH_RUNTIME_OTHER 0
#define NPH_RUNTIME_KERNEL_LAUNCH 1
#define NPH_RUNTIME_QUEUE_SUBMIT 2
#define NPH_RUNTIME_SYNCHRONIZE 3
#define NPH_RUNTIME_EVENT_RECORD 4
#define NPH_RUNTIME_EVENT_WAIT 5
#define NPH_RUNTIME_MEMORY_COPY 6

/* DMA directions (op of NPH_KIND_DMA). */
#define NPH_DMA_HOST_TO_DEVICE 1
#define NPH_DMA_DEVICE_TO_HOST 2
#define NPH_DMA_DEVICE_TO_DEVICE 3
#define NPH_DMA_PEER_TO_PEER 4

/* Memory actions (op of NPH_KIND_MEMORY). */
#define NPH_MEMORY_ALLOCATE 1
#define NPH_MEMORY_FREE 2

/* Collective operations (op of NPH_KIND_COLLECTIVE). */
#define NPH_COLLECTIVE_ALL_REDUCE 1
#define NPH_COLLECTIVE_ALL_GATHER 2
#define NPH_COLLECTIVE_REDUCE_SCATTER 3
#define NPH_COLLECTIVE_BROADCAST 4
#define NPH_COLLECTIVE_REDUCE 5
#define NPH_COLLECTIVE_ALL_TO_ALL 6
#define NPH_COLLECTIVE_SEND 7
#define NPH_COLLECTIVE_RECV 8
#define NPH_COLLECTIVE_BARRIER 9

/* Collective algorithms (nph_collective_payload.algorithm). */
#define NPH_ALGORITHM_UNSPECIFIED 0
#define NPH_ALGORITHM_RING 1
#define NPH_ALGORITHM_MESH 2
#define NPH_ALGORITHM_TREE 3
#define NPH_ALGORITHM_HIERARCHICAL 4
#define NPH_ALGORITHM_RECURSIVE_DOUBLING 5
#define NPH_ALGORITHM_KANGA_RING 6

/* Flow kinds (op of NPH_KIND_FLOW). */
#define NPH_FLOW_LAUNCH_TO_KERNEL 1
#define NPH_FLOW_FORWARD_TO_BACKWARD 2
#define NPH_FLOW_OTHER 3
#define NPH_FLOW_STREAM_WAIT 4 /* event record on one queue -> wait on another */

/* Payloads: 40 bytes each, no padding. */

/* input_sig_id: interned "<Input Dims>|<Input type>", two JSON texts as Kineto writes
 * them, e.g. [[2, 3], []]|["c10::BFloat16", "Scalar"]; 0: not recorded. */
typedef struct nph_operator_payload {
    uint32_t name_id;
    uint32_t input_sig_id;
    uint64_t corr_id;
    uint64_t seq_nr; /* autograd sequence number, links forward and backward */
    uint64_t flops;
    uint64_t bytes;
} nph_operator_payload;

typedef struct nph_range_payload {
    uint32_t name_id;
    uint32_t reserved0;
    uint64_t corr_id;
    uint64_t value; /* step N of ProfilerStep#N */
    uint64_t reserved1[2];
} nph_range_payload;

typedef struct nph_runtime_call_payload {
    uint32_t name_id;
    uint16_t device;
    uint16_t queue;
    uint64_t corr_id; /* for a launch: the kernel's */
    uint64_t bytes;
    uint64_t reserved1[2];
} nph_runtime_call_payload;

typedef struct nph_kernel_payload {
    uint32_t name_id;
    uint16_t device;
    uint16_t queue;
    uint64_t corr_id;
    uint64_t flops;
    uint64_t bytes;
    uint64_t reserved1;
} nph_kernel_payload;

typedef struct nph_instruction_payload {
    uint32_t name_id;
    uint16_t device;
    uint8_t core;
    uint8_t engine;
    uint64_t corr_id;
    uint64_t flops;
    uint64_t bytes;
    uint64_t reserved1;
} nph_instruction_payload;

typedef struct nph_dma_payload {
    uint32_t name_id;
    uint16_t device;
    uint16_t queue;
    uint64_t corr_id;
    uint64_t bytes;
    uint64_t src_addr;
    uint64_t dst_addr;
} nph_dma_payload;

typedef struct nph_memory_payload {
    uint32_t category_id;
    uint16_t device;
    uint16_t reserved0;
    uint64_t addr;
    uint64_t bytes;
    uint64_t total_allocated_bytes; /* after this change */
    uint64_t total_reserved_bytes;  /* after this change */
} nph_memory_payload;

typedef struct nph_collective_payload {
    uint32_t group_name_id;
    uint16_t device;
    uint16_t queue;
    uint64_t corr_id;
    uint64_t bytes;
    uint32_t group_size;
    uint32_t rank;
    uint16_t algorithm; /* NPH_ALGORITHM_* */
    uint16_t dtype;     /* c10::ScalarType number */
    uint32_t group_ranks_id; /* interned "Process Group Ranks", e.g. "[0, 1, 2, 3]" */
} nph_collective_payload;

typedef struct nph_counter_payload {
    uint32_t name_id;
    uint16_t device;
    uint16_t reserved0;
    double value;
    uint64_t reserved1[3];
} nph_counter_payload;

typedef struct nph_flow_payload {
    uint32_t name_id;
    uint32_t reserved0;
    uint64_t flow_id;
    uint64_t reserved1[3];
} nph_flow_payload;

typedef union nph_payload {
    nph_operator_payload host_op;
    nph_range_payload range;
    nph_runtime_call_payload runtime_call;
    nph_kernel_payload kernel;
    nph_instruction_payload instruction;
    nph_dma_payload dma;
    nph_memory_payload memory;
    nph_collective_payload collective;
    nph_counter_payload counter;
    nph_flow_payload flow;
    uint64_t words[5];
} nph_payload;

typedef struct nph_record {
    NPH_ALIGN64 uint8_t kind; /* NPH_KIND_* */
    uint8_t phase;            /* NPH_PHASE_* */
    uint16_t op;              /* sub-kind, see the kinds above; 0 otherwise */
    uint32_t thread_id;       /* recording thread's registry index (filled in) */
    uint64_t start_ns;        /* process timeline, ns */
    uint64_t end_ns;          /* == start_ns unless phase is COMPLETE */
    nph_payload payload;
} nph_record;

NPH_STATIC_ASSERT(sizeof(nph_payload) == 40, "nph_payload must be 40 bytes");
NPH_STATIC_ASSERT(sizeof(nph_record) == 64, "nph_record must be 64 bytes");
NPH_STATIC_ASSERT(offsetof(nph_record, payload) == 24, "payload must start at byte 24");

/* Recording on/off (off at start). A disabled hook costs one relaxed atomic load. */
void nph_set_enabled(int32_t enabled);
int32_t nph_is_enabled(void);

/* Names. nph_intern takes a lock: call once per distinct name and keep the id.
 * nph_resolve_name copies at most buf_len-1 bytes plus a NUL and returns the full
 * length (0: unknown id). */
uint32_t nph_intern(const char *name, size_t len);
size_t nph_resolve_name(uint32_t name_id, char *buf, size_t buf_len);

/* Correlation ids (process-wide, never 0); also usable as flow ids. */
uint64_t nph_next_corr_id(void);

/* Clock. nph_now_ns is this thread's host clock: monotonic minus the process-wide cuts
 * minus this thread's emulation time. */
uint64_t nph_now_ns(void);
uint64_t nph_monotonic_ns(void);
void nph_clock_anchor(uint64_t *monotonic_ns, uint64_t *unix_ns);

/* Emulation time: the host clock stands still between begin and end, and the time in
 * between is subtracted for good. nph_advance_to moves the host clock forward to a
 * modeled instant (never back) and returns it. */
void nph_emulation_begin(void);
void nph_emulation_end(void);
uint64_t nph_advance_to(uint64_t target_ns);

/* CPU-time clock (off by default): with on != 0 this thread's host clock also drops the
 * time the thread is not running, read from its CPU time at emulation begin/end, waits,
 * user ranges and nph_clock_sync (a system call each, never per record). nph_clock_sync
 * returns the host clock. */
void nph_follow_cpu_time(int32_t on);
uint64_t nph_clock_sync(void);

/* Process-wide cut: while any thread is between nph_cut_begin and nph_cut_end, every
 * thread's host clock stands still; afterwards the cut is subtracted for good. Cuts nest
 * per thread; overlapping cuts of several threads count as their union. */
void nph_cut_begin(void);
void nph_cut_end(void);
uint64_t nph_cut_total_ns(void);
/* A runtime boundary: the time this thread waited for a CPU (its run delay) since its
 * previous boundary is cut retroactively, never before a timestamp already taken.
 * Returns the ns cut. */
uint64_t nph_cut_run_delay(void);

/* Recording. nph_record_raw takes times as given; nph_record_now stamps the host clock.
 * A null payload means all zero. thread_id is always filled in. */
void nph_record_raw(const nph_record *record);
void nph_record_now(uint8_t kind, uint8_t phase, uint16_t op, const nph_payload *payload);
void nph_operator_begin(uint32_t name_id, uint64_t corr_id, uint64_t seq_nr);
void nph_operator_end(uint32_t name_id, uint64_t corr_id, uint64_t seq_nr);
void nph_range_begin(uint32_t name_id, uint64_t value);
void nph_range_end(uint32_t name_id, uint64_t value);

/* Registers the calling thread's ring now (allocates and pre-faults it, ~0.7 ms for
 * the default 2 MiB ring) instead of at the thread's first record. Returns 1, or 0 if
 * the thread is exiting. */
int32_t nph_register_thread(void);

/* Collector. nph_drain copies up to `capacity` unread records of all threads (each
 * thread's oldest first) and returns how many; producers may keep recording. */
size_t nph_drain(nph_record *out, size_t capacity);
uint64_t nph_dropped_total(void);
void nph_set_ring_capacity(size_t records);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NEURONPROF_HOOKS_H */
