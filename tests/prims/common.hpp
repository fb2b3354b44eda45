// Helpers shared by the primitive tests of tests/prims/: building an array of any dtype from
// doubles, and checking an exception's type and the parts of its message.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/array.hpp"
#include "xpr/rt/primitive_table.hpp"  // find_primitive

namespace test_prims_common {

/// An array of dtype `t` and shape `s` holding `v` converted element by element.
inline xpr::Array make(xpr::DType t, const xpr::Shape& s, const std::vector<double>& v) {
  xpr::rt::ArrayBuilder b(xpr::ShapedArray{s, t, false});
  xpr::rt::dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    for (std::size_t i = 0; i < v.size(); ++i) b.data<T>()[i] = static_cast<T>(v[i]);
  });
  return std::move(b).finish();
}

/// `f()` throws an `E` whose message contains every one of `parts`.
template <class E, class F>
void expect_error(F&& f, std::initializer_list<std::string_view> parts) {
  try {
    f();
    ADD_FAILURE() << "expected an exception";
  } catch (const E& e) {
    for (std::string_view p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "message \"" << e.what() << "\" lacks \"" << p << "\"";
  }
}

}  // namespace test_prims_common
