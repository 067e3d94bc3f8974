// MetalPerformancePrimitives.h - the emulator's strict model of `mpp::tensor_ops::matmul2d`, the
// part of Apple's MetalPerformancePrimitives (macOS 26.2 SDK, MPPTensorOpsMatMul2d.h) that the
// code generator's tensor-op dot uses. Declared as the header declares it:
//
// * `matmul2d_descriptor(m, n, k = dynamic, transpose_left = false, transpose_right = false,
//   relaxed_precision = false, mode = mode::multiply)`, a literal type used as a template
//   argument (which is why kernels that include this header compile as C++20: kernel.py);
// * `matmul2d<Descriptor, Scope>` with `descriptor`, `scope`, `run(left, right, destination)` and
//   `get_destination_cooperative_tensor<LeftOperand, RightOperand, Element>()`.
//
// Modelled strictly: left and right are tensors (tensor_inline or tensor_offset, metal_tensor),
// the destination a tensor or a destination cooperative tensor of the same op; the element
// types are one of the (A, B, C) rows of Apple's table (any other combination is a compile
// error); the scope is `execution_simdgroups<N>` and must be the whole threadgroup (N SIMD
// groups dispatched, else a launch fault: Apple calls the mismatch undefined); every thread of
// the threadgroup must reach `run` at the same line (a barrier: the op may synchronise
// internally), but nothing holds a thread at its end: Apple documents no synchronisation
// there, so code that writes the operands' threadgroup memory after `run` without a barrier
// races with SIMD groups still in the op. Not modelled, hence compile errors: cooperative-tensor inputs, reductions,
// `execution_thread`, tensor handles, int4 formats, iterators.
//
// Semantics: C[m, n] (+)= sum over k < K of A[m, k] * B[k, n] for the m x n tile at the
// operands' origins. A's logical (m, k) is tensor element (k, m) (dimension 0 is contiguous),
// or (m, k) with transpose_left; B's (k, n) is (n, k), or (k, n) with transpose_right. K is the
// descriptor's k, or (dynamic k) the left operand's extent along k past its origin. Elements
// outside a tensor's extents read as zero and are not written. Float products are summed in
// float in k order and rounded once to the destination type (relaxed_precision changes
// nothing here); int8 products are summed in 32-bit two's complement.
#pragma once
#include "metal_tensor"

namespace mpp {
namespace tensor_ops {

struct matmul2d_descriptor {
    enum class mode {
        multiply,
        multiply_accumulate,
    };

    int m, n, k;
    bool transpose_left, transpose_right;
    bool relaxed_precision;
    mode matmul_mode;

