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

#define TM_SRC_ARGS const char *tm_file = __builtin_FILE(), int tm_line = __builtin_LINE()

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

// ---------------------------------------------------------------- SIMD-group functions
namespace tm_simd {

template <class T> struct element_ok {
    typedef typename tm_scalar_traits<T>::scalar_type S;
    static constexpr bool value =
        is_same_v<S, float> || is_same_v<S, half> || is_same_v<S, bfloat> || is_same_v<S, int> ||
        is_same_v<S, uint> || is_same_v<S, short> || is_same_v<S, ushort> ||
        is_same_v<S, char> || is_same_v<S, signed char> || is_same_v<S, uchar>;
};
template <class T> struct integer_ok {
    typedef typename tm_scalar_traits<T>::scalar_type S;
    static constexpr bool value = element_ok<T>::value && !is_same_v<S, float> &&
                                  !is_same_v<S, half> && !is_same_v<S, bfloat>;
};

#define TM_SIMD_TYPE_CHECK(T)                                                                   \
    static_assert(tm_simd::element_ok<T>::value,                                                \
                  "SIMD-group functions take float, half, bfloat, int, uint, short, ushort, "   \
                  "char or uchar scalars or vectors (no bool, no 64-bit types)")

template <class T> inline T load(const unsigned char* p) {
    T v;
    __builtin_memcpy(static_cast<void*>(&v), p, sizeof(T));
    return v;
}
template <class T> inline void store(unsigned char* p, const T& v) {
    __builtin_memcpy(p, static_cast<const void*>(&v), sizeof(T));
}

struct Sum { template <class T> static T apply(T a, T b) { return T(a + b); } };
struct Product { template <class T> static T apply(T a, T b) { return T(a * b); } };
struct Min { template <class T> static T apply(T a, T b) { return T(metal::min(a, b)); } };
struct Max { template <class T> static T apply(T a, T b) { return T(metal::max(a, b)); } };
struct And { template <class T> static T apply(T a, T b) { return T(a & b); } };
struct Or { template <class T> static T apply(T a, T b) { return T(a | b); } };
struct Xor { template <class T> static T apply(T a, T b) { return T(a ^ b); } };

// Reduction over the active lanes of the SIMD-group (Width 32) or of each quad (Width 4), in lane
// order; every active lane gets the result.
template <class T, class Op, unsigned Width> void reduce(tm_sg* sg) {
    for (unsigned base = 0; base < TM_SIMD_WIDTH; base += Width) {
        bool any = false;
        T acc = load<T>(sg->in[base]);
        for (unsigned l = base; l < base + Width; ++l) {
            if (!(sg->active >> l & 1u)) continue;
            T v = load<T>(sg->in[l]);
            acc = any ? Op::apply(acc, v) : v;
            any = true;
        }
        for (unsigned l = base; l < base + Width; ++l)
            if (sg->active >> l & 1u) store(sg->out[l], acc);
    }
}

// Prefix scan over the active lanes in lane order; the exclusive scan starts from `identity`.
template <class T, class Op, bool Inclusive, int Identity> void scan(tm_sg* sg) {
    T acc = T(Identity);
    for (unsigned l = 0; l < TM_SIMD_WIDTH; ++l) {
        if (!(sg->active >> l & 1u)) continue;
        T v = load<T>(sg->in[l]);
        if (Inclusive) {
            acc = Op::apply(acc, v);
            store(sg->out[l], acc);
        } else {
            store(sg->out[l], acc);
            acc = Op::apply(acc, v);
        }
    }
}

enum Mode {
    SHUFFLE, SHUFFLE_XOR, SHUFFLE_UP, SHUFFLE_DOWN, ROTATE_UP, ROTATE_DOWN, BROADCAST_FIRST,
    QUAD_SHUFFLE, QUAD_SHUFFLE_XOR, QUAD_SHUFFLE_UP, QUAD_SHUFFLE_DOWN
};

// Lane `l` reads the value of lane `source(l)`; reading a lane that does not take part gives an
// undefined value in Metal, here all bits set (NaN for floats) so that the mistake shows.
template <class T, int M> void shuffle(tm_sg* sg) {
    unsigned first = sg->active ? (unsigned)__builtin_ctz(sg->active) : 0;
    for (unsigned l = 0; l < TM_SIMD_WIDTH; ++l) {
        if (!(sg->active >> l & 1u)) continue;
        unsigned a = sg->arg[l];
        unsigned q = l & ~3u, ql = l & 3u;
        long src;
        switch (M) {
            case SHUFFLE: src = a; break;
            case SHUFFLE_XOR: src = l ^ a; break;
            case SHUFFLE_UP: src = a <= l ? (long)(l - a) : (long)l; break;
            case SHUFFLE_DOWN: src = l + a < TM_SIMD_WIDTH ? (long)(l + a) : (long)l; break;
            case ROTATE_UP: src = (l + TM_SIMD_WIDTH - a % TM_SIMD_WIDTH) % TM_SIMD_WIDTH; break;
            case ROTATE_DOWN: src = (l + a) % TM_SIMD_WIDTH; break;
            case BROADCAST_FIRST: src = first; break;
            case QUAD_SHUFFLE: src = a < 4 ? (long)(q + a) : -1; break;
            case QUAD_SHUFFLE_XOR: src = (ql ^ a) < 4 ? (long)(q + (ql ^ a)) : -1; break;
            case QUAD_SHUFFLE_UP: src = a <= ql ? (long)(l - a) : (long)l; break;
            default: src = ql + a < 4 ? (long)(l + a) : (long)l; break;
        }
        if (src >= 0 && src < (long)TM_SIMD_WIDTH && (sg->active >> src & 1u)) {
            __builtin_memcpy(sg->out[l], sg->in[src], sizeof(T));
        } else {
            __builtin_memset(sg->out[l], 0xff, sizeof(T));
        }
    }
}

enum Vote { BALLOT, ALL, ANY, IS_FIRST };

template <int V> void vote(tm_sg* sg) {
    unsigned long mask = 0;
    for (unsigned l = 0; l < TM_SIMD_WIDTH; ++l)
        if ((sg->active >> l & 1u) && sg->arg[l]) mask |= 1ul << l;
    unsigned first = sg->active ? (unsigned)__builtin_ctz(sg->active) : 0;
    for (unsigned l = 0; l < TM_SIMD_WIDTH; ++l) {
        if (!(sg->active >> l & 1u)) continue;
        unsigned long r;
        switch (V) {
            case BALLOT: r = mask; break;
            case ALL: r = mask == sg->active; break;
            case ANY: r = mask != 0; break;
            default: r = l == first; break;
        }
        store(sg->out[l], r);
        store(sg->out[l] + 8, (unsigned long)sg->active);
    }
}

template <class T>
inline T collective(const T& x, unsigned arg, tm_sg_fn fn, const char* what, const char* file,
                    int line) {
    static_assert(sizeof(T) <= TM_SLOT_BYTES, "SIMD-group operand too large");
    tm_self* s = tm_rt_self(what, file, line);
    store(s->sg->in[s->lane], x);
    s->sg->arg[s->lane] = arg;
    tm_rt_simd_wait(fn, 0, what, file, line);
    return load<T>(s->sg->out[s->lane]);
}

inline unsigned long vote_call(bool x, tm_sg_fn fn, const char* what, const char* file, int line,
                               unsigned long* active = nullptr) {
    tm_self* s = tm_rt_self(what, file, line);
    s->sg->arg[s->lane] = x ? 1u : 0u;
    tm_rt_simd_wait(fn, 0, what, file, line);
    if (active) *active = load<unsigned long>(s->sg->out[s->lane] + 8);
    return load<unsigned long>(s->sg->out[s->lane]);
}

}  // namespace tm_simd

