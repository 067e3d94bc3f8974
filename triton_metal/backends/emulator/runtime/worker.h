// The state one OS thread of the emulator keeps while it runs threadgroups (runtime-internal;
// kernels never see this header).
#ifndef TM_WORKER_H
#define TM_WORKER_H

#include <atomic>
#include <pthread.h>
#include <setjmp.h>
#include <stddef.h>
#include <string>

#include "context.h"
#include "tm_abi.h"

#ifdef TM_ASAN
#define TM_ARENA_REDZONE 64u
#else
#define TM_ARENA_REDZONE 0u
#endif

struct Fiber {
    tm_context ctx;
    unsigned char* stack;   // lowest address of its stack
    unsigned index;         // thread_index_in_threadgroup
    int state;
    const char* what;       // where it waits (for error messages)
    const char* wfile;
    int wline;
    tm_self self;
    void* asan_fake;
};

struct SimdGroup {
    tm_sg data;
    unsigned nactive;       // lanes that have not finished
    unsigned nwait;         // lanes waiting at the current operation
    tm_sg_fn fn;
    bool full;              // the operation needs all 32 lanes (simdgroup_matrix)
    bool mismatch;          // lanes wait at different operations
    const char* what;
    const char* file;
    int line;
};

struct TgVar {
    unsigned id;
    const char* name;
    const char* file;
    int line;
    unsigned long size;
};

struct Worker {
    const tm_launch_desc* launch = nullptr;
    tm_group_info group{};
    unsigned nthreads = 0;

    Fiber* fibers = nullptr;          // TM_MAX_THREADS of them, stacks allocated once
    unsigned char* stacks = nullptr;
    size_t stacks_bytes = 0;
    unsigned stack_bytes = 0;
    SimdGroup sgs[TM_MAX_SIMDGROUPS];
    unsigned ndone = 0;
    unsigned nwait_bar = 0;
    const char* bar_file = nullptr;
    int bar_line = 0;
    bool bar_mismatch = false;

    tm_context main_ctx{};
    void* main_asan_fake = nullptr;
    const void* main_stack_bottom = nullptr;
    size_t main_stack_size = 0;

    unsigned char* arena = nullptr;   // threadgroup memory of the running group
    size_t arena_bytes = 0;
    unsigned long tg_used = 0;        // bytes counted against the 32 KiB limit
    unsigned long arena_off = 0;      // bytes handed out (with red zones under ASan)
    void* tg_ptr[TM_MAX_TG_VARS] = {};
    unsigned char* op_exchange = nullptr;  // tensor ops' gathered inputs (tm_rt_op_exchange)
    TgVar vars[TM_MAX_TG_VARS];
    unsigned nvars = 0;

    bool failed = false;
    int status = TM_OK;
    std::string error;
    sigjmp_buf jump;
    std::atomic<int> jump_armed{0};
    int watchdog_fiber = -1;          // the fiber that was running when the watchdog fired
    void* fault_address = nullptr;    // where a kernel faulted
    unsigned char* altstack = nullptr;  // signal stack, for faults on an overflowed fiber stack
    std::atomic<unsigned long> progress{0};
    std::atomic<int> running_group{0};
    pthread_t thread{};
    unsigned index = 0;               // position in the worker pool
    void* pool = nullptr;             // the pool it belongs to (launch.cpp)
};

// Initial-exec TLS: read on every switch and SIMD-group call, and the default model for a shared
// library would call __tls_get_addr each time (two pointers fit glibc's reserve for dlopen).
#define TM_TLS __attribute__((tls_model("initial-exec"))) thread_local
extern TM_TLS Worker* tm_tl_worker;
extern TM_TLS Fiber* tm_tl_fiber;

// Only the owning worker writes its progress counter; the watchdog only reads it.
inline void tm_count_progress(std::atomic<unsigned long>& counter) {
    counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

// Record an error for the running group and abandon it (never returns).
[[noreturn]] void tm_fail(int status, const char* message);
[[noreturn]] void tm_failf(int status, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void tm_reset_threadgroup_memory(Worker* w);
void tm_describe_waits(Worker* w, std::string& msg);
void tm_run_group_fibers(Worker* w);

#endif
