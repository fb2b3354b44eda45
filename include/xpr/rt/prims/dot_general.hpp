// SPDX-License-Identifier: MIT
// dot_general: the tensor contraction behind dot, matmul, einsum-style products. The eager kernel
// lays both operands out as row-major (batch, free, contract) and (batch, contract, free) matrices,
// copying only when they are not, and calls Eigen's GEMM once per batch element. Bilinear: its
// jvp is two dot_generals, its transpose in either operand one dot_general and a transpose;
// batching adds a leading batch dimension.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/core/dtype.hpp"
#include "xpr/core/error.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/aval.hpp"
#include "xpr/rt/batching.hpp"
#include "xpr/rt/numpy_shape.hpp"
#include "xpr/rt/params.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/prims/binary.hpp"
#include "xpr/rt/prims/detail/strided_copy.hpp"
#include "xpr/rt/prims/detail/transpose.hpp"
#include "xpr/rt/prims/shape.hpp"
#include "xpr/rt/trace.hpp"
#include "xpr/rt/zeros.hpp"

#if XPR_DEFINITIONS
#include <Eigen/Core>
#endif

namespace xpr::rt {

namespace detail {

/// What dot_general's shape rule learns about one application: the free dimensions of each
/// operand and the sizes of the (batch, free, contract) matrices.
struct DotLayout {
  Axes lhs_free, rhs_free;
  std::int64_t batch = 1, m = 1, n = 1, k = 1;
  ShapedArray out;
};

/// Checks `dn` against the operands (JAX's `_dot_general_shape_rule`) and derives the layout.
DotLayout dot_layout(const ShapedArray& lhs, const ShapedArray& rhs, const DotDimensionNumbers& dn);

}  // namespace detail

/// dot_general[dimension_numbers](lhs, rhs): contracts lhs_contracting with rhs_contracting
/// dimensions pairwise, and runs over the paired batch dimensions:
///   out[b, i, j] = Σ_k lhs[b, i, k] · rhs[b, k, j]
/// with b, i, j, k multi-indices over batch, lhs free, rhs free and contracting dimensions. The
/// output's dimensions are the batch dimensions (in lhs_batch order), then lhs's and rhs's free
/// dimensions in order. Both operands have one dtype (jax.numpy promotes before); bool products
/// are logical (or of ands), as in XLA.
class DotGeneral final : public Primitive {
 public:
  constexpr DotGeneral() : Primitive("dot_general") {}

  XPR_MEMBER Arrays impl(std::span<const Array> args, const Params& params) const override;

  XPR_MEMBER Avals abstract_eval(std::span<const ShapedArray> args,
                                 const Params& params) const override;

  /// Bilinear: ṫ = dot_general(ṫ_lhs, rhs) + dot_general(lhs, ṫ_rhs). Integer and bool products
  /// are piecewise constant: zero tangent.
  XPR_MEMBER std::pair<Arrays, Arrays> jvp(std::span<const Array> primals,
                                           std::span<const Array> tangents,
                                           const Params& params) const override;

  /// With symbolic zeros: only the products with nonzero tangents.
  XPR_MEMBER std::pair<Arrays, Tangents> jvp_symbolic(std::span<const Array> primals,
                                                      std::span<const Tangent> tangents,
                                                      const Params& params) const override;

  /// Linear in either operand while the other is known (JAX's `_dot_general_transpose_lhs` and
  /// `_rhs`): the cotangent contracted with the known operand over the latter's free dimensions,
  /// its dimensions then permuted into the undefined operand's layout.
  XPR_MEMBER Cotangents transpose(std::span<const Cotangent> cts, std::span<const LinearArg> args,
                                  const Params& params) const override;

  /// Each operand gets its batch axis first (an unbatched one is broadcast), which becomes a new
  /// leading batch dimension of both, so the output's batch axis is 0. (Turning a lone batch
  /// axis into a free dimension, as JAX does, saves the broadcast but changes the GEMM's shape
  /// and so its rounding; this way each example is computed exactly as alone.)
  XPR_MEMBER std::pair<Arrays, BatchDims> batch(std::span<const Array> args,
                                                std::span<const BatchDim> dims,
                                                std::int64_t axis_size,
                                                const Params& params) const override;