    constexpr matmul2d_descriptor(int __m, int __n, int __k = static_cast<int>(metal::dynamic_extent),
                                  bool __transpose_left = false, bool __transpose_right = false,
                                  bool __relaxed_precision = false, mode __matmul_mode = mode::multiply)
        : m(__m), n(__n), k(__k), transpose_left(__transpose_left), transpose_right(__transpose_right),
          relaxed_precision(__relaxed_precision), matmul_mode(__matmul_mode) {}
};

namespace tm_detail {

using metal::is_same_v;
using metal::remove_cv_t;

// Apple's header maps element types with is_same against int8_t, int32_t, half, bfloat, float
// (MPPTensorOpsTypes.h); plain `char` is a distinct type in the shim and is refused.
template <class T> constexpr bool is_i8 = is_same_v<T, int8_t>;
template <class T> constexpr bool is_h = is_same_v<T, half>;
template <class T> constexpr bool is_bf = is_same_v<T, bfloat>;
template <class T> constexpr bool is_f = is_same_v<T, float>;
template <class T> constexpr bool is_i32 = is_same_v<T, int32_t>;

// The (A, B, C) rows of the table in Apple's MPPTensorOpsMatMul2d.h (macOS 26.2 SDK).
template <class A0, class B0, class C0>
constexpr bool supported() {
    using A = remove_cv_t<A0>;
    using B = remove_cv_t<B0>;
    using C = remove_cv_t<C0>;
    if (is_i8<A> && is_i8<B>) return is_i32<C>;
    if (is_f<A> || is_f<B>) return is_f<C>;  // float with half, bfloat, int8 or float
    if (is_h<A> && is_h<B>) return is_h<C> || is_f<C>;
    if ((is_h<A> && is_i8<B>) || (is_i8<A> && is_h<B>)) return is_h<C> || is_f<C>;
    if ((is_bf<A> && is_bf<B>) || (is_bf<A> && is_i8<B>) || (is_i8<A> && is_bf<B>))
        return is_bf<C> || is_f<C>;
    if ((is_bf<A> && is_h<B>) || (is_h<A> && is_bf<B>)) return is_bf<C> || is_h<C> || is_f<C>;
    return false;
}

template <class T> struct scope_threads;
template <int N> struct scope_threads<metal::execution_simdgroups<N>> {
    static constexpr int value = N * 32;
};

// The destination's distribution over the scope's threads: element e of the row-major rows x
// cols tile is slot e / threads of thread e % threads. Implementation-defined in Metal; code
// must reach elements through load/store or is_valid_element and get_multidimensional_index,
// never assume this.
template <int Rows, int Cols, int Threads>
struct destination_layout {
    static constexpr int rows = Rows, cols = Cols, threads = Threads;
    static constexpr int capacity = (Rows * Cols + Threads - 1) / Threads;
    static int element(int thread_in_scope, int i) {
        int e = i * Threads + thread_in_scope;
        return e < Rows * Cols ? e : -1;
    }
};

template <class T> struct is_destination : metal::false_type {};
template <class E, class X, int R, int C, int T>
struct is_destination<metal::cooperative_tensor<E, X, destination_layout<R, C, T>>> : metal::true_type {};

// The calling thread's index in the scope, after checking that the threadgroup is the scope.
template <class Scope>
inline unsigned scope_thread(const char* what, const char* file, int line) {
    ::tm_self* s = ::tm_rt_self(what, file, line);
    if (s->nthreads != unsigned(scope_threads<Scope>::value))
        ::tm_rt_fault("the threadgroup is not the tensor op's execution scope (execution_simdgroups<N> "
                      "runs on exactly N SIMD groups; Apple leaves any other count undefined)",
                      file, line);
    return s->index;
}

template <class T> inline float as_float(T v) { return float(v); }

}  // namespace tm_detail

template <matmul2d_descriptor Descriptor, typename Scope, class... Args>
class matmul2d {
    static_assert(metal::tm_is_simdgroups_scope<Scope>::value,
                  "the emulator models matmul2d on execution_simdgroups<N> scopes only");
    static_assert(sizeof...(Args) == 0, "matmul2d: extra template arguments are not modelled");
    static_assert(Descriptor.m > 0 && Descriptor.n > 0, "matmul2d_descriptor: m and n must be positive");
    static_assert(Descriptor.k > 0 || Descriptor.k == static_cast<int>(metal::dynamic_extent),
                  "matmul2d_descriptor: k must be positive or dynamic_extent");

public:
    static constexpr matmul2d_descriptor descriptor = Descriptor;
    using scope = Scope;

    matmul2d() = default;

    template <typename LeftOperandType, typename RightOperandType, typename ElementType, typename CoordType = int>
    using cooperative_tensor_destination_t = metal::cooperative_tensor<
        ElementType, metal::extents<CoordType, size_t(Descriptor.n), size_t(Descriptor.m)>,
        tm_detail::destination_layout<Descriptor.m, Descriptor.n, tm_detail::scope_threads<Scope>::value>>;

    template <typename LeftOperandType, typename RightOperandType, typename ElementType, typename CoordType = int>
    cooperative_tensor_destination_t<LeftOperandType, RightOperandType, ElementType, CoordType>
    get_destination_cooperative_tensor(const char* tm_file = __builtin_FILE(), int tm_line = __builtin_LINE()) const {
        static_assert(metal::tm_is_tensor<LeftOperandType>::value && metal::tm_is_tensor<RightOperandType>::value,
                      "get_destination_cooperative_tensor: the emulator models tensor operands only");
        static_assert(metal::is_integral_v<CoordType>, "get_destination_cooperative_tensor: CoordType must be integral");
        static_assert(tm_detail::supported<typename LeftOperandType::element_type,
                                           typename RightOperandType::element_type, ElementType>(),
                      "matmul2d: this (left, right, destination) element type combination is not in Apple's table");
        unsigned t = tm_detail::scope_thread<Scope>("get_destination_cooperative_tensor", tm_file, tm_line);
        return cooperative_tensor_destination_t<LeftOperandType, RightOperandType, ElementType, CoordType>(t);
    }