#define TM_REDUCTION(NAME, OP, WIDTH, CHECK)                                                    \
    template <class T> inline T NAME(T x, TM_SRC_ARGS) {                                        \
        static_assert(tm_simd::CHECK<T>::value,                                                 \
                      #NAME " takes float, half, bfloat, int, uint, short, ushort, char or "    \
                            "uchar scalars or vectors (bitwise ones integers only; no bool, "   \
                            "no 64-bit types)");                                                \
        return tm_simd::collective(x, 0, &tm_simd::reduce<T, tm_simd::OP, WIDTH>, #NAME,        \
                                   tm_file, tm_line);                                           \
    }
TM_REDUCTION(simd_sum, Sum, 32, element_ok)
TM_REDUCTION(simd_product, Product, 32, element_ok)
TM_REDUCTION(simd_min, Min, 32, element_ok)
TM_REDUCTION(simd_max, Max, 32, element_ok)
TM_REDUCTION(simd_and, And, 32, integer_ok)
TM_REDUCTION(simd_or, Or, 32, integer_ok)
TM_REDUCTION(simd_xor, Xor, 32, integer_ok)
TM_REDUCTION(quad_sum, Sum, 4, element_ok)
TM_REDUCTION(quad_product, Product, 4, element_ok)
TM_REDUCTION(quad_min, Min, 4, element_ok)
TM_REDUCTION(quad_max, Max, 4, element_ok)
TM_REDUCTION(quad_and, And, 4, integer_ok)
TM_REDUCTION(quad_or, Or, 4, integer_ok)
TM_REDUCTION(quad_xor, Xor, 4, integer_ok)
#undef TM_REDUCTION

