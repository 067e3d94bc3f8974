// Test program for the emulator's context switch (runtime/context.h), built and run by
// test_context.py natively and by test_aarch64.py under qemu-aarch64.
//
//   test_context_fibers            run every check, print "ok <name>" for each and "ALL OK"
//   test_context_fibers bench N    print "switch_ns <fast> <slow>": ns per switch over N round
//                                  trips, with equal (fast) and different (slow) FP control state
//   test_context_fibers return     let a fiber's entry return: must trap (never "returned")
//
// Checks: ping-pong, callee-saved integer and floating-point registers across switches (set by
// assembly helpers, so the compiler cannot keep copies elsewhere), floating-point control state
// (inherited at creation, kept per context), 16-byte stack alignment, deep stacks, and a stress
// run of many fibers switching through a scheduler and directly to one another.

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "context.h"

typedef unsigned long u64;

static void fail(const char* what, u64 got, u64 expected) {
    printf("FAIL %s: got %#lx, expected %#lx\n", what, got, expected);
    fflush(stdout);
    exit(1);
}

#define CHECK_EQ(what, got, expected)                                    \
    do {                                                                 \
        u64 got_ = (u64)(got), expected_ = (u64)(expected);              \
        if (got_ != expected_) fail(what, got_, expected_);              \
    } while (0)

// ---------------------------------------------------------------------------------------------
// Architecture helpers (assembly, so register contents are exactly what the test says).

#if defined(__x86_64__)
#define INT_REGS 6  // rbx rbp r12 r13 r14 r15
#define FP_REGS 0   // System V has no callee-saved vector registers
#elif defined(__aarch64__)
#define INT_REGS 11  // x19 .. x29
#define FP_REGS 8    // d8 .. d15
#endif

// Layout shared with the assembly below: do not reorder.
struct Probe {
    tm_context* from;
    tm_context* to;
    u64 int_in[11];
    u64 fp_in[8];
    u64 int_out[11];
    u64 fp_out[8];
};

extern "C" void probe_switch(Probe* probe);  // load *_in, switch, store registers in *_out
extern "C" u64 caller_stack_pointer(void);   // the caller's stack pointer at the call

#if defined(__APPLE__)
#define SYM(name) "_" #name  // Mach-O symbols carry a leading underscore
#else
#define SYM(name) #name
#endif

#if defined(__x86_64__)
static_assert(__builtin_offsetof(Probe, int_in) == 16, "layout");
static_assert(__builtin_offsetof(Probe, int_out) == 16 + 8 * 19, "layout");
__asm__(
    ".text\n.globl " SYM(probe_switch) "\n.p2align 4\n" SYM(probe_switch) ":\n"
    "    pushq %rbp\n    pushq %rbx\n    pushq %r12\n    pushq %r13\n    pushq %r14\n    pushq %r15\n"
    "    pushq %rdi\n"
    "    movq %rdi, %rax\n"
    "    movq 16(%rax), %rbx\n    movq 24(%rax), %rbp\n    movq 32(%rax), %r12\n"
    "    movq 40(%rax), %r13\n    movq 48(%rax), %r14\n    movq 56(%rax), %r15\n"
    "    movq 0(%rax), %rdi\n    movq 8(%rax), %rsi\n"
    "    call " SYM(tm_context_switch) "\n"
    "    movq (%rsp), %rax\n"
    "    movq %rbx, 168(%rax)\n    movq %rbp, 176(%rax)\n    movq %r12, 184(%rax)\n"
    "    movq %r13, 192(%rax)\n    movq %r14, 200(%rax)\n    movq %r15, 208(%rax)\n"
    "    popq %rdi\n"
    "    popq %r15\n    popq %r14\n    popq %r13\n    popq %r12\n    popq %rbx\n    popq %rbp\n"
    "    ret\n"
    ".globl " SYM(caller_stack_pointer) "\n.p2align 4\n" SYM(caller_stack_pointer) ":\n"
    "    leaq 8(%rsp), %rax\n    ret\n");