 private:
  /// The cotangent of `x` in `dot_general(x, y)` (of `x` in `dot_general(y, x)` when `swap_ans`,
  /// with `dn` swapped to match): `g`, laid out (batch, x free, y free) or (batch, y free, x free),
  /// contracted with `y` over y's free dimensions, which leaves (batch, x free, x contracting in
  /// the order of y's contracting dimensions); a transpose restores x's order.
  XPR_MEMBER Array transpose_lhs(const Array& g, const ShapedArray& x, const Array& y,
                                 const DotDimensionNumbers& dn, bool swap_ans) const;

  void check_arity(std::size_t n) const {
    if (n != 2)
      throw core::type_error("dot_general expected 2 operands, found " + std::to_string(n));
  }
};

inline constinit const DotGeneral dot_general_p{};

/// `lax.dot_general(lhs, rhs, dimension_numbers)`: binds dot_general on operands of one dtype.
inline Array dot_general(const Array& lhs, const Array& rhs, const DotDimensionNumbers& dn) {
  return bind1(dot_general_p, {lhs, rhs}, {{"dimension_numbers", dn}});
}

}  // namespace xpr::rt

#if XPR_DEFINITIONS

namespace xpr::rt::detail {

XPR_FUNC std::string dims_str(const Axes& a) {
  std::string s = "(";
  for (std::size_t i = 0; i < a.size(); ++i) s += (i ? ", " : "") + std::to_string(a[i]);
  return s + (a.size() == 1 ? ",)" : ")");
}

XPR_FUNC DotLayout dot_layout(const ShapedArray& lhs, const ShapedArray& rhs,
                              const DotDimensionNumbers& dn) {
  if (lhs.dtype != rhs.dtype)
    throw core::dtype_error("dot_general requires operands of the same dtype, found " +
                            std::string(core::name(lhs.dtype)) + " and " +
                            std::string(core::name(rhs.dtype)));
  if (dn.lhs_batch.size() != dn.rhs_batch.size())
    throw core::shape_error(
        "dot_general requires equal numbers of lhs and rhs batch dimensions, found "
        "lhs_batch=" +
        dims_str(dn.lhs_batch) + " and rhs_batch=" + dims_str(dn.rhs_batch));
  if (dn.lhs_contracting.size() != dn.rhs_contracting.size())
    throw core::shape_error(
        "dot_general requires equal numbers of lhs and rhs contracting dimensions, found "
        "lhs_contracting=" +
        dims_str(dn.lhs_contracting) + " and rhs_contracting=" + dims_str(dn.rhs_contracting));
  // Marks each side's batch and contracting dimensions, checking range and distinctness.
  auto mark = [](const ShapedArray& x, const char* side, const Axes& batch, const Axes& contract) {
    std::vector<bool> used(x.ndim(), false);
    auto r = static_cast<std::int64_t>(x.ndim());
    for (const Axes* dims : {&batch, &contract})
      for (std::int64_t d : *dims) {
        if (d < 0 || d >= r)
          throw core::index_error("dot_general: " + std::string(side) + " dimension " +
                                  std::to_string(d) + " is out of bounds for " + side +
                                  " of rank " + std::to_string(r) + " (expected 0 <= dimension < " +
                                  std::to_string(r) + ")");
        if (used[static_cast<std::size_t>(d)])
          throw core::value_error(
              "dot_general: expected distinct batch and contracting "
              "dimensions, found " +
              std::string(side) + " dimension " + std::to_string(d) + " more than once");
        used[static_cast<std::size_t>(d)] = true;
      }
    Axes free;
    for (std::int64_t d = 0; d < r; ++d)
      if (!used[static_cast<std::size_t>(d)]) free.push_back(d);
    return free;
  };
  DotLayout l;
  l.lhs_free = mark(lhs, "lhs", dn.lhs_batch, dn.lhs_contracting);
  l.rhs_free = mark(rhs, "rhs", dn.rhs_batch, dn.rhs_contracting);
  auto pair_sizes = [&](const Axes& ld, const Axes& rd, const char* what) {
    std::int64_t p = 1;
    for (std::size_t i = 0; i < ld.size(); ++i) {
      std::int64_t a = lhs.shape[static_cast<std::size_t>(ld[i])];
      std::int64_t b = rhs.shape[static_cast<std::size_t>(rd[i])];
      if (a != b)
        throw core::shape_error("dot_general requires " + std::string(what) +
                                " dimensions to have the same size, found lhs dimension " +
                                std::to_string(ld[i]) + " of size " + std::to_string(a) +
                                " and rhs dimension " + std::to_string(rd[i]) + " of size " +
                                std::to_string(b) + " (lhs shape " + lhs.shape.str() +
                                ", rhs shape " + rhs.shape.str() + ")");
      p *= a;
    }
    return p;
  };
  l.batch = pair_sizes(dn.lhs_batch, dn.rhs_batch, "batch");
  l.k = pair_sizes(dn.lhs_contracting, dn.rhs_contracting, "contracting");
  std::vector<std::int64_t> dims;
  for (std::int64_t d : dn.lhs_batch) dims.push_back(lhs.shape[static_cast<std::size_t>(d)]);
  for (std::int64_t d : l.lhs_free) {
    dims.push_back(lhs.shape[static_cast<std::size_t>(d)]);
    l.m *= dims.back();
  }
  for (std::int64_t d : l.rhs_free) {
    dims.push_back(rhs.shape[static_cast<std::size_t>(d)]);
    l.n *= dims.back();
  }
  l.out = {Shape(std::move(dims)), lhs.dtype, lhs.weak_type && rhs.weak_type};
  return l;
}

XPR_FUNC Axes concat_axes(std::initializer_list<const Axes*> parts) {
  Axes out;
  for (const Axes* p : parts) out.insert(out.end(), p->begin(), p->end());
  return out;
}

XPR_FUNC bool is_identity(const Axes& perm) {
  for (std::size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<std::int64_t>(i)) return false;
  return true;
}

/// One operand as row-major (batch, rows, cols) matrices: `data` itself when its dimensions are
/// already in that order, else a copy in `scratch`. (One storage order keeps the number of Eigen
/// GEMM instantiations, and so every includer's compile time, down; a copy costs O(size), the
/// product O(size · other free size).)
template <class T>
const T* as_matrices(const T* data, const Shape& shape, const Axes& batch, const Axes& rows_dims,
                     const Axes& cols_dims, std::vector<T>& scratch) {
  Axes perm = concat_axes({&batch, &rows_dims, &cols_dims});
  if (is_identity(perm)) return data;
  scratch.resize(static_cast<std::size_t>(shape.size()));
  permute_copy(data, shape.span(), std::span<const std::int64_t>(perm), scratch.data());
  return scratch.data();
}

/// out[b] = lhs[b] · rhs[b] for every batch element (all row-major): Eigen's GEMM for float and
/// double; for integers a loop whose contiguous inner loop the compiler vectorizes, with
/// wrap-around arithmetic as in XLA.
template <class T>
void batched_gemm(const T* lhs, const T* rhs, T* out, const DotLayout& l) {
  const std::int64_t m = l.m, n = l.n, k = l.k;
  if (k == 0) {  // an empty sum
    std::fill(out, out + l.batch * m * n, T(0));
    return;
  }
  for (std::int64_t b = 0; b < l.batch; ++b) {
    const T* pa = lhs + b * m * k;
    const T* pb = rhs + b * k * n;
    T* pc = out + b * m * n;
    if constexpr (std::is_floating_point_v<T>) {
      using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
      using Vector = Eigen::Matrix<T, Eigen::Dynamic, 1>;
      using Index = Eigen::Index;
      if (n == 1) {
        // A matrix times a vector (a dot product when m == 1): each row dotted with the vector
        // in Eigen's vectorized kernel, one partial sum per lane, as XLA's dot. Seen as a
        // row-major k x 1 matrix the vector has a stride Eigen does not know to be 1, and its
        // product summed every row in one scalar running sum (an f32 dot of 2e7 ones gave 2^24).
        Eigen::Map<Vector>(pc, static_cast<Index>(m)).noalias() =
            Eigen::Map<const Matrix>(pa, static_cast<Index>(m), static_cast<Index>(k)) *
            Eigen::Map<const Vector>(pb, static_cast<Index>(k));
      } else {
        Eigen::Map<Matrix>(pc, static_cast<Index>(m), static_cast<Index>(n)).noalias() =
            Eigen::Map<const Matrix>(pa, static_cast<Index>(m), static_cast<Index>(k)) *
            Eigen::Map<const Matrix>(pb, static_cast<Index>(k), static_cast<Index>(n));
      }
    } else {
      using U = std::make_unsigned_t<T>;
      for (std::int64_t i = 0; i < m; ++i) {
        U* row = reinterpret_cast<U*>(pc + i * n);
        std::fill(row, row + n, U(0));
        for (std::int64_t kk = 0; kk < k; ++kk) {
          const auto a = static_cast<U>(pa[i * k + kk]);
          const T* brow = pb + kk * n;
          for (std::int64_t j = 0; j < n; ++j) row[j] += a * static_cast<U>(brow[j]);
        }
      }
    }
  }
}

template <class T>
void dot_general_kernel(const Array& lhs, const Array& rhs, const DotDimensionNumbers& dn,
                        const DotLayout& l, T* out) {
  std::vector<T> lbuf, rbuf;
  const T* a =
      as_matrices(lhs.data<T>(), lhs.shape(), dn.lhs_batch, l.lhs_free, dn.lhs_contracting, lbuf);
  const T* b =
      as_matrices(rhs.data<T>(), rhs.shape(), dn.rhs_batch, dn.rhs_contracting, l.rhs_free, rbuf);
  batched_gemm(a, b, out, l);
}

}  // namespace xpr::rt::detail

