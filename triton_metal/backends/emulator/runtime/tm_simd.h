// The SIMD-group functions (simd_* and quad_*) of MSL, over the active lanes of a SIMD-group.
//
// Part of the runtime's kernel header (included by tm_kernel.h, after the shim). Each function
// deposits its operand in the SIMD-group's slot and waits; the last active lane to arrive runs
// the operation for all of them (runtime/scheduler.cpp).
#ifndef TM_SIMD_H
#define TM_SIMD_H

#include "tm_abi.h"

// The kernel source position of the call, as defaulted trailing arguments.
#define TM_SRC_ARGS const char *tm_file = __builtin_FILE(), int tm_line = __builtin_LINE()

namespace metal {

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

}  // namespace metal

#endif
