// Vector construction, swizzles, operators and layout, called from test_shim_vector.py.

static_assert(sizeof(float2) == 8 && alignof(float2) == 8, "float2");
static_assert(sizeof(float3) == 16 && alignof(float3) == 16, "float3 is laid out like float4");
static_assert(sizeof(float4) == 16 && alignof(float4) == 16, "float4");
static_assert(sizeof(half3) == 8 && sizeof(half4) == 8, "half3/half4");
static_assert(sizeof(packed_float3) == 12 && alignof(packed_float3) == 4, "packed_float3 is dense");
static_assert(sizeof(bool4) == 4 && sizeof(long2) == 16 && sizeof(bfloat4) == 8, "sizes");
// bfloat vectors as MSL 3.1 lays them out (as half's): what an 8-byte bfloat4 access of a
// bfloat16 buffer relies on
static_assert(sizeof(bfloat2) == 4 && alignof(bfloat2) == 4, "bfloat2");
static_assert(sizeof(bfloat3) == 8 && alignof(bfloat3) == 8, "bfloat3 is laid out like bfloat4");
static_assert(alignof(bfloat4) == 8 && sizeof(packed_bfloat4) == 8 && alignof(packed_bfloat4) == 2, "bfloat4");
static_assert(is_same_v<decltype(bfloat4() * bfloat4()), bfloat4>, "bfloat4 * bfloat4 is bfloat4");
static_assert(is_same_v<decltype(bfloat4() + 1), bfloat4>, "bfloat4 + int is bfloat4");
static_assert(is_same_v<decltype(float4() < float4()), bool4>, "comparisons give boolN");
static_assert(is_same_v<decltype(int3() == int3()), bool3>, "comparisons give boolN");
static_assert(is_same_v<decltype(half4() * 2), half4>, "half4 * int is half4");
static_assert(is_same_v<decltype(float4() * half(2)), float4>, "float4 * half is float4");
static_assert(is_same_v<decltype(uint2() + 1), uint2>, "uint2 + int is uint2");
static_assert(metal::tm_scalar_traits<float4>::is_vector && metal::tm_scalar_traits<float4>::size == 4,
              "traits");
static_assert(!metal::tm_scalar_traits<float>::is_vector, "traits");
static_assert(is_same_v<metal::tm_scalar_traits<ushort3>::scalar_type, ushort>, "traits");

template <class V> static void put(thread float*& out, V v) {
  for (int i = 0; i < metal::tm_vn<V>; ++i) *out++ = float(v[i]);
}

// Writes each constructed vector's components in order.
extern "C" int constructors(float* out) {
  float* start = out;
  float2 a(1, 2);
  float3 b(a, 3);
  float4 c(0.5f, b);
  float4 d(a, a.yx);
  float4 e(7);
  float4 f = {1, 2, 3, 4};
  float4 g(a.x, b.yz, 4);
  float3 h = 9.0f;  // scalar splat
  float4 conv = float4(int4(1, -2, 3, -4));
  float4 from_half = float4(half4(half(0.5), half(1.5), half(-2), half(65504)));
  int4 truncating = int4(float4(1.9f, -1.9f, 2.5f, -0.5f));
  uint2 from_swizzle = uint2(int4(5, 6, 7, 8).wz);
  bool3 to_bool = bool3(int3(0, 3, -1));
  float2 from_packed = packed_float2(3, 4);
  vec<long, 2> braced = {long(1) << 40, -long(3)};
  put(out, a); put(out, b); put(out, c); put(out, d); put(out, e); put(out, f); put(out, g);
  put(out, h); put(out, conv); put(out, from_half); put(out, truncating); put(out, from_swizzle);
  put(out, to_bool); put(out, from_packed);
  *out++ = float(braced.x / (long(1) << 40)); *out++ = float(braced.y);
  return int(out - start);
}