namespace xpr::rt {

XPR_FUNC Arrays DotGeneral::impl(std::span<const Array> args, const Params& params) const {
  check_arity(args.size());
  const auto& dn = params.get<DotDimensionNumbers>("dimension_numbers");
  const Array &lhs = args[0], &rhs = args[1];
  detail::DotLayout l = detail::dot_layout(detail::aval_of(lhs), detail::aval_of(rhs), dn);
  ArrayBuilder b(l.out);
  if (l.out.shape.size() == 0) return {std::move(b).finish()};
  dispatch_dtype(lhs.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      // Count the true products in int32 (Eigen's GEMM wants a ring), then test for nonzero.
      auto as_i32 = [](const Array& x) {
        ArrayBuilder c(ShapedArray{x.shape(), DType::int32, false});
        std::transform(x.data<bool>(), x.data<bool>() + x.size(), c.data<std::int32_t>(),
                       [](bool v) { return static_cast<std::int32_t>(v); });
        return std::move(c).finish();
      };
      std::vector<std::int32_t> counts(static_cast<std::size_t>(l.out.shape.size()));
      detail::dot_general_kernel(as_i32(lhs), as_i32(rhs), dn, l, counts.data());
      std::transform(counts.begin(), counts.end(), b.data<bool>(),
                     [](std::int32_t v) { return v != 0; });
    } else {
      detail::dot_general_kernel(lhs, rhs, dn, l, b.data<T>());
    }
  });
  return {std::move(b).finish()};
}

