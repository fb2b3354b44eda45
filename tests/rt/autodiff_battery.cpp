// The autodiff battery of the runtime tier (issue 6, "Checked by"): every differentiable
// primitive, each wrapped in a small function of one or more arrays, differentiated by
// xpr::grad (of a weighted sum of its output), xpr::jacfwd, xpr::jacrev and xpr::hessian, and
// compared with Jacobians and Hessians computed here by five-point central differences of eager
// evaluation; the vjp/jvp identity <vjp(ct), t> == <ct, jvp(t)> on random vectors for every
// function; f32 against f64; the unary primitives' first and second derivatives against their
// closed forms; integer_pow, convert_element_type and stop_gradient against closed forms.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"
#include "xpr/rt/api_autodiff.hpp"

namespace test_rt_autodiff_battery {

using xpr::Array;
using xpr::Shape;
using Args = std::vector<Array>;
using Fn = std::function<Array(const Args&)>;

// ---- host-side helpers (no xpr primitive is used to compute a reference) ----------------------

/// The elements of a concrete f32 or f64 array as doubles, row-major.
std::vector<double> values(const Array& a) {
  if (a.dtype() == xpr::float32) {
    auto v = a.to_vector<float>();
    return {v.begin(), v.end()};
  }
  return a.to_vector<double>();
}

/// All leaves' elements, concatenated.
std::vector<double> flat(const Args& xs) {
  std::vector<double> out;
  for (const Array& x : xs) {
    auto v = values(x);
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

/// Arrays shaped like `like`, of dtype `dtype`, holding `v` in order.
Args unflat(const std::vector<double>& v, const Args& like, xpr::DType dtype) {
  Args out;
  std::size_t k = 0;
  for (const Array& l : like) {
    auto n = static_cast<std::size_t>(l.size());
    std::vector<double> part(v.begin() + static_cast<std::ptrdiff_t>(k),
                             v.begin() + static_cast<std::ptrdiff_t>(k + n));
    if (dtype == xpr::float32)
      out.push_back(xpr::array(std::vector<float>(part.begin(), part.end()), l.shape()));
    else
      out.push_back(xpr::array(part, l.shape()));
    k += n;
  }
  return out;
}

double host_dot(const std::vector<double>& a, const std::vector<double>& b) {
  long double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += static_cast<long double>(a[i]) * b[i];
  return static_cast<double>(s);
}

double host_abs_dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += std::abs(a[i] * b[i]);
  return s;
}

/// How to draw one argument: its shape and interval. `away_from_zero` gives |x| in [lo, hi] with
/// a random sign; `lattice` (in [0, 1)) gives a random permutation of the grid
/// lo + (k + lattice) (hi - lo) / n, so elements (and two arguments on offset grids) never tie,
/// which keeps max, min and where away from their kinks.
struct ArgSpec {
  Shape shape;
  double lo = -2, hi = 2;
  bool away_from_zero = false;
  double lattice = -1;
};

struct Case {
  std::string name;
  std::vector<ArgSpec> args;
  Fn f;
  bool f32 = true;  // whether the function runs on f32 inputs unchanged
};

Args draw(const std::vector<ArgSpec>& specs, std::mt19937_64& rng) {
  Args out;
  for (const ArgSpec& s : specs) {
    auto n = static_cast<std::size_t>(s.shape.size());
    std::vector<double> v(n);
    if (s.lattice >= 0) {
      std::vector<std::size_t> perm(n);
      for (std::size_t k = 0; k < n; ++k) perm[k] = k;
      std::shuffle(perm.begin(), perm.end(), rng);
      for (std::size_t k = 0; k < n; ++k)
        v[k] = s.lo +
               (static_cast<double>(perm[k]) + s.lattice) * (s.hi - s.lo) / static_cast<double>(n);
    } else {
      std::uniform_real_distribution<double> u(s.lo, s.hi);
      for (double& e : v) {
        e = u(rng);
        if (s.away_from_zero && (rng() & 1)) e = -e;
      }
    }
    out.push_back(xpr::array(v, s.shape));
  }
  return out;
}

/// Random values in [-1, 1] shaped like `like` (tangents, cotangents, weights).
Args random_like(const Args& like, std::mt19937_64& rng) {
  std::vector<ArgSpec> specs;
  for (const Array& l : like) specs.push_back({l.shape(), -1, 1});
  return draw(specs, rng);
}

/// d/dx_j of `g` (a function of the flattened inputs with `m` outputs) by the five-point central
/// difference (-g(x+2h) + 8 g(x+h) - 8 g(x-h) + g(x-2h)) / 12h, whose error is O(h^4 g^(5)) +
/// O(eps g / h): with h = 1e-3 (1 + |x_j|) both stay near 1e-11 for the functions here. Returns
/// the m x N Jacobian, row-major.
std::vector<double> five_point_jacobian(
    const std::function<std::vector<double>(const std::vector<double>&)>& g,
    const std::vector<double>& x) {
  const std::size_t n = x.size();
  std::vector<double> jac;
  std::size_t m = 0;
  for (std::size_t j = 0; j < n; ++j) {
    const double h = 1e-3 * (1 + std::abs(x[j]));
    auto at = [&](double d) {
      auto y = x;
      y[j] += d;
      return g(y);
    };
    auto p2 = at(2 * h), p1 = at(h), m1 = at(-h), m2 = at(-2 * h);
    if (j == 0) {
      m = p1.size();
      jac.assign(m * n, 0);
    }
    for (std::size_t i = 0; i < m; ++i)
      jac[i * n + j] = (-p2[i] + 8 * p1[i] - 8 * m1[i] + m2[i]) / (12 * h);
  }
  return jac;
}

/// The Jacobian of `f` at `x` by finite differences of eager evaluation (m x N).
std::vector<double> fd_jacobian(const Fn& f, const Args& x) {
  return five_point_jacobian(
      [&](const std::vector<double>& v) { return values(f(unflat(v, x, xpr::float64))); }, flat(x));
}

/// A block Jacobian (one block per input leaf, each out.shape + in.shape) as an m x N matrix.
std::vector<double> assemble(const Args& blocks, const Args& x, std::size_t m) {
  std::size_t n = 0;
  for (const Array& l : x) n += static_cast<std::size_t>(l.size());
  std::vector<double> out(m * n);
  std::size_t col = 0;
  for (std::size_t k = 0; k < blocks.size(); ++k) {
    auto b = values(blocks[k]);
    auto nk = static_cast<std::size_t>(x[k].size());
    EXPECT_EQ(b.size(), m * nk) << "block " << k;
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j < nk && i * nk + j < b.size(); ++j)
        out[i * n + col + j] = b[i * nk + j];
    col += nk;
  }
  return out;
}

/// The expected shape of a Jacobian block: out + in.
Shape block_shape(const Shape& out, const Shape& in) {
  std::vector<std::int64_t> d(out.begin(), out.end());
  d.insert(d.end(), in.begin(), in.end());
  return Shape(std::move(d));
}

/// |got - want| <= tol (1 + |want|), element by element, with the index in the message.
void expect_close(const std::vector<double>& got, const std::vector<double>& want, double tol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_LE(std::abs(got[i] - want[i]), tol * (1 + std::abs(want[i])))
        << what << " [" << i << "]: got " << got[i] << ", want " << want[i];
}

// Agreement between two autodiff results (the same math, other operation order): 1e-12.
constexpr double exact_tol = 1e-12;
// Against five-point differences: their error is at most 6e-9 here (integer_pow -2 near 0.3,
// whose fifth derivative is 3e6), so 1e-7 has room without hiding a wrong rule (a wrong
// derivative is off by O(1)).
constexpr double fd_tol = 1e-7;

// ---- the battery ------------------------------------------------------------------------------

/// 1, 2, ..., n in `shape` with `like`'s dtype: a constant factor that keeps f32 functions f32.
Array ramp(const Shape& shape, const Array& like) {
  Array i = xpr::iota(xpr::int32, shape.size());
  return xpr::reshape(xpr::convert_element_type(i, like.dtype()), shape) + 1;
}

/// The one-hot rows of `labels` for `n` classes, with `like`'s dtype (built with iota and a
/// comparison, so it has no derivative).
Array one_hot(const std::vector<std::int32_t>& labels, std::int64_t n, const Array& like) {
  const auto b = static_cast<std::int64_t>(labels.size());
  Array cls = xpr::broadcasted_iota(xpr::int32, Shape{b, n}, 1);
  Array lab = xpr::array(labels, Shape{b, 1});
  return xpr::convert_element_type(cls == lab, like.dtype());
}

/// The mean over the batch of -log softmax(z)[label]: log_softmax(z) = z - m - log sum exp(z - m)
/// with m = stop_gradient(max z) per row.
Array softmax_cross_entropy(const Array& z, const std::vector<std::int32_t>& labels) {
  Array m = xpr::stop_gradient(xpr::max(z, 1, true));
  Array shifted = z - m;
  Array log_p = shifted - xpr::log(xpr::sum(xpr::exp(shifted), 1, true));
  const auto b = static_cast<double>(labels.size());
  return -xpr::sum(one_hot(labels, z.shape()[1], z) * log_p) / b;
}

ArgSpec any(Shape s) { return {std::move(s)}; }
ArgSpec positive(Shape s) { return {std::move(s), 0.3, 2.5}; }
ArgSpec nonzero(Shape s) { return {std::move(s), 0.3, 2.0, true}; }
ArgSpec grid(Shape s, double offset) { return {std::move(s), -2, 2, false, offset}; }

template <class G>
Case unary(std::string name, G g, ArgSpec spec = any(Shape{2, 3})) {
  return {std::move(name), {std::move(spec)}, [g](const Args& a) { return g(a[0]); }};
}
template <class G>
Case binary(std::string name, G g, ArgSpec a, ArgSpec b) {
  return {
      std::move(name), {std::move(a), std::move(b)}, [g](const Args& x) { return g(x[0], x[1]); }};
}

std::vector<Case> battery() {
  const Shape m23{2, 3};
  std::vector<Case> c;
  // unary elementwise
  c.push_back(unary("neg", [](const Array& x) { return -x; }));
  c.push_back(unary("sin", [](const Array& x) { return xpr::sin(x); }));
  c.push_back(unary("cos", [](const Array& x) { return xpr::cos(x); }));
  c.push_back(unary("tan", [](const Array& x) { return xpr::tan(x); }, {m23, -1.2, 1.2}));
  c.push_back(unary("tanh", [](const Array& x) { return xpr::tanh(x); }));
  c.push_back(unary("exp", [](const Array& x) { return xpr::exp(x); }));
  c.push_back(unary(
      "log", [](const Array& x) { return xpr::log(x); }, positive(m23)));
  c.push_back(unary("log1p", [](const Array& x) { return xpr::log1p(x); }, {m23, -0.6, 2.0}));
  c.push_back(unary("expm1", [](const Array& x) { return xpr::expm1(x); }));
  c.push_back(unary(
      "sqrt", [](const Array& x) { return xpr::sqrt(x); }, positive(m23)));
  c.push_back(unary(
      "rsqrt", [](const Array& x) { return xpr::rsqrt(x); }, positive(m23)));
  c.push_back(unary(
      "abs", [](const Array& x) { return xpr::abs(x); }, nonzero(m23)));
  c.push_back(unary(
      "sign", [](const Array& x) { return xpr::sign(x) * x; }, nonzero(m23)));
  c.push_back(unary("logistic", [](const Array& x) { return xpr::logistic(x); }));
  // integer_pow (square is integer_pow 2)
  c.push_back(unary("square", [](const Array& x) { return xpr::square(x); }));
  c.push_back(unary("integer_pow 3", [](const Array& x) { return xpr::integer_pow(x, 3); }));
  c.push_back(unary(
      "integer_pow -2", [](const Array& x) { return xpr::integer_pow(x, -2); }, nonzero(m23)));
  c.push_back(unary("integer_pow 1", [](const Array& x) { return xpr::integer_pow(x, 1); }));
  c.push_back(
      unary("integer_pow 0 times x", [](const Array& x) { return xpr::integer_pow(x, 0) * x; }));
  // binary elementwise, equal shapes, broadcast, and with a C++ number
  c.push_back(binary(
      "add", [](const Array& x, const Array& y) { return x + y; }, any(m23), any(m23)));
  c.push_back(binary(
      "sub", [](const Array& x, const Array& y) { return x - y; }, any(m23), any(m23)));
  c.push_back(binary(
      "mul", [](const Array& x, const Array& y) { return x * y; }, any(m23), any(m23)));
  c.push_back(binary(
      "div", [](const Array& x, const Array& y) { return x / y; }, any(m23), nonzero(m23)));
  c.push_back(binary(
      "maximum", [](const Array& x, const Array& y) { return xpr::maximum(x, y); }, grid(m23, 0.25),
      grid(m23, 0.75)));
  c.push_back(binary(
      "minimum", [](const Array& x, const Array& y) { return xpr::minimum(x, y); }, grid(m23, 0.25),
      grid(m23, 0.75)));
  c.push_back(binary(
      "pow", [](const Array& x, const Array& y) { return xpr::pow(x, y); }, positive(m23),
      any(m23)));
  c.push_back(binary(
      "mul broadcast (2,3)*(3,)", [](const Array& x, const Array& y) { return x * y; }, any(m23),
      any(Shape{3})));
  c.push_back(binary(
      "div broadcast (2,1)/(1,3)", [](const Array& x, const Array& y) { return x / y; },
      any(Shape{2, 1}), nonzero(Shape{1, 3})));
  c.push_back(binary(
      "sub scalar-array", [](const Array& x, const Array& y) { return x - y * 3.0 + 1.5; },
      any(Shape{}), any(m23)));
  c.push_back(unary(
      "pow with a number exponent",
      [](const Array& x) { return xpr::pow(x, 2.5) + xpr::pow(1.5, x); }, positive(m23)));
  // select_n (where) with a traced and with a constant predicate, clip
  c.push_back(binary(
      "where(x > y)",
      [](const Array& x, const Array& y) { return xpr::where(x > y, x * x, xpr::sin(y)); },
      grid(m23, 0.25), grid(m23, 0.75)));
  c.push_back(binary(
      "where(constant)",
      [](const Array& x, const Array& y) {
        Array pred = xpr::array({true, false, true, false, false, true}, xpr::bool_);
        return xpr::where(xpr::reshape(pred, {2, 3}), x * y, y - x);
      },
      any(m23), any(m23)));
  c.push_back(unary(
      "clip", [](const Array& x) { return xpr::clip(x, -0.9, 1.1); }, grid(m23, 0.5)));
  c.push_back(unary(
      "relu (where with a number)", [](const Array& x) { return xpr::where(x > 0.0, x, 0.0) * x; },
      grid(m23, 0.5)));
  // reductions
  c.push_back(unary("reduce_sum all", [](const Array& x) { return xpr::sum(x * x); }));
  c.push_back(unary("reduce_sum axis 0", [](const Array& x) { return xpr::sum(xpr::sin(x), 0); }));
  c.push_back(unary("reduce_sum axis 1 keepdims",
                    [](const Array& x) { return xpr::sum(x * x, 1, true) * x; }));
  c.push_back(unary(
      "reduce_sum axes (0, 2)",
      [](const Array& x) {
        return xpr::sum(xpr::exp(x), {0, 2});
      },
      any(Shape{2, 3, 2})));
  c.push_back(unary(
      "reduce_max axis 1", [](const Array& x) { return xpr::max(x * 1.0, 1); }, grid(m23, 0.5)));
  c.push_back(unary(
      "reduce_max all", [](const Array& x) { return xpr::max(xpr::sin(x)); }, grid(m23, 0.5)));
  c.push_back(unary("reduce_min axis 0", [](const Array& x) { return xpr::min(x * x, 0); },
                    {m23, 0.2, 2.0, false, 0.5}));
  c.push_back(unary("mean axis 1", [](const Array& x) { return xpr::mean(x * x, 1); }));
  c.push_back(unary("reduce_prod all", [](const Array& x) { return xpr::prod(x); }));
  c.push_back(unary(
      "reduce_prod axes (2, 0) keepdims",
      [](const Array& x) {
        return xpr::prod(xpr::sin(x), {2, 0}, true) * x;
      },
      any(Shape{3, 2, 3})));
  // dot_general and its jax.numpy spellings
  c.push_back(binary(
      "matmul (2,3)@(3,4)", [](const Array& a, const Array& b) { return xpr::matmul(a, b); },
      any(m23), any(Shape{3, 4})));
  c.push_back(binary(
      "matmul (3,)@(3,2)", [](const Array& a, const Array& b) { return xpr::matmul(a, b); },
      any(Shape{3}), any(Shape{3, 2})));
  c.push_back(binary(
      "matmul batched (2,2,3)@(2,3,2)",
      [](const Array& a, const Array& b) { return xpr::matmul(a, b); }, any(Shape{2, 2, 3}),
      any(Shape{2, 3, 2})));
  c.push_back(binary(
      "matmul broadcast batch (2,3)@(2,3,2)",
      [](const Array& a, const Array& b) { return xpr::matmul(a, b); }, any(Shape{2, 3}),
      any(Shape{2, 3, 2})));
  c.push_back(binary(
      "dot (vector)", [](const Array& a, const Array& b) { return xpr::dot(a, xpr::sin(b)); },
      any(Shape{4}), any(Shape{4})));
  c.push_back(binary(
      "dot_general batch+contract",
      [](const Array& a, const Array& b) {
        // a: (b=2, k=3, i=2), b: (j=2, b=2, k=3) -> (2, 2, 2)
        return xpr::dot_general(a, b, {{1}, {2}, {0}, {1}});
      },
      any(Shape{2, 3, 2}), any(Shape{2, 2, 3})));
  c.push_back(binary(
      "inner (2,3).(4,3)",
      [](const Array& a, const Array& b) { return xpr::inner(xpr::sin(a), b); }, any(m23),
      any(Shape{4, 3})));
  c.push_back(binary(
      "vdot", [](const Array& a, const Array& b) { return xpr::vdot(a * a, b); }, any(m23),
      any(Shape{3, 2})));
  c.push_back(binary(
      "x @ x^T", [](const Array& a, const Array&) { return xpr::matmul(a, xpr::transpose(a)); },
      any(m23), any(Shape{})));
  // shapes
  c.push_back(unary(
      "broadcast_to",
      [](const Array& x) {
        return xpr::broadcast_to(x, Shape{2, 3}) * ramp(Shape{2, 3}, x);
      },
      any(Shape{3})));
  c.push_back(unary(
      "broadcast_in_dim",
      [](const Array& x) {
        return xpr::rt::broadcast_in_dim(x, Shape{2, 2, 3}, {0, 2}) * xpr::cos(x);
      },
      any(m23)));
  c.push_back(unary("reshape", [](const Array& x) {
    return xpr::sin(xpr::reshape(x, {3, 2})) * ramp(Shape{3, 2}, x);
  }));
  c.push_back(unary(
      "transpose 3-D",
      [](const Array& x) {
        return xpr::transpose(x, {2, 0, 1}) * xpr::transpose(x * x, {2, 0, 1});
      },
      any(Shape{2, 3, 2})));
  c.push_back(unary(
      "squeeze", [](const Array& x) { return xpr::exp(xpr::squeeze(x, 1)); }, any(Shape{2, 1, 3})));
  c.push_back(unary(
      "expand_dims",
      [](const Array& x) { return xpr::expand_dims(x, 1) * xpr::expand_dims(xpr::sin(x), 0); },
      any(Shape{3})));
  c.push_back(unary("ravel", [](const Array& x) { return xpr::ravel(x) * xpr::ravel(x); }));
  // slicing
  c.push_back(unary(
      "slice with strides",
      [](const Array& x) {
        return xpr::sin(xpr::slice(x, {0, 1}, {3, 5}, {2, 2}));
      },
      any(Shape{3, 5})));
  c.push_back(binary(
      "pad (low, high, interior, negative)",
      [](const Array& x, const Array& v) {
        return xpr::pad(x * x, {{1, 2, 1}, {-1, 1, 0}}, v);
      },
      any(m23), any(Shape{})));
  c.push_back(
      Case{"concatenate", {any(Shape{2, 1}), any(m23), any(Shape{2, 2})}, [](const Args& a) {
             return xpr::concatenate({a[0], xpr::sin(a[1]), a[2] * a[2]}, 1);
           }});
  c.push_back(binary(
      "stack",
      [](const Array& x, const Array& y) {
        return xpr::stack({x * y, x - y}, 1);
      },
      any(Shape{3}), any(Shape{3})));
  c.push_back(unary(
      "dynamic_slice",
      [](const Array& x) {
        return xpr::dynamic_slice(x * x, {Array(1), Array(-2)}, {2, 2});
      },
      any(Shape{3, 4})));
  c.push_back(binary(
      "dynamic_update_slice",
      [](const Array& x, const Array& u) {
        return xpr::dynamic_update_slice(xpr::sin(x), u * u, {Array(1), Array(2)});
      },
      any(Shape{3, 4}), any(Shape{2, 2})));
  // convert_element_type between f64 values (weak to strong and back); the f32 round trip is
  // checked against its closed form below, since rounding defeats finite differences.
  Case convert = unary("convert_element_type weak", [](const Array& x) {
    return xpr::convert_element_type(x * x, xpr::float64, true) * 2.0;
  });
  convert.f32 = false;
  c.push_back(std::move(convert));
  // softmax cross-entropy over 5 classes for a batch of 4 (the max is stop_gradient'ed, as
  // jax.nn.log_softmax does; the loss does not depend on it)
  c.push_back(unary(
      "softmax cross-entropy",
      [](const Array& z) {
        return softmax_cross_entropy(z, {2, 0, 4, 1});
      },
      any(Shape{4, 5})));
  return c;
}

// ---- the checks -------------------------------------------------------------------------------

/// `sum(f(x) * w)`: a scalar function whose gradient is w^T J.
Fn weighted_sum(Fn f, Array w) {
  return [f = std::move(f), w = std::move(w)](const Args& a) { return xpr::sum(f(a) * w); };
}

/// A Hessian block structure (H[k][l] of shape in_k + in_l) as an N x N matrix.
std::vector<double> assemble_hessian(const std::vector<Args>& h, const Args& x) {
  std::size_t n = 0;
  for (const Array& l : x) n += static_cast<std::size_t>(l.size());
  std::vector<double> out(n * n);
  std::size_t row = 0;
  for (std::size_t k = 0; k < x.size(); ++k) {
    auto nk = static_cast<std::size_t>(x[k].size());
    std::size_t col = 0;
    for (std::size_t l = 0; l < x.size(); ++l) {
      auto nl = static_cast<std::size_t>(x[l].size());
      EXPECT_EQ(h[k][l].shape(), block_shape(x[k].shape(), x[l].shape())) << k << "," << l;
      auto b = values(h[k][l]);
      for (std::size_t i = 0; i < nk; ++i)
        for (std::size_t j = 0; j < nl && i * nl + j < b.size(); ++j)
          out[(row + i) * n + col + j] = b[i * nl + j];
      col += nl;
    }
    row += nk;
  }
  return out;
}

/// w^T J for an m x n matrix J.
std::vector<double> left_multiply(const std::vector<double>& w, const std::vector<double>& jac) {
  const std::size_t m = w.size(), n = jac.size() / m;
  std::vector<double> out(n, 0);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) out[j] += w[i] * jac[i * n + j];
  return out;
}

