// SPDX-License-Identifier: MIT
// Floating-point numbers printed the way Python's repr prints them: the shortest digits that read
// back to the same value in the number's own precision (Steele & White / Burger & Dybvig), fixed
// notation for decimal exponents in [-4, 16), scientific otherwise. JAX prints a jaxpr literal so
// (`np.float32(0.1)` prints `0.1`, not the widened `0.10000000149011612`). One printer for both
// tiers: constexpr, so the compile-time tier prints jaxprs during constant evaluation with it, and
// the runtime tier calls `float_repr`.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace xpr::core {

namespace detail {

/// Appends text; with no storage it only counts (the size pass of a two-pass build).
struct TextWriter {
  char* out = nullptr;
  std::size_t size = 0;

  constexpr void put(char c) {
    if (out) out[size] = c;
    ++size;
  }
  constexpr void put(std::string_view s) {
    for (char c : s) put(c);
  }
  constexpr void put_int(long long v) {
    if (v < 0) {
      put('-');
      v = -v;
    }
    char digits[24] = {};
    int n = 0;
    do {
      digits[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v);
    while (n) put(digits[--n]);
  }
};

/// An unsigned integer of up to 1280 bits, for exact decimal conversion.
class BigInt {
 public:
  static constexpr int limbs = 40;
  constexpr explicit BigInt(std::uint64_t v = 0) {
    d_[0] = static_cast<std::uint32_t>(v);
    d_[1] = static_cast<std::uint32_t>(v >> 32);
  }
  constexpr BigInt& mul(std::uint32_t m) {
    std::uint64_t carry = 0;
    for (auto& x : d_) {
      std::uint64_t t = static_cast<std::uint64_t>(x) * m + carry;
      x = static_cast<std::uint32_t>(t);
      carry = t >> 32;
    }
    return *this;
  }
  constexpr BigInt& shl(int bits) {
    for (; bits >= 16; bits -= 16) mul(1u << 16);
    if (bits) mul(1u << bits);
    return *this;
  }
  constexpr BigInt& pow10(int n) {
    for (; n > 0; --n) mul(10);
    return *this;
  }
  constexpr BigInt& add(const BigInt& o) {
    std::uint64_t carry = 0;
    for (int i = 0; i < limbs; ++i) {
      std::uint64_t t = static_cast<std::uint64_t>(d_[i]) + o.d_[i] + carry;
      d_[i] = static_cast<std::uint32_t>(t);
      carry = t >> 32;
    }
    return *this;
  }
  constexpr BigInt& sub(const BigInt& o) {  // requires *this >= o
    std::int64_t borrow = 0;
    for (int i = 0; i < limbs; ++i) {
      std::int64_t t = static_cast<std::int64_t>(d_[i]) - o.d_[i] - borrow;
      borrow = t < 0;
      d_[i] = static_cast<std::uint32_t>(t + (borrow << 32));
    }
    return *this;
  }
  friend constexpr int compare(const BigInt& a, const BigInt& b) {
    for (int i = limbs; i-- > 0;)
      if (a.d_[i] != b.d_[i]) return a.d_[i] < b.d_[i] ? -1 : 1;
    return 0;
  }
  /// The quotient digit (0..9) of *this / s, leaving the remainder in *this.
  constexpr int divmod_digit(const BigInt& s) {
    int q = 0;
    while (compare(*this, s) >= 0) {
      sub(s);
      ++q;
    }
    return q;
  }

