// MetalPerformancePrimitives.h - the emulator's strict model of `mpp::tensor_ops::matmul2d`, the
// part of Apple's MetalPerformancePrimitives (macOS 26.2 SDK, MPPTensorOpsMatMul2d.h and
// __impl/MPPTensorOpsMatMul2dImpl.h) that the code generator's tensor-op dots use. Declared as
// the header declares it:
//
// * `matmul2d_descriptor(m, n, k = dynamic, transpose_left = false, transpose_right = false,
//   relaxed_precision = false, mode = mode::multiply)`, a literal type used as a template
//   argument (which is why kernels that include this header compile as C++20: kernel.py);
// * `matmul2d<Descriptor, Scope>` with `descriptor`, `scope`, `run(left, right, destination)`,
//   `get_destination_cooperative_tensor<LeftOperand, RightOperand, Element>()`,
//   `get_left_input_cooperative_tensor<LeftElement, RightElement, Element>()` and
//   `get_right_input_cooperative_tensor<...>()` (the 26.2 additions), and the aliases
//   `cooperative_tensor_{left_input,right_input,destination}_t`.
//
// Scopes: `execution_simdgroups<N>` with N > 1 is the whole threadgroup (N SIMD groups
// dispatched, else a launch fault: Apple calls the mismatch undefined); `execution_simdgroup`
// is the calling SIMD group, so each SIMD group of a larger threadgroup runs its own op (as
// shipping kernels slice their tiles by SIMD group). Every thread of the scope must reach `run`
// at the same line (a barrier of the scope: the op may synchronise internally), but nothing
// holds a thread at its end: Apple documents no synchronisation there, so code that writes the
// operands' threadgroup memory after `run` without a barrier races with SIMD groups still in the
// op.
//
// Operands, modelled strictly: left and right are tensors (tensor_inline or tensor_offset,
// metal_tensor) or input cooperative tensors of the same op, the destination a tensor or a
// destination cooperative tensor; the element types are one of the (A, B, C) rows of Apple's
// table (any other combination is a compile error), and a cooperative tensor's (left, right,
// destination) element types must be the run's (Apple's "Input types must match cooperative
// tensor types"). Input cooperative tensors take what Apple's implementation header requires:
// a scope of one SIMD group, a static k, no transposed operand, `int` coordinates, and, with
// both inputs cooperative, m, n and k each 16 or 32 with at least one of them 32. Not
// modelled, hence compile errors: input cooperative tensors converted from a destination,
// reductions, `execution_thread`, tensor handles, int4 formats, iterators.
//
// Semantics: C[m, n] (+)= sum over k < K of A[m, k] * B[k, n] for the m x n tile at the
// operands' origins. A's logical (m, k) is tensor element (k, m) (dimension 0 is contiguous),
// or (m, k) with transpose_left; B's (k, n) is (n, k), or (k, n) with transpose_right; an input
// cooperative tensor's element at coordinate (column, row) is A's (row, column) (k, m order as
// for a left tensor) or B's (row, column) (n, k order as for a right tensor). K is the
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

template <class T> struct scope_simdgroups;
template <int N> struct scope_simdgroups<metal::execution_simdgroups<N>> {
    static constexpr int value = N;
};
template <class T> constexpr int scope_threads = scope_simdgroups<T>::value * 32;
// One SIMD group's scope is the calling SIMD group, whatever the threadgroup holds.
template <class T> constexpr bool simdgroup_scope = scope_simdgroups<T>::value == 1;

// The destination's distribution over the scope's threads: element e of the row-major rows x
// cols tile is slot e / threads of thread e % threads. Implementation-defined in Metal; code
// must reach elements through load/store or is_valid_element and get_multidimensional_index,
// never assume this. L and R are the operand element types it was made for.
template <int Rows, int Cols, int Threads, class L, class R>
struct destination_layout {
    static constexpr int rows = Rows, cols = Cols, threads = Threads;
    static constexpr int capacity = (Rows * Cols + Threads - 1) / Threads;
    static int element(int thread_in_scope, int i) {
        int e = i * Threads + thread_in_scope;
        return e < Rows * Cols ? e : -1;
    }
};