const std::vector<Case>& all_cases() {
  static const std::vector<Case> c = battery();
  return c;
}

class Battery : public ::testing::TestWithParam<std::size_t> {
 protected:
  const Case& the_case() const { return all_cases()[GetParam()]; }
  std::mt19937_64 rng{0x5eed0000u + GetParam()};
};

// jacfwd and jacrev against finite differences and each other; grad of a weighted sum against
// w^T J; value_and_grad's value against eager evaluation; the Hessian of the weighted sum against
// finite differences of its gradient, and its symmetry.
TEST_P(Battery, DerivativesAgainstFiniteDifferencesF64) {
  const Case& c = the_case();
  SCOPED_TRACE(c.name);
  Args x = draw(c.args, rng);
  Array y = c.f(x);
  const auto m = static_cast<std::size_t>(y.size());
  const std::vector<double> jac = fd_jacobian(c.f, x);

  Args jf = xpr::jacfwd(c.f)(x), jr = xpr::jacrev(c.f)(x);
  ASSERT_EQ(jf.size(), x.size());
  ASSERT_EQ(jr.size(), x.size());
  for (std::size_t k = 0; k < x.size(); ++k) {
    EXPECT_EQ(jf[k].shape(), block_shape(y.shape(), x[k].shape())) << "jacfwd block " << k;
    EXPECT_EQ(jr[k].shape(), block_shape(y.shape(), x[k].shape())) << "jacrev block " << k;
    EXPECT_EQ(jf[k].dtype(), xpr::float64);
    EXPECT_EQ(jr[k].dtype(), xpr::float64);
  }
  const auto jac_fwd = assemble(jf, x, m), jac_rev = assemble(jr, x, m);
  expect_close(jac_fwd, jac, fd_tol, "jacfwd vs finite differences");
  expect_close(jac_rev, jac, fd_tol, "jacrev vs finite differences");
  expect_close(jac_rev, jac_fwd, exact_tol, "jacrev vs jacfwd");

  Array w = random_like({y}, rng)[0];
  Fn s = weighted_sum(c.f, w);
  Args g = xpr::grad(s)(x);
  ASSERT_EQ(g.size(), x.size());
  for (std::size_t k = 0; k < x.size(); ++k) EXPECT_EQ(g[k].shape(), x[k].shape());
  expect_close(flat(g), left_multiply(values(w), jac), fd_tol, "grad vs w^T J (differences)");
  expect_close(flat(g), left_multiply(values(w), jac_rev), exact_tol, "grad vs w^T jacrev");
  auto [v, g2] = xpr::value_and_grad(s)(x);
  expect_close(values(v), values(s(x)), exact_tol, "value_and_grad value");
  expect_close(flat(g2), flat(g), exact_tol, "value_and_grad gradient");

  std::vector<Args> h = xpr::hessian(s)(x);
  ASSERT_EQ(h.size(), x.size());
  const auto hess = assemble_hessian(h, x);
  const auto hess_fd = five_point_jacobian(
      [&](const std::vector<double>& p) { return flat(xpr::grad(s)(unflat(p, x, xpr::float64))); },
      flat(x));
  expect_close(hess, hess_fd, fd_tol, "hessian vs differences of grad");
  const std::size_t n = g.empty() ? 0 : flat(x).size();
  std::vector<double> hess_t(n * n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) hess_t[j * n + i] = hess[i * n + j];
  expect_close(hess, hess_t, exact_tol, "hessian symmetry");
}

