// SPDX-License-Identifier: MIT
// The reductions reduce_sum, reduce_max, reduce_min and reduce_prod over a set of axes
// (`axes=(0, 2)`). They differ only in their monoid (identity and combining function) and the
// dtypes they accept, so they are one class template with one row per primitive, like the unary
// table. reduce_sum is linear; reduce_max/min pass on the tangent at their arg-max/min (averaged
// over ties, as JAX); reduce_prod's jvp runs a transformation, so its class, on the same base, is
// in rt/cumulative.hpp.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <xsimd/xsimd.hpp>

#include "xpr/core/config.hpp"
#include "xpr/core/dtype.hpp"
#include "xpr/core/error.hpp"
#include "xpr/core/ops.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/aval.hpp"
#include "xpr/rt/batching.hpp"
#include "xpr/rt/params.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/prims/binary.hpp"
#include "xpr/rt/prims/compare.hpp"
#include "xpr/rt/prims/convert.hpp"
#include "xpr/rt/prims/detail/transpose.hpp"
#include "xpr/rt/prims/elementwise.hpp"
#include "xpr/rt/prims/shape.hpp"
#include "xpr/rt/trace.hpp"
#include "xpr/rt/zeros.hpp"

namespace xpr::rt {

namespace detail {

// ---- monoids ----------------------------------------------------------------------------------
// `combine` works on elements and, for float and double, on xsimd batches; NaN propagates through
// max and min, as in XLA.

// `linear`: the reduction is its own jvp and has a transpose (reduce_sum); `chooser`: the tangent
// is the chosen element's (reduce_max, reduce_min); neither: reduce_prod, whose jvp is
// ReduceProd's (rt/cumulative.hpp).
struct SumMonoid {
  static constexpr std::string_view name = "sum";
  static constexpr std::string_view primitive_name = "reduce_sum";
  static constexpr Accepts accepts = Accepts::numeric;
  static constexpr bool has_identity = true;
  static constexpr bool linear = true;
  static constexpr bool chooser = false;
  static constexpr bool nan_on_the_side = false;
  template <class T>
  static T identity() {
    return T(0);
  }
  template <class T>
  static T combine(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      // Integer sums wrap around like XLA's instead of overflowing into undefined behaviour.
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
    } else {
      return a + b;
    }
  }
};

struct ProdMonoid {
  static constexpr std::string_view name = "prod";
  static constexpr std::string_view primitive_name = "reduce_prod";
  static constexpr Accepts accepts = Accepts::numeric;
  static constexpr bool has_identity = true;
  static constexpr bool linear = false;
  static constexpr bool chooser = false;
  static constexpr bool nan_on_the_side = false;
  template <class T>
  static T identity() {
    return T(1);
  }
  template <class T>
  static T combine(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      // Wraps around like XLA's (in unsigned arithmetic: a signed overflow is undefined).
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
    } else {
      return a * b;
    }
  }
};

struct MaxMonoid {
  static constexpr std::string_view name = "max";
  static constexpr std::string_view primitive_name = "reduce_max";
  static constexpr Accepts accepts = Accepts::any;
  static constexpr bool has_identity = false;  // for jax.numpy's empty-reduction check
  static constexpr bool linear = false;
  static constexpr bool chooser = true;
  static constexpr bool nan_on_the_side = true;
  template <class T>
  static T identity() {
    if constexpr (std::is_floating_point_v<T>) return -std::numeric_limits<T>::infinity();
    return std::numeric_limits<T>::lowest();  // false for bool
  }
  template <class T>
  static T combine(T a, T b) {
    if constexpr (std::is_arithmetic_v<T>) {
      return static_cast<T>(op::max::number(a, b));
    } else {  // a batch: a + b is NaN exactly when one of them is
      return xsimd::select(xsimd::isnan(a) | xsimd::isnan(b), a + b, xsimd::max(a, b));
    }
  }
  template <class B>
  static B combine_ignoring_nan(const B& a, const B& b) {
    return xsimd::max(a, b);
  }
};

