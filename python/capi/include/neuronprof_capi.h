/*
 * neuronprof_capi.h - C ABI of the emulated neuron device and of the Kineto plugin's
 * conversion (crate neuronprof-capi, python/capi). Link libneuronprof_capi.so, which
 * also exports the nph_* recording calls of runtime-hooks/include/neuronprof_hooks.h.
 *
 * Calls that can fail return NPC_OK (0) or an NPC_ERR_* status and leave a message
 * for npc_last_error (per thread). No call unwinds into C: a panic (a bug) becomes
 * NPC_ERR_PANIC, or for a call returning something else the value its comment gives for
 * a failure (0, -1, 1 for npc_event_query, NULL), with the message for npc_last_error.
 * NEURONPROF_CAPI_PANIC=<npc_name> makes that call panic (tests: one entry point at a
 * time). Structs are plain data; unused fields must be 0.
 * Times named *_ns are the process timeline of nph_now_ns; *_unix_ns are ns since the
 * Unix epoch (what Kineto activities carry). Types end in _t; the Rust names are
 * NpcLaunch, NpcKernelSpan, NpcMemoryStats, NpcActivity, NpcWindow, NpcTensor, NpcOp,
 * NpcEvent, NpcWarpStats, NpcCollective, NpcCollectiveSpan, NpcGraphNode, NpcProgram.
 */
#ifndef NEURONPROF_CAPI_H
#define NEURONPROF_CAPI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NPC_OK 0
#define NPC_ERR_NO_DEVICE 1
#define NPC_ERR_OUT_OF_MEMORY 2
#define NPC_ERR_ARGUMENT 3
#define NPC_ERR_PANIC 4
#define NPC_ERR_ALREADY_WARPED 5 /* npc_warp_trace_file: the trace was warped before */
#define NPC_ERR_TRACE 6          /* npc_warp_trace_file: not a readable trace */

/* npc_launch.kind */
#define NPC_KERNEL_MATMUL 1      /* batch, m, k, n, bias */
#define NPC_KERNEL_ELEMENTWISE 2 /* elements, inputs, engine */
#define NPC_KERNEL_COPY_H2D 3    /* bytes */
#define NPC_KERNEL_COPY_D2H 4    /* bytes */
#define NPC_KERNEL_COPY_D2D 5    /* bytes */

/* npc_launch.dtype: by element size */
#define NPC_DTYPE_F32 0
#define NPC_DTYPE_BF16 1
#define NPC_DTYPE_I64 2
#define NPC_DTYPE_F8E4M3 3

/* npc_launch.engine */
#define NPC_ENGINE_TENSOR 0
#define NPC_ENGINE_VECTOR 1 /* arithmetic, reductions */
#define NPC_ENGINE_SCALAR 2 /* activation functions */
#define NPC_ENGINE_GPSIMD 3 /* gathers, random numbers */

/* npc_activity.kind */
#define NPC_ACTIVITY_RUNTIME 1        /* privateuse1_runtime */
#define NPC_ACTIVITY_RUNTIME_LAUNCH 2 /* privateuse1_runtime starting an ac2g flow */
#define NPC_ACTIVITY_KERNEL 3         /* kernel */
#define NPC_ACTIVITY_MEMCPY 4         /* gpu_memcpy */
#define NPC_ACTIVITY_MEMSET 5         /* gpu_memset */
#define NPC_ACTIVITY_EVENT_RECORD 6   /* an event's mark on its queue (cuda_event) */
#define NPC_ACTIVITY_STREAM_WAIT 7    /* a queue waiting for another's event (cuda_sync) */

/* npc_activity.flow: its part in the flow whose id is its corr_id */
#define NPC_FLOW_NONE 0
#define NPC_FLOW_START 1
#define NPC_FLOW_END 2