XPR_FUNC Avals DotGeneral::abstract_eval(std::span<const ShapedArray> args,
                                         const Params& params) const {
  check_arity(args.size());
  return {detail::dot_layout(args[0], args[1], params.get<DotDimensionNumbers>("dimension_numbers"))
              .out};
}

XPR_FUNC std::pair<Arrays, Arrays> DotGeneral::jvp(std::span<const Array> primals,
                                                   std::span<const Array> tangents,
                                                   const Params& params) const {
  check_arity(primals.size());
  Array ans = bind1(*this, {primals[0], primals[1]}, params);
  if (!core::is_floating(ans.dtype())) return {{ans}, {zeros_like_aval(detail::aval_of(ans))}};
  Array t = bind1(add_p, {bind1(*this, {tangents[0], primals[1]}, params),
                          bind1(*this, {primals[0], tangents[1]}, params)});
  return {{std::move(ans)}, {std::move(t)}};
}

XPR_FUNC std::pair<Arrays, Tangents> DotGeneral::jvp_symbolic(std::span<const Array> primals,
                                                              std::span<const Tangent> tangents,
                                                              const Params& params) const {
  check_arity(primals.size());
  Array ans = bind1(*this, {primals[0], primals[1]}, params);
  if (!detail::has_tangent_space(detail::aval_of(ans)) || detail::all_zero(tangents))
    return {{ans}, {std::nullopt}};
  std::optional<Array> t;
  if (tangents[0]) t = bind1(*this, {*tangents[0], primals[1]}, params);
  if (tangents[1]) {
    Array r = bind1(*this, {primals[0], *tangents[1]}, params);
    t = t ? bind1(add_p, {*t, r}) : r;
  }
  return {{ans}, {detail::fit_tangent(*t, detail::aval_of(ans))}};
}

