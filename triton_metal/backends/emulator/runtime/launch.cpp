// One kernel launch: threadgroups spread over a pool of OS threads (workers, started on first
// use and kept), each running whole threadgroups; the launching thread waits and acts as the
// watchdog. Concurrent launches take separate pools.
//
// Watchdog: a thread that loops forever either never yields to the runtime (a spin on memory) or
// yields at barriers without ever finishing (a loop around a barrier), so nothing on its own OS
// thread can stop it. Each worker counts its progress in finished threadgroups; when a worker has
// spent `watchdog_seconds` inside one threadgroup, the launching thread sends it SIGUSR2, whose
// handler jumps back to the worker's loop (siglongjmp), abandoning the group. The launch then
// reports which threadgroup was stuck and where its threads were. The same jump serves
// `tm_launch_cancel` (the launching thread was interrupted).
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>

#include "worker.h"

#ifndef MAP_NORESERVE
#define MAP_NORESERVE 0  // macOS: anonymous memory is reserved lazily anyway
#endif

namespace {

constexpr unsigned kMaxWorkers = 64;
constexpr unsigned kMaxPools = 16;
constexpr size_t kAltStackBytes = 64 * 1024;

struct Pool;

struct LaunchState {
    tm_launch_desc* desc;
    Pool* pool;
    unsigned started;
    unsigned long total_groups;
    std::atomic<unsigned long> next{0};
    std::atomic<int> abort{0};
    std::atomic<int> cancelled{0};
    std::mutex mutex;
    std::condition_variable cv;
    unsigned finished = 0;
    // the watchdog's view of each worker
    unsigned long last_progress[kMaxWorkers];
    double last_change[kMaxWorkers];
    bool fired[kMaxWorkers];
};

struct sigaction g_old_usr2, g_old_segv, g_old_bus;

// Hand a signal that is not for this runtime to the handler installed before it (another copy of
// the runtime loaded from another cache directory, a fault handler, or the default action).
void chain_signal(int sig, siginfo_t* info, void* uctx, const struct sigaction* old) {
    if (old->sa_flags & SA_SIGINFO) {
        if (old->sa_sigaction) old->sa_sigaction(sig, info, uctx);
        return;
    }
    if (old->sa_handler == SIG_IGN) return;
    if (old->sa_handler == SIG_DFL) {
        if (sig == SIGUSR2) return;  // a stray watchdog signal must not kill the process
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    old->sa_handler(sig);
}

void on_watchdog_signal(int sig, siginfo_t* info, void* uctx) {
    Worker* w = tm_tl_worker;
    if (w && w->jump_armed.load()) {
        w->watchdog_fiber = tm_tl_fiber ? (int)tm_tl_fiber->index : -1;
        siglongjmp(w->jump, 2);
    }
    chain_signal(sig, info, uctx, &g_old_usr2);
}

#ifndef TM_ASAN

// A kernel that touches unmapped memory (an out-of-bounds access, a fiber stack overflowing into
// its guard page) faults on a worker: turn that into an error for the launch instead of killing
// the process. Faults anywhere else go to the handler that was installed before.
void on_fault(int sig, siginfo_t* info, void* uctx) {
    Worker* w = tm_tl_worker;
    if (w && w->jump_armed.load()) {
        w->fault_address = info->si_addr;
        w->watchdog_fiber = tm_tl_fiber ? (int)tm_tl_fiber->index : -1;
        siglongjmp(w->jump, 3);
    }
    chain_signal(sig, info, uctx, sig == SIGSEGV ? &g_old_segv : &g_old_bus);
}
#endif

void install_signal_handler() {
    static std::once_flag once;
    std::call_once(once, [] {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_watchdog_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_SIGINFO;
        sigaction(SIGUSR2, &sa, &g_old_usr2);
#ifndef TM_ASAN  // under ASan, its own fault reports are the better ones
        struct sigaction fault;
        memset(&fault, 0, sizeof fault);
        fault.sa_sigaction = on_fault;
        sigemptyset(&fault.sa_mask);
        fault.sa_flags = SA_SIGINFO | SA_ONSTACK;  // a stack overflow needs another stack
        sigaction(SIGSEGV, &fault, &g_old_segv);
        sigaction(SIGBUS, &fault, &g_old_bus);
#endif
    });
}

bool prepare_worker(Worker* w, unsigned stack_bytes, bool fibers) {
    long page = sysconf(_SC_PAGESIZE);
    stack_bytes = (stack_bytes + page - 1) / page * page;
    if (!w->altstack) {
        w->altstack = static_cast<unsigned char*>(malloc(kAltStackBytes));
        if (!w->altstack) return false;
    }
    if (!w->arena) {
        w->arena_bytes = TM_TG_LIMIT + TM_ARENA_REDZONE * (TM_MAX_TG_VARS + 1);
        w->arena = static_cast<unsigned char*>(malloc(w->arena_bytes));
        if (!w->arena) return false;
    }
    if (!fibers || (w->stacks && w->stack_bytes == stack_bytes)) return true;
    if (w->stacks) munmap(w->stacks, w->stacks_bytes);
    size_t slot = stack_bytes + page;  // a guard page below each stack
    w->stacks_bytes = slot * TM_MAX_THREADS;
    void* mem = mmap(nullptr, w->stacks_bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED) {
        w->stacks = nullptr;
        return false;
    }
    w->stacks = static_cast<unsigned char*>(mem);
    w->stack_bytes = stack_bytes;
    if (!w->fibers) w->fibers = new Fiber[TM_MAX_THREADS];
    for (unsigned i = 0; i < TM_MAX_THREADS; ++i) {
        unsigned char* base = w->stacks + i * slot;
        mprotect(base, page, PROT_NONE);
        w->fibers[i].stack = base + page;
    }
    return true;
}

void setup_group(Worker* w, const tm_launch_desc* d, unsigned long idx) {
    tm_group_info& g = w->group;
    for (int k = 0; k < 3; ++k) {
        g.grid[k] = d->grid[k];
        g.tpt[k] = d->tpt[k];
        g.ngroups[k] = (d->grid[k] + d->tpt[k] - 1) / d->tpt[k];
    }
    g.gpos[0] = idx % g.ngroups[0];
    g.gpos[1] = (idx / g.ngroups[0]) % g.ngroups[1];
    g.gpos[2] = idx / ((unsigned long)g.ngroups[0] * g.ngroups[1]);
    for (int k = 0; k < 3; ++k) {
        unsigned start = g.gpos[k] * g.tpt[k];
        unsigned left = g.grid[k] - start;
        g.dtpt[k] = left < g.tpt[k] ? left : g.tpt[k];
    }
    w->nthreads = g.dtpt[0] * g.dtpt[1] * g.dtpt[2];
}

void describe_fault(Worker* w, const tm_launch_desc* d) {
    w->failed = true;
    w->status = TM_FAULT;
    const tm_group_info& g = w->group;
    bool guard = false;
    long page = sysconf(_SC_PAGESIZE);
    unsigned char* a = static_cast<unsigned char*>(w->fault_address);
    if (d->use_fibers && w->fibers && w->stacks) {
        guard = a >= w->stacks && a < w->stacks + w->stacks_bytes &&
                (size_t)(a - w->stacks) % (w->stack_bytes + page) < (size_t)page;
    }
    char buf[640];
    snprintf(buf, sizeof buf,
             "invalid memory access at address %p in threadgroup (%u,%u,%u): %s", w->fault_address,
             g.gpos[0], g.gpos[1], g.gpos[2],
             guard ? "a thread overflowed its stack (large local arrays?); raise "
                     "TRITON_METAL_EMULATOR_STACK (bytes per thread)"
                   : "an out-of-bounds device or threadgroup access; run with "
                     "TRITON_METAL_EMULATOR_ASAN=1 to find the line");
    w->error = buf;
    if (d->use_fibers && w->watchdog_fiber >= 0) {
        unsigned i = (unsigned)w->watchdog_fiber;
        snprintf(buf, sizeof buf, "\n  faulting: thread (%u,%u,%u)", i % g.dtpt[0],
                 (i / g.dtpt[0]) % g.dtpt[1], i / (g.dtpt[0] * g.dtpt[1]));
        w->error += buf;
    }
}

// Runs this worker's share of one launch (on the worker's own thread).
void run_launch(Worker* w, LaunchState* st) {
    tm_launch_desc* d = st->desc;
    tm_tl_fiber = nullptr;
    int jumped = sigsetjmp(w->jump, 1);
    if (jumped) {
        w->jump_armed.store(0);
        tm_tl_fiber = nullptr;
        if (jumped == 2 && st->cancelled.load()) {
            w->failed = true;
            w->status = TM_INTERRUPTED;
            w->error = "interrupted: the launching thread cancelled the launch";
        } else if (jumped == 2) {
            w->failed = true;
            w->status = TM_WATCHDOG;
            char buf[600];
            const tm_group_info& g = w->group;
            snprintf(buf, sizeof buf,
                     "watchdog: threadgroup (%u,%u,%u) did not finish within %g s; a thread "
                     "probably loops forever (spinning on memory that another thread or "
                     "threadgroup should write, or a loop whose condition never changes, with or "
                     "without barriers inside). The emulator gives no forward-progress guarantee "
                     "between threadgroups, as Metal gives none; raise "
                     "TRITON_METAL_EMULATOR_WATCHDOG (seconds) for a threadgroup that is merely slow",
                     g.gpos[0], g.gpos[1], g.gpos[2], d->watchdog_seconds);
            w->error = buf;
            if (d->use_fibers && w->watchdog_fiber >= 0) {
                unsigned i = (unsigned)w->watchdog_fiber;
                snprintf(buf, sizeof buf, "\n  running: thread (%u,%u,%u)", i % g.dtpt[0],
                         (i / g.dtpt[0]) % g.dtpt[1], i / (g.dtpt[0] * g.dtpt[1]));
                w->error += buf;
                tm_describe_waits(w, w->error);
            }
        } else if (jumped == 3) {
            describe_fault(w, d);
        }
        st->abort.store(1);
    } else {
        w->jump_armed.store(1);
        while (!st->abort.load(std::memory_order_relaxed)) {
            unsigned long idx = st->next.fetch_add(1, std::memory_order_relaxed);
            if (idx >= st->total_groups) break;
            setup_group(w, d, idx);
            tm_reset_threadgroup_memory(w);
            w->running_group.store(1);
            if (d->use_fibers) {
                tm_run_group_fibers(w);
            } else {
                d->group_fn(d->buffers, &w->group);
            }
            w->running_group.store(0);
            tm_count_progress(w->progress);
            if (w->failed) {
                st->abort.store(1);
                break;
            }
        }
        w->jump_armed.store(0);
    }
    w->running_group.store(0);
    // Notify while holding the lock: once the waiter sees the last worker finished it deletes the
    // LaunchState, so no worker may touch the condition variable after releasing the mutex.
    std::lock_guard<std::mutex> lock(st->mutex);
    st->finished++;
    st->cv.notify_all();
}

// A set of worker threads that runs one launch at a time. Worker threads persist between
// launches (starting threads per launch costs more than a small kernel): each waits for a new
// launch generation of its pool and joins in if its index is below the number of workers that
// launch wants. Launches from different threads take different pools, so a launch that hangs
// until its watchdog fires (or until it is cancelled) delays no other.
struct Pool {
    Worker workers[kMaxWorkers];
    std::mutex mutex;
    std::condition_variable wake;
    unsigned long generation = 0;
    unsigned active = 0;
    unsigned threads = 0;
    LaunchState* state = nullptr;
    bool busy = false;
};

struct Pools {
    std::mutex mutex;
    std::condition_variable freed;
    Pool* pools[kMaxPools] = {};
};
Pools* g_pools = new Pools;  // never destroyed: its threads outlive static destructors

void* pool_thread(void* arg) {
    Worker* w = static_cast<Worker*>(arg);
    Pool* pool = static_cast<Pool*>(w->pool);
    tm_tl_worker = w;
    tm_tl_fiber = nullptr;
#ifndef TM_ASAN  // ASan keeps its own signal stack
    stack_t alt;
    memset(&alt, 0, sizeof alt);
    alt.ss_sp = w->altstack;
    alt.ss_size = kAltStackBytes;
    sigaltstack(&alt, nullptr);
#endif
#if defined(TM_ASAN) && defined(__linux__)
    // ASan must know the stack it returns to when a fiber switches back to this thread.
    pthread_attr_t attr;
    pthread_getattr_np(pthread_self(), &attr);
    void* addr;
    size_t size;
    pthread_attr_getstack(&attr, &addr, &size);
    pthread_attr_destroy(&attr);
    w->main_stack_bottom = addr;
    w->main_stack_size = size;
#endif
    unsigned long seen = 0;
    for (;;) {
        LaunchState* st;
        {
            std::unique_lock<std::mutex> lock(pool->mutex);
            pool->wake.wait(lock, [&] { return pool->generation != seen; });
            seen = pool->generation;
            if (w->index >= pool->active) continue;
            st = pool->state;
        }
        run_launch(w, st);
    }
    return nullptr;
}

// After fork() only the forking thread exists in the child: it needs pools of its own.
void reset_pools_in_child() { g_pools = new Pools; }

Pool* acquire_pool() {
    static std::once_flag once;
    std::call_once(once, [] { pthread_atfork(nullptr, nullptr, reset_pools_in_child); });
    Pools* all = g_pools;
    std::unique_lock<std::mutex> lock(all->mutex);
    for (;;) {
        for (unsigned i = 0; i < kMaxPools; ++i) {
            if (!all->pools[i]) all->pools[i] = new Pool;
            if (!all->pools[i]->busy) {
                all->pools[i]->busy = true;
                return all->pools[i];
            }
        }
        all->freed.wait(lock);  // more concurrent launches than pools: wait for one to end
    }
}

void release_pool(Pool* pool) {
    Pools* all = g_pools;
    {
        std::lock_guard<std::mutex> lock(all->mutex);
        pool->busy = false;
    }
    all->freed.notify_one();
}

// Make sure `n` threads of `pool` exist; returns how many do.
unsigned ensure_threads(Pool* pool, unsigned n) {
    while (pool->threads < n) {
        Worker* w = &pool->workers[pool->threads];
        w->index = pool->threads;
        w->pool = pool;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&w->thread, &attr, pool_thread, w);
        pthread_attr_destroy(&attr);
        if (rc != 0) break;
        pool->threads++;
    }
    return pool->threads < n ? pool->threads : n;
}

double now_seconds() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int bad_launch(tm_launch_desc* d, const char* msg) {
    if (d->error && d->error_capacity) snprintf(d->error, d->error_capacity, "%s", msg);
    return TM_BAD_LAUNCH;
}

// The launch has ended: collect its status, give the pool back.
int finish_launch(tm_launch_desc* d, LaunchState* st) {
    Pool* pool = st->pool;
    {
        std::lock_guard<std::mutex> lock(pool->mutex);
        pool->state = nullptr;
    }
    int status = TM_OK;
    for (unsigned i = 0; i < st->started; ++i) {
        Worker* w = &pool->workers[i];
        if (w->failed) {
            // an interruption outranks what the abandoned threadgroups were doing
            if (status == TM_OK || w->status == TM_INTERRUPTED) {
                status = w->status;
                if (d->error && d->error_capacity)
                    snprintf(d->error, d->error_capacity, "%s", w->error.c_str());
            }
        }
    }
    d->state = nullptr;
    delete st;
    release_pool(pool);
    return status;
}

}  // namespace