struct MinMonoid {
  static constexpr std::string_view name = "min";
  static constexpr std::string_view primitive_name = "reduce_min";
  static constexpr Accepts accepts = Accepts::any;
  static constexpr bool has_identity = false;
  static constexpr bool linear = false;
  static constexpr bool chooser = true;
  static constexpr bool nan_on_the_side = true;
  template <class T>
  static T identity() {
    if constexpr (std::is_floating_point_v<T>) return std::numeric_limits<T>::infinity();
    return std::numeric_limits<T>::max();  // true for bool
  }
  template <class T>
  static T combine(T a, T b) {
    if constexpr (std::is_arithmetic_v<T>) {
      return static_cast<T>(op::min::number(a, b));
    } else {
      return xsimd::select(xsimd::isnan(a) | xsimd::isnan(b), a + b, xsimd::min(a, b));
    }
  }
  template <class B>
  static B combine_ignoring_nan(const B& a, const B& b) {
    return xsimd::min(a, b);
  }
};

// ---- kernels ----------------------------------------------------------------------------------

/// The monoid's reduction of `n` contiguous elements: four xsimd accumulators for float and
/// double, a plain loop (which the compiler vectorizes) for integers and bool. Max and min run
/// the plain SIMD max/min and note NaNs on the side, which is cheaper than the NaN-propagating
/// combine on every batch.
template <class M, class T>
T reduce_contiguous(const T* p, std::int64_t n) {
  // Halves combined pairwise above 4096 elements (NumPy's pairwise summation, by blocks): the
  // rounding error of a float sum grows with the block and log2(n / 4096), not with n divided
  // by the accumulators (the mean of 2e7 float32 0.1s was 0.6% off with one pass).
  if (n > 4096) {
    const std::int64_t half = n / 2 / 64 * 64;
    return M::combine(reduce_contiguous<M>(p, half), reduce_contiguous<M>(p + half, n - half));
  }
  T r = M::template identity<T>();
  std::int64_t i = 0;
  if constexpr (simd_element_v<T>) {
    using B = xsimd::batch<T>;
    constexpr auto w = static_cast<std::int64_t>(B::size);
    if (n >= w) {
      typename B::batch_bool_type nan(false);
      auto step = [&nan](B& acc, const B& v) {
        if constexpr (M::nan_on_the_side) {
          acc = M::combine_ignoring_nan(acc, v);
          nan = nan | xsimd::isnan(v);
        } else {
          acc = M::combine(acc, v);
        }
      };
      B a0(r), a1(r), a2(r), a3(r);
      for (; i + 4 * w <= n; i += 4 * w) {
        step(a0, B::load_unaligned(p + i));
        step(a1, B::load_unaligned(p + i + w));
        step(a2, B::load_unaligned(p + i + 2 * w));
        step(a3, B::load_unaligned(p + i + 3 * w));
      }
      for (; i + w <= n; i += w) step(a0, B::load_unaligned(p + i));
      if (xsimd::any(nan)) return std::numeric_limits<T>::quiet_NaN();
      a0 = M::combine(M::combine(a0, a1), M::combine(a2, a3));
      alignas(64) T lanes[B::size];
      a0.store_aligned(lanes);
      for (T v : lanes) r = M::combine(r, v);
    }
  }
  for (; i < n; ++i) r = M::combine(r, p[i]);
  return r;
}

/// acc[i] = combine(acc[i], p[i]) for i < n: one row of a reduction over a leading axis.
template <class M, class T>
void combine_rows(T* acc, const T* p, std::int64_t n) {
  std::int64_t i = 0;
  if constexpr (simd_element_v<T>) {
    using B = xsimd::batch<T>;
    constexpr auto w = static_cast<std::int64_t>(B::size);
    for (; i + w <= n; i += w)
      M::combine(B::load_unaligned(acc + i), B::load_unaligned(p + i)).store_unaligned(acc + i);
  }
  for (; i < n; ++i) acc[i] = M::combine(acc[i], p[i]);
}

/// acc[0, C) = the combination of `rows` rows of `cols` elements each starting at `p`, combined
/// into acc, by pairwise halves above 16 rows: a float sum over a leading axis (a column mean
/// over 4e6 rows was 3.9% off in float32 row by row) then errs by log2(rows), as
/// `reduce_contiguous` does along a row. `scratch` holds one row per level (64 rows).
template <class M, class T>
void combine_rows_pairwise(T* acc, const T* p, std::int64_t rows, std::int64_t cols, T* scratch) {
  if (rows <= 16) {
    for (std::int64_t r = 0; r < rows; ++r) combine_rows<M>(acc, p + r * cols, cols);
    return;
  }
  const std::int64_t half = rows / 2;
  combine_rows_pairwise<M>(acc, p, half, cols, scratch);
  std::fill(scratch, scratch + cols, M::template identity<T>());
  combine_rows_pairwise<M>(scratch, p + half * cols, rows - half, cols, scratch + cols);
  combine_rows<M>(acc, scratch, cols);
}

