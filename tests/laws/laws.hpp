// SPDX-License-Identifier: MIT
// The laws every primitive's rules obey, as checkers shared by the tests (JAX's check_jvp and
// "vmap equals the loop"): `check_jvp` compares forward mode with central finite differences in
// a random direction; `check_batch` compares vmap with a loop of unbatched calls, for every
// placement of the batch axis. References are computed here, by host code and eager evaluation.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/core/dtype.hpp"
#include "xpr/core/shape.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/transformations.hpp"

namespace xpr::laws {

using rt::Arrays;
using rt::BatchDim;
using rt::BatchDims;
using rt::FlatFunction;

// ---- arguments ----------------------------------------------------------------------------------

/// How to draw one argument: its (per-example) shape and dtype, and the interval its elements
/// come from, so each op is tested inside its domain (log on positives, div away from 0, ...).
struct ArgSpec {
  Shape shape;
  DType dtype = DType::float64;
  double lo = -2, hi = 2;
  /// |x| in [lo, hi] with a random sign (abs, sign, a divisor, a negative integer power).
  bool away_from_zero = false;
  /// Whole numbers only, so comparisons meet ties.
  bool integers = false;
  /// Weakly typed, as a C++ number becomes.
  bool weak = false;
};

/// A fixed stream of random numbers (tests are reproducible).
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}
  double uniform(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(engine_);
  }
  std::int64_t integer(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(engine_);
  }

 private:
  std::mt19937_64 engine_;
};

/// The elements of a concrete array of any dtype, as doubles (row-major).
inline std::vector<double> values(const Array& x) {
  std::vector<double> out(static_cast<std::size_t>(x.size()));
  rt::dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = x.data<T>();
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(p[i]);
  });
  return out;
}

/// An array of `shape` and `dtype` holding `v` (converted as C++ converts).
inline Array make_array(const Shape& shape, DType dtype, const std::vector<double>& v,
                        bool weak = false) {
  rt::ArrayBuilder b(rt::ShapedArray{shape, dtype, weak});
  rt::dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = b.data<T>();
    for (std::size_t i = 0; i < v.size(); ++i) {
      if constexpr (std::is_same_v<T, bool>)
        p[i] = v[i] != 0;
      else
        p[i] = static_cast<T>(v[i]);
    }
  });
  return std::move(b).finish();
}

/// A random argument drawn as `spec` says (bools are fair coins unless [lo, hi] excludes one).
inline Array draw(const ArgSpec& spec, Rng& rng) {
  std::vector<double> v(static_cast<std::size_t>(spec.shape.size()));
  for (double& e : v) {
    if (spec.dtype == DType::bool_) {  // [lo, hi] = [0, 0] gives false, [1, 1] true
      e = static_cast<double>(rng.integer(spec.lo >= 1 ? 1 : 0, spec.hi < 1 ? 0 : 1));
    } else if (spec.integers || core::is_integer(spec.dtype)) {
      e = static_cast<double>(
          rng.integer(static_cast<std::int64_t>(spec.lo), static_cast<std::int64_t>(spec.hi)));
    } else {
      e = rng.uniform(spec.lo, spec.hi);
    }
    if (spec.away_from_zero && rng.integer(0, 1)) e = -e;
  }
  return make_array(spec.shape, spec.dtype, v, spec.weak);
}

/// A random tangent for a primal of type `spec`: uniform in [-1, 1] for floating dtypes, zeros
/// otherwise (the tangent of an integer input is zero).
inline ArgSpec tangent_spec(const ArgSpec& spec) {
  ArgSpec t{spec.shape, spec.dtype, -1, 1, false, false, spec.weak};
  if (!core::is_floating(spec.dtype)) t.lo = t.hi = 0;
  return t;
}

