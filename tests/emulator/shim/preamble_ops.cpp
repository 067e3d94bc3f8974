// MLX preamble helpers, called from test_shim_strict.py (compiled with mlx_preamble.h).

static_assert(is_same_v<float16_t, half> && is_same_v<bfloat16_t, bfloat>, "MLX type names");
static_assert(WorkPerThread<float>::n == 2 && WorkPerThread<half>::n == 4, "WorkPerThread");
static_assert(is_same_v<decltype(metal::exp(bfloat16_t(1))), bfloat>, "MLX's bfloat math");

// elem_to_loc for each element index: out[i] = location of element i.
extern "C" void locations(const int* shape, const long* strides, int ndim, long* out, int n) {
  for (int i = 0; i < n; ++i) out[i] = elem_to_loc(long(i), shape, strides, ndim);
}
// The uint3 form: x, y index the last two dimensions, z the rest.
extern "C" void locations3(const int* shape, const long* strides, int ndim, const uint* pos, long* out,
                           int n) {
  for (int i = 0; i < n; ++i) out[i] = elem_to_loc(uint3(pos[3 * i], pos[3 * i + 1], pos[3 * i + 2]), shape, strides, ndim);
}
// Limits and ceildiv: 8 floats.
extern "C" void limits(float* out) {
  out[0] = Limits<float>::max;
  out[1] = Limits<float>::finite_min;
  out[2] = float(Limits<half>::finite_max);
  out[3] = float(Limits<bfloat16_t>::finite_max);
  out[4] = float(Limits<int>::min);
  out[5] = float(Limits<uchar>::max);
  out[6] = float(ceildiv(10, 3));
  out[7] = float(ceildiv(9u, 3u));
}
extern "C" void log1p_values(const float* a, float* out, int n) {
  for (int i = 0; i < n; ++i) out[i] = log1p(a[i]);
}
