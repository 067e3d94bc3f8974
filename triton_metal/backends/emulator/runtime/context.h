// Execution contexts for the emulator's fibers: a stack pointer and a hand-written switch.
//
// A context is the stack pointer of a suspended piece of code; everything else it needs to resume
// (the callee-saved registers, the return address and the floating-point control state) lies on
// its own stack. Implemented in context.cpp for x86-64 (System V) and aarch64 (AAPCS64, Linux and
// Apple), with no system headers, so it compiles under the emulator's -nostdinc build.
//
// Saved by a switch:
//   x86-64:  rbx, rbp, r12-r15, rsp, MXCSR and the x87 control word.
//   aarch64: x19-x28, x29 (fp), x30 (lr), sp, d8-d15 and FPCR.
// Caller-saved registers are not saved: a switch is an ordinary function call to the compiler.
// The floating-point control registers are only written when the two contexts differ, since
// writing them costs more than the rest of the switch. MXCSR's sticky exception flags are not
// kept per context (the x86-64 ABI does not preserve them across calls either).

#ifndef TRITON_METAL_EMULATOR_CONTEXT_H
#define TRITON_METAL_EMULATOR_CONTEXT_H

struct tm_context {
    void* sp;  // saved stack pointer; meaningful only while the context is suspended
};

// Prepare `ctx` so that the first switch to it calls entry(arg) on the stack
// [stack_base, stack_base + stack_size) (its top is aligned down to 16 bytes). The new context
// starts with the floating-point control state (rounding, flush-to-zero) of the caller of
// tm_context_make. `entry` must never return: it switches away for the last time instead
// (returning traps). The stack needs room for a 176-byte initial frame plus whatever entry uses;
// nothing here detects an overflow (put a guard page below it).
void tm_context_make(tm_context* ctx, void* stack_base, unsigned long stack_size,
                     void (*entry)(void*), void* arg);

// Save the callee-saved registers and stack pointer of the running code in `from`, resume `to`.
// Returns when some other code switches back to `from`. `from` and `to` may not be the same.
// Resume a context only on the OS thread that last ran it: compiled code may keep the address of
// a thread_local variable in a register across the call.
extern "C" void tm_context_switch(tm_context* from, tm_context* to);

#endif  // TRITON_METAL_EMULATOR_CONTEXT_H
