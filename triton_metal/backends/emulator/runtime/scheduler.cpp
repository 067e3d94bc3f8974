// Runs the threads of one threadgroup: as fibers on one OS thread when the kernel synchronises,
// or one after the other when it does not; owns threadgroup memory and the synchronisation
// checks (divergent barriers, mismatched SIMD-group operations, deadlocks).
//
// Scheduling: a fiber runs until it reaches a barrier or a SIMD-group operation, then switches
// directly to the next ready fiber (no trip through a scheduler context, so a barrier round over
// N threads costs N switches). The last thread to arrive at a barrier (or the last lane of a
// SIMD-group to arrive at an operation) checks that everybody waits at the same place, performs
// the operation and continues; the others become ready again.
#include "worker.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#ifdef TM_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

TM_TLS Worker* tm_tl_worker = nullptr;
TM_TLS Fiber* tm_tl_fiber = nullptr;

namespace {

enum FiberState { READY = 0, WAIT_BARRIER = 1, WAIT_SIMD = 2, DONE = 3 };

void describe_thread(const Worker* w, unsigned index, char* out, size_t cap) {
    const tm_group_info& g = w->group;
    unsigned lx = index % g.dtpt[0];
    unsigned ly = (index / g.dtpt[0]) % g.dtpt[1];
    unsigned lz = index / (g.dtpt[0] * g.dtpt[1]);
    snprintf(out, cap, "thread (%u,%u,%u) of threadgroup (%u,%u,%u)", lx, ly, lz, g.gpos[0],
             g.gpos[1], g.gpos[2]);
}

}  // namespace

// Appends "N threads at <what> file:line (first: thread ...)" lines, one per distinct wait place.
void tm_describe_waits(Worker* w, std::string& msg) {
    struct Place { int state; const char* what; const char* file; int line; unsigned count; unsigned first; };
    Place places[16];
    unsigned nplaces = 0, running = 0, done = 0;
    for (unsigned i = 0; i < w->nthreads; ++i) {
        const Fiber& f = w->fibers[i];
        if (f.state == DONE) { ++done; continue; }
        if (f.state == READY) { ++running; continue; }
        unsigned p = 0;
        for (; p < nplaces; ++p) {
            if (places[p].state == f.state && places[p].line == f.wline &&
                strcmp(places[p].what, f.what) == 0 && strcmp(places[p].file, f.wfile) == 0)
                break;
        }
        if (p == nplaces) {
            if (nplaces == 16) continue;
            places[nplaces++] = Place{f.state, f.what, f.wfile, f.wline, 0, i};
        }
        places[p].count++;
    }
    char buf[256], who[128];
    for (unsigned p = 0; p < nplaces; ++p) {
        describe_thread(w, places[p].first, who, sizeof who);
        snprintf(buf, sizeof buf, "\n  %u thread(s) wait at %s (%s:%d), first: %s", places[p].count,
                 places[p].what, places[p].file, places[p].line, who);
        msg += buf;
    }
    if (done) {
        snprintf(buf, sizeof buf, "\n  %u thread(s) have finished", done);
        msg += buf;
    }
    if (running) {
        snprintf(buf, sizeof buf, "\n  %u thread(s) are runnable (not waiting, not finished)", running);
        msg += buf;
    }
}

