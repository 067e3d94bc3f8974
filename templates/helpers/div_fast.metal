{# fp32 `/` as Triton divides on a GPU: an approximate full-range division (Triton's
   div.full.f32, within 2 ulp). Metal's counterpart is fast::divide, within 2.5 ulp for
   |y| in [2^-126, 2^126] (the MSL specification's fast-math accuracy table) and unspecified
   elsewhere; divisors outside that range (zero, subnormal, huge, infinite, NaN) take the IEEE
   division, so x / 0 is still an infinity and NaN still propagates. The test is on the divisor
   alone: where it is uniform (a row sum, a norm) so is the branch. #}
inline float km_div_fast(float x, float y) {
  float ay = fabs(y);
  if (ay >= 1.17549435e-38f && ay <= 8.50705917e+37f) {  // [2^-126, 2^126]
    return fast::divide(x, y);
  }
  return x / y;
}