static u64 get_fp_control() {
    unsigned int mxcsr = 0;
    unsigned short cw = 0;
    __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
    __asm__ volatile("fnstcw %0" : "=m"(cw));
    return (u64)(mxcsr & ~0x3Fu) | ((u64)cw << 32);  // without the sticky exception flags
}
static void set_fp_control(u64 value) {
    unsigned int mxcsr = (unsigned int)value;
    unsigned short cw = (unsigned short)(value >> 32);
    __asm__ volatile("ldmxcsr %0" : : "m"(mxcsr));
    __asm__ volatile("fldcw %0" : : "m"(cw));
}
// Rounding toward zero and flush-to-zero in MXCSR; 24-bit precision and round-up for x87.
static const u64 kFpModeA = 0xFF80ul | (0x007Ful << 32) | (0x0800ul << 32);
// Round down and denormals-are-zero in MXCSR; round toward zero for x87.
static const u64 kFpModeB = 0x3FC0ul | (0x0F7Ful << 32);

#elif defined(__aarch64__)
static_assert(__builtin_offsetof(Probe, int_in) == 16, "layout");
static_assert(__builtin_offsetof(Probe, fp_in) == 104, "layout");
static_assert(__builtin_offsetof(Probe, int_out) == 168, "layout");
static_assert(__builtin_offsetof(Probe, fp_out) == 256, "layout");
__asm__(
    ".text\n.globl " SYM(probe_switch) "\n.p2align 4\n" SYM(probe_switch) ":\n"
    "    sub sp, sp, #176\n"
    "    stp x19, x20, [sp, #0]\n    stp x21, x22, [sp, #16]\n    stp x23, x24, [sp, #32]\n"
    "    stp x25, x26, [sp, #48]\n    stp x27, x28, [sp, #64]\n    stp x29, x30, [sp, #80]\n"
    "    stp d8, d9, [sp, #96]\n    stp d10, d11, [sp, #112]\n    stp d12, d13, [sp, #128]\n"
    "    stp d14, d15, [sp, #144]\n    str x0, [sp, #160]\n"
    "    ldp x19, x20, [x0, #16]\n    ldp x21, x22, [x0, #32]\n    ldp x23, x24, [x0, #48]\n"
    "    ldp x25, x26, [x0, #64]\n    ldp x27, x28, [x0, #80]\n    ldr x29, [x0, #96]\n"
    "    ldp d8, d9, [x0, #104]\n    ldp d10, d11, [x0, #120]\n    ldp d12, d13, [x0, #136]\n"
    "    ldp d14, d15, [x0, #152]\n"
    "    ldr x1, [x0, #8]\n    ldr x0, [x0, #0]\n"
    "    bl " SYM(tm_context_switch) "\n"
    "    ldr x0, [sp, #160]\n"
    "    stp x19, x20, [x0, #168]\n    stp x21, x22, [x0, #184]\n    stp x23, x24, [x0, #200]\n"
    "    stp x25, x26, [x0, #216]\n    stp x27, x28, [x0, #232]\n    str x29, [x0, #248]\n"
    "    stp d8, d9, [x0, #256]\n    stp d10, d11, [x0, #272]\n    stp d12, d13, [x0, #288]\n"
    "    stp d14, d15, [x0, #304]\n"
    "    ldp x19, x20, [sp, #0]\n    ldp x21, x22, [sp, #16]\n    ldp x23, x24, [sp, #32]\n"
    "    ldp x25, x26, [sp, #48]\n    ldp x27, x28, [sp, #64]\n    ldp x29, x30, [sp, #80]\n"
    "    ldp d8, d9, [sp, #96]\n    ldp d10, d11, [sp, #112]\n    ldp d12, d13, [sp, #128]\n"
    "    ldp d14, d15, [sp, #144]\n"
    "    add sp, sp, #176\n    ret\n"
    ".globl " SYM(caller_stack_pointer) "\n.p2align 4\n" SYM(caller_stack_pointer) ":\n"
    "    mov x0, sp\n    ret\n");

static u64 get_fp_control() {
    u64 fpcr = 0;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    return fpcr;
}
static void set_fp_control(u64 value) { __asm__ volatile("msr fpcr, %0" : : "r"(value)); }
// FPCR: RMode toward zero (bits 22-23 = 3) with flush-to-zero (bit 24); and round toward minus
// infinity (2) with default-NaN (bit 25).
static const u64 kFpModeA = (3ul << 22) | (1ul << 24);
static const u64 kFpModeB = (2ul << 22) | (1ul << 25);
#endif

