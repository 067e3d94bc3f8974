// What a kernel sees of the emulator runtime: barriers, threadgroup variables, SIMD-group
// functions and simdgroup matrices (namespace metal, as in MSL).
//
// Included into the kernel translation unit after the shim's <metal_stdlib>, so it uses only the
// shim's types and compiler builtins. Every synchronising call records the kernel source position
// (through __builtin_FILE/__builtin_LINE default arguments, or __FILE__/__LINE__ in the barrier
// macros) so that a divergent barrier or a mismatched SIMD-group operation is reported at its
// line.
#ifndef TM_KERNEL_H
#define TM_KERNEL_H

#include "tm_abi.h"

namespace metal {

// ---------------------------------------------------------------- barriers
template <class Flags>
inline void tm_threadgroup_barrier(Flags, const char* file, int line) {
    tm_rt_barrier(0, "threadgroup_barrier", file, line);
}
template <class Flags>
inline void tm_simdgroup_barrier(Flags, const char* file, int line) {
    tm_rt_barrier(1, "simdgroup_barrier", file, line);
}

// ---------------------------------------------------------------- threadgroup memory
// `threadgroup T name[N];` in a kernel body is rewritten to
// `auto& name = metal::tm_tg_var<T[N]>(id, "name", __FILE__, __LINE__);` on the same line.
template <class T>
inline T& tm_tg_var(unsigned id, const char* name, const char* file, int line) {
    return *static_cast<T*>(tm_rt_tg_alloc(id, sizeof(T), alignof(T), name, file, line));
}

// ---------------------------------------------------------------- bounds-checked buffers
// In bounds-checked builds (the default, kernel.py) every device or constant buffer parameter is
// a tm_buf (its pointer, element count and name), and every mention of it in the kernel body is
// rewritten to `tm_at(name, file, line)`: a view that checks each element it reaches against the
// buffer's extent and reports the kernel line (the line the last #line directive named).
// Masked accesses are not checked where the mask is off: `mask ? p[i] : other` never evaluates
// the arm it does not take.
//
// The extent is counted in elements of the view's own type (tm_elements), or, for a buffer seen
// as another element type (`km_as<U>(buffer)`, which the code generator writes for a pointer
// reinterpreted to U; templates/helpers/pointer_view.metal gives Metal's own), in the buffer's
// bytes (tm_bytes): an access is inside when all its bytes are, and one outside reports the first
// element of the array's own type (`unit` bytes) it reaches outside, as the interpreter counts.
// A vector access reports its first element outside the buffer, as one element at a time would
// (and as the interpreter does).
struct tm_elements {
    unsigned long n;

    template <class T>
    void check(long k, unsigned long width, const char* name, const char* file, int line) const {
        if (__builtin_expect(k < 0 || (unsigned long)k + width > n, 0))
            tm_rt_out_of_bounds(name, k < 0 || (unsigned long)k >= n ? k : (long)n, n, file, line);
    }
    template <class T>
    bool past_end(long k) const { return k < 0 || (unsigned long)k > n; }
};

struct tm_bytes {
    unsigned long bytes;
    unsigned long unit;

    template <class T>
    void check(long k, unsigned long width, const char* name, const char* file, int line) const {
        long lo = k * (long)sizeof(T);
        if (__builtin_expect(lo < 0 || (unsigned long)lo + width * sizeof(T) > bytes, 0)) {
            long first = lo < 0 || (unsigned long)lo >= bytes ? lo : (long)bytes;
            long u = (long)unit;
            long index = first >= 0 ? first / u : -((-first + u - 1) / u);  // floor, as Python's //
            tm_rt_out_of_bounds(name, index, bytes / unit, file, line);
        }
    }
    template <class T>
    bool past_end(long k) const { return k < 0 || (unsigned long)k * sizeof(T) > bytes; }
};

template <class T, class E = tm_elements>
struct tm_view {
    T* p;
    E extent;
    long off;
    const char* name;
    const char* file;
    int line;

    void check(long k, unsigned long width) const { extent.template check<T>(k, width, name, file, line); }
    template <class I>
    T& operator[](I i) const {
        long k = off + (long)i;
        check(k, 1);
        return p[k];
    }
    T& operator*() const { return (*this)[0]; }
    template <class I>
    tm_view operator+(I i) const { return tm_view{p, extent, off + (long)i, name, file, line}; }
    template <class I>
    tm_view operator-(I i) const { return tm_view{p, extent, off - (long)i, name, file, line}; }
    // A cast to a pointer: to a wider type it is a vector access, whose every element must lie
    // in the buffer; to the same type, any position up to one past the end.
    template <class U>
    operator U*() const {
        if (sizeof(U) != sizeof(T)) {
            check(off, (unsigned long)((sizeof(U) + sizeof(T) - 1) / sizeof(T)));
        } else if (__builtin_expect(extent.template past_end<T>(off), 0)) {
            check(off, 1);
        }
        return (U*)(p + off);
    }
};

template <class T>
struct tm_buf {
    T* p;
    unsigned long n;
    const char* name;
};

template <class T>
inline tm_view<T> tm_at(tm_buf<T>& b, const char* file, int line) {
    return tm_view<T>{b.p, tm_elements{b.n}, 0, b.name, file, line};
}

// `km_as<U>` of a checked buffer: a view of its bytes as U (const where the buffer is).
template <class U, class T>
struct tm_like { using type = U; };
template <class U, class T>
struct tm_like<U, const T> { using type = const U; };

template <class U, class T>
inline tm_view<typename tm_like<U, T>::type, tm_bytes> km_as(tm_view<T> v) {
    using V = typename tm_like<U, T>::type;
    return tm_view<V, tm_bytes>{(V*)v.p, tm_bytes{v.extent.n * sizeof(T), sizeof(T)},
                                v.off * (long)sizeof(T) / (long)sizeof(U), v.name, v.file, v.line};
}
// Anything else that shares a buffer's name (a local shadowing it) passes through unchanged.
template <class X>
inline X& tm_at(X& x, const char*, int) {
    return x;
}

// ---------------------------------------------------------------- device printing
// The code generator puts `tl.device_print` inside `#ifdef TM_DEVICE_PRINT` (Metal has no console
// and never sees it): each element goes to the launch's print records as raw bytes.
#define TM_DEVICE_PRINT 1
template <class T>
inline void tm_device_print(unsigned site, unsigned seq, unsigned operand, long index, int pid_x,
                            int pid_y, int pid_z, T value) {
    static_assert(sizeof(T) <= 8, "a printed value fits 8 bytes");
    unsigned long bits = 0;
    __builtin_memcpy(&bits, &value, sizeof(T));
    tm_rt_print(site, seq, operand, index, pid_x, pid_y, pid_z, bits);
}
// The byte address of element `i` of a buffer (a pointer printed by tl.device_print).
template <class T, class I>
inline unsigned long tm_print_address(T* p, I i) {
    return (unsigned long)(p + (long)i);
}
template <class T, class E, class I>
inline unsigned long tm_print_address(tm_view<T, E> v, I i) {
    return (unsigned long)(v.p + v.off + (long)i);
}

}  // namespace metal

#include "tm_simd.h"
#include "tm_matrix.h"

// Barriers are macros so that they record the line even where a kernel calls them qualified
// (`metal::threadgroup_barrier(...)`).
#define threadgroup_barrier(flags) tm_threadgroup_barrier((flags), __FILE__, __LINE__)
#define simdgroup_barrier(flags) tm_simdgroup_barrier((flags), __FILE__, __LINE__)

#endif