extern "C" int tm_launch(tm_launch_desc* d) {
    unsigned long total = 1;
    d->state = nullptr;
    for (int k = 0; k < 3; ++k) {
        if (d->grid[k] == 0) return TM_OK;  // nothing to run
        if (d->tpt[k] == 0) return bad_launch(d, "threadgroup size 0");
        total *= (d->grid[k] + d->tpt[k] - 1) / d->tpt[k];
    }
    if ((unsigned long)d->tpt[0] * d->tpt[1] * d->tpt[2] > TM_MAX_THREADS)
        return bad_launch(d, "more than 1024 threads per threadgroup");
    if (d->use_fibers && !d->thread_fn) return bad_launch(d, "no thread entry");
    if (!d->use_fibers && !d->group_fn) return bad_launch(d, "no group entry");

    install_signal_handler();
    unsigned nworkers = d->workers;
    if (nworkers == 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        nworkers = cores > 0 ? (unsigned)cores : 1;
    }
    if (nworkers > kMaxWorkers) nworkers = kMaxWorkers;
    if (nworkers > total) nworkers = (unsigned)total;
    unsigned stack_bytes = d->stack_bytes ? d->stack_bytes : 128 * 1024;

    Pool* pool = acquire_pool();
    unsigned started = 0;
    for (unsigned i = 0; i < nworkers; ++i) {
        Worker* w = &pool->workers[i];
        if (!prepare_worker(w, stack_bytes, d->use_fibers != 0)) break;
        w->launch = d;
        w->failed = false;
        w->status = TM_OK;
        w->error.clear();
        w->watchdog_fiber = -1;
        w->nvars = 0;
        for (unsigned v = 0; v < TM_MAX_TG_VARS; ++v) w->tg_ptr[v] = nullptr;
        ++started;
    }
    if (started > 0) started = ensure_threads(pool, started);
    if (started == 0) {
        release_pool(pool);
        return bad_launch(d, "could not start a worker thread or allocate fiber stacks");
    }

    LaunchState* st = new LaunchState;
    st->desc = d;
    st->pool = pool;
    st->started = started;
    st->total_groups = total;
    double t0 = now_seconds();
    for (unsigned i = 0; i < started; ++i) {
        st->last_progress[i] = pool->workers[i].progress.load();
        st->last_change[i] = t0;
        st->fired[i] = false;
    }
    d->state = st;
    {
        std::lock_guard<std::mutex> lock(pool->mutex);
        pool->state = st;
        pool->active = started;
        pool->generation++;
    }
    pool->wake.notify_all();
    return tm_launch_wait(d);
}