// ---------------------------------------------------------------------------------------------
// Fibers used by the tests.

static const unsigned long kStackSize = 64 * 1024;

struct Fiber {
    tm_context ctx;
    void* stack;
};

static void fiber_init(Fiber* fiber, void (*entry)(void*), void* arg, unsigned long size = kStackSize) {
    fiber->stack = malloc(size);
    if (!fiber->stack) fail("malloc", 0, 1);
    // Fill with a pattern: a frame must not depend on the stack's prior contents.
    memset(fiber->stack, 0xA5, size);
    tm_context_make(&fiber->ctx, fiber->stack, size, entry, arg);
}

static tm_context g_main;

// ---- ping-pong -------------------------------------------------------------------------------

struct PingPong {
    Fiber fiber;
    long rounds;
    long counter;
};

static void pingpong_entry(void* arg) {
    PingPong* pp = (PingPong*)arg;
    for (long i = 0; i < pp->rounds; ++i) {
        CHECK_EQ("ping-pong: fiber sees main's count", pp->counter, 2 * i + 1);
        pp->counter += 1;
        tm_context_switch(&pp->fiber.ctx, &g_main);
    }
    pp->counter = -1;
    tm_context_switch(&pp->fiber.ctx, &g_main);  // the last switch: never resumed
}

static void test_pingpong() {
    PingPong pp;
    pp.rounds = 1000;
    pp.counter = 0;
    fiber_init(&pp.fiber, pingpong_entry, &pp);
    for (long i = 0; i < pp.rounds; ++i) {
        pp.counter += 1;
        tm_context_switch(&g_main, &pp.fiber.ctx);
        CHECK_EQ("ping-pong: main sees fiber's count", pp.counter, 2 * i + 2);
    }
    tm_context_switch(&g_main, &pp.fiber.ctx);
    CHECK_EQ("ping-pong: fiber finished", pp.counter, (u64)-1);
    free(pp.fiber.stack);
    printf("ok pingpong\n");
}

// ---- callee-saved registers -------------------------------------------------------------------

static Fiber g_probe_fiber;
static Probe g_fiber_probe;

static void fill_probe(Probe* probe, u64 seed) {
    for (int i = 0; i < 11; ++i) probe->int_in[i] = seed * 0x9E3779B97F4A7C15ul + (u64)i * 0x0101010101010101ul;
    for (int i = 0; i < 8; ++i) {
        double d = (double)(seed * 100 + (u64)i) + 0.25;  // distinct, exactly representable
        memcpy(&probe->fp_in[i], &d, 8);
    }
    memset(probe->int_out, 0, sizeof probe->int_out);
    memset(probe->fp_out, 0, sizeof probe->fp_out);
}

static void check_probe(const char* who, const Probe* probe) {
    char what[64];
    for (int i = 0; i < INT_REGS; ++i) {
        snprintf(what, sizeof what, "%s: callee-saved integer register #%d", who, i);
        CHECK_EQ(what, probe->int_out[i], probe->int_in[i]);
    }
    for (int i = 0; i < FP_REGS; ++i) {
        snprintf(what, sizeof what, "%s: callee-saved d%d", who, 8 + i);
        CHECK_EQ(what, probe->fp_out[i], probe->fp_in[i]);
    }
}

static void probe_entry(void*) {
    for (u64 round = 0;; ++round) {
        // Load this fiber's own patterns and switch: main then resumes with its registers.
        fill_probe(&g_fiber_probe, 1000 + round);
        g_fiber_probe.from = &g_probe_fiber.ctx;
        g_fiber_probe.to = &g_main;
        probe_switch(&g_fiber_probe);
        check_probe("fiber", &g_fiber_probe);
    }
}

static void test_callee_saved() {
    fiber_init(&g_probe_fiber, probe_entry, 0);
    Probe probe;
    for (u64 round = 0; round < 100; ++round) {
        fill_probe(&probe, round + 1);
        probe.from = &g_main;
        probe.to = &g_probe_fiber.ctx;
        probe_switch(&probe);
        check_probe("main", &probe);
    }
    free(g_probe_fiber.stack);
    printf("ok callee_saved (%d integer, %d floating-point registers)\n", INT_REGS, FP_REGS);
}

