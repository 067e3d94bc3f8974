// simdgroup_matrix: MSL's 8x8 SIMD-group matrices with Metal's lane-to-element layout.
//
// Part of the runtime's kernel header (included by tm_kernel.h after tm_simd.h). Loads and
// stores check that all 32 lanes take part, then each lane moves its own two elements; a
// multiply gathers the 32 lanes' elements, computes in float and hands each lane its result.
#ifndef TM_MATRIX_H
#define TM_MATRIX_H

#include "tm_simd.h"

namespace metal {

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

// The element type behind a pointer or a bounds-checked buffer view (tm_kernel.h): loads and
// stores take either, so that a checked kernel passes its buffers as MSL passes pointers.
template <class S> struct tm_pointee;
template <class P> struct tm_pointee<P*> { using type = remove_cv_t<P>; };
template <class P, class E> struct tm_pointee<tm_view<P, E>> { using type = remove_cv_t<P>; };

template <class T, class S>
inline void simdgroup_load(thread simdgroup_matrix<T, 8, 8>& d, S src,
                           ulong elements_per_row = 8, ulong2 matrix_origin = ulong2(0),
                           bool transpose_matrix = false, TM_SRC_ARGS) {
    static_assert(is_same_v<typename tm_pointee<S>::type, T>, "simdgroup_load: pointer and matrix element types differ");
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

template <class T, class S>
inline void simdgroup_store(thread const simdgroup_matrix<T, 8, 8>& a, S dst,
                            ulong elements_per_row = 8, ulong2 matrix_origin = ulong2(0),
                            bool transpose_matrix = false, TM_SRC_ARGS) {
    static_assert(is_same_v<typename tm_pointee<S>::type, T>, "simdgroup_store: pointer and matrix element types differ");
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

#endif