/// `spec` with a batch axis of size `n` at `axis`.
inline ArgSpec batched_spec(ArgSpec spec, std::int64_t n, std::int64_t axis) {
  std::vector<std::int64_t> dims(spec.shape.begin(), spec.shape.end());
  dims.insert(dims.begin() + axis, n);
  spec.shape = Shape(std::move(dims));
  return spec;
}

// ---- host-side slicing and stacking (independent of the primitives under test)
// -------------------

/// Bytes before, at and after `axis` of `shape`: (outer count, inner bytes).
inline std::pair<std::int64_t, std::size_t> outer_inner(const Shape& shape, std::size_t axis,
                                                        DType dtype) {
  std::int64_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < axis; ++d) outer *= shape[d];
  for (std::size_t d = axis + 1; d < shape.rank(); ++d) inner *= shape[d];
  return {outer, static_cast<std::size_t>(inner) * core::itemsize(dtype)};
}

/// `x[..., k, ...]` with `k` at `axis` (the axis removed), copied by host code.
inline Array slice_at(const Array& x, std::size_t axis, std::int64_t k) {
  std::vector<std::int64_t> dims(x.shape().begin(), x.shape().end());
  const std::int64_t n = dims[axis];
  dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(axis));
  rt::ArrayBuilder b(rt::ShapedArray{Shape(std::move(dims)), x.dtype(), x.weak_type()});
  auto [outer, inner] = outer_inner(x.shape(), axis, x.dtype());
  const std::byte* src = x.concrete()->bytes();
  for (std::int64_t o = 0; o < outer; ++o)
    std::memcpy(b.bytes() + static_cast<std::size_t>(o) * inner,
                src + static_cast<std::size_t>(o * n + k) * inner, inner);
  return std::move(b).finish();
}

/// The arrays `xs` (equal types) stacked along a new axis `axis`, copied by host code.
inline Array stack_at(std::span<const Array> xs, std::size_t axis) {
  const Array& x0 = xs[0];
  std::vector<std::int64_t> dims(x0.shape().begin(), x0.shape().end());
  const auto n = static_cast<std::int64_t>(xs.size());
  dims.insert(dims.begin() + static_cast<std::ptrdiff_t>(axis), n);
  Shape shape(std::move(dims));
  rt::ArrayBuilder b(rt::ShapedArray{shape, x0.dtype(), x0.weak_type()});
  auto [outer, inner] = outer_inner(shape, axis, x0.dtype());
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t k = 0; k < n; ++k)
      std::memcpy(
          b.bytes() + static_cast<std::size_t>(o * n + k) * inner,
          xs[static_cast<std::size_t>(k)].concrete()->bytes() + static_cast<std::size_t>(o) * inner,
          inner);
  return std::move(b).finish();
}

/// Whether `a` and `b` have the same type (shape, dtype, weak flag) and bits (so NaN equals NaN,
/// -0 is not 0).
inline bool identical(const Array& a, const Array& b) {
  if (a.aval() != b.aval()) return false;
  const std::size_t nbytes = static_cast<std::size_t>(a.size()) * core::itemsize(a.dtype());
  return nbytes == 0 || std::memcmp(a.concrete()->bytes(), b.concrete()->bytes(), nbytes) == 0;
}

/// `a` and `b` for a failure message: types, then the first elements that differ.
inline std::string describe_difference(const Array& a, const Array& b) {
  std::ostringstream os;
  os << "found " << a.aval().str() << (a.weak_type() ? " (weak)" : "") << ", expected "
     << b.aval().str() << (b.weak_type() ? " (weak)" : "");
  if (a.shape() == b.shape()) {
    std::vector<double> va = values(a), vb = values(b);
    int shown = 0;
    for (std::size_t i = 0; i < va.size() && shown < 4; ++i)
      if (std::bit_cast<std::uint64_t>(va[i]) != std::bit_cast<std::uint64_t>(vb[i])) {
        os << "; element " << i << ": " << va[i] << " vs " << vb[i];
        ++shown;
      }
  }
  return os.str();
}

