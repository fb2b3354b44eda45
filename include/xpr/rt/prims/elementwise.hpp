// SPDX-License-Identifier: MIT
// What elementwise primitives share: abstract evaluation (JAX's `defvectorized` and
// `defbroadcasting`) and the vectorized eager kernels (xsimd batches with a padded tail, so every
// element goes through the same instruction sequence).
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "xpr/core/config.hpp"
#include "xpr/core/dtype.hpp"
#include "xpr/core/error.hpp"
#include "xpr/core/ops.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/aval.hpp"
#include "xpr/rt/primitive.hpp"

namespace xpr::rt::detail {

template <class T>
constexpr bool simd_element_v = std::is_same_v<T, float> || std::is_same_v<T, double>;

/// Which dtypes an elementwise primitive accepts (shared with the compile-time tier).
using Accepts = core::Accepts;

/// Whether a kernel for element type `T` is needed by a primitive accepting `accepts`.
template <class T>
constexpr bool accepts_v(Accepts accepts) {
  if constexpr (std::is_same_v<T, bool>)
    return accepts == Accepts::any || accepts == Accepts::integral;
  if constexpr (std::is_integral_v<T>) return accepts != Accepts::floating;
  return accepts != Accepts::integral;
}

void check_accepts(const std::string& prim, DType t, Accepts accepts);

/// abstract_eval of a unary elementwise primitive: the output has the operand's shape and dtype.
ShapedArray unary_aval(const std::string& prim, std::span<const ShapedArray> args, Accepts accepts);

/// abstract_eval of an n-ary elementwise primitive: equal dtypes, and equal shapes except that a
/// rank-0 operand stands for any shape (how a scalar literal meets an array, `mul c 3.0:f64[]`).
ShapedArray nary_aval(const std::string& prim, std::span<const ShapedArray> args, Accepts accepts,
                      std::size_t first_same_dtype = 0);

// ---- kernels ----------------------------------------------------------------------------------

/// Calls `f(std::bool_constant<flags>...)`: which operands are rank-0 is decided once, outside the
/// loop, so each loop indexes with constant strides and the compiler can vectorize it.
template <class F, class... Flags>
void with_scalar_flags(F&& f, bool first, Flags... rest) {
  auto bind_first = [&](auto c) {
    if constexpr (sizeof...(Flags) == 0) {
      f(c);
    } else {
      with_scalar_flags([&](auto... cs) { f(c, cs...); }, rest...);
    }
  };
  if (first)
    bind_first(std::true_type{});
  else
    bind_first(std::false_type{});
}

/// out[i] = f(in[i]). `f` takes xsimd batches for float and double, plain values otherwise.
template <class T, class R = T, class F>
void map_unary(const T* in, R* out, std::size_t n, F f) {
  if constexpr (simd_element_v<T> && std::is_same_v<T, R>) {
    using B = xsimd::batch<T>;
    std::size_t i = 0;
    for (; i + B::size <= n; i += B::size) f(B::load_unaligned(in + i)).store_unaligned(out + i);
    if (i < n) {  // padded tail: same code path as the body
      alignas(64) T buf[B::size] = {};
      std::copy(in + i, in + n, buf);
      f(B::load_aligned(buf)).store_aligned(buf);
      std::copy(buf, buf + (n - i), out + i);
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<R>(f(in[i]));
  }
}

/// out[i] = f(a[i or 0], b[i or 0]): a rank-0 operand is broadcast.
template <class T, class R = T, class F>
void map_binary(const T* a, bool a_scalar, const T* b, bool b_scalar, R* out, std::size_t n, F f) {
  if constexpr (simd_element_v<T> && std::is_same_v<T, R>) {
    using B = xsimd::batch<T>;
    // Only a rank-0 operand is read at index 0 here: an empty array has no element 0.
    const B as = a_scalar ? B(a[0]) : B(T(0)), bs = b_scalar ? B(b[0]) : B(T(0));
    auto load = [](const T* p, bool scalar, const B& s, std::size_t i) {
      return scalar ? s : B::load_unaligned(p + i);
    };
    std::size_t i = 0;
    if (!a_scalar && !b_scalar) {
      for (; i + B::size <= n; i += B::size)
        f(B::load_unaligned(a + i), B::load_unaligned(b + i)).store_unaligned(out + i);
    } else {
      for (; i + B::size <= n; i += B::size)
        f(load(a, a_scalar, as, i), load(b, b_scalar, bs, i)).store_unaligned(out + i);
    }
    if (i < n) {
      alignas(64) T ba[B::size] = {}, bb[B::size] = {};
      for (std::size_t j = i; j < n; ++j) {
        ba[j - i] = a[a_scalar ? 0 : j];
        bb[j - i] = b[b_scalar ? 0 : j];
      }
      f(B::load_aligned(ba), B::load_aligned(bb)).store_aligned(ba);
      std::copy(ba, ba + (n - i), out + i);
    }
  } else {
    with_scalar_flags(
        [&](auto sa, auto sb) {
          for (std::size_t i = 0; i < n; ++i)
            out[i] = static_cast<R>(f(a[sa ? 0 : i], b[sb ? 0 : i]));
        },
        a_scalar, b_scalar);
  }
}

/// out[i] = f(a[i or 0], b[i or 0], c[i or 0]) as a plain loop (select_n: the operand types
/// differ, so there is no single batch type); the compiler vectorizes it.
template <class A, class B, class C, class R, class F>
void map_ternary(const A* a, bool a_scalar, const B* b, bool b_scalar, const C* c, bool c_scalar,
                 R* out, std::size_t n, F f) {
  with_scalar_flags(
      [&](auto sa, auto sb, auto sc) {
        for (std::size_t i = 0; i < n; ++i)
          out[i] = static_cast<R>(f(a[sa ? 0 : i], b[sb ? 0 : i], c[sc ? 0 : i]));
      },
      a_scalar, b_scalar, c_scalar);
}

}  // namespace xpr::rt::detail

#if XPR_DEFINITIONS

namespace xpr::rt::detail {

XPR_FUNC void check_accepts(const std::string& prim, DType t, Accepts accepts) {
  bool ok = accepts == Accepts::any || (accepts == Accepts::numeric && !core::is_bool(t)) ||
            (accepts == Accepts::floating && core::is_floating(t)) ||
            (accepts == Accepts::integral && !core::is_floating(t));
  if (!ok)
    throw core::dtype_error(
        prim + " does not accept dtype " + std::string(core::name(t)) + ": expected " +
        (accepts == Accepts::floating   ? "a floating dtype (float32 or float64)"
         : accepts == Accepts::integral ? "a bool or integer dtype (bool, int32 or int64)"
                                        : "a numeric dtype (int32, int64, float32 or float64)"));
}

XPR_FUNC ShapedArray unary_aval(const std::string& prim, std::span<const ShapedArray> args,
                                Accepts accepts) {
  if (args.size() != 1)
    throw core::type_error(prim + " expected 1 operand, found " + std::to_string(args.size()));
  check_accepts(prim, args[0].dtype, accepts);
  return args[0];
}

XPR_FUNC ShapedArray nary_aval(const std::string& prim, std::span<const ShapedArray> args,
                               Accepts accepts, std::size_t first_same_dtype) {
  const ShapedArray* big = nullptr;
  bool weak = true;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const ShapedArray& a = args[i];
    if (i >= first_same_dtype) {
      check_accepts(prim, a.dtype, accepts);
      if (a.dtype != args[first_same_dtype].dtype)
        throw core::dtype_error(prim + " requires arguments to have the same dtype, found " +
                                std::string(core::name(args[first_same_dtype].dtype)) + " and " +
                                std::string(core::name(a.dtype)));
      weak = weak && a.weak_type;
    }
    if (a.ndim() == 0) continue;
    if (big && big->shape != a.shape)
      throw core::shape_error(prim +
                              " requires arguments to have the same shape (or rank 0), "
                              "found shapes " +
                              big->shape.str() + " and " + a.shape.str());
    big = &a;
  }
  ShapedArray out = big ? *big : args[first_same_dtype];
  out.dtype = args[first_same_dtype].dtype;
  out.weak_type = weak;
  return out;
}

}  // namespace xpr::rt::detail
#endif  // XPR_DEFINITIONS
