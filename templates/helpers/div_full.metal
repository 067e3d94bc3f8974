{# fp32 `/` as Triton's GPUs divide (an approximate full-range division within 2 ulp). One
   hardware reciprocal (fast::divide, <= 2.5 ulp for |y| in [2^-126, 2^126]) and one Newton step
   with fused residuals make the quotient accurate to about 1 ulp whatever the reciprocal's last
   bits; zero dividends keep their sign from the product. The residual x - y*q is exact only while
   it cannot underflow, hence |x| >= 2^-100. What the fast path cannot serve (divisors outside
   that range, tiny dividends, infinite, NaN or subnormal quotients) takes the IEEE division. #}
inline float km_div_full(float x, float y) {
  float ay = fabs(y);
  if (ay >= 1.17549435e-38f && ay <= 8.50705917e+37f) {  // [2^-126, 2^126]
    float r = fast::divide(1.0f, y);
    float q = x * r;
    if (x == 0.0f) {
      return q;
    }
    float refined = fma(fma(-y, q, x), r, q);
    if (isnormal(refined) && fabs(x) >= 7.88860905e-31f) {  // |x| >= 2^-100
      return refined;
    }
  }
  return x / y;
}
