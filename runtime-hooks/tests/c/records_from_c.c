/* Records through the C ABI, then prints the header's layout and what it drained.
 * Built and run by tests/c_program_records_through_header.rs. */
#define _POSIX_C_SOURCE 200809L
#include "neuronprof_hooks.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(cond)                                                      \
    do {                                                                 \
        if (!(cond)) {                                                   \
            fprintf(stderr, "check failed at line %d: %s\n", __LINE__, #cond); \
            exit(1);                                                     \
        }                                                                \
    } while (0)

#define TYPE(T) printf("type %s %zu %zu\n", #T, sizeof(T), _Alignof(T))
#define FIELD(T, f) printf("field %s.%s %zu %zu\n", #T, #f, offsetof(T, f), sizeof(((T *)0)->f))

static void print_layout(void) {
    TYPE(nph_record);
    FIELD(nph_record, kind);
    FIELD(nph_record, phase);
    FIELD(nph_record, op);
    FIELD(nph_record, thread_id);
    FIELD(nph_record, start_ns);
    FIELD(nph_record, end_ns);
    FIELD(nph_record, payload);
    TYPE(nph_payload);
    FIELD(nph_payload, host_op);
    FIELD(nph_payload, range);
    FIELD(nph_payload, runtime_call);
    FIELD(nph_payload, kernel);
    FIELD(nph_payload, instruction);
    FIELD(nph_payload, dma);
    FIELD(nph_payload, memory);
    FIELD(nph_payload, collective);
    FIELD(nph_payload, counter);
    FIELD(nph_payload, flow);
    FIELD(nph_payload, words);
    TYPE(nph_operator_payload);
    FIELD(nph_operator_payload, name_id);
    FIELD(nph_operator_payload, input_sig_id);
    FIELD(nph_operator_payload, corr_id);
    FIELD(nph_operator_payload, seq_nr);
    FIELD(nph_operator_payload, flops);
    FIELD(nph_operator_payload, bytes);
    TYPE(nph_range_payload);
    FIELD(nph_range_payload, name_id);
    FIELD(nph_range_payload, reserved0);
    FIELD(nph_range_payload, corr_id);
    FIELD(nph_range_payload, value);
    FIELD(nph_range_payload, reserved1);
    TYPE(nph_runtime_call_payload);
    FIELD(nph_runtime_call_payload, name_id);
    FIELD(nph_runtime_call_payload, device);
    FIELD(nph_runtime_call_payload, queue);
    FIELD(nph_runtime_call_payload, corr_id);
    FIELD(nph_runtime_call_payload, bytes);
    FIELD(nph_runtime_call_payload, reserved1);
    TYPE(nph_kernel_payload);
    FIELD(nph_kernel_payload, name_id);
    FIELD(nph_kernel_payload, device);
    FIELD(nph_kernel_payload, queue);
    FIELD(nph_kernel_payload, corr_id);
    FIELD(nph_kernel_payload, flops);
    FIELD(nph_kernel_payload, bytes);
    FIELD(nph_kernel_payload, reserved1);
    TYPE(nph_instruction_payload);
    FIELD(nph_instruction_payload, name_id);
    FIELD(nph_instruction_payload, device);
    FIELD(nph_instruction_payload, core);
    FIELD(nph_instruction_payload, engine);
    FIELD(nph_instruction_payload, corr_id);
    FIELD(nph_instruction_payload, flops);
    FIELD(nph_instruction_payload, bytes);
    FIELD(nph_instruction_payload, reserved1);
    TYPE(nph_dma_payload);
    FIELD(nph_dma_payload, name_id);
    FIELD(nph_dma_payload, device);
    FIELD(nph_dma_payload, queue);
    FIELD(nph_dma_payload, corr_id);
    FIELD(nph_dma_payload, bytes);
    FIELD(nph_dma_payload, src_addr);
    FIELD(nph_dma_payload, dst_addr);
    TYPE(nph_memory_payload);
    FIELD(nph_memory_payload, category_id);
    FIELD(nph_memory_payload, device);
    FIELD(nph_memory_payload, reserved0);
    FIELD(nph_memory_payload, addr);
    FIELD(nph_memory_payload, bytes);
    FIELD(nph_memory_payload, total_allocated_bytes);
    FIELD(nph_memory_payload, total_reserved_bytes);
    TYPE(nph_collective_payload);
    FIELD(nph_collective_payload, group_name_id);
    FIELD(nph_collective_payload, device);
    FIELD(nph_collective_payload, queue);
    FIELD(nph_collective_payload, corr_id);
    FIELD(nph_collective_payload, bytes);
    FIELD(nph_collective_payload, group_size);
    FIELD(nph_collective_payload, rank);
    FIELD(nph_collective_payload, algorithm);
    FIELD(nph_collective_payload, dtype);
    FIELD(nph_collective_payload, group_ranks_id);
    TYPE(nph_counter_payload);
    FIELD(nph_counter_payload, name_id);
    FIELD(nph_counter_payload, device);
    FIELD(nph_counter_payload, reserved0);
    FIELD(nph_counter_payload, value);
    FIELD(nph_counter_payload, reserved1);
    TYPE(nph_flow_payload);
    FIELD(nph_flow_payload, name_id);
    FIELD(nph_flow_payload, reserved0);
    FIELD(nph_flow_payload, flow_id);
    FIELD(nph_flow_payload, reserved1);
    printf("const kinds %d %d %d %d %d %d %d %d %d %d\n", NPH_KIND_OPERATOR,
           NPH_KIND_USER_RANGE, NPH_KIND_RUNTIME_CALL, NPH_KIND_KERNEL, NPH_KIND_INSTRUCTION,
           NPH_KIND_DMA, NPH_KIND_MEMORY, NPH_KIND_COLLECTIVE, NPH_KIND_COUNTER,
           NPH_KIND_FLOW);
    printf("const phases %d %d %d %d\n", NPH_PHASE_BEGIN, NPH_PHASE_END, NPH_PHASE_COMPLETE,
           NPH_PHASE_INSTANT);
    printf("const runtime %d %d %d %d %d %d %d\n", NPH_RUNTIME_OTHER,
           NPH_RUNTIME_KERNEL_LAUNCH, NPH_RUNTIME_QUEUE_SUBMIT, NPH_RUNTIME_SYNCHRONIZE,
           NPH_RUNTIME_EVENT_RECORD, NPH_RUNTIME_EVENT_WAIT, NPH_RUNTIME_MEMORY_COPY);
    printf("const dma %d %d %d %d\n", NPH_DMA_HOST_TO_DEVICE, NPH_DMA_DEVICE_TO_HOST,
           NPH_DMA_DEVICE_TO_DEVICE, NPH_DMA_PEER_TO_PEER);
    printf("const memory %d %d\n", NPH_MEMORY_ALLOCATE, NPH_MEMORY_FREE);
    printf("const collective %d %d %d %d %d %d %d %d %d\n", NPH_COLLECTIVE_ALL_REDUCE,
           NPH_COLLECTIVE_ALL_GATHER, NPH_COLLECTIVE_REDUCE_SCATTER, NPH_COLLECTIVE_BROADCAST,
           NPH_COLLECTIVE_REDUCE, NPH_COLLECTIVE_ALL_TO_ALL, NPH_COLLECTIVE_SEND,
           NPH_COLLECTIVE_RECV, NPH_COLLECTIVE_BARRIER);
    printf("const algorithm %d %d %d %d %d %d %d\n", NPH_ALGORITHM_UNSPECIFIED,
           NPH_ALGORITHM_RING, NPH_ALGORITHM_MESH, NPH_ALGORITHM_TREE,
           NPH_ALGORITHM_HIERARCHICAL, NPH_ALGORITHM_RECURSIVE_DOUBLING,
           NPH_ALGORITHM_KANGA_RING);
    printf("const flow %d %d %d %d\n", NPH_FLOW_LAUNCH_TO_KERNEL, NPH_FLOW_FORWARD_TO_BACKWARD,
           NPH_FLOW_OTHER, NPH_FLOW_STREAM_WAIT);
}

static uint32_t step_name;

/* A worker thread that records ten ranges and exits before anyone drains. */
static void *worker(void *arg) {
    (void)arg;
    CHECK(nph_register_thread() == 1);
    CHECK(nph_register_thread() == 1);
    for (uint64_t step = 0; step < 5; step++) {
        nph_range_begin(step_name, step);
        nph_range_end(step_name, step);
    }
    return NULL;
}

int main(void) {
    print_layout();

    nph_set_ring_capacity(64);
    CHECK(!nph_is_enabled());
    nph_operator_begin(1, 1, 1); /* disabled: not recorded */
    nph_set_enabled(1);
    CHECK(nph_is_enabled());

    uint32_t matmul = nph_intern("c::matmul", strlen("c::matmul"));
    uint32_t kernel_name = nph_intern("c::matmul_kernel", strlen("c::matmul_kernel"));
    step_name = nph_intern("ProfilerStep", strlen("ProfilerStep"));
    CHECK(matmul != 0 && kernel_name != 0 && matmul != kernel_name);
    CHECK(nph_intern("c::matmul", 9) == matmul);
    uint64_t corr = nph_next_corr_id();
    CHECK(corr != 0 && nph_next_corr_id() > corr);

    /* 1: operator begin, 2: kernel (explicit times), 3: operator end, 4: memory. */
    nph_operator_begin(matmul, corr, 7);
    nph_record kernel;
    memset(&kernel, 0, sizeof kernel);
    kernel.kind = NPH_KIND_KERNEL;
    kernel.phase = NPH_PHASE_COMPLETE;
    kernel.start_ns = 1000;
    kernel.end_ns = 2000;
    kernel.payload.kernel.name_id = kernel_name;
    kernel.payload.kernel.device = 1;
    kernel.payload.kernel.queue = 2;
    kernel.payload.kernel.corr_id = corr;
    kernel.payload.kernel.flops = 123;
    kernel.payload.kernel.bytes = 456;
    nph_record_raw(&kernel);
    nph_operator_end(matmul, corr, 7);
    nph_payload memory;
    memset(&memory, 0, sizeof memory);
    memory.memory.device = 1;
    memory.memory.addr = 0x1000;
    memory.memory.bytes = 4096;
    memory.memory.total_allocated_bytes = 8192;
    memory.memory.total_reserved_bytes = 1 << 20;
    nph_record_now(NPH_KIND_MEMORY, NPH_PHASE_INSTANT, NPH_MEMORY_ALLOCATE, &memory);

    /* Emulation time is not host time. */
    uint64_t before = nph_now_ns();
    nph_emulation_begin();
    struct timespec nap = {0, 20 * 1000 * 1000};
    nanosleep(&nap, NULL);
    nph_emulation_end();
    uint64_t after = nph_now_ns();
    CHECK(after >= before && after - before < 10 * 1000 * 1000);
    CHECK(nph_monotonic_ns() - nph_now_ns() >= 20 * 1000 * 1000);
    CHECK(nph_advance_to(after + 1000000000ull) == after + 1000000000ull);
    CHECK(nph_now_ns() >= after + 1000000000ull);

    /* With the CPU-time clock on, a sleep outside emulation is not host time. */
    nph_follow_cpu_time(1);
    uint64_t awake = nph_clock_sync();
    nanosleep(&nap, NULL);
    CHECK(nph_clock_sync() - awake < 10 * 1000 * 1000);
    nph_follow_cpu_time(0);

    /* 52 more fit into the 64-record ring (its last 8 slots are kept for user ranges and
       flow ends); 48 are dropped and counted. */
    for (int i = 0; i < 100; i++) {
        nph_payload counter;
        memset(&counter, 0, sizeof counter);
        counter.counter.value = i;
        nph_record_now(NPH_KIND_COUNTER, NPH_PHASE_INSTANT, 0, &counter);
    }
    CHECK(nph_dropped_total() == 48);

    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, worker, NULL) == 0);
    CHECK(pthread_join(thread, NULL) == 0);

    static nph_record out[256];
    size_t drained = nph_drain(out, 256);
    printf("drained %zu\n", drained);
    printf("dropped %llu\n", (unsigned long long)nph_dropped_total());
    for (size_t i = 0; i < drained; i++) {
        const nph_record *r = &out[i];
        printf("record %u %u %u %u %llu %llu", r->kind, r->phase, r->op, r->thread_id,
               (unsigned long long)r->start_ns, (unsigned long long)r->end_ns);
        for (int w = 0; w < 5; w++) {
            printf(" %llu", (unsigned long long)r->payload.words[w]);
        }
        printf("\n");
    }
    char name[64];
    CHECK(nph_resolve_name(matmul, name, sizeof name) == strlen("c::matmul"));
    printf("name %u %s\n", matmul, name);
    CHECK(nph_resolve_name(kernel_name, name, sizeof name) > 0);
    printf("name %u %s\n", kernel_name, name);
    CHECK(nph_drain(out, 256) == 0);
    uint64_t anchor_mono = 0, anchor_unix = 0;
    nph_clock_anchor(&anchor_mono, &anchor_unix);
    CHECK(anchor_mono != 0 && anchor_unix != 0);
    printf("ok\n");
    return 0;
}