// <vjp(ct), t> == <ct, jvp(t)> for random t and ct; linearize's tangent map equals jvp's; the
// pullback is linear in the cotangent.
TEST_P(Battery, VjpAgreesWithJvp) {
  const Case& c = the_case();
  SCOPED_TRACE(c.name);
  for (int trial = 0; trial < 3; ++trial) {
    Args x = draw(c.args, rng), t = random_like(x, rng);
    auto [y, f_vjp] = xpr::vjp(c.f, x);
    Array ct = random_like({y}, rng)[0];
    auto [ct_x] = f_vjp(ct);
    auto [y2, t_out] = xpr::jvp(c.f, std::tuple{x}, std::tuple{t});
    EXPECT_EQ(values(y), values(y2));
    const auto tv = flat(t), cv = flat(ct_x), ctv = values(ct), tov = values(t_out);
    const double lhs = host_dot(cv, tv), rhs = host_dot(ctv, tov);
    const double scale = host_abs_dot(cv, tv) + host_abs_dot(ctv, tov);
    EXPECT_LE(std::abs(lhs - rhs), exact_tol * (1 + scale)) << lhs << " vs " << rhs;
    auto [y3, f_lin] = xpr::linearize(c.f, x);
    expect_close(values(f_lin(t)), tov, exact_tol, "linearize vs jvp");
    // linear in the cotangent: f_vjp(2 ct) == 2 f_vjp(ct)
    auto [ct_x2] = f_vjp(ct * 2.0);
    auto twice = cv;
    for (double& e : twice) e *= 2;
    expect_close(flat(ct_x2), twice, exact_tol, "pullback linearity");
  }
}