inline std::string axes_str(std::span<const BatchDim> axes) {
  std::ostringstream os;
  os << '(';
  for (std::size_t i = 0; i < axes.size(); ++i) {
    if (i) os << ", ";
    if (axes[i])
      os << *axes[i];
    else
      os << "not_mapped";
  }
  os << (axes.size() == 1 ? ",)" : ")");
  return os.str();
}

// ---- check_jvp
// ------------------------------------------------------------------------------------

/// The tolerance of `check_jvp` for a tangent of dtype `t`, used as |jvp - fd| <= tol (1 + |fd|).
/// The finite differences are always taken in float64 (step 2^-20: truncation h^2 |f'''| / 6 and
/// rounding 2^-53 |f| / h are both below 1e-9 for the inputs the tests draw; the largest error
/// seen over the elementwise table is 3e-10), so the tolerance bounds the rounding of the rule
/// under test:
///  * float64: 1e-6, three orders above the reference's own error;
///  * float32: 2^-19, i.e. 16 float32 ulps (2^-23): a tangent formula of a few float32
///    operations, each within 0.5 ulp (1-2 for xsimd's float32 transcendentals), with a factor 2
///    to spare; the largest error seen over the elementwise table is 0.9 ulp.
/// A wrong rule (a missing term, a wrong factor or sign) is off by O(1) and fails either way.
inline double jvp_tolerance(DType t) { return t == DType::float32 ? 0x1p-19 : 1e-6; }

/// Options of `check_jvp`.
struct JvpOptions {
  /// The same mathematical function, evaluated on float64 arguments for the finite differences;
  /// empty means `f` itself (right for every primitive but conversions to a fixed dtype).
  FlatFunction reference;
  /// The derivative is zero by definition, not by calculus (stop_gradient): the tangent must be
  /// exactly zero and no finite differences are taken.
  bool zero_tangent = false;
};

/// The largest |jvp - fd| / (1 + |fd|) seen by `check_jvp` in this thread, per tangent dtype
/// (float32, float64), for reporting the margins of the tolerances above.
inline double& worst_jvp_error(DType t) {
  thread_local double worst[2] = {0, 0};
  return worst[t == DType::float32 ? 0 : 1];
}

/// Checks forward mode of `f` at `primals` along `tangents`:
///  * the primal outputs equal `f(primals)` evaluated eagerly, bit for bit;
///  * each floating tangent output equals central finite differences of the reference (in float64),
///    within `jvp_tolerance` of its dtype; each integer or bool tangent output is zero.
inline void check_jvp(const FlatFunction& f, std::span<const Array> primals,
                      std::span<const Array> tangents, const JvpOptions& options = {}) {
  auto [ys, ts] = rt::jvp_flat(f, primals, tangents);
  Arrays eager = f(primals);
  ASSERT_EQ(ys.size(), eager.size());
  ASSERT_EQ(ts.size(), eager.size());
  for (std::size_t j = 0; j < ys.size(); ++j) {
    EXPECT_TRUE(identical(ys[j], eager[j]))
        << "primal output " << j
        << " under jvp differs from eager evaluation: " << describe_difference(ys[j], eager[j]);
    EXPECT_EQ(ts[j].dtype(), ys[j].dtype()) << "tangent output " << j;
    EXPECT_EQ(ts[j].shape(), ys[j].shape()) << "tangent output " << j;
  }
  const FlatFunction& ref = options.reference ? options.reference : f;
  constexpr double h = 0x1p-20;
  Arrays plus, minus;
  for (std::size_t i = 0; i < primals.size(); ++i) {
    if (!core::is_floating(primals[i].dtype())) {  // not perturbed
      plus.push_back(primals[i]);
      minus.push_back(primals[i]);
      continue;
    }
    std::vector<double> x = values(primals[i]), t = values(tangents[i]), xp(x.size()), xm(x.size());
    for (std::size_t k = 0; k < x.size(); ++k) {
      xp[k] = x[k] + h * t[k];
      xm[k] = x[k] - h * t[k];
    }
    plus.push_back(make_array(primals[i].shape(), DType::float64, xp));
    minus.push_back(make_array(primals[i].shape(), DType::float64, xm));
  }
  const bool need_fd = !options.zero_tangent;
  Arrays yp = need_fd ? ref(plus) : Arrays{}, ym = need_fd ? ref(minus) : Arrays{};
  for (std::size_t j = 0; j < ts.size(); ++j) {
    std::vector<double> tv = values(ts[j]);
    if (options.zero_tangent || !core::is_floating(ts[j].dtype())) {
      for (std::size_t k = 0; k < tv.size(); ++k)
        EXPECT_EQ(tv[k], 0.0) << "tangent output " << j << " element " << k << " should be zero ("
                              << ts[j].aval().str() << ")";
      continue;
    }
    ASSERT_EQ(yp[j].size(), ts[j].size()) << "reference output " << j;
    std::vector<double> a = values(yp[j]), b = values(ym[j]);
    const double tol = jvp_tolerance(ts[j].dtype());
    double& worst = worst_jvp_error(ts[j].dtype());
    for (std::size_t k = 0; k < tv.size(); ++k) {
      const double fd = (a[k] - b[k]) / (2 * h);
      const double err = std::abs(tv[k] - fd) / (1 + std::abs(fd));
      if (err > worst) worst = err;
      EXPECT_LE(err, tol) << "tangent output " << j << " (" << ts[j].aval().str() << ") element "
                          << k << ": jvp gives " << tv[k] << ", finite differences " << fd;
    }
  }
}