/// out = the reduction of `in` (shape `shape`) over the axes flagged in `reduced`.
///
/// Size-1 axes are dropped and neighbouring axes of the same kind merged, so the common cases
/// become one of two contiguous loops: the innermost group is reduced (a horizontal reduction per
/// output element) or kept (whole rows combined into the output, vertically). An odometer walks
/// the remaining outer groups; the input is read once, in order.
template <class M, class T>
void reduce_kernel(const T* in, const Shape& shape, const std::vector<bool>& reduced, T* out,
                   std::int64_t out_size) {
  std::fill(out, out + out_size, M::template identity<T>());
  if (shape.size() == 0) return;
  std::vector<std::int64_t> sizes;
  std::vector<bool> red;
  for (std::size_t i = 0; i < shape.rank(); ++i) {
    if (shape[i] == 1) continue;
    if (!red.empty() && red.back() == reduced[i]) {
      sizes.back() *= shape[i];
    } else {
      sizes.push_back(shape[i]);
      red.push_back(reduced[i]);
    }
  }
  if (sizes.empty()) {  // one element
    out[0] = M::combine(out[0], in[0]);
    return;
  }
  const std::size_t outer = sizes.size() - 1;
  const std::int64_t inner = sizes.back();
  const bool inner_reduced = red.back();
  // Output strides of the outer groups (0 for reduced groups).
  std::vector<std::int64_t> out_strides(outer, 0);
  std::int64_t s = inner_reduced ? 1 : inner;
  for (std::size_t k = outer; k-- > 0;)
    if (!red[k]) {
      out_strides[k] = s;
      s *= sizes[k];
    }
  // Kept rows under a reduced group (a sum over a leading axis): that group's rows at once,
  // pairwise, rather than one by one into the output.
  const bool row_block = !inner_reduced && outer >= 1 && red[outer - 1];
  const std::size_t walk = row_block ? outer - 1 : outer;
  const std::int64_t rows = row_block ? sizes[outer - 1] : 1;
  std::unique_ptr<T[]> scratch;  // not a std::vector: T may be bool
  if (row_block && rows > 16) scratch = std::make_unique<T[]>(static_cast<std::size_t>(inner) * 64);
  std::vector<std::int64_t> idx(outer, 0);
  std::int64_t o = 0;
  for (const T* p = in;; p += inner * rows) {
    if (inner_reduced)
      out[o] = M::combine(out[o], reduce_contiguous<M>(p, inner));
    else if (row_block)
      combine_rows_pairwise<M>(out + o, p, rows, inner, scratch.get());
    else
      combine_rows<M>(out + o, p, inner);
    std::size_t k = walk;
    for (;;) {
      if (k == 0) return;
      --k;
      if (++idx[k] < sizes[k]) {
        o += out_strides[k];
        break;
      }
      o -= out_strides[k] * (sizes[k] - 1);
      idx[k] = 0;
    }
  }
}

/// Which axes of a rank-`rank` operand `axes` names, after checking them.
std::vector<bool> reduced_axes(const std::string& prim, const Axes& axes, std::size_t rank);

}  // namespace detail

/// reduce_sum / reduce_max / reduce_min / reduce_prod [axes](x): the monoid's reduction of `x`
/// over `axes` (non-negative, distinct). The output drops those axes and keeps the dtype and weak
/// type. reduce_sum and reduce_prod accept numeric dtypes; reduce_max and reduce_min accept every
/// dtype but, like `jnp.max`, reject an empty reduced axis (the operation has no identity).
/// `Reduce<Monoid>` is the primitive; reduce_prod's class (rt/cumulative.hpp) derives from the
/// same base and adds its jvp.
template <class Monoid>
class ReduceBase : public Primitive {
 public:
  constexpr ReduceBase() : Primitive(Monoid::primitive_name) {}

