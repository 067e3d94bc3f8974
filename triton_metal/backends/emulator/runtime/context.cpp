// The context switch of context.h, in assembly for x86-64 (System V) and aarch64 (AAPCS64).
//
// Both switches push the callee-saved state onto the running stack, store the stack pointer in
// `from`, load the one in `to` and pop the same frame from there; so a suspended context is just
// its stack pointer, and tm_context_make only has to forge such a frame whose return address is a
// trampoline that calls entry(arg). No system headers; file-scope asm rather than a separate .S
// file, so one C++ compiler invocation (g++ or clang++) builds it.
//
// Frame of a suspended context, from its saved stack pointer upwards (8-byte slots):
//   x86-64:  [fp control: MXCSR | x87 CW << 32] r15 r14 r13 r12 rbx rbp [return address]
//   aarch64: x19 x20 ... x28 x29 x30(lr) d8 ... d15 [FPCR] [padding]   (sp stays 16-aligned)
// A new context's frame has entry in r12/x19, arg in r13/x20 and the trampoline as return address.

#include "context.h"

#if defined(__APPLE__)
// Mach-O: C symbols carry a leading underscore; no .type/.size; .private_extern is "hidden".
#define TM_SYM(name) "_" #name
#define TM_FUNC_BEGIN(name) ".globl " TM_SYM(name) "\n.p2align 4\n" TM_SYM(name) ":\n"
#define TM_HIDDEN(name) ".private_extern " TM_SYM(name) "\n"
#define TM_FUNC_END(name) ""
#else
#define TM_SYM(name) #name
#define TM_FUNC_BEGIN(name) \
    ".globl " #name "\n.type " #name ", %function\n.p2align 4\n" #name ":\n"
#define TM_HIDDEN(name) ".hidden " #name "\n"
#define TM_FUNC_END(name) ".size " #name ", .-" #name "\n"
#endif

// First code a new context runs: calls entry(arg) from the registers the forged frame restored.
extern "C" __attribute__((visibility("hidden"))) void tm_context_trampoline(void);

typedef __UINTPTR_TYPE__ tm_uintptr;

#if defined(__x86_64__)

#if defined(__CET__) && (__CET__ & 1)
// Built with indirect-branch tracking: a function reachable through a pointer or a PLT starts
// with ENDBR64 (a no-op elsewhere). Shadow stacks cannot work with any stack switch like this one.
#define TM_ENDBR "    endbr64\n"
#else
#define TM_ENDBR ""
#endif

__asm__(
    ".text\n"
    TM_FUNC_BEGIN(tm_context_switch)
    TM_ENDBR
    "    pushq %rbp\n"
    "    pushq %rbx\n"
    "    pushq %r12\n"
    "    pushq %r13\n"
    "    pushq %r14\n"
    "    pushq %r15\n"
    "    pushq $0\n"                 // the slot's unused bytes must compare equal below
    "    stmxcsr (%rsp)\n"
    "    fnstcw 4(%rsp)\n"
    // Read back as the two stores wrote them: one 8-byte load of both would wait for them to
    // retire (no store forwarding from two smaller stores).
    "    movl (%rsp), %eax\n"
    "    movzwl 4(%rsp), %edx\n"
    "    shlq $32, %rdx\n"
    "    orq %rdx, %rax\n"
    "    movq %rsp, (%rdi)\n"
    "    movq (%rsi), %rsp\n"
    // Loading MXCSR and the x87 control word is slow: do it only when the control bits differ.
    // MXCSR's low 6 bits are sticky exception flags, which the ABI does not preserve.
    "    movq (%rsp), %rdx\n"
    "    xorq %rax, %rdx\n"
    "    testq $-64, %rdx\n"
    "    jne 2f\n"
    "1:\n"
    "    addq $8, %rsp\n"
    "    popq %r15\n"
    "    popq %r14\n"
    "    popq %r13\n"
    "    popq %r12\n"
    "    popq %rbx\n"
    "    popq %rbp\n"
    "    ret\n"
    "2:\n"
    "    ldmxcsr (%rsp)\n"
    "    fldcw 4(%rsp)\n"
    "    jmp 1b\n"
    TM_FUNC_END(tm_context_switch)
    TM_HIDDEN(tm_context_trampoline)
    TM_FUNC_BEGIN(tm_context_trampoline)
    "    movq %r13, %rdi\n"          // rsp is 16-aligned here, as the call below requires
    "    callq *%r12\n"
    "    ud2\n"                      // entry returned: a bug in the caller of tm_context_make
    TM_FUNC_END(tm_context_trampoline));