namespace {

void asan_start(Worker* w, void** fake, const void* bottom, size_t size) {
#ifdef TM_ASAN
    __sanitizer_start_switch_fiber(fake, bottom, size);
#else
    (void)w, (void)fake, (void)bottom, (void)size;
#endif
}

void asan_finish(void* fake) {
#ifdef TM_ASAN
    __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#else
    (void)fake;
#endif
}

// Switch from fiber `from` (or the worker's own context when null) to fiber `to` (or back to the
// worker's own context when null). Returns when `from` is resumed.
void switch_to(Worker* w, Fiber* from, Fiber* to, bool from_finished) {
    tm_context* from_ctx = from ? &from->ctx : &w->main_ctx;
    tm_context* to_ctx = to ? &to->ctx : &w->main_ctx;
    void** fake = from_finished ? nullptr : (from ? &from->asan_fake : &w->main_asan_fake);
    const void* bottom = to ? (const void*)to->stack : w->main_stack_bottom;
    size_t size = to ? w->stack_bytes : w->main_stack_size;
    // A switch is no progress (a loop around a barrier switches forever): the watchdog counts
    // finished threadgroups only.
    tm_tl_fiber = to;
    asan_start(w, fake, bottom, size);
    tm_context_switch(from_ctx, to_ctx);
    asan_finish(fake ? *fake : nullptr);
    tm_tl_fiber = from;
}

// Fiber `self` cannot continue: run the next ready fiber, or leave the group when all finished.
void schedule_next(Worker* w, Fiber* self) {
    unsigned n = w->nthreads;
    unsigned start = self->index;
    for (unsigned k = 1; k <= n; ++k) {
        unsigned j = start + k;
        if (j >= n) j -= n;
        Fiber* f = &w->fibers[j];
        if (f->state == READY) {
            if (f == self) return;
            switch_to(w, self, f, self->state == DONE);
            return;
        }
    }
    if (w->ndone == n) {
        switch_to(w, self, nullptr, true);
        return;
    }
    std::string msg = "deadlock: no thread of the threadgroup can continue";
    tm_describe_waits(w, msg);
    tm_fail(TM_FAULT, msg.c_str());
}

void complete_simd(Worker* w, unsigned s) {
    SimdGroup& sg = w->sgs[s];
    if (sg.mismatch) {
        std::string msg = "lanes of SIMD-group " + std::to_string(s) +
                          " reached different SIMD-group operations (divergent control flow)";
        tm_describe_waits(w, msg);
        tm_fail(TM_FAULT, msg.c_str());
    }
    unsigned active = 0;
    unsigned base = s * TM_SIMD_WIDTH;
    for (unsigned l = 0; l < sg.data.lanes; ++l)
        if (w->fibers[base + l].state == WAIT_SIMD) active |= 1u << l;
    if (sg.full && active != 0xffffffffu) {
        char buf[320];
        snprintf(buf, sizeof buf,
                 "%s (%s:%d) needs all 32 lanes of the SIMD-group, but only %d take part "
                 "(partial threadgroup, or lanes that returned early)",
                 sg.what, sg.file, sg.line, __builtin_popcount(active));
        tm_fail(TM_FAULT, buf);
    }
    sg.data.active = active;
    if (sg.fn) sg.fn(&sg.data);
    for (unsigned l = 0; l < sg.data.lanes; ++l) {
        Fiber& f = w->fibers[base + l];
        if (f.state == WAIT_SIMD) f.state = READY;
    }
    sg.nwait = 0;
}

void complete_barrier(Worker* w) {
    if (w->ndone > 0) {
        char who[128];
        unsigned first_done = 0;
        while (w->fibers[first_done].state != DONE) ++first_done;
        describe_thread(w, first_done, who, sizeof who);
        std::string msg = std::string("divergent barrier: ") + who +
                          " finished while other threads of its threadgroup wait at a barrier "
                          "(every thread must reach every barrier)";
        tm_describe_waits(w, msg);
        tm_fail(TM_FAULT, msg.c_str());
    }
    if (w->bar_mismatch) {
        std::string msg = "threads of one threadgroup wait at barriers on different lines "
                          "(a barrier inside divergent control flow)";
        tm_describe_waits(w, msg);
        tm_fail(TM_FAULT, msg.c_str());
    }
    for (unsigned i = 0; i < w->nthreads; ++i) w->fibers[i].state = READY;
    w->nwait_bar = 0;
}

void fiber_entry(void* arg) {
    Fiber* f = static_cast<Fiber*>(arg);
    Worker* w = tm_tl_worker;
    asan_finish(nullptr);
    tm_tl_fiber = f;
    w->launch->thread_fn(w->launch->buffers, &w->group, f->index);
    // The thread returned: it no longer takes part in SIMD-group operations or barriers.
    f->state = DONE;
    w->ndone++;
    SimdGroup& sg = w->sgs[f->index / TM_SIMD_WIDTH];
    sg.nactive--;
    if (sg.nwait > 0 && sg.nwait == sg.nactive) complete_simd(w, f->index / TM_SIMD_WIDTH);
    if (w->nwait_bar > 0 && w->nwait_bar + w->ndone == w->nthreads) complete_barrier(w);
    schedule_next(w, f);
    __builtin_trap();  // a finished fiber is never resumed
}

}  // namespace

void tm_fail(int status, const char* message) {
    Worker* w = tm_tl_worker;
    if (!w->failed) {
        w->failed = true;
        w->status = status;
        w->error = message;
    }
    if (tm_tl_fiber) {
        // Abandon the group: its fibers are never resumed; their stacks are reused next group.
        Fiber* f = tm_tl_fiber;
        f->state = DONE;
        switch_to(w, f, nullptr, true);
        __builtin_trap();
    }
    siglongjmp(w->jump, 1);
}

void tm_failf(int status, const char* fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    tm_fail(status, buf);
}

