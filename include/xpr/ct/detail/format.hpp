// SPDX-License-Identifier: MIT
// Text at compile time: a fixed-size string usable in static_assert, written by the constexpr
// text writer and float printer of core/float_repr.hpp (the one both tiers print floats with).
#pragma once

#include <cstddef>
#include <ostream>
#include <string_view>

#include "xpr/core/float_repr.hpp"

namespace xpr::ct {

/// A string of `N` characters held by value, so it can be a compile-time constant.
template <std::size_t N>
struct FixedString {
  char data[N + 1] = {};

  static constexpr std::size_t size() { return N; }
  constexpr std::string_view view() const { return {data, N}; }
  constexpr operator std::string_view() const { return view(); }  // NOLINT: a string, really
  friend constexpr bool operator==(const FixedString& a, std::string_view b) {
    return a.view() == b;
  }
  friend std::ostream& operator<<(std::ostream& os, const FixedString& s) { return os << s.view(); }
};

namespace detail {
using core::detail::put_float;
using core::detail::TextWriter;
}  // namespace detail
}  // namespace xpr::ct