// The same functions on f32 inputs: results stay f32, and equal the f64 derivatives at the same
// (f32-representable) point to 1e-6 (1 + |d|). Why that bound: f32's unit roundoff is
// 2^-24 = 6e-8, and each derivative here is a short chain of rounded f32 operations (at most
// ~10, on values of modest size and conditioning), so a correct f32 result is within a few units
// of roundoff of the exact one (measured worst: 7e-8, matmul with a broadcast batch); 1e-6 is 16
// units, room for the chain, while a derivative that loses f32 accuracy (cancellation in a rule,
// a step done in the wrong precision) or is wrong is far outside it. Differences in f32 would
// be accurate to ~1e-3 only, which is why the reference is the f64 result, itself checked
// against differences above.
TEST_P(Battery, Float32AgainstFloat64) {
  const Case& c = the_case();
  if (!c.f32) GTEST_SKIP() << c.name << " converts to f64 on purpose";
  SCOPED_TRACE(c.name);
  constexpr double tol32 = 1e-6;
  Args x = draw(c.args, rng);
  Args x32 = unflat(flat(x), x, xpr::float32);
  Args x64 = unflat(flat(x32), x, xpr::float64);  // the same point, exactly
  Array y32 = c.f(x32);
  ASSERT_EQ(y32.dtype(), xpr::float32);
  Array w64 = random_like({y32}, rng)[0];
  Array w32 = unflat(values(w64), {w64}, xpr::float32)[0];
  w64 = unflat(values(w32), {w64}, xpr::float64)[0];
  Args g32 = xpr::grad(weighted_sum(c.f, w32))(x32);
  Args g64 = xpr::grad(weighted_sum(c.f, w64))(x64);
  for (const Array& gk : g32) EXPECT_EQ(gk.dtype(), xpr::float32);
  expect_close(flat(g32), flat(g64), tol32, "grad f32 vs f64");
  const auto m = static_cast<std::size_t>(y32.size());
  Args jf = xpr::jacfwd(c.f)(x32), jr = xpr::jacrev(c.f)(x32), j64 = xpr::jacrev(c.f)(x64);
  for (const Array& b : jf) EXPECT_EQ(b.dtype(), xpr::float32);
  for (const Array& b : jr) EXPECT_EQ(b.dtype(), xpr::float32);
  expect_close(assemble(jf, x, m), assemble(j64, x, m), tol32, "jacfwd f32 vs f64");
  expect_close(assemble(jr, x, m), assemble(j64, x, m), tol32, "jacrev f32 vs f64");
}