static const int kFrameSlots = 8;

static tm_uintptr current_fp_control() {
    unsigned int mxcsr = 0;
    unsigned short control_word = 0;
    __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
    __asm__ volatile("fnstcw %0" : "=m"(control_word));
    return (tm_uintptr)mxcsr | ((tm_uintptr)control_word << 32);
}

static void fill_frame(tm_uintptr* frame, void (*entry)(void*), void* arg) {
    frame[0] = current_fp_control();
    frame[3] = (tm_uintptr)arg;    // r13
    frame[4] = (tm_uintptr)entry;  // r12
    frame[6] = 0;                  // rbp: ends frame-pointer backtraces
    frame[7] = (tm_uintptr)&tm_context_trampoline;
}

#elif defined(__aarch64__)

#if defined(__ARM_FEATURE_BTI_DEFAULT) && __ARM_FEATURE_BTI_DEFAULT
// Built with branch-target identification: a landing pad ("bti c", a no-op elsewhere) for calls
// through a pointer or a PLT.
#define TM_BTI "    hint #34\n"
#else
#define TM_BTI ""
#endif

__asm__(
    ".text\n"
    TM_FUNC_BEGIN(tm_context_switch)
    TM_BTI
    "    sub sp, sp, #176\n"
    "    stp x19, x20, [sp, #0]\n"
    "    stp x21, x22, [sp, #16]\n"
    "    stp x23, x24, [sp, #32]\n"
    "    stp x25, x26, [sp, #48]\n"
    "    stp x27, x28, [sp, #64]\n"
    "    stp x29, x30, [sp, #80]\n"
    "    stp d8, d9, [sp, #96]\n"
    "    stp d10, d11, [sp, #112]\n"
    "    stp d12, d13, [sp, #128]\n"
    "    stp d14, d15, [sp, #144]\n"
    "    mrs x9, fpcr\n"
    "    str x9, [sp, #160]\n"
    "    mov x10, sp\n"
    "    str x10, [x0]\n"
    "    ldr x10, [x1]\n"
    "    mov sp, x10\n"
    "    ldr x10, [sp, #160]\n"
    "    cmp x9, x10\n"              // writing FPCR is slow: only when it differs
    "    b.ne 2f\n"
    "1:\n"
    "    ldp x19, x20, [sp, #0]\n"
    "    ldp x21, x22, [sp, #16]\n"
    "    ldp x23, x24, [sp, #32]\n"
    "    ldp x25, x26, [sp, #48]\n"
    "    ldp x27, x28, [sp, #64]\n"
    "    ldp x29, x30, [sp, #80]\n"
    "    ldp d8, d9, [sp, #96]\n"
    "    ldp d10, d11, [sp, #112]\n"
    "    ldp d12, d13, [sp, #128]\n"
    "    ldp d14, d15, [sp, #144]\n"
    "    add sp, sp, #176\n"
    "    ret\n"
    "2:\n"
    "    msr fpcr, x10\n"
    "    b 1b\n"
    TM_FUNC_END(tm_context_switch)
    TM_HIDDEN(tm_context_trampoline)
    TM_FUNC_BEGIN(tm_context_trampoline)
    "    mov x0, x20\n"
    "    blr x19\n"
    "    brk #0\n"                   // entry returned: a bug in the caller of tm_context_make
    TM_FUNC_END(tm_context_trampoline));

static const int kFrameSlots = 22;

static tm_uintptr current_fp_control() {
    tm_uintptr fpcr = 0;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    return fpcr;
}

static void fill_frame(tm_uintptr* frame, void (*entry)(void*), void* arg) {
    frame[0] = (tm_uintptr)entry;  // x19
    frame[1] = (tm_uintptr)arg;    // x20
    frame[10] = 0;                 // x29: ends frame-pointer backtraces
    frame[11] = (tm_uintptr)&tm_context_trampoline;  // x30, where the first switch returns
    frame[20] = current_fp_control();
}

#else
#error "the emulator's context switch supports x86-64 and aarch64 only"
#endif

void tm_context_make(tm_context* ctx, void* stack_base, unsigned long stack_size,
                     void (*entry)(void*), void* arg) {
    tm_uintptr top = ((tm_uintptr)stack_base + stack_size) & ~(tm_uintptr)15;
    tm_uintptr* frame = (tm_uintptr*)top - kFrameSlots;
    for (int i = 0; i < kFrameSlots; ++i) {
        frame[i] = 0;
    }
    fill_frame(frame, entry, arg);
    ctx->sp = frame;
}
