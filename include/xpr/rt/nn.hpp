// SPDX-License-Identifier: MIT
// The numerically careful functions every training loop needs, as JAX writes them:
// `jnp.logaddexp` and, in `xpr::nn`, `jax.nn`'s `relu`, `softplus`, `sigmoid`, `logsumexp`,
// `softmax` and `log_softmax`. They are compositions of primitives, not primitives: a jaxpr shows
// their equations. `logaddexp` and `relu` carry JAX's custom JVP rules (the derivative the
// composition's own rules would give differs from JAX's where two operands tie or at 0); the
// reductions subtract a `stop_gradient`ed maximum, which changes neither value nor derivative
// but keeps `exp` from overflowing. Built on custom_jvp, so this file sits above
// rt/custom_derivatives.hpp (docs/design.md, "Layering").
#pragma once

#include <cstdint>
#include <limits>
#include <tuple>
#include <utility>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/core/ops.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/numpy_reductions.hpp"
#if XPR_DEFINITIONS  // what the definitions below use; compiled-mode units need none of it
#include "xpr/rt/creation.hpp"
#include "xpr/rt/custom_derivatives.hpp"
#include "xpr/rt/numpy_elementwise.hpp"
#include "xpr/rt/numpy_shape.hpp"
#include "xpr/rt/prims/stop_gradient.hpp"
#endif

namespace xpr::rt {

/// `jnp.logaddexp(x1, x2)`: `log(exp(x1) + exp(x2))` computed as `max + log1p(exp(-|x1 - x2|))`,
/// so it neither overflows nor loses the small term; operands broadcast. Its derivative is JAX's
/// rule, `t1 exp(x1 - out) + t2 exp(x2 - out)`: one half each where the operands tie.
Array logaddexp(const Array& x1, const Array& x2);

namespace nn {

/// `jax.nn.relu(x)`: `max(x, 0)`, with JAX's derivative: 0 at 0 (`maximum` alone would give 1/2).
Array relu(const Array& x);

/// `jax.nn.softplus(x)`: `log(1 + exp(x))` as `logaddexp(x, 0)`: exact for large and very
/// negative `x`.
Array softplus(const Array& x);

/// `jax.nn.sigmoid(x)`: `1 / (1 + exp(-x))`, the `logistic` primitive.
Array sigmoid(const Array& x);

/// `jax.nn.logsumexp(x, axis, keepdims)` (`jax.scipy.special.logsumexp`): `log(sum(exp(x)))`
/// over `axis` (every axis by default) with the maximum subtracted first, so large values do not
/// overflow; `-inf` over an empty or all-`-inf` axis.
Array logsumexp(const Array& x, const AxisArg& axis = {}, bool keepdims = false);

/// `jax.nn.softmax(x, axis=-1)`: `exp(x) / sum(exp(x))` along `axis`, shifted by the maximum.
Array softmax(const Array& x, const AxisArg& axis = std::int64_t{-1});

/// `jax.nn.log_softmax(x, axis=-1)`: `x - logsumexp(x)` along `axis`, computed from the shifted
/// values so that it stays finite where `log(softmax(x))` would give `-inf`.
Array log_softmax(const Array& x, const AxisArg& axis = std::int64_t{-1});

}  // namespace nn

}  // namespace xpr::rt

namespace xpr {
using rt::logaddexp;
namespace nn = rt::nn;
}  // namespace xpr

#if XPR_DEFINITIONS

namespace xpr::rt {

namespace detail {

/// JAX's `_replace_inf`: `+inf` replaced by 0, so that `exp(x - out)` is 1, not NaN, where an
/// operand and the result are both `+inf`.
inline Array replace_posinf(const Array& x) {
  return where(x == std::numeric_limits<double>::infinity(), zeros_like(x), x);
}

/// The maximum of `x` over `axis` with its axes kept, `-inf` where there is nothing to reduce
/// (`jnp.max(..., initial=-inf, keepdims=True)`).
inline Array max_keepdims(const Array& x, const AxisArg& axis, const char* fn) {
  const Axes axes = axis.canonical(fn, x.ndim());
  if (x.size() != 0) return max(x, axes, true);
  std::vector<std::int64_t> kept = x.shape().dims();
  for (std::int64_t a : axes) kept[static_cast<std::size_t>(a)] = 1;
  return full(Shape(std::move(kept)), -std::numeric_limits<double>::infinity(), x.dtype());
}

}  // namespace detail

XPR_FUNC Array logaddexp(const Array& x1, const Array& x2) {
  static const auto f = custom_jvp(
      [](const Array& a, const Array& b) {
        const Array amax = maximum(a, b);
        const Array delta = a - b;
        // A NaN difference is a NaN operand (its sum propagates it) or two infinities of one
        // sign (their sum is that infinity).
        return where(delta != delta, a + b, amax + log1p(exp(-abs(delta))));
      },
      [](const std::tuple<Array, Array>& primals, const std::tuple<Array, Array>& tangents) {
        const auto& [a, b] = primals;
        const auto& [ta, tb] = tangents;
        Array out = logaddexp(a, b);
        const Array o = detail::replace_posinf(out);
        Array t = ta * exp(detail::replace_posinf(a) - o) + tb * exp(detail::replace_posinf(b) - o);
        return std::pair{std::move(out), std::move(t)};
      });
  return f(x1, x2);
}

namespace nn {

XPR_FUNC Array relu(const Array& x) {
  static const auto f =
      custom_jvp([](const Array& a) { return maximum(a, zeros_like(a)); },
                 [](const std::tuple<Array>& primals, const std::tuple<Array>& tangents) {
                   const Array& a = std::get<0>(primals);
                   const Array& t = std::get<0>(tangents);
                   return std::pair{relu(a), where(a > 0, t, zeros_like(t))};
                 });
  return f(x);
}

XPR_FUNC Array softplus(const Array& x) { return logaddexp(x, zeros_like(x)); }

XPR_FUNC Array sigmoid(const Array& x) { return logistic(x); }

XPR_FUNC Array logsumexp(const Array& x, const AxisArg& axis, bool keepdims) {
  // JAX's shift: the maximum, replaced by 0 where it is not finite (an all-`-inf` row then gives
  // log(0) = -inf and an infinite one inf, where `-inf - -inf` would be NaN), and cut off from
  // differentiation: it cancels in value and in derivative.
  const Array m = detail::max_keepdims(x, axis, "logsumexp");
  const Array amax = stop_gradient(where(isfinite(m), m, zeros_like(m)));
  const Array out = log(sum(exp(x - amax), axis, true)) + amax;
  return keepdims ? out : squeeze(out, axis.canonical("logsumexp", x.ndim()));
}

XPR_FUNC Array softmax(const Array& x, const AxisArg& axis) {
  const Array unnormalized = exp(x - stop_gradient(detail::max_keepdims(x, axis, "softmax")));
  return unnormalized / sum(unnormalized, axis, true);
}

XPR_FUNC Array log_softmax(const Array& x, const AxisArg& axis) {
  const Array shifted = x - stop_gradient(detail::max_keepdims(x, axis, "log_softmax"));
  return shifted - log(sum(exp(shifted), axis, true));
}

}  // namespace nn

}  // namespace xpr::rt

#endif  // XPR_DEFINITIONS
