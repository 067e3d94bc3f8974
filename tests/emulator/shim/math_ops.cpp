// metal:: math over arrays, called from test_shim_math.py. Each function NAME gets
//   f_NAME (float), h_NAME (half), v_NAME (float4 over n/4 vectors), p_NAME (precise::),
//   q_NAME (fast::), hv_NAME (half4)
// with one, two or three input arrays.

#define TM_TEST1(NAME)                                                                 \
  extern "C" void f_##NAME(const float* a, float* o, int n) {                         \
    for (int i = 0; i < n; ++i) o[i] = metal::NAME(a[i]);                              \
  }                                                                                    \
  extern "C" void h_##NAME(const half* a, half* o, int n) {                           \
    for (int i = 0; i < n; ++i) o[i] = metal::NAME(a[i]);                              \
  }                                                                                    \
  extern "C" void v_##NAME(const float4* a, float4* o, int n) {                       \
    for (int i = 0; i < n / 4; ++i) o[i] = metal::NAME(a[i]);                          \
  }                                                                                    \
  extern "C" void hv_##NAME(const half4* a, half4* o, int n) {                        \
    for (int i = 0; i < n / 4; ++i) o[i] = metal::NAME(a[i]);                          \
  }                                                                                    \
  extern "C" void p_##NAME(const float* a, float* o, int n) {                         \
    for (int i = 0; i < n; ++i) o[i] = metal::precise::NAME(a[i]);                     \
  }                                                                                    \
  extern "C" void q_##NAME(const float4* a, float4* o, int n) {                       \
    for (int i = 0; i < n / 4; ++i) o[i] = metal::fast::NAME(a[i]);                    \
  }
// Common functions without precise::/fast:: forms.
#define TM_TEST1_PLAIN(NAME)                                                           \
  extern "C" void f_##NAME(const float* a, float* o, int n) {                         \
    for (int i = 0; i < n; ++i) o[i] = metal::NAME(a[i]);                              \
  }                                                                                    \
  extern "C" void h_##NAME(const half* a, half* o, int n) {                           \
    for (int i = 0; i < n; ++i) o[i] = metal::NAME(a[i]);                              \
  }                                                                                    \
  extern "C" void v_##NAME(const float4* a, float4* o, int n) {                       \
    for (int i = 0; i < n / 4; ++i) o[i] = metal::NAME(a[i]);                          \
  }                                                                                    \
  extern "C" void hv_##NAME(const half4* a, half4* o, int n) {                        \
    for (int i = 0; i < n / 4; ++i) o[i] = metal::NAME(a[i]);                          \
  }
#define TM_TEST2(NAME)                                                                 \
  extern "C" void f_##NAME(const float* a, const float* b, float* o, int n) {         \
    for (int i = 0; i < n; ++i) o[i] = metal::NAME(a[i], b[i]);                        \
  }                                                                                    \
  extern "C" void h_##NAME(const half* a, const half* b, half* o, int n) {            \
    for (int i = 0; i < n; ++i) o[i] = metal::NAME(a[i], b[i]);                        \
  }                                                                                    \
  extern "C" void v_##NAME(const float4* a, const float4* b, float4* o, int n) {      \
    for (int i = 0; i < n / 4; ++i) o[i] = metal::NAME(a[i], b[i]);                    \
  }
#define TM_TEST3(NAME)                                                                 \
  extern "C" void f_##NAME(const float* a, const float* b, const float* c, float* o, int n) { \
    for (int i = 0; i < n; ++i) o[i] = metal::NAME(a[i], b[i], c[i]);                  \
  }                                                                                    \
  extern "C" void v_##NAME(const float4* a, const float4* b, const float4* c, float4* o, int n) { \
    for (int i = 0; i < n / 4; ++i) o[i] = metal::NAME(a[i], b[i], c[i]);              \
  }

TM_TEST1(exp) TM_TEST1(exp2) TM_TEST1(exp10) TM_TEST1(log) TM_TEST1(log2) TM_TEST1(log10)
TM_TEST1(sin) TM_TEST1(cos) TM_TEST1(tan) TM_TEST1(asin) TM_TEST1(acos) TM_TEST1(atan)
TM_TEST1(sinh) TM_TEST1(cosh) TM_TEST1(tanh) TM_TEST1(asinh) TM_TEST1(acosh) TM_TEST1(atanh)
TM_TEST1(sinpi) TM_TEST1(cospi) TM_TEST1(sqrt) TM_TEST1(rsqrt) TM_TEST1(fabs) TM_TEST1(abs)
TM_TEST1(floor) TM_TEST1(ceil) TM_TEST1(round) TM_TEST1(rint) TM_TEST1(trunc) TM_TEST1(fract)
TM_TEST1(saturate) TM_TEST1_PLAIN(sign)
TM_TEST2(pow) TM_TEST2(powr) TM_TEST2(atan2) TM_TEST2(fmod) TM_TEST2(fmin) TM_TEST2(fmax)
TM_TEST2(min) TM_TEST2(max) TM_TEST2(copysign) TM_TEST2(fdim) TM_TEST2(divide) TM_TEST2(step)
// fast::divide and precise::divide, scalar and float4
extern "C" void q_divide(const float* a, const float* b, float* o, int n) {
  for (int i = 0; i < n; ++i) o[i] = metal::fast::divide(a[i], b[i]);
}
extern "C" void qv_divide(const float4* a, const float4* b, float4* o, int n) {
  for (int i = 0; i < n / 4; ++i) o[i] = metal::fast::divide(a[i], b[i]);
}
extern "C" void p_divide(const float* a, const float* b, float* o, int n) {
  for (int i = 0; i < n; ++i) o[i] = metal::precise::divide(a[i], b[i]);
}
TM_TEST3(fma) TM_TEST3(clamp) TM_TEST3(mix) TM_TEST3(smoothstep) TM_TEST3(median3)