void tm_reset_threadgroup_memory(Worker* w) {
    for (unsigned i = 0; i < w->nvars; ++i) w->tg_ptr[w->vars[i].id] = nullptr;
    w->nvars = 0;
    w->tg_used = 0;
    w->arena_off = 0;
#ifdef TM_ASAN
    ASAN_POISON_MEMORY_REGION(w->arena, w->arena_bytes);
#endif
}

void tm_run_group_fibers(Worker* w) {
    unsigned n = w->nthreads;
    for (unsigned i = 0; i < n; ++i) {
        Fiber& f = w->fibers[i];
        f.index = i;
        f.state = READY;
        f.asan_fake = nullptr;
        // Each stack's top sits at another offset within its page: otherwise every fiber's hot
        // frame maps to the same cache sets, and a barrier round over 1024 fibers misses in L1
        // and L2 on every switch. The offset (under 4 KiB) is taken from stacks of 64 KiB or
        // more only, so a small TRITON_METAL_EMULATOR_STACK keeps what it asked for.
        unsigned long color = w->stack_bytes >= 65536u ? (i % 64u) * 64u : 0u;
        tm_context_make(&f.ctx, f.stack, w->stack_bytes - color, fiber_entry, &f);
    }
    unsigned nsg = (n + TM_SIMD_WIDTH - 1) / TM_SIMD_WIDTH;
    for (unsigned s = 0; s < nsg; ++s) {
        SimdGroup& sg = w->sgs[s];
        unsigned lanes = n - s * TM_SIMD_WIDTH;
        sg.data.lanes = lanes < TM_SIMD_WIDTH ? lanes : TM_SIMD_WIDTH;
        sg.nactive = sg.data.lanes;
        sg.nwait = 0;
        for (unsigned l = 0; l < sg.data.lanes; ++l) {
            w->fibers[s * TM_SIMD_WIDTH + l].self.sg = &sg.data;
            w->fibers[s * TM_SIMD_WIDTH + l].self.lane = l;
            w->fibers[s * TM_SIMD_WIDTH + l].self.index = s * TM_SIMD_WIDTH + l;
            w->fibers[s * TM_SIMD_WIDTH + l].self.nthreads = n;
        }
    }
    w->ndone = 0;
    w->nwait_bar = 0;
    w->bar_mismatch = false;
    switch_to(w, nullptr, &w->fibers[0], false);
}

extern "C" void tm_rt_fault(const char* what, const char* file, int line) {
    tm_failf(TM_FAULT, "%s (%s:%d)", what, file, line);
}

extern "C" tm_self* tm_rt_self(const char* what, const char* file, int line) {
    Fiber* f = tm_tl_fiber;
    if (!f)
        tm_failf(TM_FAULT,
                 "internal error: %s (%s:%d) ran in a kernel compiled without fibers; the "
                 "emulator did not see a SIMD-group function in the source",
                 what, file, line);
    return &f->self;
}

extern "C" void tm_rt_barrier(int simdgroup_only, const char* what, const char* file, int line) {
    Fiber* f = tm_tl_fiber;
    Worker* w = tm_tl_worker;
    if (!f) {
        // Without fibers every thread runs alone, so a barrier can only come from code the
        // source scan missed (a macro built from pieces): refuse instead of racing.
        tm_failf(TM_FAULT, "internal error: %s (%s:%d) in a kernel compiled without fibers", what,
                 file, line);
    }
    if (simdgroup_only) {
        tm_rt_simd_wait(nullptr, 0, what, file, line);
        return;
    }
    f->state = WAIT_BARRIER;
    f->what = what;
    f->wfile = file;
    f->wline = line;
    if (w->nwait_bar == 0) {
        w->bar_file = file;
        w->bar_line = line;
    } else if (line != w->bar_line || strcmp(file, w->bar_file) != 0) {
        w->bar_mismatch = true;
    }
    w->nwait_bar++;
    if (w->nwait_bar + w->ndone == w->nthreads) {
        complete_barrier(w);
        return;
    }
    schedule_next(w, f);
}

extern "C" void tm_rt_simd_wait(tm_sg_fn fn, int needs_full, const char* what, const char* file,
                                int line) {
    Fiber* f = tm_tl_fiber;
    Worker* w = tm_tl_worker;
    if (!f) tm_rt_self(what, file, line);
    unsigned s = f->index / TM_SIMD_WIDTH;
    SimdGroup& sg = w->sgs[s];
    f->state = WAIT_SIMD;
    f->what = what;
    f->wfile = file;
    f->wline = line;
    if (sg.nwait == 0) {
        sg.fn = fn;
        sg.full = needs_full != 0;
        sg.what = what;
        sg.file = file;
        sg.line = line;
        sg.mismatch = false;
    } else if (fn != sg.fn || line != sg.line || strcmp(file, sg.file) != 0) {
        sg.mismatch = true;
    }
    sg.nwait++;
    if (sg.nwait == sg.nactive) {
        complete_simd(w, s);
        return;
    }
    schedule_next(w, f);
}