// v = in[0..3]; writes the read swizzles, then the results of writes through swizzles.
extern "C" int swizzles(const float* in, float* out) {
  float* start = out;
  float4 v(in[0], in[1], in[2], in[3]);
  put(out, float4(v.wzyx)); put(out, float4(v.xxyy)); put(out, float4(v.rgba)); put(out, float2(v.zx));
  put(out, float3(v.bgr)); put(out, float4(float3(v.xyz).zyx, v.w));
  float3 v3 = v.xyz;
  put(out, float4(v3.zzzx));
  float2 v2 = v.xy;
  put(out, float4(v2.yxyx));
  *out++ = v.r + v.g + v.b + v.a - v.x - v.y - v.z - v.w;  // 0
  *out++ = v.wx[0];  // swizzle indexing
  float4 w = v;
  w.xy = float2(10, 20);
  put(out, w);
  w = v;
  w.wz = v.xy;  // distinct lanes, reversed
  put(out, w);
  w = v;
  w.zx += float2(1, 2);
  put(out, w);
  w = v;
  w.yzw = w.xxx;  // source aliases destination
  put(out, w);
  w = v;
  w.x = 5;
  w.a *= 2;
  w[1] = -1;
  put(out, w);
  w = v;
  w.xy = w.yx;  // swap through a swizzle copy
  put(out, w);
  return int(out - start);
}

// Componentwise float4 arithmetic on n vectors: out has 8 float4 results per vector.
extern "C" void arithmetic(const float4* a, const float4* b, float4* out, int n) {
  for (int i = 0; i < n; ++i) {
    float4 x = a[i], y = b[i];
    out[8 * i + 0] = x + y;
    out[8 * i + 1] = x - y;
    out[8 * i + 2] = x * y;
    out[8 * i + 3] = x / y;
    out[8 * i + 4] = -x;
    out[8 * i + 5] = x * 2.0f + 1;
    out[8 * i + 6] = 3 - x.wzyx;
    float4 acc = x;
    acc += y;
    acc *= 0.5f;
    out[8 * i + 7] = acc;
  }
}

// int4 bit operations: 9 results per vector.
extern "C" void integer_ops(const int4* a, const int4* b, int4* out, int n) {
  for (int i = 0; i < n; ++i) {
    int4 x = a[i], y = b[i];
    out[9 * i + 0] = x & y;
    out[9 * i + 1] = x | y;
    out[9 * i + 2] = x ^ y;
    out[9 * i + 3] = ~x;
    out[9 * i + 4] = x << 3;
    out[9 * i + 5] = x >> (y & 7);
    out[9 * i + 6] = x % 7;
    out[9 * i + 7] = x / (y | 1);
    int4 acc = x;
    acc ^= 0x55;
    acc >>= 1;
    out[9 * i + 8] = acc;
  }
}

// uint4 wraps modulo 2^32.
extern "C" void unsigned_wrap(const uint4* a, uint4* out, int n) {
  for (int i = 0; i < n; ++i) out[i] = a[i] * 3u + 0xFFFFFFF0u;
}

// Comparisons and selection: 6 bool4 per vector, then select, all and any results.
extern "C" void compare_select(const float4* a, const float4* b, bool4* cmp, float4* sel,
                               bool* reduce, int n) {
  for (int i = 0; i < n; ++i) {
    float4 x = a[i], y = b[i];
    cmp[6 * i + 0] = x < y;
    cmp[6 * i + 1] = x <= y;
    cmp[6 * i + 2] = x > y;
    cmp[6 * i + 3] = x >= y;
    cmp[6 * i + 4] = x == y;
    cmp[6 * i + 5] = !(x != y);
    sel[2 * i + 0] = select(x, y, x < y);  // y where x < y: the max
    sel[2 * i + 1] = select(x, y, true);
    reduce[2 * i + 0] = all(x < y);
    reduce[2 * i + 1] = any(x < y);
  }
}

extern "C" void reinterpret(const ulong* a, uint* out, int n) {
  for (int i = 0; i < n; ++i) {
    uint2 parts = as_type<uint2>(a[i]);
    out[4 * i + 0] = parts.x;
    out[4 * i + 1] = parts.y;
    out[4 * i + 2] = as_type<uint>(as_type<float>(parts.x));
    out[4 * i + 3] = as_type<uint>(as_type<half2>(parts.y).yx);  // halves swapped
  }
}

// Geometric functions: dot, length, distance, 3 normalize lanes, 3 cross lanes (9 floats).
extern "C" void geometric(const float4* a, const float4* b, float* out, int n) {
  for (int i = 0; i < n; ++i) {
    float* r = out + 9 * i;
    float4 x = a[i], y = b[i];
    r[0] = dot(x, y);
    r[1] = length(x);
    r[2] = distance(x, y);
    float3 u = normalize(x.xyz);
    r[3] = u.x; r[4] = u.y; r[5] = u.z;
    float3 c = cross(x.xyz, y.xyz);
    r[6] = c.x; r[7] = c.y; r[8] = c.z;
  }
}