/// `check_jvp` at primals drawn from `specs`, along random tangents.
inline void check_jvp(const FlatFunction& f, std::span<const ArgSpec> specs, std::uint64_t seed,
                      const JvpOptions& options = {}) {
  Rng rng(seed);
  Arrays primals, tangents;
  for (const ArgSpec& s : specs) primals.push_back(draw(s, rng));
  for (const ArgSpec& s : specs) tangents.push_back(draw(tangent_spec(s), rng));
  check_jvp(f, primals, tangents, options);
}

// ---- check_batch -----------------------------------------------------------------------------

/// Checks `vmap(f, in_axes, out_axes)` against the loop that calls `f` on each slice and stacks
/// the results (by host code), for every `in_axes` (each argument not_mapped or mapped at any
/// axis, at least one mapped) and every `out_axes` placement; results must be identical (same
/// dtype, shape and bits). When there are more than `max_in_axes` choices of `in_axes`, that many
/// are drawn at random (with the seed) instead. Returns the number of vmaps compared.
inline int check_batch(const FlatFunction& f, std::span<const ArgSpec> specs, std::uint64_t seed,
                       std::int64_t axis_size = 3, std::int64_t max_in_axes = 256) {
  Rng rng(seed);
  const std::size_t nargs = specs.size();
  // Per argument: axis_size examples and one value for when it is not mapped.
  std::vector<Arrays> examples(nargs);
  Arrays unmapped;
  for (std::size_t i = 0; i < nargs; ++i) {
    for (std::int64_t k = 0; k < axis_size; ++k) examples[i].push_back(draw(specs[i], rng));
    unmapped.push_back(draw(specs[i], rng));
  }
  // in_axes choices per argument: -1 stands for not_mapped, else the axis (0 through rank).
  std::int64_t total = 1;
  for (const ArgSpec& s : specs) total *= static_cast<std::int64_t>(s.shape.rank()) + 2;
  const bool sample = total - 1 > max_in_axes;
  std::vector<std::int64_t> choice(nargs, -1);
  int compared = 0;
  for (std::int64_t round = 0;; ++round) {
    if (sample) {
      if (round == max_in_axes) break;
      bool any = false;
      for (std::size_t a = 0; a < nargs; ++a) {
        choice[a] = rng.integer(-1, static_cast<std::int64_t>(specs[a].shape.rank()));
        any = any || choice[a] >= 0;
      }
      if (!any) choice[0] = 0;
    } else {  // the next in the odometer's order
      std::size_t i = 0;
      for (; i < nargs; ++i) {
        if (choice[i] < static_cast<std::int64_t>(specs[i].shape.rank())) {
          ++choice[i];
          break;
        }
        choice[i] = -1;
      }
      if (i == nargs) break;
    }
    BatchDims in_axes(nargs);
    Arrays args(nargs);
    for (std::size_t a = 0; a < nargs; ++a) {
      if (choice[a] < 0) {
        args[a] = unmapped[a];
      } else {
        in_axes[a] = choice[a];
        args[a] = stack_at(examples[a], static_cast<std::size_t>(choice[a]));
      }
    }
    // The loop: f on each example, eagerly.
    std::vector<Arrays> per_example;
    for (std::int64_t k = 0; k < axis_size; ++k) {
      Arrays slice(nargs);
      for (std::size_t a = 0; a < nargs; ++a)
        slice[a] = in_axes[a] ? examples[a][static_cast<std::size_t>(k)] : unmapped[a];
      per_example.push_back(f(slice));
    }
    const std::size_t nout = per_example[0].size();
    std::size_t max_rank = 0;
    for (const Array& o : per_example[0]) max_rank = std::max(max_rank, o.ndim());
    for (std::size_t o = 0; o <= max_rank; ++o) {
      BatchDims out_axes(nout);
      for (std::size_t j = 0; j < nout; ++j)
        out_axes[j] = static_cast<std::int64_t>(o % (per_example[0][j].ndim() + 1));
      Arrays got;
      try {
        got = rt::vmap_flat(f, args, in_axes, out_axes);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "vmap with in_axes=" << axes_str(in_axes)
                      << " out_axes=" << axes_str(out_axes) << " threw: " << e.what();
        continue;
      }
      ++compared;
      if (got.size() != nout) {
        ADD_FAILURE() << "vmap returned " << got.size() << " outputs, expected " << nout;
        continue;
      }
      for (std::size_t j = 0; j < nout; ++j) {
        Arrays column;
        for (const Arrays& outs : per_example) column.push_back(outs[j]);
        Array want = stack_at(column, static_cast<std::size_t>(*out_axes[j]));
        EXPECT_TRUE(identical(got[j], want))
            << "output " << j << " of vmap with in_axes=" << axes_str(in_axes)
            << " out_axes=" << axes_str(out_axes)
            << " differs from the loop: " << describe_difference(got[j], want);
      }
    }
  }
  return compared;
}