typedef struct npc_launch {
    uint32_t name_id; /* nph_intern'ed kernel name */
    uint16_t device;
    uint16_t kind; /* NPC_KERNEL_* */
    uint64_t corr_id; /* nph_next_corr_id() */
    uint64_t flops;
    uint64_t bytes; /* read + written; for copies the bytes copied */
    uint64_t batch;
    uint64_t m;
    uint64_t k;
    uint64_t n;
    uint64_t elements;
    uint32_t inputs;
    uint16_t dtype;  /* NPC_DTYPE_* */
    uint16_t engine; /* NPC_ENGINE_* */
    uint32_t bias;
    uint16_t queue; /* the stream: 0 default, see npc_queue_count */
    uint16_t reserved;
} npc_launch_t;

typedef struct npc_kernel_span {
    uint64_t corr_id;
    uint64_t queue;
    uint64_t start_ns;
    uint64_t end_ns;
} npc_kernel_span_t;

typedef struct npc_memory_stats {
    uint64_t allocated_bytes;
    uint64_t reserved_bytes;
    uint64_t peak_allocated_bytes;
    uint64_t peak_reserved_bytes;
    uint64_t capacity_bytes;
    uint64_t num_allocs;
    uint64_t num_frees;
    uint64_t num_ooms;
} npc_memory_stats_t;

/* c10::Stat; the arrays of npc_device_stats_t are [all, small pool, large pool]. */
typedef struct npc_stat {
    uint64_t current, peak, allocated, freed;
} npc_stat_t;

typedef struct npc_device_stats {
    npc_stat_t allocation[3];
    npc_stat_t segment[3];
    npc_stat_t active[3];
    npc_stat_t inactive_split[3];
    npc_stat_t allocated_bytes[3];
    npc_stat_t reserved_bytes[3];
    npc_stat_t active_bytes[3];
    npc_stat_t inactive_split_bytes[3];
    npc_stat_t requested_bytes[3];
    uint64_t num_alloc_retries;
    uint64_t num_ooms;
    uint64_t num_device_alloc;
    uint64_t num_device_free;
    uint64_t num_sync_all_streams;
    uint64_t capacity_bytes;
} npc_device_stats_t;

#define NPC_BLOCK_ALLOCATED 0
#define NPC_BLOCK_PENDING_FREE 1 /* freed while a stream may still use it */
#define NPC_BLOCK_FREE 2

typedef struct npc_block {
    uint64_t segment_addr;
    uint64_t segment_bytes;
    uint64_t addr;
    uint64_t bytes;
    uint64_t requested_bytes; /* 0 when free */
    uint16_t stream;          /* the queue its segment serves */
    uint8_t small_pool;
    uint8_t state; /* NPC_BLOCK_* */
    uint32_t reserved;
} npc_block_t;

typedef struct npc_activity {
    uint32_t kind; /* NPC_ACTIVITY_* */
    uint16_t device;
    uint16_t queue;
    const char *name; /* owned by the window */
    int64_t start_unix_ns;
    int64_t end_unix_ns;
    uint64_t os_tid; /* runtime calls: the calling OS thread */
    uint64_t corr_id;
    uint64_t flops;
    uint64_t bytes;
    uint32_t flow;          /* NPC_FLOW_* */
    int32_t wait_on_queue;  /* NPC_ACTIVITY_STREAM_WAIT: the event's queue, -1 unknown */
    uint16_t wait_on_device;
    uint16_t reserved[3];
    const char *lowering;       /* kernels of npc_launch_op: the lowering in words */
    uint32_t costed_by_default; /* 1: the default rule costed it (op not in the table) */
    uint32_t reserved2;
} npc_activity_t;

typedef struct npc_tensor {
    const int64_t *sizes;
    const int64_t *strides; /* may be NULL */
    uint32_t ndim;
    uint16_t dtype; /* c10::ScalarType code */
    uint16_t list;  /* its tensor-list argument, from 1; 0: a plain tensor */
} npc_tensor_t;

