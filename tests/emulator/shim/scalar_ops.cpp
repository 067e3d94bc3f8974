// half and bfloat scalar behaviour, called from test_shim_scalar.py.

// Result types follow MSL's conversion rules.
static_assert(is_same_v<decltype(half(1) * half(2)), half>, "half op half is half");
static_assert(is_same_v<decltype(half(1) + 1), half>, "half op int is half");
static_assert(is_same_v<decltype(half(1) + 1.0f), float>, "half op float is float");
#if !defined(__clang__)  // clang has no -fsingle-precision-constant
static_assert(is_same_v<decltype(1.0), float>, "unsuffixed literals are float");
#endif
static_assert(is_same_v<decltype(bfloat(1) + bfloat(2)), bfloat>, "bfloat op bfloat is bfloat");
static_assert(is_same_v<decltype(bfloat(1) * 3), bfloat>, "bfloat op int is bfloat");
static_assert(is_same_v<decltype(bfloat(1) * 3.0f), float>, "bfloat op float is float");
static_assert(is_same_v<decltype(bfloat(1) < bfloat(2)), bool>, "comparisons give bool");
static_assert(sizeof(half) == 2 && sizeof(bfloat) == 2, "16-bit floats");

extern "C" void half_mul_add(const half* a, const half* b, const half* c, half* out, int n) {
  for (int i = 0; i < n; ++i) out[i] = a[i] * b[i] + c[i];
}
extern "C" void half_div_sub(const half* a, const half* b, half* out, int n) {
  for (int i = 0; i < n; ++i) out[i] = a[i] / b[i] - a[i];
}
extern "C" void half_accumulate(const half* a, half* out, int n) {
  half acc = half(0.0);
  for (int i = 0; i < n; ++i) acc += a[i];
  out[0] = acc;
}
extern "C" void half_from_float(const float* a, half* out, int n) {
  for (int i = 0; i < n; ++i) out[i] = a[i];  // implicit, round to nearest even
}
extern "C" void half_plus_float(const half* a, const float* b, float* out, int n) {
  for (int i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

extern "C" void bf_from_float(const float* a, ushort* out, int n) {
  for (int i = 0; i < n; ++i) out[i] = as_type<ushort>(bfloat(a[i]));
}
extern "C" void bf_from_half(const half* a, ushort* out, int n) {
  for (int i = 0; i < n; ++i) out[i] = as_type<ushort>(bfloat(a[i]));
}
extern "C" void bf_from_int(const int* a, ushort* out, int n) {
  for (int i = 0; i < n; ++i) out[i] = as_type<ushort>(bfloat(a[i]));
}
extern "C" void bf_to_float(const ushort* a, float* out, int n) {
  for (int i = 0; i < n; ++i) {
    float f = as_type<bfloat>(a[i]);  // implicit widening
    out[i] = f;
  }
}
extern "C" void bf_to_half(const ushort* a, half* out, int n) {
  for (int i = 0; i < n; ++i) out[i] = half(as_type<bfloat>(a[i]));  // explicit only
}
extern "C" void bf_to_int(const ushort* a, int* out, int n) {
  for (int i = 0; i < n; ++i) out[i] = int(as_type<bfloat>(a[i]));
}
// out: 4 results per pair: a + b, a - b, a * b, a / b.
extern "C" void bf_arith(const ushort* a, const ushort* b, ushort* out, int n) {
  for (int i = 0; i < n; ++i) {
    bfloat x = as_type<bfloat>(a[i]), y = as_type<bfloat>(b[i]);
    out[4 * i + 0] = as_type<ushort>(x + y);
    out[4 * i + 1] = as_type<ushort>(x - y);
    out[4 * i + 2] = as_type<ushort>(x * y);
    out[4 * i + 3] = as_type<ushort>(x / y);
  }
}
// out: a < b, a == b, a >= b.
extern "C" void bf_compare(const ushort* a, const ushort* b, bool* out, int n) {
  for (int i = 0; i < n; ++i) {
    bfloat x = as_type<bfloat>(a[i]), y = as_type<bfloat>(b[i]);
    out[3 * i + 0] = x < y;
    out[3 * i + 1] = x == y;
    out[3 * i + 2] = x >= y;
  }
}
// A bfloat accumulation rounds after every step.
extern "C" void bf_accumulate(const ushort* a, ushort* out, int n) {
  bfloat acc = bfloat(0);
  for (int i = 0; i < n; ++i) acc += as_type<bfloat>(a[i]);
  out[0] = as_type<ushort>(acc);
}