// ---- composed functions, for the laws of nested transformations --------------------------------

/// (x..., t...) -> (f(x)..., ∂f(x)[t]...): forward mode of `f` as a function, to batch it.
inline FlatFunction jvp_of(FlatFunction f) {
  return [f = std::move(f)](std::span<const Array> args) {
    const std::size_t n = args.size() / 2;
    auto [ys, ts] = rt::jvp_flat(f, args.first(n), args.subspan(n));
    ys.insert(ys.end(), ts.begin(), ts.end());
    return ys;
  };
}

/// x -> ∂f(x)[t] for fixed tangents `t`: differentiating it again gives second derivatives.
inline FlatFunction tangent_of(FlatFunction f, Arrays t) {
  return [f = std::move(f), t = std::move(t)](std::span<const Array> args) {
    return rt::jvp_flat(f, args, t).second;
  };
}

/// `vmap(f, in_axes, out_axes)` as a flat function, to differentiate it.
inline FlatFunction vmap_of(FlatFunction f, BatchDims in_axes, BatchDims out_axes) {
  return [f = std::move(f), in_axes = std::move(in_axes), out_axes = std::move(out_axes)](
             std::span<const Array> args) { return rt::vmap_flat(f, args, in_axes, out_axes); };
}

}  // namespace xpr::laws