typedef struct npc_op {
    const char *name; /* ATen name, e.g. "aten::addmm", name_len bytes */
    size_t name_len;
    const npc_tensor_t *inputs; /* tensor arguments in schema order, no out= ones */
    size_t n_inputs;
    const npc_tensor_t *outputs; /* tensor results */
    size_t n_outputs;
    uint64_t corr_id;
    uint16_t device;
    uint16_t queue;
    uint32_t reserved;
} npc_op_t;

typedef struct npc_event {
    uint64_t corr_id; /* 0: never recorded */
    uint64_t ready_ns; /* modeled completion, process timeline */
    uint16_t device;
    uint16_t queue;
    uint32_t reserved;
} npc_event_t;

typedef struct npc_warp_stats {
    uint64_t events;  /* events in the trace */
    uint64_t warped;  /* events whose times were warped (PyTorch's host events) */
    uint64_t kept;    /* the plugin's events, already on the cut timeline */
    uint64_t inexact; /* times older than the cut log, warped approximately */
    uint64_t cut_ns;  /* cut time between the first and last instant warped */
    uint64_t engine_rows;         /* engine instruction and DMA rows appended
                                     (NEURONPROF_DETAIL=instructions) */
    uint64_t engine_rows_dropped; /* engine rows of the last window not kept */
    uint64_t host_ops_in_cuts;    /* host ops left out: inside a cut (the emulator's) */
    uint64_t off_cpu_ns;          /* of cut_ns, time host threads spent off the CPU
                                     although they could have run (run delay, steal) */
} npc_warp_stats_t;

/* npc_collective.op (runtime_hooks::CollectiveOp) */
#define NPC_COLL_ALL_REDUCE 1
#define NPC_COLL_ALL_GATHER 2
#define NPC_COLL_REDUCE_SCATTER 3
#define NPC_COLL_BROADCAST 4
#define NPC_COLL_REDUCE 5
#define NPC_COLL_ALL_TO_ALL 6
#define NPC_COLL_SEND 7
#define NPC_COLL_RECV 8
#define NPC_COLL_BARRIER 9

typedef struct npc_collective {
    const char *kernel_stem;  /* "AllReduce", ... */
    const char *reduce;       /* "Sum", ...; NULL: no reduction */
    const char *dtype_name;   /* "f32", ... */
    const char *group_name;   /* the process group's name */
    const uint64_t *ranks;    /* global ranks of the group, group order (n_ranks) */
    uint64_t corr_id;         /* nph_next_corr_id() */
    uint64_t message_bytes;   /* the message the algorithm and cost are chosen by */
    uint64_t input_bytes;     /* this rank's input */
    uint32_t n_ranks;
    uint32_t me;              /* this rank's index in ranks */
    uint16_t op;              /* NPC_COLL_* */
    uint16_t device;
    uint16_t queue;           /* npc_collective_queue */
    uint16_t inputs_queue;    /* the current stream: its queued work produces the input */
    uint16_t dtype;           /* c10::ScalarType code */
    uint16_t reserved[3];
} npc_collective_t;

typedef struct npc_collective_span {
    uint64_t corr_id;
    uint64_t start_ns;          /* the kernel's start: this core was ready */
    uint64_t transfer_start_ns; /* the last rank was ready */
    uint64_t end_ns;            /* the same instant on every rank */
    uint64_t waited_ns;         /* this rank waited for the others */
    uint32_t last;              /* group index of the last rank to be ready */
    uint16_t algorithm;         /* runtime_hooks::CollectiveAlgorithm */
    uint16_t queue;
} npc_collective_span_t;

typedef struct npc_window npc_window_t;

/* Runtime: profile NULL = "trn2". Returns the device count, 0 on error. */
int32_t npc_init(const char *profile);
int32_t npc_device_count(void);

/* Caching allocator of each device (recorded). Blocks are reused in stream order: a
 * block allocated for `queue` serves only that queue's later requests, and a block
 * freed with `used_by` queues (record_stream) is reused once their queued work ended. */