std::string case_name(const ::testing::TestParamInfo<std::size_t>& info) {
  std::string out;
  for (char ch : all_cases()[info.param].name)
    out += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return out;
}

INSTANTIATE_TEST_SUITE_P(Primitives, Battery, ::testing::Range<std::size_t>(0, all_cases().size()),
                         case_name);

// ---- closed forms -----------------------------------------------------------------------------

struct ClosedForm {
  std::string name;
  std::function<Array(const Array&)> f;
  std::function<double(double)> d1, d2;  // f' and f''
  ArgSpec spec;
};

std::vector<ClosedForm> closed_forms() {
  const Shape s{5};
  auto logistic = [](double x) { return 1 / (1 + std::exp(-x)); };
  std::vector<ClosedForm> c{
      {"neg", [](const Array& x) { return -x; }, [](double) { return -1.0; },
       [](double) { return 0.0; }, any(s)},
      {"sin", [](const Array& x) { return xpr::sin(x); }, [](double x) { return std::cos(x); },
       [](double x) { return -std::sin(x); }, any(s)},
      {"cos", [](const Array& x) { return xpr::cos(x); }, [](double x) { return -std::sin(x); },
       [](double x) { return -std::cos(x); }, any(s)},
      {"tan",
       [](const Array& x) { return xpr::tan(x); },
       [](double x) { return 1 / (std::cos(x) * std::cos(x)); },
       [](double x) { return 2 * std::sin(x) / std::pow(std::cos(x), 3); },
       {s, -1.2, 1.2}},
      {"tanh", [](const Array& x) { return xpr::tanh(x); },
       [](double x) { return 1 / (std::cosh(x) * std::cosh(x)); },
       [](double x) { return -2 * std::sinh(x) / std::pow(std::cosh(x), 3); }, any(s)},
      {"exp", [](const Array& x) { return xpr::exp(x); }, [](double x) { return std::exp(x); },
       [](double x) { return std::exp(x); }, any(s)},
      {"log", [](const Array& x) { return xpr::log(x); }, [](double x) { return 1 / x; },
       [](double x) { return -1 / (x * x); }, positive(s)},
      {"log1p",
       [](const Array& x) { return xpr::log1p(x); },
       [](double x) { return 1 / (1 + x); },
       [](double x) { return -1 / ((1 + x) * (1 + x)); },
       {s, -0.6, 2.0}},
      {"expm1", [](const Array& x) { return xpr::expm1(x); }, [](double x) { return std::exp(x); },
       [](double x) { return std::exp(x); }, any(s)},
      {"sqrt", [](const Array& x) { return xpr::sqrt(x); },
       [](double x) { return 0.5 / std::sqrt(x); },
       [](double x) { return -0.25 / (x * std::sqrt(x)); }, positive(s)},
      {"rsqrt", [](const Array& x) { return xpr::rsqrt(x); },
       [](double x) { return -0.5 / (x * std::sqrt(x)); },
       [](double x) { return 0.75 / (x * x * std::sqrt(x)); }, positive(s)},
      {"abs", [](const Array& x) { return xpr::abs(x); },
       [](double x) { return x > 0 ? 1.0 : -1.0; }, [](double) { return 0.0; }, nonzero(s)},
      {"sign", [](const Array& x) { return xpr::sign(x); }, [](double) { return 0.0; },
       [](double) { return 0.0; }, nonzero(s)},
      {"logistic", [](const Array& x) { return xpr::logistic(x); },
       [=](double x) { return logistic(x) * (1 - logistic(x)); },
       [=](double x) { return logistic(x) * (1 - logistic(x)) * (1 - 2 * logistic(x)); }, any(s)},
  };
  for (int n : {-3, -2, 0, 1, 2, 3, 4}) {
    c.push_back({"integer_pow " + std::to_string(n),
                 [n](const Array& x) { return xpr::integer_pow(x, n); },
                 [n](double x) { return n * std::pow(x, n - 1); },
                 [n](double x) { return n * (n - 1) * std::pow(x, n - 2); }, nonzero(s)});
  }
  return c;
}