XPR_FUNC Cotangents DotGeneral::transpose(std::span<const Cotangent> cts,
                                          std::span<const LinearArg> args,
                                          const Params& params) const {
  check_arity(args.size());
  const auto& dn = params.get<DotDimensionNumbers>("dimension_numbers");
  Cotangents out(2);
  if (is_undefined_primal(args[0])) {
    const Array& y = detail::known_operand(name(), args[1], "one operand");
    out[0] = detail::fit_cotangent(transpose_lhs(*cts[0], aval_of(args[0]), y, dn, false),
                                   aval_of(args[0]));
  } else {
    const Array& x = detail::known_operand(name(), args[0], "one operand");
    if (is_undefined_primal(args[1])) {
      DotDimensionNumbers swapped{dn.rhs_contracting, dn.lhs_contracting, dn.rhs_batch,
                                  dn.lhs_batch};
      out[1] = detail::fit_cotangent(transpose_lhs(*cts[0], aval_of(args[1]), x, swapped, true),
                                     aval_of(args[1]));
    }
  }
  return out;
}

XPR_FUNC std::pair<Arrays, BatchDims> DotGeneral::batch(std::span<const Array> args,
                                                        std::span<const BatchDim> dims,
                                                        std::int64_t axis_size,
                                                        const Params& params) const {
  check_arity(args.size());
  const auto& dn = params.get<DotDimensionNumbers>("dimension_numbers");
  if (!dims[0] && !dims[1]) return {rt::bind(*this, args, params), {std::nullopt}};
  // Malformed dimension numbers are reported against the per-example shapes, as without vmap.
  auto example = [&](std::size_t i) {
    return dims[i] ? detail::unbatched_aval(detail::aval_of(args[i]), *dims[i])
                   : detail::aval_of(args[i]);
  };
  (void)detail::dot_layout(example(0), example(1), dn);
  auto shifted = [](const Axes& axes, bool lead) {
    Axes out;
    if (lead) out.push_back(0);
    for (std::int64_t a : axes) out.push_back(a + 1);
    return out;
  };
  DotDimensionNumbers bdn{shifted(dn.lhs_contracting, false), shifted(dn.rhs_contracting, false),
                          shifted(dn.lhs_batch, true), shifted(dn.rhs_batch, true)};
  Array lhs = bdim_at_front(args[0], dims[0], axis_size);
  Array rhs = bdim_at_front(args[1], dims[1], axis_size);
  return {{bind1(*this, {lhs, rhs}, {{"dimension_numbers", std::move(bdn)}})}, {0}};
}

XPR_FUNC Array DotGeneral::transpose_lhs(const Array& g, const ShapedArray& x, const Array& y,
                                         const DotDimensionNumbers& dn, bool swap_ans) const {
  auto remaining = [](std::size_t rank, const Axes& a, const Axes& b) {
    Axes out;
    for (std::int64_t d = 0; d < static_cast<std::int64_t>(rank); ++d)
      if (std::find(a.begin(), a.end(), d) == a.end() &&
          std::find(b.begin(), b.end(), d) == b.end())
        out.push_back(d);
    return out;
  };
  auto range = [](std::size_t start, std::size_t n) {
    Axes out;
    for (std::size_t i = 0; i < n; ++i) out.push_back(static_cast<std::int64_t>(start + i));
    return out;
  };
  const Axes x_kept = remaining(x.ndim(), dn.lhs_contracting, dn.lhs_batch);
  const Axes y_kept = remaining(y.ndim(), dn.rhs_contracting, dn.rhs_batch);
  const std::size_t nb = dn.lhs_batch.size();
  const Axes ans_batch = range(0, nb);
  const Axes ans_y = range(swap_ans ? nb : nb + x_kept.size(), y_kept.size());
  const DotDimensionNumbers dims{ans_y, y_kept, ans_batch, dn.rhs_batch};
  // x's contracting dimensions in the order of y's (the order y's free dimensions come out in).
  std::vector<std::size_t> by_y(dn.rhs_contracting.size());
  for (std::size_t i = 0; i < by_y.size(); ++i) by_y[i] = i;
  std::sort(by_y.begin(), by_y.end(), [&](std::size_t a, std::size_t b) {
    return dn.rhs_contracting[a] < dn.rhs_contracting[b];
  });
  Axes layout = detail::concat_axes({&dn.lhs_batch, &x_kept});
  for (std::size_t i : by_y) layout.push_back(dn.lhs_contracting[i]);
  Axes to_x(layout.size());  // argsort(layout)
  for (std::size_t p = 0; p < layout.size(); ++p)
    to_x[static_cast<std::size_t>(layout[p])] = static_cast<std::int64_t>(p);
  return rt::transpose(bind1(*this, {g, y}, {{"dimension_numbers", dims}}), to_x);
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
