// SPDX-License-Identifier: MIT
// integer_pow[y](x): `x ** y` for an integer `y` fixed where the operation is written, computed by
// repeated squaring as XLA does (`x * x` is exact where `pow(x, 2.0)` need not be). jnp.square and
// jnp.power with a C++ integer exponent bind it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <type_traits>

#include "xpr/core/dtype.hpp"
#include "xpr/core/error.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/params.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/prims/elementwise.hpp"
#include "xpr/rt/trace.hpp"
#include "xpr/rt/zeros.hpp"

namespace xpr::rt {

namespace detail {
// The element type of an element or of an xsimd batch.
template <class T>
struct element_of {
  using type = typename T::value_type;
};
template <class T>
requires std::is_arithmetic_v<T>
struct element_of<T> {
  using type = T;
};

/// `x ** y` by binary exponentiation on one element or an xsimd batch; `x ** 0 == 1` (even for
/// NaN), negative `y` gives `1 / x ** -y`. Integers wrap around on overflow, as in XLA.
template <class T>
T integer_power(const T& x, std::int64_t y) {
  const std::uint64_t m0 =
      y < 0 ? std::uint64_t(0) - static_cast<std::uint64_t>(y) : static_cast<std::uint64_t>(y);
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    U acc = 1, base = static_cast<U>(x);
    for (std::uint64_t m = m0; m; m >>= 1) {
      if (m & 1u) acc = static_cast<U>(acc * base);
      base = static_cast<U>(base * base);
    }
    return static_cast<T>(acc);
  } else {
    using E = typename element_of<T>::type;
    T acc(E(1)), base = x;
    for (std::uint64_t m = m0; m; m >>= 1) {
      if (m & 1u) acc = acc * base;
      if (m > 1) base = base * base;
    }
    return y < 0 ? T(E(1)) / acc : acc;
  }
}
}  // namespace detail

/// integer_pow[y](x) for int32, int64, float32 and float64 `x`; integer `x` needs `y >= 0`.
class IntegerPow final : public Primitive {
 public:
  constexpr IntegerPow() : Primitive("integer_pow") {}

  Arrays impl(std::span<const Array> args, const Params& params) const override {
    if (args.size() != 1)
      throw core::type_error("integer_pow expected 1 operand, found " +
                             std::to_string(args.size()));
    ArrayBuilder out(abstract_eval_one(std::span(&args[0].aval(), 1), params));
    const Array& x = args[0];
    const std::int64_t y = params.get<std::int64_t>("y");
    dispatch_dtype(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!std::is_same_v<T, bool>) {
        detail::map_unary(x.data<T>(), out.data<T>(), static_cast<std::size_t>(x.size()),
                          [y](const auto& v) { return detail::integer_power(v, y); });
      }
    });
    return {std::move(out).finish()};
  }

  Avals abstract_eval(std::span<const ShapedArray> args, const Params& params) const override {
    return {abstract_eval_one(args, params)};
  }

  /// d(x^y) = y x^(y-1) dx.
  std::pair<Arrays, Arrays> jvp(std::span<const Array> primals, std::span<const Array> tangents,
                                const Params& params) const override {
    return jvp_rule(primals[0], tangents[0], params.get<std::int64_t>("y"));
  }

  std::pair<Arrays, BatchDims> batch(std::span<const Array> args, std::span<const BatchDim> dims,
                                     std::int64_t, const Params& params) const override {
    return {rt::bind(*this, args, params), {dims[0]}};
  }

 private:
  // A template, so the jax.numpy operators it uses resolve where it is used.
  template <class A>
  std::pair<Arrays, Arrays> jvp_rule(const A& x, const A& t, std::int64_t y) const {
    A ans = bind1(*this, {x}, {{"y", y}});
    // Integer results are piecewise constant: zero tangent (JAX's float0); `t * (y * ...)` below
    // would promote an integer tangent to float.
    if (!core::is_floating(ans.dtype())) return {{ans}, {zeros_like_aval(ans.aval())}};
    if (y == 0) return {{ans}, {t * 0}};
    if (y == std::numeric_limits<std::int64_t>::min())
      throw core::value_error(
          "integer_pow: the derivative of x ** y needs x ** (y - 1), which "
          "is not an int64 power for y = " +
          std::to_string(y) + ": expected y > INT64_MIN");
    // `y` as a C++ integer: a double would make the tangent of a weak float32 `x` float64.
    A d = y == 1 ? t : t * (y * bind1(*this, {x}, {{"y", y - 1}}));
    return {{std::move(ans)}, {std::move(d)}};
  }

  ShapedArray abstract_eval_one(std::span<const ShapedArray> args, const Params& params) const {
    ShapedArray out = detail::unary_aval(name(), args, detail::Accepts::numeric);
    const std::int64_t y = params.get<std::int64_t>("y");
    if (y < 0 && core::is_integer(out.dtype))
      throw core::dtype_error(
          "integer_pow: integers cannot be raised to negative powers: expected "
          "y >= 0 for dtype " +
          std::string(core::name(out.dtype)) + ", found y=" + std::to_string(y));
    return out;
  }
};

inline constinit const IntegerPow integer_pow_p{};

}  // namespace xpr::rt

// The jvp rule above uses jax.numpy-level operators; included last, after integer_pow_p, which
// numpy_elementwise.hpp builds on (so this header compiles on its own).
#include "xpr/rt/numpy_elementwise.hpp"