// An input cooperative tensor's distribution, another choice than the destination's so that
// code assuming one for the other shows it: thread t holds the run of elements t * capacity ..
// of the row-major rows x cols tile (left: m x k; right: k x n). Operand 0 is left, 1 right;
// L, R and C the element types of the op it was made for.
template <int Operand, int Rows, int Cols, int Threads, class L, class R, class C>
struct input_layout {
    static constexpr int operand = Operand, rows = Rows, cols = Cols, threads = Threads;
    static constexpr int capacity = (Rows * Cols + Threads - 1) / Threads;
    static int element(int thread_in_scope, int i) {
        int e = thread_in_scope * capacity + i;
        return e < Rows * Cols ? e : -1;
    }
};

template <class T> struct is_destination : metal::false_type {};
template <class E, class X, int Rw, int Cl, int T, class L, class R>
struct is_destination<metal::cooperative_tensor<E, X, destination_layout<Rw, Cl, T, L, R>>> : metal::true_type {};

template <class T> struct is_input : metal::false_type {};
template <class E, class X, int O, int Rw, int Cl, int T, class L, class R, class C>
struct is_input<metal::cooperative_tensor<E, X, input_layout<O, Rw, Cl, T, L, R, C>>> : metal::true_type {};

// What an operand holds: the element type of a tensor or of an input cooperative tensor.
template <class T> struct operand_element {
    using type = remove_cv_t<typename T::element_type>;
};

// The calling thread's index in the scope, after checking that the scope is there: the whole
// threadgroup for N > 1 SIMD groups, the calling (whole) SIMD group for one.
template <class Scope>
inline unsigned scope_thread(const char* what, const char* file, int line) {
    ::tm_self* s = ::tm_rt_self(what, file, line);
    if constexpr (simdgroup_scope<Scope>) {
        if (s->sg->lanes != 32u)
            ::tm_rt_fault("execution_simdgroup: the calling SIMD group is not whole (32 threads)", file, line);
        return s->lane;
    } else {
        if (s->nthreads != unsigned(scope_threads<Scope>))
            ::tm_rt_fault("the threadgroup is not the tensor op's execution scope (execution_simdgroups<N> "
                          "runs on exactly N SIMD groups; Apple leaves any other count undefined)",
                          file, line);
        return s->index;
    }
}

// Every thread of the scope waits here: a SIMD-group barrier for one SIMD group, else a
// threadgroup barrier.
template <class Scope>
inline void scope_rendezvous(const char* what, const char* file, int line) {
    ::tm_rt_barrier(simdgroup_scope<Scope> ? 1 : 0, what, file, line);
}