extern "C" void* tm_rt_op_exchange(unsigned operand, const char* file, int line) {
    Worker* w = tm_tl_worker;
    if (operand > 1) tm_failf(TM_FAULT, "tensor-op exchange: no operand %u (%s:%d)", operand, file, line);
    if (!w->op_exchange) {
        w->op_exchange = static_cast<unsigned char*>(malloc(2ul * TM_MAX_SIMDGROUPS * TM_OP_EXCHANGE_BYTES));
        if (!w->op_exchange) tm_failf(TM_FAULT, "tensor-op exchange: out of memory (%s:%d)", file, line);
    }
    if (!tm_tl_fiber) tm_rt_self("matmul2d::run", file, line);  // faults: no fibers
    unsigned sg = tm_tl_fiber->index / TM_SIMD_WIDTH;
    return w->op_exchange + (operand * TM_MAX_SIMDGROUPS + sg) * (unsigned long)TM_OP_EXCHANGE_BYTES;
}

extern "C" void* tm_rt_tg_alloc(unsigned id, unsigned long size, unsigned long align,
                                const char* name, const char* file, int line) {
    Worker* w = tm_tl_worker;
    if (id >= TM_MAX_TG_VARS)
        tm_failf(TM_FAULT, "too many threadgroup variables (at most %u)", TM_MAX_TG_VARS);
    if (w->tg_ptr[id]) return w->tg_ptr[id];
    if (align < 16) align = 16;  // Metal aligns threadgroup allocations to 16 bytes
    unsigned long used = (w->tg_used + align - 1) / align * align;
    if (used + size > TM_TG_LIMIT) {
        std::string msg = "threadgroup memory exceeds Metal's limit of 32768 bytes: ";
        char buf[256];
        for (unsigned i = 0; i < w->nvars; ++i) {
            snprintf(buf, sizeof buf, "'%s' %lu bytes (%s:%d), ", w->vars[i].name, w->vars[i].size,
                     w->vars[i].file, w->vars[i].line);
            msg += buf;
        }
        snprintf(buf, sizeof buf, "'%s' %lu bytes (%s:%d): %lu bytes in all", name, size, file,
                 line, used + size);
        msg += buf;
        tm_fail(TM_TG_MEMORY, msg.c_str());
    }
    w->tg_used = used + size;
    unsigned long off = (w->arena_off + align - 1) / align * align;
    unsigned char* p = w->arena + off;
    w->arena_off = off + size + TM_ARENA_REDZONE;
    TgVar& v = w->vars[w->nvars++];
    v = TgVar{id, name, file, line, size};
#ifdef TM_ASAN
    ASAN_UNPOISON_MEMORY_REGION(p, size);
#endif
    // Uninitialised threadgroup memory reads as NaN (all bits set; -1 for integers).
    memset(p, 0xff, size);
    w->tg_ptr[id] = p;
    return p;
}

// The fields of the message are read back by kernel.py (OUT_OF_BOUNDS in errors.py), which
// words the error as the interpreter words its own.
extern "C" void tm_rt_out_of_bounds(const char* name, long index, unsigned long extent,
                                    const char* file, int line) {
    Worker* w = tm_tl_worker;
    const tm_group_info& g = w->group;
    char who[128] = "";
    if (tm_tl_fiber) {
        char buf[112];
        describe_thread(w, tm_tl_fiber->index, buf, sizeof buf);
        snprintf(who, sizeof who, ", %s", buf);
    } else {
        snprintf(who, sizeof who, ", threadgroup (%u,%u,%u)", g.gpos[0], g.gpos[1], g.gpos[2]);
    }
    tm_failf(TM_OUT_OF_BOUNDS,
             "out-of-bounds access to '%s' at index %ld (the buffer has %lu elements) at %s:%d%s",
             name, index, extent, file, line, who);
}

extern "C" void tm_rt_print(unsigned site, unsigned seq, unsigned operand, long index, int pid_x,
                            int pid_y, int pid_z, unsigned long bits) {
    Worker* w = tm_tl_worker;
    tm_launch_desc* d = w ? const_cast<tm_launch_desc*>(w->launch) : nullptr;
    if (!d || !d->prints) return;
    unsigned long k = __atomic_fetch_add(&d->print_count, 1ul, __ATOMIC_RELAXED);
    if (k >= d->print_capacity) return;
    d->prints[k] = tm_print_record{{pid_x, pid_y, pid_z}, seq, site, operand, index, bits};
}