// grad of sum(f(x)) is f' elementwise, jacfwd and jacrev are diag(f'), the Hessian of sum(f(x))
// is diag(f''), off-diagonal entries exactly zero.
TEST(ClosedForms, UnaryPrimitivesFirstAndSecondDerivatives) {
  std::mt19937_64 rng(7);
  for (const ClosedForm& c : closed_forms()) {
    SCOPED_TRACE(c.name);
    Array x = draw({c.spec}, rng)[0];
    auto f = c.f;
    auto total = [f](const Array& a) { return xpr::sum(f(a)); };
    const auto xv = values(x);
    const std::size_t n = xv.size();
    std::vector<double> d1(n), diag1(n * n, 0), diag2(n * n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      d1[i] = c.d1(xv[i]);
      diag1[i * n + i] = d1[i];
      diag2[i * n + i] = c.d2(xv[i]);
    }
    expect_close(values(xpr::grad(total)(x)), d1, exact_tol, "grad");
    expect_close(values(xpr::jacfwd(f)(x)), diag1, exact_tol, "jacfwd");
    expect_close(values(xpr::jacrev(f)(x)), diag1, exact_tol, "jacrev");
    Array h = xpr::hessian(total)(x);
    EXPECT_EQ(h.shape(), (Shape{5, 5}));
    expect_close(values(h), diag2, exact_tol, "hessian");
    auto hv = values(h);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j)
        if (i != j) {
          EXPECT_EQ(hv[i * n + j], 0.0) << i << "," << j;
        }
  }
}