// Where a SIMD group's input cooperative tensor `Operand` (0 left, 1 right) is gathered for the
// op running in it: the runtime's area of that SIMD group, outside threadgroup memory.
template <class T, int Operand, int Count>
inline T* exchange(const char* file, int line) {
    static_assert(Count * sizeof(T) <= TM_OP_EXCHANGE_BYTES,
                  "the emulator models input cooperative tensors of at most 16 KiB");
    return static_cast<T*>(::tm_rt_op_exchange(Operand, file, line));
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
    static constexpr int threads = tm_detail::scope_threads<Scope>;
    static constexpr bool static_k = Descriptor.k != static_cast<int>(metal::dynamic_extent);

    // Apple's requirements on input cooperative tensors (MPPTensorOpsMatMul2dImpl.h).
    template <class L, class R, class C, class CoordType>
    static constexpr bool inputs_ok() {
        static_assert(tm_detail::simdgroup_scope<Scope>, "Input cooperative tensors require a single SIMD group");
        static_assert(static_k, "Inner dimension cannot be dynamic with input cooperative tensors");
        static_assert(!Descriptor.transpose_left && !Descriptor.transpose_right,
                      "the emulator models input cooperative tensors of operands that are not transposed only");
        static_assert(metal::is_same_v<CoordType, int>, "input cooperative tensors take int coordinates");
        static_assert(tm_detail::supported<L, R, C>(),
                      "matmul2d: this (left, right, destination) element type combination is not in Apple's table");
        return true;
    }

public:
    static constexpr matmul2d_descriptor descriptor = Descriptor;
    using scope = Scope;

    matmul2d() = default;

    template <typename LeftElementType, typename RightElementType, typename ElementType, typename CoordType = int>
    using cooperative_tensor_left_input_t = metal::cooperative_tensor<
        LeftElementType, metal::dextents<CoordType, 2>,
        tm_detail::input_layout<0, Descriptor.m, Descriptor.k, threads, LeftElementType, RightElementType, ElementType>>;

    template <typename LeftElementType, typename RightElementType, typename ElementType, typename CoordType = int>
    using cooperative_tensor_right_input_t = metal::cooperative_tensor<
        RightElementType, metal::dextents<CoordType, 2>,
        tm_detail::input_layout<1, Descriptor.k, Descriptor.n, threads, LeftElementType, RightElementType, ElementType>>;

    template <typename LeftOperandType, typename RightOperandType, typename ElementType, typename CoordType = int>
    using cooperative_tensor_destination_t = metal::cooperative_tensor<
        ElementType, metal::extents<CoordType, size_t(Descriptor.n), size_t(Descriptor.m)>,
        tm_detail::destination_layout<Descriptor.m, Descriptor.n, threads,
                                      typename tm_detail::operand_element<LeftOperandType>::type,
                                      typename tm_detail::operand_element<RightOperandType>::type>>;

    template <typename LeftElementType, typename RightElementType, typename ElementType, typename CoordType = int>
    cooperative_tensor_left_input_t<LeftElementType, RightElementType, ElementType, CoordType>
    get_left_input_cooperative_tensor(const char* tm_file = __builtin_FILE(), int tm_line = __builtin_LINE()) const {
        return input<cooperative_tensor_left_input_t<LeftElementType, RightElementType, ElementType, CoordType>,
                     LeftElementType, RightElementType, ElementType, CoordType>(
            "get_left_input_cooperative_tensor", tm_file, tm_line);
    }

    template <typename LeftElementType, typename RightElementType, typename ElementType, typename CoordType = int>
    cooperative_tensor_right_input_t<LeftElementType, RightElementType, ElementType, CoordType>
    get_right_input_cooperative_tensor(const char* tm_file = __builtin_FILE(), int tm_line = __builtin_LINE()) const {
        return input<cooperative_tensor_right_input_t<LeftElementType, RightElementType, ElementType, CoordType>,
                     LeftElementType, RightElementType, ElementType, CoordType>(
            "get_right_input_cooperative_tensor", tm_file, tm_line);
    }

    template <typename LeftOperandType, typename RightOperandType, typename ElementType, typename CoordType = int>
    cooperative_tensor_destination_t<LeftOperandType, RightOperandType, ElementType, CoordType>
    get_destination_cooperative_tensor(const char* tm_file = __builtin_FILE(), int tm_line = __builtin_LINE()) const {
        static_assert(operand<LeftOperandType, 0>() && operand<RightOperandType, 1>(),
                      "get_destination_cooperative_tensor: the operands are tensors or this op's input cooperative "
                      "tensors");
        static_assert(metal::is_integral_v<CoordType>, "get_destination_cooperative_tensor: CoordType must be integral");
        static_assert(tm_detail::supported<typename tm_detail::operand_element<LeftOperandType>::type,
                                           typename tm_detail::operand_element<RightOperandType>::type, ElementType>(),
                      "matmul2d: this (left, right, destination) element type combination is not in Apple's table");
        unsigned t = tm_detail::scope_thread<Scope>("get_destination_cooperative_tensor", tm_file, tm_line);
        return cooperative_tensor_destination_t<LeftOperandType, RightOperandType, ElementType, CoordType>(t);
    }

    template <typename LeftOperandType, typename RightOperandType, typename DestinationOperandType>
    void run(thread LeftOperandType& left, thread RightOperandType& right, thread DestinationOperandType& destination,
             const char* tm_file = __builtin_FILE(), int tm_line = __builtin_LINE()) const {
        static_assert(operand<LeftOperandType, 0>() && operand<RightOperandType, 1>(),
                      "matmul2d::run: left and right are tensors or this op's input cooperative tensors");
        using L = typename tm_detail::operand_element<LeftOperandType>::type;
        using R = typename tm_detail::operand_element<RightOperandType>::type;
        constexpr bool left_coop = tm_detail::is_input<LeftOperandType>::value;
        constexpr bool right_coop = tm_detail::is_input<RightOperandType>::value;
        unsigned t = tm_detail::scope_thread<Scope>("matmul2d::run", tm_file, tm_line);
        // every thread of the scope takes part, at one call site
        tm_detail::scope_rendezvous<Scope>("matmul2d::run", tm_file, tm_line);
        const L* xa = nullptr;
        const R* xb = nullptr;
        if constexpr (left_coop || right_coop) {
            static_assert(!(left_coop && right_coop) ||
                              ((Descriptor.m == 16 || Descriptor.m == 32) && (Descriptor.n == 16 || Descriptor.n == 32) &&
                               (Descriptor.k == 16 || Descriptor.k == 32) &&
                               (Descriptor.m == 32 || Descriptor.n == 32 || Descriptor.k == 32)),
                          "matmul2d::run: with both inputs cooperative, m, n and k are each 16 or 32, one of them 32");
            // the SIMD group's input elements, gathered once every thread has arrived (so none
            // still reads the previous run's), then read after a second rendezvous
            xa = gather<LeftOperandType, C_of<DestinationOperandType>, Descriptor.m * Descriptor.k>(left, tm_file, tm_line);
            xb = gather<RightOperandType, C_of<DestinationOperandType>, Descriptor.k * Descriptor.n>(right, tm_file, tm_line);
            tm_detail::scope_rendezvous<Scope>("matmul2d::run", tm_file, tm_line);
        }
        if constexpr (tm_detail::is_destination<DestinationOperandType>::value) {
            using C = typename DestinationOperandType::element_type;
            static_assert(tm_detail::supported<L, R, C>(),
                          "matmul2d: this (left, right, destination) element type combination is not in Apple's table");
            using Layout = typename DestinationOperandType::layout;
            static_assert(metal::is_same_v<DestinationOperandType,
                                           cooperative_tensor_destination_t<LeftOperandType, RightOperandType, C,
                                                                            typename DestinationOperandType::extents_type::index_type>>,
                          "matmul2d::run: the cooperative destination belongs to another op or other operand types");
            for (int i = 0; i < Layout::capacity; ++i) {
                int e = destination.tm_index(i);
                if (e >= 0)
                    destination[i] = element(left, right, xa, xb, e / Descriptor.n, e % Descriptor.n, destination[i]);
            }
        } else {
            static_assert(metal::tm_is_tensor<DestinationOperandType>::value,
                          "matmul2d::run: the destination is a tensor or a destination cooperative tensor");
            using C = metal::remove_cv_t<typename DestinationOperandType::element_type>;
            static_assert(tm_detail::supported<L, R, C>(),
                          "matmul2d: this (left, right, destination) element type combination is not in Apple's table");
            for (int e = int(t); e < Descriptor.m * Descriptor.n; e += threads) {
                auto* p = destination.tm_at(e % Descriptor.n, e / Descriptor.n);
                if (p) *p = element(left, right, xa, xb, e / Descriptor.n, e % Descriptor.n, *p);
            }
        }
        // no rendezvous on the way out: Apple documents none, so a thread leaves once its own
        // elements are done while others may still read the operands (writing their bytes
        // before a barrier is a race, and reads here see it)
    }

private:
    template <class D> using C_of = metal::remove_cv_t<typename D::element_type>;

    // A fresh input cooperative tensor T for the calling thread, after Apple's requirements.
    template <class T, class L, class R, class C, class CoordType>
    static T input(const char* what, const char* file, int line) {
        static_assert(inputs_ok<L, R, C, CoordType>());
        return T(tm_detail::scope_thread<Scope>(what, file, line));
    }

    // Whether T can be operand `Slot` (0 left, 1 right): a tensor, or an input cooperative
    // tensor of this op's shape for that slot.
    template <class T, int Slot>
    static constexpr bool operand() {
        if constexpr (metal::tm_is_tensor<T>::value) {
            return true;
        } else if constexpr (tm_detail::is_input<T>::value) {
            using Layout = typename T::layout;
            constexpr int rows = Slot == 0 ? Descriptor.m : Descriptor.k;
            constexpr int cols = Slot == 0 ? Descriptor.k : Descriptor.n;
            static_assert(Layout::operand == Slot, "matmul2d: a left input cooperative tensor is not a right operand, "
                                                   "nor the reverse");
            static_assert(Layout::rows == rows && Layout::cols == cols && Layout::threads == threads,
                          "matmul2d: the input cooperative tensor belongs to another op");
            return true;
        } else {
            return false;
        }
    }

    // An input cooperative tensor's elements, copied by each thread of the SIMD group into its
    // area (row-major); null for a tensor operand. C is the run's destination element type.
    template <class T, class C, int Count>
    static const typename tm_detail::operand_element<T>::type* gather(const thread T& v, const char* file, int line) {
        if constexpr (tm_detail::is_input<T>::value) {
            using E = typename tm_detail::operand_element<T>::type;
            using Layout = typename T::layout;
            static_assert(metal::is_same_v<T, metal::cooperative_tensor<E, typename T::extents_type,
                                                                        tm_detail::input_layout<Layout::operand, Layout::rows,
                                                                            Layout::cols, threads,
                                                                            typename left_of<Layout>::type,
                                                                            typename right_of<Layout>::type, C>>>,
                          "Input types must match cooperative tensor types");
            E* area = tm_detail::exchange<E, Layout::operand, Count>(file, line);
            for (int i = 0; i < Layout::capacity; ++i) {
                int e = v.tm_index(i);
                if (e >= 0) area[e] = v[i];
            }
            return area;
        } else {
            return nullptr;
        }
    }
    template <class Layout> struct left_of;
    template <int O, int Rw, int Cl, int T, class L, class R, class C>
    struct left_of<tm_detail::input_layout<O, Rw, Cl, T, L, R, C>> { using type = L; };
    template <class Layout> struct right_of;
    template <int O, int Rw, int Cl, int T, class L, class R, class C>
    struct right_of<tm_detail::input_layout<O, Rw, Cl, T, L, R, C>> { using type = R; };

    template <class Left>
    static int depth(const thread Left& left) {
        if constexpr (static_k) {
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

    // A[row, k]: from the gathered input elements, or the left tensor.
    template <class Left, class L>
    static L left_at(const thread Left& left, const L* xa, int row, int k) {
        if constexpr (tm_detail::is_input<Left>::value) return xa[row * Descriptor.k + k];
        else return read(Descriptor.transpose_left ? left.tm_at(row, k) : left.tm_at(k, row));
    }

    // B[k, col]: from the gathered input elements, or the right tensor.
    template <class Right, class R>
    static R right_at(const thread Right& right, const R* xb, int k, int col) {
        if constexpr (tm_detail::is_input<Right>::value) return xb[k * Descriptor.n + col];
        else return read(Descriptor.transpose_right ? right.tm_at(k, col) : right.tm_at(col, k));
    }

    // One destination element: the old value (multiply_accumulate) plus the k products.
    template <class Left, class Right, class L, class R, class C>
    static C element(const thread Left& left, const thread Right& right, const L* xa, const R* xb, int row, int col,
                     C old) {
        int kk = 0;
        if constexpr (tm_detail::is_input<Left>::value) kk = Descriptor.k;
        else kk = depth(left);
        bool acc = Descriptor.matmul_mode == matmul2d_descriptor::mode::multiply_accumulate;
        if constexpr (tm_detail::is_i32<metal::remove_cv_t<C>>) {
            // 32-bit two's complement sums (unsigned arithmetic: signed overflow is undefined)
            unsigned s = acc ? unsigned(old) : 0u;
            for (int k = 0; k < kk; ++k)
                s += unsigned(int(left_at(left, xa, row, k)) * int(right_at(right, xb, k, col)));
            return C(int(s));
        } else {
            float s = acc ? float(old) : 0.0f;
            for (int k = 0; k < kk; ++k)
                s += tm_detail::as_float(left_at(left, xa, row, k)) * tm_detail::as_float(right_at(right, xb, k, col));
            return C(s);
        }
    }
};

}  // namespace tensor_ops
}  // namespace mpp