#define TM_SCAN(NAME, OP, INCLUSIVE, IDENTITY)                                                  \
    template <class T> inline T NAME(T x, TM_SRC_ARGS) {                                        \
        TM_SIMD_TYPE_CHECK(T);                                                                  \
        return tm_simd::collective(x, 0, &tm_simd::scan<T, tm_simd::OP, INCLUSIVE, IDENTITY>,   \
                                   #NAME, tm_file, tm_line);                                    \
    }
TM_SCAN(simd_prefix_exclusive_sum, Sum, false, 0)
TM_SCAN(simd_prefix_inclusive_sum, Sum, true, 0)
TM_SCAN(simd_prefix_exclusive_product, Product, false, 1)
TM_SCAN(simd_prefix_inclusive_product, Product, true, 1)
#undef TM_SCAN

#define TM_SHUFFLE(NAME, MODE)                                                                  \
    template <class T> inline T NAME(T x, ushort arg, TM_SRC_ARGS) {                            \
        TM_SIMD_TYPE_CHECK(T);                                                                  \
        return tm_simd::collective(x, arg, &tm_simd::shuffle<T, tm_simd::MODE>, #NAME, tm_file, \
                                   tm_line);                                                    \
    }
TM_SHUFFLE(simd_shuffle, SHUFFLE)
TM_SHUFFLE(simd_shuffle_xor, SHUFFLE_XOR)
TM_SHUFFLE(simd_shuffle_up, SHUFFLE_UP)
TM_SHUFFLE(simd_shuffle_down, SHUFFLE_DOWN)
TM_SHUFFLE(simd_shuffle_rotate_up, ROTATE_UP)
TM_SHUFFLE(simd_shuffle_rotate_down, ROTATE_DOWN)
TM_SHUFFLE(simd_broadcast, SHUFFLE)
TM_SHUFFLE(quad_shuffle, QUAD_SHUFFLE)
TM_SHUFFLE(quad_shuffle_xor, QUAD_SHUFFLE_XOR)
TM_SHUFFLE(quad_shuffle_up, QUAD_SHUFFLE_UP)
TM_SHUFFLE(quad_shuffle_down, QUAD_SHUFFLE_DOWN)
TM_SHUFFLE(quad_broadcast, QUAD_SHUFFLE)
#undef TM_SHUFFLE

template <class T> inline T simd_broadcast_first(T x, TM_SRC_ARGS) {
    TM_SIMD_TYPE_CHECK(T);
    return tm_simd::collective(x, 0, &tm_simd::shuffle<T, tm_simd::BROADCAST_FIRST>,
                               "simd_broadcast_first", tm_file, tm_line);
}

// The result of simd_ballot: one bit per lane (MSL's simd_vote).
class simd_vote {
public:
    typedef ulong vote_t;
    explicit constexpr simd_vote(vote_t v = 0) : v_(v), active_(0xffffffffu) {}
    constexpr simd_vote(vote_t v, vote_t active) : v_(v), active_(active) {}
    explicit constexpr operator vote_t() const { return v_; }
    // True when every lane that took part voted true.
    constexpr bool all() const { return (v_ & active_) == active_; }
    constexpr bool any() const { return v_ != 0; }

private:
    vote_t v_;
    vote_t active_;
};

inline simd_vote simd_ballot(bool x, TM_SRC_ARGS) {
    unsigned long active = 0;
    unsigned long m =
        tm_simd::vote_call(x, &tm_simd::vote<tm_simd::BALLOT>, "simd_ballot", tm_file, tm_line,
                           &active);
    return simd_vote(m, active);
}
inline bool simd_all(bool x, TM_SRC_ARGS) {
    return tm_simd::vote_call(x, &tm_simd::vote<tm_simd::ALL>, "simd_all", tm_file, tm_line) != 0;
}
inline bool simd_any(bool x, TM_SRC_ARGS) {
    return tm_simd::vote_call(x, &tm_simd::vote<tm_simd::ANY>, "simd_any", tm_file, tm_line) != 0;
}
inline bool simd_is_first(TM_SRC_ARGS) {
    return tm_simd::vote_call(true, &tm_simd::vote<tm_simd::IS_FIRST>, "simd_is_first", tm_file,
                              tm_line) != 0;
}

// ---------------------------------------------------------------- simdgroup_matrix
// Lane l of the SIMD-group holds elements (row, col) and (row, col + 1) of an 8x8 matrix:
// q = l / 4, row = (q & 4) + (l / 2) % 4, col = (q & 2) * 2 + (l % 2) * 2.
inline void tm_matrix_coord(unsigned lane, unsigned& row, unsigned& col) {
    unsigned q = lane >> 2;
    row = (q & 4u) + ((lane >> 1) & 3u);
    col = ((q & 2u) << 1) + ((lane & 1u) << 1);
}

template <class T, int Cols, int Rows> struct simdgroup_matrix {
    static_assert(Cols == 8 && Rows == 8, "Metal has only 8x8 simdgroup matrices");
    static_assert(is_same_v<T, float> || is_same_v<T, half> || is_same_v<T, bfloat>,
                  "simdgroup_matrix elements are float, half or bfloat");
    vec<T, 2> tm_elements;

    simdgroup_matrix() = default;
    // A diagonal matrix with `d` on the diagonal (as Metal defines this constructor).
    explicit simdgroup_matrix(T d, TM_SRC_ARGS) {
        tm_self* s = tm_rt_self("simdgroup_matrix(T)", tm_file, tm_line);
        unsigned r, c;
        tm_matrix_coord(s->lane, r, c);
        tm_elements = vec<T, 2>(r == c ? d : T(0), r == c + 1 ? d : T(0));
    }
    thread vec<T, 2>& thread_elements() { return tm_elements; }
    const thread vec<T, 2>& thread_elements() const { return tm_elements; }
};

typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<bfloat, 8, 8> simdgroup_bfloat8x8;

template <class T, int Cols, int Rows>
inline simdgroup_matrix<T, Cols, Rows> make_filled_simdgroup_matrix(T value) {
    simdgroup_matrix<T, Cols, Rows> m;
    m.tm_elements = vec<T, 2>(value, value);
    return m;
}

namespace tm_simd {

// All 32 lanes must take part: check that, then each lane moves its own two elements.
inline unsigned matrix_sync(const char* what, const char* file, int line) {
    tm_self* s = tm_rt_self(what, file, line);
    tm_rt_simd_wait(nullptr, 1, what, file, line);
    return s->lane;
}

// D = A * B + C over the 32 lanes' elements (deposited as floats: a0 a1 b0 b1 c0 c1).
inline void matrix_mma(tm_sg* sg) {
    float a[8][8], b[8][8], c[8][8];
    for (unsigned l = 0; l < TM_SIMD_WIDTH; ++l) {
        unsigned r, k;
        tm_matrix_coord(l, r, k);
        float v[6];
        __builtin_memcpy(v, sg->in[l], sizeof v);
        a[r][k] = v[0], a[r][k + 1] = v[1];
        b[r][k] = v[2], b[r][k + 1] = v[3];
        c[r][k] = v[4], c[r][k + 1] = v[5];
    }
    for (unsigned l = 0; l < TM_SIMD_WIDTH; ++l) {
        unsigned r, k;
        tm_matrix_coord(l, r, k);
        float out[2];
        for (unsigned j = 0; j < 2; ++j) {
            float acc = c[r][k + j];
            for (unsigned i = 0; i < 8; ++i) acc += a[r][i] * b[i][k + j];
            out[j] = acc;
        }
        __builtin_memcpy(sg->out[l], out, sizeof out);
    }
}

}  // namespace tm_simd

template <class T, class P>
inline void simdgroup_load(thread simdgroup_matrix<T, 8, 8>& d, const P* src,
                           ulong elements_per_row = 8, ulong2 matrix_origin = ulong2(0),
                           bool transpose_matrix = false, TM_SRC_ARGS) {
    static_assert(is_same_v<remove_cv_t<P>, T>, "simdgroup_load: pointer and matrix element types differ");
    unsigned lane = tm_simd::matrix_sync("simdgroup_load", tm_file, tm_line);
    unsigned r, c;
    tm_matrix_coord(lane, r, c);
    ulong ox = matrix_origin.x, oy = matrix_origin.y;
    for (unsigned j = 0; j < 2; ++j) {
        ulong row = transpose_matrix ? oy + c + j : oy + r;
        ulong col = transpose_matrix ? ox + r : ox + c + j;
        d.tm_elements[j] = src[row * elements_per_row + col];
    }
}

template <class T, class P>
inline void simdgroup_store(thread const simdgroup_matrix<T, 8, 8>& a, P* dst,
                            ulong elements_per_row = 8, ulong2 matrix_origin = ulong2(0),
                            bool transpose_matrix = false, TM_SRC_ARGS) {
    static_assert(is_same_v<P, T>, "simdgroup_store: pointer and matrix element types differ");
    unsigned lane = tm_simd::matrix_sync("simdgroup_store", tm_file, tm_line);
    unsigned r, c;
    tm_matrix_coord(lane, r, c);
    ulong ox = matrix_origin.x, oy = matrix_origin.y;
    for (unsigned j = 0; j < 2; ++j) {
        ulong row = transpose_matrix ? oy + c + j : oy + r;
        ulong col = transpose_matrix ? ox + r : ox + c + j;
        dst[row * elements_per_row + col] = a.tm_elements[j];
    }
}

template <class Td, class Ta, class Tb, class Tc>
inline void simdgroup_multiply_accumulate(thread simdgroup_matrix<Td, 8, 8>& d,
                                          thread const simdgroup_matrix<Ta, 8, 8>& a,
                                          thread const simdgroup_matrix<Tb, 8, 8>& b,
                                          thread const simdgroup_matrix<Tc, 8, 8>& c,
                                          TM_SRC_ARGS) {
    const char* what = "simdgroup_multiply_accumulate";
    tm_self* s = tm_rt_self(what, tm_file, tm_line);
    float v[6] = {float(a.tm_elements[0]), float(a.tm_elements[1]), float(b.tm_elements[0]),
                  float(b.tm_elements[1]), float(c.tm_elements[0]), float(c.tm_elements[1])};
    __builtin_memcpy(s->sg->in[s->lane], v, sizeof v);
    tm_rt_simd_wait(&tm_simd::matrix_mma, 1, what, tm_file, tm_line);
    float out[2];
    __builtin_memcpy(out, s->sg->out[s->lane], sizeof out);
    d.tm_elements = vec<Td, 2>(Td(out[0]), Td(out[1]));
}

template <class Td, class Ta, class Tb>
inline void simdgroup_multiply(thread simdgroup_matrix<Td, 8, 8>& d,
                               thread const simdgroup_matrix<Ta, 8, 8>& a,
                               thread const simdgroup_matrix<Tb, 8, 8>& b, TM_SRC_ARGS) {
    simdgroup_matrix<Td, 8, 8> zero = make_filled_simdgroup_matrix<Td, 8, 8>(Td(0));
    simdgroup_multiply_accumulate(d, a, b, zero, tm_file, tm_line);
}

}  // namespace metal

// Barriers are macros so that they record the line even where a kernel calls them qualified
// (`metal::threadgroup_barrier(...)`).
#define threadgroup_barrier(flags) tm_threadgroup_barrier((flags), __FILE__, __LINE__)
#define simdgroup_barrier(flags) tm_simdgroup_barrier((flags), __FILE__, __LINE__)

#endif
