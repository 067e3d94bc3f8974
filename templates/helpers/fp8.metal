{# fp8 values are stored as uchar (MSL has no fp8 type). Conversions to and from float, one per
   direction, parameterised by the format (triton_metal/fp8.py gives the formats and the rules):
   `mbits` mantissa bits, `bias`, `kind` 0 = no infinities and NaN all ones (e4m3fn), 1 = IEEE
   infinities and NaNs (e5m2), 2 = no infinities, no -0, NaN 0x80 (the FNUZ formats).
   float -> fp8 rounds the float's 24-bit significand at the format's quantum (to nearest even,
   or toward zero) and saturates past the largest finite value, infinities included. No data in. #}
inline float km_fp8_to_float(uchar c, int mbits, int bias, int kind) {
  uint mag = uint(c) & 0x7Fu;
  uint e = mag >> uint(mbits);
  uint emax = (1u << uint(7 - mbits)) - 1u;
  if (kind == 2 && c == uchar(0x80)) {
    return NAN;
  }
  // exact, and built from bits: a normal code's exponent and mantissa go to float's,
  // the exponent rebiased; a subnormal is its mantissa times the format's smallest step,
  // 2^(1 - bias - mbits), a power of two made from its bits
  float v;
  if (kind == 0 && mag == 0x7Fu) {
    v = NAN;
  } else if (kind == 1 && e == emax) {
    v = (mag & ((1u << uint(mbits)) - 1u)) == 0u ? INFINITY : NAN;
  } else if (e == 0u) {
    v = float(mag) * as_type<float>(uint(128 - bias - mbits) << 23u);
  } else {
    v = as_type<float>((mag << uint(23 - mbits)) + (uint(127 - bias) << 23u));
  }
  return (uint(c) & 0x80u) != 0u ? -v : v;
}
inline uchar km_float_to_fp8(float x, int mbits, int bias, uint max_code, uint nan_code, bool fnuz, bool rtz) {
  if (isnan(x)) {
    return uchar(nan_code);
  }
  uint bits = as_type<uint>(x);
  uint sign = bits >> 31;
  int biased = int((bits >> 23) & 0xFFu);
  uint mag = 0u;
  if (biased == 0xFF) {
    mag = max_code;
  } else if (biased != 0) {
    // float subnormals (biased == 0) are far below every fp8 quantum: they give zero
    uint sig = (bits & 0x7FFFFFu) | 0x800000u;
    int exponent = biased - 127;
    int emin = 1 - bias;
    int e = max(exponent, emin);
    int shift = 23 - mbits + (e - exponent);
    uint q = 0u;
    if (shift <= 25) {
      q = sig >> uint(shift);
      uint rem = sig & ((1u << uint(shift)) - 1u);
      uint halfway = 1u << uint(shift - 1);
      if (!rtz && (rem > halfway || (rem == halfway && (q & 1u) != 0u))) {
        q += 1u;
      }
    }
    // e - emin < 2^8: no overflow; past the largest finite value, saturate
    mag = min((uint(e - emin) << uint(mbits)) + q, max_code);
  }
  if (fnuz && mag == 0u) {
    return uchar(0);
  }
  return uchar((sign << 7) | mag);
}
{# fp8e4b15 (kind 3) from float as Triton converts it, through half: the half's magnitude clamps
   to 1.75 (bits 0x3F00; NaN and infinities lie above it as integers too) and rounds to 3
   mantissa bits, ties away from zero; the sign is kept. `h` is the float already narrowed to half
   (to nearest even, or toward zero by km_half_rtz). #}
inline uchar km_half_to_fp8e4b15(half h) {
  uint bits = uint(as_type<ushort>(h));
  uint mag = min(bits & 0x7FFFu, 0x3F00u);
  return uchar(((bits >> 8) & 0x80u) | ((mag + 0x40u) >> 7));
}
