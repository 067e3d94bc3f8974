{# tl.dot_scaled: operand elements and scales read from the bytes the dot staged in threadgroup
   memory, dequantized where the fragments are built (codegen/lower_dot_scaled.py). No data in. #}
// e2m1 code (sign bit 3, exponent bits 2-1 with bias 1, mantissa bit 0) -> float, built as
// float32 bits: exact.
inline float km_e2m1_to_float(uint code) {
  uint exponent = (code >> 1u) & 3u;
  uint mantissa = code & 1u;
  uint bits = exponent == 0u ? mantissa * 0x3F000000u : (((exponent + 126u) << 23u) | (mantissa << 22u));
  return as_type<float>(bits | ((code >> 3u) << 31u));
}
// Element (row, col) of e2m1 bytes staged row-major, `pitch` bytes a row: a byte holds rows
// 2i and 2i + 1 (`pair_rows`) or columns 2j and 2j + 1, the even one in the low nibble.
inline float km_e2m1_at(threadgroup const uchar* bytes, uint row, uint col, uint pitch, bool pair_rows) {
  uint byte = pair_rows ? bytes[(row >> 1u) * pitch + col] : bytes[row * pitch + (col >> 1u)];
  return km_e2m1_to_float((byte >> (((pair_rows ? row : col) & 1u) * 4u)) & 15u);
}
// e8m0 scale code -> the float32 with bits code << 23 (2^(code - 127), 0 for code 0); code 255
// is NaN (the OCP MX rule) unless `fast`.
inline float km_e8m0_to_float(uchar code, bool fast) {
  float v = as_type<float>(uint(code) << 23u);
  return (!fast && code == uchar(255)) ? NAN : v;
}