    template <typename LeftOperandType, typename RightOperandType, typename DestinationOperandType>
    void run(thread LeftOperandType& left, thread RightOperandType& right, thread DestinationOperandType& destination,
             const char* tm_file = __builtin_FILE(), int tm_line = __builtin_LINE()) const {
        static_assert(metal::tm_is_tensor<LeftOperandType>::value && metal::tm_is_tensor<RightOperandType>::value,
                      "matmul2d::run: the emulator models tensor left and right operands only");
        using L = typename LeftOperandType::element_type;
        using R = typename RightOperandType::element_type;
        unsigned t = tm_detail::scope_thread<Scope>("matmul2d::run", tm_file, tm_line);
        // every thread of the scope takes part, at one call site
        ::tm_rt_barrier(0, "matmul2d::run", tm_file, tm_line);
        if constexpr (tm_detail::is_destination<DestinationOperandType>::value) {
            using C = typename DestinationOperandType::element_type;
            static_assert(tm_detail::supported<L, R, C>(),
                          "matmul2d: this (left, right, destination) element type combination is not in Apple's table");
            using Layout = typename DestinationOperandType::layout;
            static_assert(Layout::rows == Descriptor.m && Layout::cols == Descriptor.n &&
                              Layout::threads == tm_detail::scope_threads<Scope>::value,
                          "matmul2d::run: the cooperative destination belongs to another op");
            for (int i = 0; i < Layout::capacity; ++i) {
                int e = destination.tm_index(i);
                if (e >= 0) destination[i] = element(left, right, e / Descriptor.n, e % Descriptor.n, destination[i]);
            }
        } else {
            static_assert(metal::tm_is_tensor<DestinationOperandType>::value,
                          "matmul2d::run: the destination is a tensor or a destination cooperative tensor");
            using C = metal::remove_cv_t<typename DestinationOperandType::element_type>;
            static_assert(tm_detail::supported<L, R, C>(),
                          "matmul2d: this (left, right, destination) element type combination is not in Apple's table");
            constexpr int threads = tm_detail::scope_threads<Scope>::value;
            for (int e = int(t); e < Descriptor.m * Descriptor.n; e += threads) {
                auto* p = destination.tm_at(e % Descriptor.n, e / Descriptor.n);
                if (p) *p = element(left, right, e / Descriptor.n, e % Descriptor.n, *p);
            }
        }
        // no rendezvous on the way out: Apple documents none, so a thread leaves once its own
        // elements are done while others may still read the operands (writing their bytes
        // before a barrier is a race, and reads here see it)
    }

private:
    template <class Left>
    static int depth(const thread Left& left) {
        if constexpr (Descriptor.k != static_cast<int>(metal::dynamic_extent)) {
            return Descriptor.k;
        } else {
            // K from the left operand: its extent along k past its origin
            int kd = Descriptor.transpose_left ? 1 : 0;
            int n = 0;
            while (left.tm_at(kd == 0 ? n : 0, kd == 0 ? 0 : n)) ++n;
            return n;
        }
    }

    template <class T>
    static T read(const thread T* p) { return p ? *p : T(0); }

    // One destination element: the old value (multiply_accumulate) plus the k products.
    template <class Left, class Right, class C>
    static C element(const thread Left& left, const thread Right& right, int row, int col, C old) {
        using L = metal::remove_cv_t<typename Left::element_type>;
        using R = metal::remove_cv_t<typename Right::element_type>;
        int kk = depth(left);
        bool acc = Descriptor.matmul_mode == matmul2d_descriptor::mode::multiply_accumulate;
        if constexpr (tm_detail::is_i32<metal::remove_cv_t<C>>) {
            // 32-bit two's complement sums (unsigned arithmetic: signed overflow is undefined)
            unsigned s = acc ? unsigned(old) : 0u;
            for (int k = 0; k < kk; ++k) {
                L a = read(Descriptor.transpose_left ? left.tm_at(row, k) : left.tm_at(k, row));
                R b = read(Descriptor.transpose_right ? right.tm_at(k, col) : right.tm_at(col, k));
                s += unsigned(int(a) * int(b));
            }
            return C(int(s));
        } else {
            float s = acc ? float(old) : 0.0f;
            for (int k = 0; k < kk; ++k) {
                L a = read(Descriptor.transpose_left ? left.tm_at(row, k) : left.tm_at(k, row));
                R b = read(Descriptor.transpose_right ? right.tm_at(k, col) : right.tm_at(col, k));
                s += tm_detail::as_float(a) * tm_detail::as_float(b);
            }
            return C(s);
        }
    }
};

}  // namespace tensor_ops
}  // namespace mpp