// pow(x, y) and div(x, y): both partials and the 2 x 2 Hessian in closed form.
TEST(ClosedForms, PowAndDivPartials) {
  for (auto [x, y] : {std::pair{0.7, 1.3}, std::pair{2.2, -0.6}, std::pair{1.5, 3.0}}) {
    SCOPED_TRACE(::testing::Message() << "x = " << x << ", y = " << y);
    auto pow = [](const Array& a, const Array& b) { return xpr::pow(a, b); };
    auto [gx, gy] = xpr::grad<0, 1>(pow)(x, y);
    const double lx = std::log(x), p = std::pow(x, y);
    expect_close(values(gx), {y * std::pow(x, y - 1)}, exact_tol, "pow d/dx");
    expect_close(values(gy), {p * lx}, exact_tol, "pow d/dy");
    auto h = xpr::hessian<0, 1>(pow)(x, y);
    expect_close(values(std::get<0>(std::get<0>(h))), {y * (y - 1) * std::pow(x, y - 2)}, exact_tol,
                 "pow d2/dx2");
    expect_close(values(std::get<1>(std::get<0>(h))), {std::pow(x, y - 1) * (1 + y * lx)},
                 exact_tol, "pow d2/dxdy");
    expect_close(values(std::get<0>(std::get<1>(h))), {std::pow(x, y - 1) * (1 + y * lx)},
                 exact_tol, "pow d2/dydx");
    expect_close(values(std::get<1>(std::get<1>(h))), {p * lx * lx}, exact_tol, "pow d2/dy2");
    auto div = [](const Array& a, const Array& b) { return a / b; };
    auto [dx, dy] = xpr::grad<0, 1>(div)(x, y);
    expect_close(values(dx), {1 / y}, exact_tol, "div d/dx");
    expect_close(values(dy), {-x / (y * y)}, exact_tol, "div d/dy");
    auto hd = xpr::hessian<0, 1>(div)(x, y);
    expect_close(values(std::get<0>(std::get<0>(hd))), {0.0}, exact_tol, "div d2/dx2");
    expect_close(values(std::get<1>(std::get<0>(hd))), {-1 / (y * y)}, exact_tol, "div d2/dxdy");
    expect_close(values(std::get<1>(std::get<1>(hd))), {2 * x / (y * y * y)}, exact_tol,
                 "div d2/dy2");
  }
}

// At a tie, jax.grad(jnp.maximum)(1., 1.) and jax.grad(jnp.minimum)(1., 1.) are 0.5 for each
// operand (lax's _balanced_eq splits the tangent evenly); away from ties the larger operand
// takes it all.
TEST(ClosedForms, MaximumAndMinimumSplitTiesEvenly) {
  auto mx = [](const Array& a, const Array& b) { return xpr::maximum(a, b); };
  auto mn = [](const Array& a, const Array& b) { return xpr::minimum(a, b); };
  auto [a, b] = xpr::grad<0, 1>(mx)(1.0, 1.0);
  EXPECT_EQ(a.item<double>(), 0.5);
  EXPECT_EQ(b.item<double>(), 0.5);
  auto [c, d] = xpr::grad<0, 1>(mn)(-2.0, -2.0);
  EXPECT_EQ(c.item<double>(), 0.5);
  EXPECT_EQ(d.item<double>(), 0.5);
  auto [e, f] = xpr::grad<0, 1>(mx)(1.0, 3.0);
  EXPECT_EQ(e.item<double>(), 0.0);
  EXPECT_EQ(f.item<double>(), 1.0);
}

// reduce_max and reduce_min with ties: JAX gives each tied element an equal share
// (the location indicator divided by the count).
TEST(ClosedForms, ReduceMaxSharesTheGradientAmongTies) {
  auto f = [](const Array& x) { return xpr::max(x); };
  expect_close(values(xpr::grad(f)(xpr::array({1.0, 3.0, 3.0, 2.0}))), {0, 0.5, 0.5, 0}, exact_tol,
               "reduce_max ties");
  auto g = [](const Array& x) { return xpr::min(x); };
  expect_close(values(xpr::grad(g)(xpr::array({1.0, 3.0, 1.0, 1.0}))), {1. / 3, 0, 1. / 3, 1. / 3},
               exact_tol, "reduce_min ties");
}