  Arrays impl(std::span<const Array> args, const Params& params) const override {
    check_arity(args.size());
    const Array& x = args[0];
    const Axes& axes = params.get<Axes>("axes");
    ShapedArray out = abstract_eval_one(detail::aval_of(x), axes);
    std::vector<bool> reduced = detail::reduced_axes(name(), axes, x.ndim());
    ArrayBuilder b(out);
    dispatch_dtype(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (Monoid::accepts == detail::Accepts::any || !std::is_same_v<T, bool>)
        detail::reduce_kernel<Monoid>(x.data<T>(), x.shape(), reduced, b.data<T>(),
                                      out.shape.size());
    });
    return {std::move(b).finish()};
  }

  Avals abstract_eval(std::span<const ShapedArray> args, const Params& params) const override {
    check_arity(args.size());
    return {abstract_eval_one(args[0], params.get<Axes>("axes"))};
  }

  /// reduce_sum is linear: ṫ = reduce_sum(t). reduce_max/min (JAX's `_reduce_chooser_jvp_rule`):
  /// with the location mask m = (x == broadcast(ans)), ṫ = reduce_sum(t · m) / reduce_sum(m), the
  /// tangent at the chosen element, averaged over ties. Integer and bool results get zeros.
  std::pair<Arrays, Arrays> jvp(std::span<const Array> primals, std::span<const Array> tangents,
                                const Params& params) const override {
    check_arity(primals.size());
    if constexpr (!Monoid::linear && !Monoid::chooser) {
      return Primitive::jvp(primals, tangents, params);  // reduce_prod: ReduceProd's
    } else {
      return chooser_or_linear_jvp(primals, tangents, params);
    }
  }

  /// reduce_sum is linear; its transpose broadcasts the cotangent back over the reduced axes
  /// (JAX's `_reduce_sum_transpose_rule`). reduce_max, reduce_min and reduce_prod are not linear.
  Cotangents transpose(std::span<const Cotangent> cts, std::span<const LinearArg> args,
                       const Params& params) const override {
    if constexpr (!Monoid::linear) {
      return Primitive::transpose(cts, args, params);
    } else {
      check_arity(args.size());
      const ShapedArray& x = aval_of(args[0]);
      std::vector<bool> reduced = detail::reduced_axes(name(), params.get<Axes>("axes"), x.ndim());
      Axes kept;  // where the cotangent's dimensions sit in x
      for (std::size_t i = 0; i < x.ndim(); ++i)
        if (!reduced[i]) kept.push_back(static_cast<std::int64_t>(i));
      return {detail::fit_cotangent(broadcast_in_dim(*cts[0], x.shape, kept), x)};
    }
  }

 private:
  std::pair<Arrays, Arrays> chooser_or_linear_jvp(std::span<const Array> primals,
                                                  std::span<const Array> tangents,
                                                  const Params& params) const {
    Array ans = bind1(*this, {primals[0]}, params);
    if constexpr (Monoid::linear) return {{ans}, {bind1(*this, {tangents[0]}, params)}};
    if (!core::is_floating(ans.dtype())) return {{ans}, {zeros_like_aval(detail::aval_of(ans))}};
    const Array &x = primals[0], &t = tangents[0];
    Axes kept;  // where ans's dimensions sit in x
    std::vector<bool> reduced = detail::reduced_axes(name(), params.get<Axes>("axes"), x.ndim());
    for (std::size_t i = 0; i < x.ndim(); ++i)
      if (!reduced[i]) kept.push_back(static_cast<std::int64_t>(i));
    Array location = bind1(eq_p, {x, broadcast_in_dim(ans, x.shape(), kept)});
    Array mask = convert_element_type(location, t.dtype(), t.weak_type());
    Array picked = bind1(sum_p(), {bind1(mul_p, {t, mask})}, params);
    Array counts = bind1(sum_p(), {mask}, params);
    return {{std::move(ans)}, {bind1(div_p, {picked, counts})}};
  }

 public:
  /// The batch axis goes first and each reduced axis moves right by one; the result's batch axis
  /// is 0. (Leaving the batch axis in place would save the transpose but change how the kernel
  /// groups the elements, and so the rounding of a sum: with the batch axis outermost each
  /// example is reduced exactly as alone, which the law tests check bit for bit.)
  std::pair<Arrays, BatchDims> batch(std::span<const Array> args, std::span<const BatchDim> dims,
                                     std::int64_t, const Params& params) const override {
    check_arity(args.size());
    if (!dims[0]) return {rt::bind(*this, args, params), {std::nullopt}};
    const std::int64_t b = *dims[0];
    const Axes& axes = params.get<Axes>("axes");
    // Malformed axes are reported against the per-example shape, as without vmap.
    (void)abstract_eval_one(detail::unbatched_aval(detail::aval_of(args[0]), b), axes);
    Axes new_axes;
    for (std::int64_t a : axes) new_axes.push_back(a + 1);
    return {{bind1(*this, {moveaxis(args[0], b, 0)}, {{"axes", std::move(new_axes)}})}, {0}};
  }

 protected:
  ~ReduceBase() = default;  // a base only: the primitives are the final classes

 private:
  // reduce_sum_p is defined after this template; naming it through a function defers the lookup.
  static const Primitive& sum_p();
  void check_arity(std::size_t n) const {
    if (n != 1) throw core::type_error(name() + " expected 1 operand, found " + std::to_string(n));
  }
  ShapedArray abstract_eval_one(const ShapedArray& x, const Axes& axes) const {
    detail::check_accepts(name(), x.dtype, Monoid::accepts);
    std::vector<bool> reduced = detail::reduced_axes(name(), axes, x.ndim());
    std::vector<std::int64_t> dims;
    for (std::size_t i = 0; i < x.ndim(); ++i) {
      if (!reduced[i]) {
        dims.push_back(x.shape[i]);
      } else if (!Monoid::has_identity && x.shape[i] == 0) {
        throw core::shape_error("zero-size array to reduction operation " +
                                std::string(Monoid::name) +
                                " which has no identity: expected reduced axes of size >= 1, "
                                "found axis " +
                                std::to_string(i) + " of size 0 in shape " + x.shape.str());
      }
    }
    return {Shape(std::move(dims)), x.dtype, x.weak_type};
  }
};

