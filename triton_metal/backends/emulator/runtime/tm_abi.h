// The interface between a compiled kernel and the emulator runtime (libtmrt).
//
// Both sides include this file: the kernel translation unit (compiled strictly, with no system
// headers, so only plain C types appear here) and the runtime library. Everything is C linkage so
// the Python driver can reach `tm_kernel_main` through ctypes.
#ifndef TM_ABI_H
#define TM_ABI_H

#define TM_SIMD_WIDTH 32u
#define TM_MAX_THREADS 1024u
#define TM_MAX_SIMDGROUPS (TM_MAX_THREADS / TM_SIMD_WIDTH)
#define TM_SLOT_BYTES 32u
#define TM_MAX_TG_VARS 256u
#define TM_TG_LIMIT 32768u

// Status codes returned by tm_launch (and tm_kernel_main).
#define TM_OK 0
#define TM_FAULT 1          /* divergent barrier, mismatched SIMD-group op, deadlock, ... */
#define TM_TG_MEMORY 2      /* threadgroup memory over the 32 KiB limit */
#define TM_WATCHDOG 3       /* a threadgroup ran longer than the watchdog allows */
#define TM_BAD_LAUNCH 4     /* the launch description itself is invalid */
#define TM_OUT_OF_BOUNDS 5  /* a device access outside its buffer (bounds-checked builds) */
#define TM_INTERRUPTED 6    /* the launching thread cancelled the launch (tm_launch_cancel) */
#define TM_PENDING 7        /* tm_launch / tm_launch_wait: still running after poll_seconds */

extern "C" {

// Everything a thread needs to compute its Metal attributes: the grid, the requested threadgroup
// size and the size and position of the threadgroup it belongs to.
struct tm_group_info {
    unsigned grid[3];     // threads_per_grid
    unsigned tpt[3];      // threads_per_threadgroup (requested, after MLX's clamp to the grid)
    unsigned ngroups[3];  // threadgroups_per_grid
    unsigned gpos[3];     // threadgroup_position_in_grid
    unsigned dtpt[3];     // dispatch_threads_per_threadgroup (smaller in the last, partial group)
};

// Runs every thread of one threadgroup to completion, one after the other (kernels without
// barriers or SIMD-group functions).
typedef void (*tm_group_fn)(void** buffers, const tm_group_info* group);
// Runs one thread (the fiber entry of kernels that synchronise).
typedef void (*tm_thread_fn)(void** buffers, const tm_group_info* group, unsigned index);

// One element printed by `tl.device_print` (emulator builds: tm_kernel.h's tm_device_print). The
// launch gives an array of them; the runtime formats nothing, Python does (runtime/device_prints.py).
struct tm_print_record {
    int pid[3];           // the printing program
    unsigned seq;         // how many prints its thread passed before this one
    unsigned site;        // which tl.device_print of the kernel
    unsigned operand;     // which of its arguments
    long index;           // row-major index of the element (0 for a scalar)
    unsigned long bits;   // the value's bytes, zero-extended
};

struct tm_launch_desc {
    const char* kernel_name;
    void** buffers;
    unsigned grid[3];
    unsigned tpt[3];
    int use_fibers;
    tm_group_fn group_fn;
    tm_thread_fn thread_fn;
    double watchdog_seconds;   // no progress for this long in a threadgroup is an error
    unsigned workers;          // OS threads to spread threadgroups over (0: one per core)
    unsigned stack_bytes;      // per-fiber stack size
    char* error;               // filled with a message when the status is not TM_OK
    unsigned error_capacity;
    double poll_seconds;       // > 0: tm_launch/tm_launch_wait return TM_PENDING after this long
    void* state;               // the running launch (runtime-owned; null when none)
    tm_print_record* prints;   // where device prints go (null: dropped)
    unsigned long print_capacity;
    unsigned long print_count; // records produced (more than the capacity: the rest dropped)
};

// Starts a launch and waits for it (at most poll_seconds when that is > 0: TM_PENDING then means
// "call tm_launch_wait again"). Concurrent launches from different threads run on separate
// worker pools, so one that hangs until its watchdog fires blocks no other.
int tm_launch(tm_launch_desc* desc);
int tm_launch_wait(tm_launch_desc* desc);
// Stops a pending launch: threadgroups not started are skipped, running ones are abandoned (as
// by the watchdog). Waits for the workers and returns TM_INTERRUPTED.
int tm_launch_cancel(tm_launch_desc* desc);

// The data of one SIMD-group operation: each lane deposits its operand in `in[lane]` (and an
// integer argument such as a lane id or delta in `arg[lane]`), the last lane to arrive runs the
// operation over the lanes in `active`, and each lane reads its result from `out[lane]`.
struct tm_sg {
    unsigned char in[TM_SIMD_WIDTH][TM_SLOT_BYTES];
    unsigned char out[TM_SIMD_WIDTH][TM_SLOT_BYTES];
    unsigned arg[TM_SIMD_WIDTH];
    unsigned active;   // bit i: lane i takes part in the operation
    unsigned lanes;    // lanes that exist in this SIMD-group (fewer in a partial threadgroup)
};

typedef void (*tm_sg_fn)(tm_sg* sg);

// The running thread as the SIMD-group functions see it.
struct tm_self {
    tm_sg* sg;
    unsigned lane;
    unsigned index;     // thread_index_in_threadgroup (the tensor ops' execution scope)
    unsigned nthreads;  // threads in this threadgroup
};

// Calls the kernel side makes. `what` names the operation for error messages; `file`/`line` are
// the kernel source position (from __builtin_FILE/__builtin_LINE under the #line mapping).
tm_self* tm_rt_self(const char* what, const char* file, int line);
void tm_rt_barrier(int simdgroup_only, const char* what, const char* file, int line);
void tm_rt_simd_wait(tm_sg_fn fn, int needs_full_simdgroup, const char* what, const char* file,
                     int line);
void* tm_rt_tg_alloc(unsigned id, unsigned long size, unsigned long align, const char* name,
                     const char* file, int line);
// The area where the tensor-op model gathers input operand `operand` (0 or 1) of the calling
// thread's SIMD group: TM_OP_EXCHANGE_BYTES, the running threadgroup's, outside its threadgroup
// memory (the real op keeps such data to itself).
#define TM_OP_EXCHANGE_BYTES 16384u
void* tm_rt_op_exchange(unsigned operand, const char* file, int line);
// A `tl.device_print` element: appended to the launch's records (dropped when it has none).
void tm_rt_print(unsigned site, unsigned seq, unsigned operand, long index, int pid_x, int pid_y,
                 int pid_z, unsigned long bits);
// A kernel broke a rule of an operation it called (never returns): `what` says which.
[[noreturn]] void tm_rt_fault(const char* what, const char* file, int line);
// A bounds-checked access failed (never returns): buffer `name`, element `index` of `extent`.
[[noreturn]] void tm_rt_out_of_bounds(const char* name, long index, unsigned long extent,
                                      const char* file, int line);
}

#endif