int32_t npc_allocate(uint16_t device, uint16_t queue, uint64_t bytes, uint64_t *addr,
                     uint64_t *block_bytes);
/* Returns the modeled instant the block becomes reusable, 0: at once. */
uint64_t npc_free(uint16_t device, uint64_t addr, const uint16_t *used_by, uint32_t n_used_by);
int32_t npc_memory_stats(uint16_t device, npc_memory_stats_t *out);
int32_t npc_device_stats(uint16_t device, npc_device_stats_t *out); /* c10 DeviceStats */
/* Every block of every segment, by address: writes up to cap, returns the count (-1: no
 * device, or a panic: npc_last_error). */
int64_t npc_memory_blocks(uint16_t device, npc_block_t *out, size_t cap);
int32_t npc_reset_peak_memory_stats(uint16_t device);        /* peaks := current */
int32_t npc_reset_accumulated_memory_stats(uint16_t device); /* allocs, frees, ooms := 0 */
uint64_t npc_empty_cache(uint16_t device);

/* Work: a launch on launch->queue placed by the timing model (span may be NULL; the
 * placement is cut from the process timeline; a full queue makes the caller sleep until
 * a slot is free); real waits until the modeled completion. The caller computes the
 * numerics inside nph_cut_begin/nph_cut_end. */
int32_t npc_launch(const npc_launch_t *launch, npc_kernel_span_t *span);
/* An op costed by the emulator's lowering of its kind (neuron_backend::describe), its
 * kernel named <op>_<dtype>. */
int32_t npc_launch_op(const npc_op_t *op, npc_kernel_span_t *span);
uint64_t npc_read_wait(uint16_t device, const npc_kernel_span_t *span, uint64_t bytes);

/* Compiled graphs (torch.compile(backend="neuron")): npc_program_build lowers a graph's
 * nodes (execution order; equal ids are the same tensor) with the eager lowerings and
 * schedules them into one device program (elementwise chains fused into their
 * producer's pass); each call launches its kernels with npc_program_launch: one named
 * after the graph, plus one eager kernel per node the lowerings do not know. */
typedef struct npc_graph_node {
    const char *name; /* ATen name, name_len bytes */
    size_t name_len;
    const npc_tensor_t *inputs;
    const uint64_t *input_ids;
    size_t n_inputs;
    const npc_tensor_t *outputs;
    const uint64_t *output_ids;
    size_t n_outputs;
} npc_graph_node_t;

typedef struct npc_program npc_program_t;

npc_program_t *npc_program_build(const npc_graph_node_t *nodes, size_t n_nodes,
                                 const uint64_t *output_ids, size_t n_outputs); /* NULL: error */
void npc_program_free(npc_program_t *program);
size_t npc_program_segments(const npc_program_t *program); /* kernels per call */
/* JSON: nodes, segments (kind "program"/"eager", groups of node indices), fused_nodes,
 * groups, hbm_bytes_saved, eager_fallbacks; returns the full length. */
size_t npc_program_describe(const npc_program_t *program, char *buf, size_t buf_len);
/* group_spans: (start_ns, end_ns) of each of the kernel's groups, up to max_groups. */
int32_t npc_program_launch(const npc_program_t *program, size_t segment, const char *graph_name,
                           uint64_t corr_id, uint16_t device, uint16_t queue,
                           npc_kernel_span_t *span, uint64_t *group_spans, size_t max_groups);
uint64_t npc_synchronize(int32_t device); /* negative: every device */

/* Streams are queue indices: 0 the default stream, then the hardware queues, then a
 * pool of user streams handed out round-robin by npc_stream_pool. Events are points in
 * a queue's work; waits hold a queue on the device (the host does not block). */