// Waits for the launch (at most poll_seconds when > 0) and acts as its watchdog meanwhile.
extern "C" int tm_launch_wait(tm_launch_desc* d) {
    LaunchState* st = static_cast<LaunchState*>(d->state);
    if (!st) return bad_launch(d, "no launch is pending");
    Pool* pool = st->pool;
    double begin = now_seconds();
    {
        std::unique_lock<std::mutex> lock(st->mutex);
        while (st->finished < st->started) {
            st->cv.wait_for(lock, std::chrono::milliseconds(20));
            if (st->finished >= st->started) break;
            double t = now_seconds();
            if (d->watchdog_seconds > 0 && !st->cancelled.load()) {
                for (unsigned i = 0; i < st->started; ++i) {
                    Worker* w = &pool->workers[i];
                    unsigned long p = w->progress.load();
                    if (p != st->last_progress[i] || !w->running_group.load()) {
                        st->last_progress[i] = p;
                        st->last_change[i] = t;
                    } else if (!st->fired[i] && t - st->last_change[i] > d->watchdog_seconds) {
                        st->fired[i] = true;
                        pthread_kill(w->thread, SIGUSR2);
                    }
                }
            }
            if (d->poll_seconds > 0 && t - begin >= d->poll_seconds) return TM_PENDING;
        }
    }
    return finish_launch(d, st);
}

extern "C" int tm_launch_cancel(tm_launch_desc* d) {
    LaunchState* st = static_cast<LaunchState*>(d->state);
    if (!st) return TM_INTERRUPTED;
    Pool* pool = st->pool;
    st->cancelled.store(1);
    st->abort.store(1);
    {
        std::unique_lock<std::mutex> lock(st->mutex);
        while (st->finished < st->started) {
            for (unsigned i = 0; i < st->started; ++i) {
                Worker* w = &pool->workers[i];
                if (w->running_group.load() && !st->fired[i]) {
                    st->fired[i] = true;
                    pthread_kill(w->thread, SIGUSR2);
                }
            }
            st->cv.wait_for(lock, std::chrono::milliseconds(20));
        }
    }
    finish_launch(d, st);
    if (d->error && d->error_capacity)
        snprintf(d->error, d->error_capacity, "interrupted: the launch was cancelled");
    return TM_INTERRUPTED;
}