// ---- floating-point control state -------------------------------------------------------------

static Fiber g_fp_fiber;
static u64 g_fp_seen_at_start;

static void fp_entry(void*) {
    g_fp_seen_at_start = get_fp_control();
    set_fp_control(kFpModeB);
    for (;;) {
        tm_context_switch(&g_fp_fiber.ctx, &g_main);
        CHECK_EQ("fp control: fiber keeps its own mode", get_fp_control(), kFpModeB);
    }
}

static void test_fp_control() {
    u64 original = get_fp_control();
    set_fp_control(kFpModeA);
    CHECK_EQ("fp control: mode A can be set", get_fp_control(), kFpModeA);
    fiber_init(&g_fp_fiber, fp_entry, 0);  // created under mode A
    set_fp_control(original);
    tm_context_switch(&g_main, &g_fp_fiber.ctx);
    CHECK_EQ("fp control: new context inherits its creator's mode", g_fp_seen_at_start, kFpModeA);
    CHECK_EQ("fp control: main keeps its mode", get_fp_control(), original);
    set_fp_control(kFpModeA);
    for (int i = 0; i < 10; ++i) {
        tm_context_switch(&g_main, &g_fp_fiber.ctx);
        CHECK_EQ("fp control: main keeps mode A", get_fp_control(), kFpModeA);
    }
    set_fp_control(original);
    free(g_fp_fiber.stack);
    printf("ok fp_control\n");
}

// ---- stack alignment and depth ----------------------------------------------------------------

static Fiber g_align_fiber;

static u64 __attribute__((noinline)) recurse(int depth) {
    volatile char pad[200];
    pad[0] = (char)depth;
    CHECK_EQ("alignment in a nested call", caller_stack_pointer() % 16, 0);
    if (depth == 0) {
        tm_context_switch(&g_align_fiber.ctx, &g_main);
        return (u64)pad[0];
    }
    return recurse(depth - 1) + (u64)(unsigned char)pad[0];
}

static void align_entry(void*) {
    CHECK_EQ("alignment at fiber entry", caller_stack_pointer() % 16, 0);
    u64 sum = recurse(150);  // about 40 KiB of a 64 KiB stack
    CHECK_EQ("deep stack survives a switch", sum, 150 * 151 / 2);
    CHECK_EQ("alignment after a switch", caller_stack_pointer() % 16, 0);
    tm_context_switch(&g_align_fiber.ctx, &g_main);
}

static void test_alignment() {
    // Stacks whose top is not 16-byte aligned: tm_context_make aligns down.
    for (unsigned long skew = 0; skew < 16; skew += 4) {
        char* block = (char*)malloc(kStackSize + 64);
        tm_context_make(&g_align_fiber.ctx, block + skew, kStackSize - skew, align_entry, 0);
        tm_context_switch(&g_main, &g_align_fiber.ctx);  // to the bottom of the recursion
        tm_context_switch(&g_main, &g_align_fiber.ctx);  // back up, and out
        free(block);
    }
    printf("ok alignment\n");
}

// ---- stress: many fibers ------------------------------------------------------------------------

static const int kStressFibers = 500;
static const int kStressRounds = 200;

struct Worker {
    Fiber fiber;
    int id;
    u64 hash;
};

static Worker g_workers[kStressFibers];
static int g_expected_next;
static long g_ring_hops;

static u64 mix(u64 h, u64 v) { return (h ^ v) * 0x100000001B3ul; }

