{# Float narrowing that rounds toward zero (`fp_downcast_rounding="rtz"`): convert with MSL's
   round-to-nearest-even, then, where that moved away from zero, step the result's magnitude down
   by one unit in the last place (bit patterns are sign-magnitude, so one less in the bits). NaN
   and infinities convert unchanged; a finite value past the largest finite result gives it. #}
inline half km_half_rtz(float x) {
  half h = half(x);
  if (isfinite(x) && fabs(float(h)) > fabs(x)) {
    h = as_type<half>(ushort(as_type<ushort>(h) - ushort(1)));
  }
  return h;
}
inline bfloat km_bfloat_rtz(float x) {
  bfloat b = bfloat(x);
  if (isfinite(x) && fabs(float(b)) > fabs(x)) {
    b = as_type<bfloat>(ushort(as_type<ushort>(b) - ushort(1)));
  }
  return b;
}