uint32_t npc_queue_count(uint16_t device);
int32_t npc_stream_pool(uint16_t device); /* a queue index, -1: no such device */
int32_t npc_stream_query(uint16_t device, uint16_t queue); /* 1 done, 0 busy, -1 error */
int32_t npc_stream_synchronize(uint16_t device, uint16_t queue);
int32_t npc_event_record(uint16_t device, uint16_t queue, npc_event_t *out);
int32_t npc_event_wait(uint16_t device, uint16_t queue, const npc_event_t *event);
int32_t npc_event_query(const npc_event_t *event); /* 1 complete (or never recorded) */
uint64_t npc_event_synchronize(const npc_event_t *event);

/* Collectives of a process group with one process per rank (the c10d backend): the
 * backend moves the data itself; npc_collective_issue records the launch and gives this
 * core's ready instant, which the backend exchanges with the other ranks;
 * npc_collective_place puts the collective from there to the last arrival plus the
 * topology model's cost (NEURONPROF_TOPOLOGY, else the profile's default). */
int32_t npc_collective_queue(uint16_t device, uint32_t slot); /* -1: no such device */
/* This process is rank `rank` of a job of `world_size` processes (the default process
 * group): its live-monitoring entry reports them and is tagged <pid>/rank<rank>. */
int32_t npc_monitor_set_rank(uint32_t rank, uint32_t world_size);
int32_t npc_collective_issue(const npc_collective_t *c, uint64_t *ready_ns);
int32_t npc_collective_place(const npc_collective_t *c, const uint64_t *ready_ns,
                             npc_collective_span_t *out);

/* The warp: PyTorch's host times (ns since the epoch, real clock) onto the cut timeline.
 * npc_warp_trace_file rewrites a trace in place: ts/dur of every event outside the
 * plugin's categories, host ops lying inside one cut left out (counted), plus a
 * top-level "neuronprof_cut" member; nothing else changes. */
int32_t npc_warp_trace_file(const char *path, npc_warp_stats_t *stats);
uint64_t npc_warp_unix_ns(int64_t *values, size_t len); /* in place; returns inexact */
/* len (start, end) pairs at values, in place; inside[i] = 1 where the pair lay inside one
 * cut; returns inexact. */
uint64_t npc_warp_unix_intervals(int64_t *values, uint8_t *inside, size_t len);
uint64_t npc_cut_total_ns(void);

/* What every device records from now on: NPC_DETAIL_KERNELS, or NPC_DETAIL_INSTRUCTIONS
 * (also engine instructions and DMA transfers); *previous (may be null) gets the setting
 * it replaced. */
#define NPC_DETAIL_KERNELS 0
#define NPC_DETAIL_INSTRUCTIONS 1
int32_t npc_set_record_detail(uint8_t detail, uint8_t *previous);

/* Profiling: open a window (drops earlier records; a background thread drains the
 * rings every interval_us), close it and convert (runtime calls, kernels, copies). */
int32_t npc_window_begin(uint64_t interval_us);
npc_window_t *npc_collect(void);
uint64_t npc_discard(void);
uint64_t npc_window_dropped(const npc_window_t *window);  /* records lost (full rings) */
uint64_t npc_window_unpaired(const npc_window_t *window); /* records without a partner */
size_t npc_window_len(const npc_window_t *window);
const npc_activity_t *npc_window_get(const npc_window_t *window, size_t index);
void npc_window_free(npc_window_t *window);

/* Descriptions as the profiler crate's traces write them (NUL-terminated into buf;
 * return the full length, 0 for an unknown device): the deviceProperties entry (a JSON
 * object), the device's process name, a queue's thread name. */
size_t npc_device_properties(uint16_t device, char *buf, size_t buf_len);
size_t npc_device_name(uint16_t device, char *buf, size_t buf_len);
size_t npc_queue_name(uint16_t device, uint16_t queue, char *buf, size_t buf_len);

size_t npc_last_error(char *buf, size_t buf_len);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NEURONPROF_CAPI_H */