static void worker_entry(void* arg) {
    Worker* self = (Worker*)arg;
    u64 local[16];  // lives on this fiber's stack across all switches
    for (int i = 0; i < 16; ++i) local[i] = (u64)self->id * 16 + (u64)i;
    for (int round = 0; round < kStressRounds; ++round) {
        CHECK_EQ("stress: scheduling order", g_expected_next, self->id);
        for (int i = 0; i < 16; ++i) {
            CHECK_EQ("stress: fiber stack intact", local[i], (u64)self->id * 16 + (u64)i + (u64)round);
            local[i] += 1;
        }
        self->hash = mix(self->hash, (u64)round);
        tm_context_switch(&self->fiber.ctx, &g_main);
    }
    // Phase 2: a ring, each fiber switching straight to the next one.
    Worker* next = &g_workers[(self->id + 1) % kStressFibers];
    for (int lap = 0; lap < 20; ++lap) {
        g_ring_hops += 1;
        self->hash = mix(self->hash, (u64)lap + 7);
        if (self->id == kStressFibers - 1 && lap == 19) break;
        tm_context_switch(&self->fiber.ctx, &next->fiber.ctx);
    }
    tm_context_switch(&self->fiber.ctx, &g_main);  // only the last fiber gets here
    fail("stress: finished fiber resumed", 0, 1);
}

static void test_stress() {
    for (int i = 0; i < kStressFibers; ++i) {
        g_workers[i].id = i;
        g_workers[i].hash = 0xCBF29CE484222325ul;
        fiber_init(&g_workers[i].fiber, worker_entry, &g_workers[i], 16 * 1024);
    }
    for (int round = 0; round < kStressRounds; ++round) {
        for (int i = 0; i < kStressFibers; ++i) {
            g_expected_next = i;
            tm_context_switch(&g_main, &g_workers[i].fiber.ctx);
        }
    }
    tm_context_switch(&g_main, &g_workers[0].fiber.ctx);
    CHECK_EQ("stress: ring hops", g_ring_hops, 20 * kStressFibers);
    for (int i = 0; i < kStressFibers; ++i) {
        u64 expected = 0xCBF29CE484222325ul;
        for (int round = 0; round < kStressRounds; ++round) expected = mix(expected, (u64)round);
        for (int lap = 0; lap < 20; ++lap) expected = mix(expected, (u64)lap + 7);
        CHECK_EQ("stress: per-fiber hash", g_workers[i].hash, expected);
        free(g_workers[i].fiber.stack);
    }
    printf("ok stress (%d fibers, %ld switches)\n", kStressFibers,
           (long)kStressFibers * kStressRounds * 2 + 20L * kStressFibers + 1);
}

// ---- entry returning --------------------------------------------------------------------------

static void returning_entry(void*) {}

static int run_returning_entry() {
    Fiber fiber;
    fiber_init(&fiber, returning_entry, 0);
    tm_context_switch(&g_main, &fiber.ctx);
    printf("returned\n");  // must be unreachable: the trampoline traps
    return 0;
}

// ---- benchmark -------------------------------------------------------------------------------------

static Fiber g_bench_fiber;
static u64 g_bench_mode;

static void bench_entry(void*) {
    set_fp_control(g_bench_mode);
    for (;;) tm_context_switch(&g_bench_fiber.ctx, &g_main);
}

static double now_ns() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double ns_per_switch(long round_trips, u64 fiber_mode) {
    g_bench_mode = fiber_mode;
    fiber_init(&g_bench_fiber, bench_entry, 0);
    tm_context_switch(&g_main, &g_bench_fiber.ctx);  // warm up, set the fiber's mode
    double best = 1e30;
    for (int rep = 0; rep < 5; ++rep) {
        double start = now_ns();
        for (long i = 0; i < round_trips; ++i) tm_context_switch(&g_main, &g_bench_fiber.ctx);
        double ns = (now_ns() - start) / (double)(2 * round_trips);
        if (ns < best) best = ns;
    }
    free(g_bench_fiber.stack);
    return best;
}

int main(int argc, char** argv) {
    setvbuf(stdout, 0, _IOLBF, 0);  // keep what was printed before a crash
    if (argc >= 2 && strcmp(argv[1], "return") == 0) return run_returning_entry();
    if (argc >= 3 && strcmp(argv[1], "bench") == 0) {
        long round_trips = atol(argv[2]);
        u64 mode = get_fp_control();
        double fast = ns_per_switch(round_trips, mode);
        double slow = ns_per_switch(round_trips, mode == kFpModeA ? kFpModeB : kFpModeA);
        printf("switch_ns %.2f %.2f\n", fast, slow);
        return 0;
    }
    test_pingpong();
    test_callee_saved();
    test_fp_control();
    test_alignment();
    test_stress();
    printf("ALL OK\n");
    return 0;
}
