{# Triton's float atomic max and min order floats by their bit patterns: a signed integer max/min
   where the operand's sign bit is clear, an unsigned min/max where it is set. That is IEEE
   totalOrder: -NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN, NaNs by payload. The
   compare-and-swap loops (16-bit elements, outputs kept relative to their contents) compare
   this key: a signed integer of the bits, with a negative value's magnitude bits flipped. Two
   keys are equal only for equal bits. #}
inline int km_bit_order(float x) {
  int i = as_type<int>(x);
  return i < 0 ? i ^ 0x7FFFFFFF : i;
}
{% for t in ("half", "bfloat") %}
inline int km_bit_order({{ t }} x) {
  int i = int(as_type<short>(x));
  return i < 0 ? i ^ 0x7FFF : i;
}
{% endfor %}