// convert_element_type: f64 -> f32 passes the cotangent back converted to f64; f32 -> f64
// passes it back rounded to f32. Rounding defeats differences, so closed forms only.
TEST(ClosedForms, ConvertElementType) {
  Array x = xpr::array({0.3, -1.2, 2.5, 0.7});
  Array w = xpr::array({0.1f, -2.f, 1.5f, 3.25f});
  auto down = [w](const Array& a) { return xpr::sum(xpr::astype(a, xpr::float32) * w); };
  Array g = xpr::grad(down)(x);
  EXPECT_EQ(g.dtype(), xpr::float64);
  auto wv = w.to_vector<float>();
  EXPECT_EQ(values(g), std::vector<double>(wv.begin(), wv.end()));
  Array j = xpr::jacfwd([](const Array& a) { return xpr::astype(a, xpr::float32); })(x);
  EXPECT_EQ(j.dtype(), xpr::float32);
  EXPECT_EQ(values(j), values(xpr::eye(4)));

  Array x32 = xpr::array({0.3f, -1.2f, 2.5f, 0.7f});
  auto up = [](const Array& a) { return xpr::sum(xpr::sin(xpr::astype(a, xpr::float64))); };
  Array g32 = xpr::grad(up)(x32);
  EXPECT_EQ(g32.dtype(), xpr::float32);
  auto xv = x32.to_vector<float>();
  std::vector<double> want;
  for (float e : xv) want.push_back(static_cast<float>(std::cos(static_cast<double>(e))));
  expect_close(values(g32), want, 1e-7, "f32 -> f64 -> sin");
}

// stop_gradient: its argument is a constant for differentiation.
TEST(ClosedForms, StopGradient) {
  Array x = xpr::array({0.3, -1.2, 2.5});
  const auto xv = values(x);
  auto sq = [](const Array& a) { return xpr::sum(xpr::stop_gradient(a) * a); };
  EXPECT_EQ(values(xpr::grad(sq)(x)), xv);  // not 2x
  auto zero = [](const Array& a) { return xpr::sum(a - xpr::stop_gradient(a)); };
  EXPECT_EQ(values(xpr::grad(zero)(x)), (std::vector<double>{1, 1, 1}));
  auto sg = [](const Array& a) { return xpr::stop_gradient(a) * 2.0; };
  EXPECT_EQ(values(xpr::jacfwd(sg)(x)), std::vector<double>(9, 0.0));
  EXPECT_EQ(values(xpr::jacrev(sg)(x)), std::vector<double>(9, 0.0));
  // sum(sg(x) x^2): gradient 2 sg(x) x, Hessian 2 diag(sg(x)).
  auto cube = [](const Array& a) { return xpr::sum(xpr::stop_gradient(a) * a * a); };
  std::vector<double> h(9, 0.0);
  for (std::size_t i = 0; i < 3; ++i) h[i * 3 + i] = 2 * xv[i];
  expect_close(values(xpr::hessian(cube)(x)), h, exact_tol, "hessian of sum(sg(x) x^2)");
}

// Comparisons and sign have zero derivatives everywhere they are defined.
TEST(ClosedForms, ComparisonsAndSignHaveZeroDerivatives) {
  Array x = xpr::array({0.3, -1.2, 2.5});
  auto step = [](const Array& a) {
    return xpr::astype(a > 0.5, xpr::float64) * 3.0 + xpr::sign(a);
  };
  EXPECT_EQ(values(xpr::jacfwd(step)(x)), std::vector<double>(9, 0.0));
  EXPECT_EQ(values(xpr::jacrev(step)(x)), std::vector<double>(9, 0.0));
  auto total = [step](const Array& a) { return xpr::sum(step(a)); };
  EXPECT_EQ(values(xpr::grad(total)(x)), std::vector<double>(3, 0.0));
}

// Softmax cross-entropy: gradient (softmax(z) - onehot) / B, Hessian block-diagonal with blocks
// (diag(p) - p p^T) / B, all computed here from std::exp.
TEST(ClosedForms, SoftmaxCrossEntropy) {
  const std::vector<std::int32_t> labels{2, 0, 4, 1};
  const std::size_t b = 4, k = 5;
  std::mt19937_64 rng(11);
  Array z = draw({any(Shape{4, 5})}, rng)[0];
  const auto zv = values(z);
  std::vector<double> p(b * k), grad(b * k), hess(b * k * b * k, 0);
  for (std::size_t r = 0; r < b; ++r) {
    double total = 0;
    for (std::size_t j = 0; j < k; ++j) total += std::exp(zv[r * k + j]);
    for (std::size_t j = 0; j < k; ++j) {
      p[r * k + j] = std::exp(zv[r * k + j]) / total;
      grad[r * k + j] = (p[r * k + j] - (static_cast<std::int32_t>(j) == labels[r] ? 1 : 0)) / b;
    }
    for (std::size_t i = 0; i < k; ++i)
      for (std::size_t j = 0; j < k; ++j)
        hess[(r * k + i) * b * k + r * k + j] =
            ((i == j ? p[r * k + i] : 0) - p[r * k + i] * p[r * k + j]) / b;
  }
  auto loss = [labels](const Array& a) { return softmax_cross_entropy(a, labels); };
  double value = 0;
  for (std::size_t r = 0; r < b; ++r)
    value -= std::log(p[r * k + static_cast<std::size_t>(labels[r])]) / b;
  auto [v, g] = xpr::value_and_grad(loss)(z);
  EXPECT_NEAR(v.item<double>(), value, 1e-14);
  expect_close(values(g), grad, exact_tol, "grad");
  expect_close(values(xpr::jacrev(loss)(z)), grad, exact_tol, "jacrev");
  expect_close(values(xpr::jacfwd(loss)(z)), grad, exact_tol, "jacfwd");
  Array h = xpr::hessian(loss)(z);
  EXPECT_EQ(h.shape(), (Shape{4, 5, 4, 5}));
  expect_close(values(h), hess, exact_tol, "hessian");
}

}  // namespace test_rt_autodiff_battery