 private:
  std::uint32_t d_[limbs] = {};
};

/// The shortest decimal digits of a finite positive `v` that read back as `v` in its own
/// precision (f32 when `single`). Returns the digit count; `v` = 0.DIGITS x 10^exp10.
constexpr int shortest_digits(double v, bool single, char* digits, int& exp10) {
  // v = f x 2^e with f an integer of p bits (or fewer when subnormal).
  std::uint64_t f = 0;
  int e = 0, p = 0, min_e = 0;
  if (single) {
    auto bits = std::bit_cast<std::uint32_t>(static_cast<float>(v));
    int be = static_cast<int>(bits >> 23 & 0xff);
    f = bits & 0x7fffff;
    p = 24;
    min_e = -149;
    if (be) f |= 1u << 23;
    e = be ? be - 150 : -149;
  } else {
    auto bits = std::bit_cast<std::uint64_t>(v);
    int be = static_cast<int>(bits >> 52 & 0x7ff);
    f = bits & ((1ull << 52) - 1);
    p = 53;
    min_e = -1074;
    if (be) f |= 1ull << 52;
    e = be ? be - 1075 : -1074;
  }
  const bool even = (f & 1) == 0;
  const bool boundary = f == 1ull << (p - 1) && e > min_e;  // lower neighbour is closer
  // r / s = v, m_plus / s and m_minus / s the half-gaps to the neighbours (all scaled by 2).
  BigInt r(f), s(1), m_plus(1), m_minus(1);
  if (e >= 0) {
    r.shl(e + (boundary ? 2 : 1));
    s = BigInt(boundary ? 4 : 2);
    m_plus.shl(e + (boundary ? 1 : 0));
    m_minus.shl(e);
  } else {
    r.shl(boundary ? 2 : 1);
    s.shl(-e + (boundary ? 2 : 1));
    m_plus = BigInt(boundary ? 2 : 1);
  }
  // Estimate k = ceil(log10 v), then correct it.
  double lv = v;
  int k = 0;
  while (lv >= 1) {
    lv /= 10;
    ++k;
  }
  while (lv < 0.1) {
    lv *= 10;
    --k;
  }
  if (k >= 0) {
    s.pow10(k);
  } else {
    r.pow10(-k);
    m_plus.pow10(-k);
    m_minus.pow10(-k);
  }
  // Whether (rr + mp) / s reaches 1: the upper half-gap's end is at or past 10^k.
  auto reaches = [&](const BigInt& rr, const BigInt& mp) {
    BigInt t = rr;
    t.add(mp);
    int c = compare(t, s);
    return even ? c >= 0 : c > 0;
  };
  auto high_ok = [&](const BigInt& rr) { return reaches(rr, m_plus); };
  while (high_ok(r)) {  // v + gap >= 10^k after all
    s.mul(10);
    ++k;
  }
  for (; k > -400; --k) {  // until v + gap >= 10^(k-1): r and the gaps scaled by 10 together
    BigInt ten_r = r, ten_plus = m_plus;
    ten_r.mul(10);
    ten_plus.mul(10);
    if (reaches(ten_r, ten_plus)) break;
    r = ten_r;
    m_plus = ten_plus;
    m_minus.mul(10);
  }
  exp10 = k;
  int n = 0;
  for (;;) {
    r.mul(10);
    m_plus.mul(10);
    m_minus.mul(10);
    int d = r.divmod_digit(s);
    int c_low = compare(r, m_minus);
    bool low = even ? c_low <= 0 : c_low < 0;
    bool high = high_ok(r);
    if (!low && !high) {
      digits[n++] = static_cast<char>('0' + d);
      continue;
    }
    if (low && high) {  // both neighbours are far enough: round to nearest (ties to even)
      BigInt twice = r;
      twice.add(r);
      int c = compare(twice, s);
      if (c > 0 || (c == 0 && d % 2 == 1)) ++d;
    } else if (high) {
      ++d;
    }
    digits[n++] = static_cast<char>('0' + d);
    return n;
  }
}

/// Writes `v` as Python's repr does ('2.0', '0.1', '1e-05', '1.5e+20', 'inf', 'nan').
constexpr void put_float(TextWriter& w, double v, bool single) {
  if (v != v) return w.put("nan");
  if (v < 0 || (v == 0 && std::bit_cast<std::uint64_t>(v) >> 63)) {
    w.put('-');
    v = -v;
  }
  if (v == 0) return w.put("0.0");
  if (v > 1.7976931348623157e308) return w.put("inf");
  char digits[32] = {};
  int exp10 = 0;
  int n = shortest_digits(v, single, digits, exp10);
  int decpt = exp10;  // v = 0.DIGITS x 10^decpt
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      w.put("0.");
      for (int i = 0; i < -decpt; ++i) w.put('0');
      for (int i = 0; i < n; ++i) w.put(digits[i]);
    } else if (decpt >= n) {
      for (int i = 0; i < n; ++i) w.put(digits[i]);
      for (int i = n; i < decpt; ++i) w.put('0');
      w.put(".0");
    } else {
      for (int i = 0; i < n; ++i) {
        if (i == decpt) w.put('.');
        w.put(digits[i]);
      }
    }
    return;
  }
  w.put(digits[0]);
  if (n > 1) {
    w.put('.');
    for (int i = 1; i < n; ++i) w.put(digits[i]);
  }
  int x = decpt - 1;
  w.put(x < 0 ? "e-" : "e+");
  if (x < 0) x = -x;
  if (x < 10) w.put('0');
  w.put_int(x);
}

}  // namespace detail

/// Python's `repr` of a float: `3.0`, `0.1`, `0.0001`, `1e-05`, `1e+16`, `1.5e+300`, `inf`,
/// `-inf`, `nan`. The `float` overload prints the shortest digits of the f32 value (NumPy's repr
/// of `np.float32`), the `double` one those of the f64 value.
inline std::string float_repr(double x, bool single) {
  detail::TextWriter count;
  detail::put_float(count, x, single);
  std::string out(count.size, '\0');
  detail::TextWriter w{out.data(), 0};
  detail::put_float(w, x, single);
  return out;
}
inline std::string float_repr(double x) { return float_repr(x, false); }
inline std::string float_repr(float x) { return float_repr(static_cast<double>(x), true); }

}  // namespace xpr::core