template <class Monoid>
class Reduce final : public ReduceBase<Monoid> {};

// Compiled-library mode (XPR_COMPILED_LIB, the xpr::runtime library): these primitives' rules
// and kernels are instantiated once, in src/runtime.cpp, not in every translation unit.
#ifdef XPR_COMPILED_LIB
extern template class ReduceBase<detail::SumMonoid>;
extern template class ReduceBase<detail::MaxMonoid>;
extern template class ReduceBase<detail::MinMonoid>;
extern template class ReduceBase<detail::ProdMonoid>;
#endif

//                                      monoid
inline constinit const Reduce<detail::SumMonoid> reduce_sum_p{};
inline constinit const Reduce<detail::MaxMonoid> reduce_max_p{};
inline constinit const Reduce<detail::MinMonoid> reduce_min_p{};

/// What the transpose rules of binary.hpp, select.hpp and shape.hpp sum with
/// (prims/detail/transpose.hpp).
template <class T>
const Primitive& detail::ReduceSumHook<T>::primitive() {
  return reduce_sum_p;
}

template <class Monoid>
const Primitive& ReduceBase<Monoid>::sum_p() {
  return rt::reduce_sum_p;
}

}  // namespace xpr::rt

#if XPR_DEFINITIONS

namespace xpr::rt::detail {

XPR_FUNC std::vector<bool> reduced_axes(const std::string& prim, const Axes& axes,
                                        std::size_t rank) {
  std::vector<bool> flags(rank, false);
  auto r = static_cast<std::int64_t>(rank);
  for (std::int64_t a : axes) {
    if (a < 0 || a >= r)
      throw core::index_error(prim + ": axis " + std::to_string(a) +
                              " is out of bounds for array of rank " + std::to_string(rank) +
                              " (expected 0 <= axis < " + std::to_string(rank) + ")");
    if (flags[static_cast<std::size_t>(a)])
      throw core::value_error(prim + ": expected distinct axes, found axis " + std::to_string(a) +
                              " more than once");
    flags[static_cast<std::size_t>(a)] = true;
  }
  return flags;
}

}  // namespace xpr::rt::detail
#endif  // XPR_DEFINITIONS
