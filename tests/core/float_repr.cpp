// Tests of core/float_repr.hpp, the float printer of both tiers: Python's repr of known values,
// and, over random bit patterns of every magnitude, the shortest digits std::to_chars finds (an
// independent implementation) for f64 and for f32, and the constexpr path in constant evaluation.
#include "xpr/core/float_repr.hpp"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>

#include <gtest/gtest.h>

namespace test_core_float_repr {

using xpr::core::float_repr;

/// Python's repr from std::to_chars' shortest scientific form (the reference).
template <class T>
std::string reference_repr(T x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  std::string s(buf, r.ptr), out;
  if (s[0] == '-') {
    out = "-";
    s.erase(0, 1);
  }
  const auto e = s.find('e');
  std::string digits;
  for (char c : s.substr(0, e))
    if (c != '.') digits += c;
  const int exp = std::stoi(s.substr(e + 1));
  if (exp >= -4 && exp < 16) {
    const int point = exp + 1, n = static_cast<int>(digits.size());
    if (point <= 0) return out + "0." + std::string(static_cast<std::size_t>(-point), '0') + digits;
    if (point >= n)
      return out + digits + std::string(static_cast<std::size_t>(point - n), '0') + ".0";
    return out + digits.substr(0, static_cast<std::size_t>(point)) + "." +
           digits.substr(static_cast<std::size_t>(point));
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  const int a = exp < 0 ? -exp : exp;
  return out + (exp < 0 ? "e-" : "e+") + (a < 10 ? "0" : "") + std::to_string(a);
}

TEST(FloatRepr, PythonReprOfKnownValues) {
  const std::pair<double, const char*> f64[] = {
      {3.0, "3.0"},
      {0.1, "0.1"},
      {-2.5, "-2.5"},
      {0.0001, "0.0001"},
      {1e-05, "1e-05"},
      {1e16, "1e+16"},
      {1e15, "1000000000000000.0"},
      {1.5e300, "1.5e+300"},
      {-0.0, "-0.0"},
      {0.0, "0.0"},
      {1e23, "1e+23"},
      {5e-324, "5e-324"},
      {1.7976931348623157e308, "1.7976931348623157e+308"}};
  for (const auto& [x, repr] : f64) EXPECT_EQ(float_repr(x), repr) << repr;
  // An f32 prints its own shortest digits (NumPy's repr of np.float32), not its widened double.
  const std::pair<float, const char*> f32[] = {{0.1f, "0.1"},
                                               {1e-05f, "1e-05"},
                                               {3.4028235e38f, "3.4028235e+38"},
                                               {1.17549435e-38f, "1.1754944e-38"},
                                               {1e-45f, "1e-45"},
                                               {16777216.0f, "16777216.0"},
                                               {0.3f, "0.3"}};
  for (const auto& [x, repr] : f32) EXPECT_EQ(float_repr(x), repr) << repr;
  EXPECT_EQ(float_repr(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(float_repr(-std::numeric_limits<float>::infinity()), "-inf");
  EXPECT_EQ(float_repr(std::numeric_limits<double>::quiet_NaN()), "nan");
}

TEST(FloatRepr, AgreesWithToCharsOnRandomDoubles) {
  std::mt19937_64 rng(13);
  for (int i = 0; i < 4000; ++i) {
    const double x = std::bit_cast<double>(rng());
    ASSERT_EQ(float_repr(x), reference_repr(x)) << std::bit_cast<std::uint64_t>(x);
  }
}

TEST(FloatRepr, AgreesWithToCharsOnRandomFloats) {
  std::mt19937 rng(13);
  for (int i = 0; i < 10000; ++i) {
    const float x = std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
    ASSERT_EQ(float_repr(x), reference_repr(x)) << std::bit_cast<std::uint32_t>(x);
  }
}

TEST(FloatRepr, PowersOfTenJustBelowTheirDecimal) {
  // Values a half-gap below 10^k, whose shortest digits are "1": the exponent estimate must move
  // up and stay there (1e-05f is 9.99999974737875e-06 widened).
  for (int k = -30; k <= 30; ++k) {
    const float f = std::stof("1e" + std::to_string(k));
    EXPECT_EQ(float_repr(f), reference_repr(f)) << k;
    const double d = std::stod("1e" + std::to_string(k));
    EXPECT_EQ(float_repr(d), reference_repr(d)) << k;
  }
}

constexpr bool prints_at_compile_time() {
  char buf[32] = {};
  xpr::core::detail::TextWriter w{buf, 0};
  xpr::core::detail::put_float(w, 1e-05f, true);
  return std::string_view(buf, w.size) == "1e-05";
}
static_assert(prints_at_compile_time());

}  // namespace test_core_float_repr