// Predicates on float and float4: 5 bools per element (isnan isinf isfinite isnormal signbit).
extern "C" void predicates(const float* a, bool* o, int n) {
  for (int i = 0; i < n; ++i) {
    o[5 * i + 0] = isnan(a[i]);
    o[5 * i + 1] = isinf(a[i]);
    o[5 * i + 2] = isfinite(a[i]);
    o[5 * i + 3] = isnormal(a[i]);
    o[5 * i + 4] = signbit(a[i]);
  }
}
extern "C" void predicates4(const float4* a, bool4* o, int n) {
  for (int i = 0; i < n / 4; ++i) {
    o[5 * i + 0] = isnan(a[i]);
    o[5 * i + 1] = isinf(a[i]);
    o[5 * i + 2] = isfinite(a[i]);
    o[5 * i + 3] = isnormal(a[i]);
    o[5 * i + 4] = signbit(a[i]);
  }
}
// frexp, ldexp, modf, ilogb, sincos: 7 floats per element.
extern "C" void decompose(const float* a, float* o, int n) {
  for (int i = 0; i < n; ++i) {
    int e = 0;
    o[7 * i + 0] = frexp(a[i], e);
    o[7 * i + 1] = float(e);
    o[7 * i + 2] = ldexp(a[i], 3);
    float ip = 0.0f;
    o[7 * i + 3] = modf(a[i], ip);
    o[7 * i + 4] = ip;
    float c = 0.0f;
    o[7 * i + 5] = sincos(a[i], c);
    o[7 * i + 6] = c;
  }
}

// Integer functions on uint: popcount clz ctz reverse_bits, rotate/mulhi/absdiff/addsat/
// subsat/hadd/rhadd with b, min/max/clamp: 14 results per element.
extern "C" void uint_functions(const uint* a, const uint* b, uint* o, int n) {
  for (int i = 0; i < n; ++i) {
    uint x = a[i], y = b[i];
    uint* r = o + 14 * i;
    r[0] = popcount(x); r[1] = clz(x); r[2] = ctz(x); r[3] = reverse_bits(x);
    r[4] = rotate(x, y); r[5] = mulhi(x, y); r[6] = absdiff(x, y); r[7] = addsat(x, y);
    r[8] = subsat(x, y); r[9] = hadd(x, y); r[10] = rhadd(x, y); r[11] = min(x, y);
    r[12] = max(x, y); r[13] = clamp(x, min(y, 1000u), max(y, 1000u));
  }
}
// The same on int, plus abs: 15 results per element.
extern "C" void int_functions(const int* a, const int* b, int* o, int n) {
  for (int i = 0; i < n; ++i) {
    int x = a[i], y = b[i];
    int* r = o + 15 * i;
    r[0] = popcount(x); r[1] = clz(x); r[2] = ctz(x); r[3] = reverse_bits(x);
    r[4] = rotate(x, y); r[5] = mulhi(x, y); r[6] = int(absdiff(x, y)); r[7] = addsat(x, y);
    r[8] = subsat(x, y); r[9] = hadd(x, y); r[10] = rhadd(x, y); r[11] = min(x, y);
    r[12] = max(x, y); r[13] = clamp(x, min(y, 1000), max(y, 1000)); r[14] = abs(x);
  }
}
// 8- and 64-bit widths: clz/popcount of uchar and ulong, mulhi of ulong and long.
extern "C" void width_functions(const ulong* a, const ulong* b, ulong* o, int n) {
  for (int i = 0; i < n; ++i) {
    ulong* r = o + 6 * i;
    uchar c = uchar(a[i]);
    r[0] = clz(c); r[1] = popcount(c); r[2] = clz(a[i]); r[3] = popcount(a[i]);
    r[4] = mulhi(a[i], b[i]);
    r[5] = ulong(mulhi(long(a[i]), long(b[i])));
  }
}
// Integer vectors: min/max/clamp/abs/popcount on int4 (5 int4 per vector).
extern "C" void int4_functions(const int4* a, const int4* b, int4* o, int n) {
  for (int i = 0; i < n / 4; ++i) {
    o[5 * i + 0] = min(a[i], b[i]);
    o[5 * i + 1] = max(a[i], b[i]);
    o[5 * i + 2] = clamp(a[i], int4(-100), int4(100));
    o[5 * i + 3] = abs(a[i]);
    o[5 * i + 4] = popcount(a[i]);
  }
}
