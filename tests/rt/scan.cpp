// Tests of include/xpr/rt/scan.hpp: func11 of "Understanding jaxprs" prints as JAX prints it; an
// RK4 integrator of a damped oscillator under grad (against central finite differences), vmap
// (against 64 calls) and checkpoint (same gradient, fewer residual bytes); cumulative sums and
// products under jacrev and hessian against closed forms; reverse scans, pytrees, closed-over
// tracers (perturbation confusion), nested scans; the laws (jvp vs finite differences, vmap vs the
// loop, the vjp/jvp inner-product identity, print -> parse -> print); errors.
#include "xpr/rt/scan.hpp"

#include <cmath>
#include <cstddef>
#include <map>
#include <span>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"
#include "xpr/rt/checkpoint.hpp"

#include "../laws/laws.hpp"

namespace test_rt_scan {

using xpr::Array;
using xpr::rt::Arrays;

double scalar(const Array& a) { return a.item<double>(); }
std::vector<double> values(const Array& a) { return a.to_vector<double>(); }

std::string text(const xpr::ClosedJaxpr& j) {
  std::ostringstream os;
  os << j;
  return os.str();
}

// ---- func11 of "Understanding jaxprs" -------------------------------------------------------

// def func11(arr, extra):
//   ones = jnp.ones(arr.shape)
//   def body(carry, aelems):
//     ae1, ae2 = aelems
//     return (carry + ae1 * ae2 + extra, carry)
//   return lax.scan(body, 0., (arr, ones))
auto func11 = [](Array arr, Array extra) {
  Array ones = xpr::ones(arr.shape(), arr.dtype());
  auto body = [&](Array carry, std::pair<Array, Array> aelems) {
    auto [ae1, ae2] = aelems;
    return std::pair{carry + ae1 * ae2 + extra, carry};
  };
  return xpr::scan(body, 0.0, std::pair{arr, ones});
};

TEST(Scan, Func11PrintsAsJax) {
  // JAX's rules: the closed-over `extra` is the scan's one const; the weakly typed 0.0 takes the
  // carry's dtype f32 (a literal); the body's inputs are (consts, carry, xs).
  Array arr = xpr::ones(xpr::Shape{16}, xpr::DType::float32);
  std::string got = text(xpr::make_jaxpr(func11)(arr, 5.0f));
  std::string want =
      "{ lambda a:f32[16]; b:f32[16] c:f32[]. let\n"
      "    d:f32[] e:f32[16] = scan[\n"
      "      _split_transpose=False\n"
      "      jaxpr={ lambda ; f:f32[] g:f32[] h:f32[] i:f32[]. let\n"
      "          j:f32[] = mul h i\n"
      "          k:f32[] = add g j\n"
      "          l:f32[] = convert_element_type[new_dtype=float32 weak_type=False] f\n"
      "          m:f32[] = add k l\n"
      "        in (m, g) }\n"
      "      length=16\n"
      "      linear=(False, False, False, False)\n"
      "      num_carry=1\n"
      "      num_consts=1\n"
      "      reverse=False\n"
      "      unroll=1\n"
      "    ] c 0.0:f32[] b a\n"
      "  in (d, e) }";
  EXPECT_EQ(got, want);
  auto [carry, ys] = func11(xpr::array({1.0f, 2.0f, 3.0f}), 5.0f);
  EXPECT_EQ(carry.item<float>(), 1 + 2 + 3 + 15.0f);
  EXPECT_EQ(ys.to_vector<float>(), (std::vector<float>{0, 6, 13}));
}

// ---- RK4 integrator of a damped oscillator ----------------------------------------------------

// x'' + c x' + k x = 0 as the first-order system (x, v)' = (v, -c v - k x), integrated with RK4.
constexpr double k_spring = 4.0, h_step = 0.05;
constexpr std::int64_t n_steps = 80;

template <class S>
S rk4_step(const S& s, const Array& c) {
  auto f = [&](const S& y) { return S{y.second, -c * y.second - k_spring * y.first}; };
  auto add = [](const S& a, const S& b, double w) {
    return S{a.first + w * b.first, a.second + w * b.second};
  };
  S k1 = f(s);
  S k2 = f(add(s, k1, h_step / 2));
  S k3 = f(add(s, k2, h_step / 2));
  S k4 = f(add(s, k3, h_step));
  return S{s.first + h_step / 6 * (k1.first + 2.0 * k2.first + 2.0 * k3.first + k4.first),
           s.second + h_step / 6 * (k1.second + 2.0 * k2.second + 2.0 * k3.second + k4.second)};
}

using State = std::pair<Array, Array>;

// The final position after n_steps, from (x0, v0), with damping c.
Array final_position(Array c, Array x0, Array v0) {
  auto body = [&](State s, std::tuple<>) { return std::pair{rk4_step(s, c), std::tuple<>{}}; };
  return xpr::scan(body, State{x0, v0}, std::nullopt, n_steps).first.first;
}
Array final_position_ckpt(Array c, Array x0, Array v0) {
  auto step = xpr::checkpoint([](State s, Array damping) { return rk4_step(s, damping); });
  auto body = [&](State s, std::tuple<>) { return std::pair{step(s, c), std::tuple<>{}}; };
  return xpr::scan(body, State{x0, v0}, std::nullopt, n_steps).first.first;
}

// The same integration as a C++ loop of doubles: the reference for values and differences.
double final_position_ref(double c, double x0, double v0) {
  double x = x0, v = v0;
  for (std::int64_t i = 0; i < n_steps; ++i) {
    auto f = [&](double px, double pv) { return std::pair{pv, -c * pv - k_spring * px}; };
    auto [a1, b1] = f(x, v);
    auto [a2, b2] = f(x + h_step / 2 * a1, v + h_step / 2 * b1);
    auto [a3, b3] = f(x + h_step / 2 * a2, v + h_step / 2 * b2);
    auto [a4, b4] = f(x + h_step * a3, v + h_step * b3);
    x += h_step / 6 * (a1 + 2 * a2 + 2 * a3 + a4);
    v += h_step / 6 * (b1 + 2 * b2 + 2 * b3 + b4);
  }
  return x;
}

TEST(Scan, Rk4GradAgainstFiniteDifferences) {
  const double c = 0.7, x0 = 1.0, v0 = 0.5;
  EXPECT_NEAR(scalar(final_position(c, x0, v0)), final_position_ref(c, x0, v0), 1e-13);
  const double eps = 1e-6;
  const double fd =
      (final_position_ref(c + eps, x0, v0) - final_position_ref(c - eps, x0, v0)) / (2 * eps);
  double g = scalar(xpr::grad(final_position)(Array(c), Array(x0), Array(v0)));
  EXPECT_NEAR(g, fd, 1e-8);
  // Forward mode agrees, and so does checkpointing the step.
  auto [y, t] =
      xpr::jvp([&](Array cc) { return final_position(cc, x0, v0); }, Array(c), Array(1.0));
  EXPECT_NEAR(scalar(t), fd, 1e-8);
  double gc = scalar(xpr::grad(final_position_ckpt)(Array(c), Array(x0), Array(v0)));
  EXPECT_NEAR(gc, g, 1e-13);
}

TEST(Scan, Rk4VmapOver64InitialConditions) {
  std::vector<double> x0s, v0s;
  for (int i = 0; i < 64; ++i) {
    x0s.push_back(std::cos(0.1 * i));
    v0s.push_back(0.3 * std::sin(0.37 * i));
  }
  Array c(0.4);
  Array batched = xpr::vmap(final_position, std::tuple{xpr::not_mapped, 0, 0})(c, xpr::array(x0s),
                                                                               xpr::array(v0s));
  std::vector<double> got = values(batched);
  ASSERT_EQ(got.size(), 64u);
  for (int i = 0; i < 64; ++i)
    EXPECT_EQ(got[static_cast<std::size_t>(i)], scalar(final_position(c, x0s[i], v0s[i])))
        << "lane " << i;
  // The gradient with respect to c, per lane, against finite differences.
  Array grads = xpr::vmap(xpr::grad(final_position), std::tuple{xpr::not_mapped, 0, 0})(
      c, xpr::array(x0s), xpr::array(v0s));
  for (int i = 0; i < 64; i += 9) {
    const double eps = 1e-6;
    double fd = (final_position_ref(0.4 + eps, x0s[i], v0s[i]) -
                 final_position_ref(0.4 - eps, x0s[i], v0s[i])) /
                (2 * eps);
    EXPECT_NEAR(values(grads)[static_cast<std::size_t>(i)], fd, 1e-8) << "lane " << i;
  }
}

// The residuals a linearized program keeps: the constants of its linear jaxpr.
std::pair<std::size_t, std::size_t> residuals(Array (*f)(Array, Array, Array)) {
  xpr::rt::FlatFunction flat = [f](std::span<const Array> in) {
    return Arrays{f(in[0], in[1], in[2])};
  };
  Arrays primals{Array(0.7), Array(1.0), Array(0.5)};
  auto [out, linear] = xpr::rt::linearize_flat(flat, primals);
  std::size_t count = 0, bytes = 0;
  for (const Array& r : linear.consts) {
    ++count;
    bytes += static_cast<std::size_t>(r.size()) * xpr::core::itemsize(r.dtype());
  }
  return {count, bytes};
}

TEST(Scan, Rk4CheckpointBoundsResidualMemory) {
  auto [n_plain, bytes_plain] = residuals(final_position);
  auto [n_ckpt, bytes_ckpt] = residuals(final_position_ckpt);
  // The tangent with respect to c reads, per iteration, the velocity of each of the four RK4
  // stages (the factor of dc in -dc v - c dv - k dx): four stacked f64[n_steps] and a few
  // loop-invariant scalars (c among them, hoisted out of the loop). With checkpoint, each
  // iteration keeps its inputs only, the state (x, v): two stacked f64[n_steps] and c.
  EXPECT_GE(bytes_plain, 4 * n_steps * sizeof(double));
  EXPECT_LE(bytes_plain, 4 * n_steps * sizeof(double) + 64);
  EXPECT_GE(bytes_ckpt, 2 * n_steps * sizeof(double));
  EXPECT_LE(bytes_ckpt, 2 * n_steps * sizeof(double) + 64);
  std::cout << "RK4, " << n_steps << " steps: residuals " << n_plain << " arrays / " << bytes_plain
            << " bytes without checkpoint, " << n_ckpt << " arrays / " << bytes_ckpt
            << " bytes with checkpoint\n";
}

// ---- cumulative sums and products -------------------------------------------------------------

Array scan_cumsum(Array xs) {
  return xpr::scan([](Array c, Array x) { return std::pair{c + x, c + x}; }, 0.0, xs).second;
}
Array scan_cumprod(Array xs) {
  return xpr::scan([](Array c, Array x) { return std::pair{c * x, c * x}; }, 1.0, xs).second;
}
Array scan_prod(Array xs) {
  return xpr::scan(
             [](Array c, Array x) {
               return std::pair{c * x, std::tuple<>{}};
             },
             1.0, xs)
      .first;
}

TEST(Scan, CumsumAndCumprodUnderJacrevAndHessian) {
  Array xs = xpr::array({1.5, -2.0, 0.5, 3.0});
  const std::vector<double> x = values(xs);
  EXPECT_EQ(values(scan_cumsum(xs)), (std::vector<double>{1.5, -0.5, 0.0, 3.0}));
  // d cumsum_i / d x_j = [j <= i].
  std::vector<double> js = values(xpr::jacrev(scan_cumsum)(xs));
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t j = 0; j < 4; ++j) EXPECT_EQ(js[i * 4 + j], j <= i ? 1.0 : 0.0);
  // d cumprod_i / d x_j = prod_{k <= i, k != j} x_k for j <= i.
  std::vector<double> jp = values(xpr::jacrev(scan_cumprod)(xs));
  std::vector<double> jf = values(xpr::jacfwd(scan_cumprod)(xs));
  // The cumprod primitive (its derivative through associative_scan), both modes.
  auto primitive = [](const Array& v) { return xpr::cumprod(v); };
  std::vector<double> pp = values(xpr::jacrev(primitive)(xs));
  std::vector<double> pf = values(xpr::jacfwd(primitive)(xs));
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t j = 0; j < 4; ++j) {
      double want = 0;
      if (j <= i) {
        want = 1;
        for (std::size_t k = 0; k <= i; ++k)
          if (k != j) want *= x[k];
      }
      EXPECT_DOUBLE_EQ(jp[i * 4 + j], want) << i << "," << j;
      EXPECT_DOUBLE_EQ(jf[i * 4 + j], want) << i << "," << j;
      EXPECT_DOUBLE_EQ(pp[i * 4 + j], want) << i << "," << j;
      EXPECT_DOUBLE_EQ(pf[i * 4 + j], want) << i << "," << j;
    }
  // The hessian of the product: prod_{k != i, j} x_k off the diagonal, 0 on it.
  std::vector<double> h = values(xpr::hessian(scan_prod)(xs));
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t j = 0; j < 4; ++j) {
      double want = 0;
      if (i != j) {
        want = 1;
        for (std::size_t k = 0; k < 4; ++k)
          if (k != i && k != j) want *= x[k];
      }
      EXPECT_DOUBLE_EQ(h[i * 4 + j], want) << i << "," << j;
    }
  // The residuals of the product: the carry of every iteration, stacked, and xs itself,
  // forwarded rather than stacked again.
  xpr::rt::FlatFunction flat = [](std::span<const Array> in) { return Arrays{scan_prod(in[0])}; };
  auto [prod_out, prod_linear] = xpr::rt::linearize_flat(flat, Arrays{xs});
  std::size_t shared = 0, other_bytes = 0;
  for (const Array& r : prod_linear.consts) {
    if (r.impl() == xs.impl())
      ++shared;
    else
      other_bytes += static_cast<std::size_t>(r.size()) * sizeof(double);
  }
  EXPECT_EQ(shared, 1u);
  EXPECT_LE(other_bytes, 4 * sizeof(double) + 16);
  // linearize and vjp of the product.
  auto [y, f_lin] = xpr::linearize(scan_prod, xs);
  EXPECT_DOUBLE_EQ(scalar(y), 1.5 * -2.0 * 0.5 * 3.0);
  EXPECT_DOUBLE_EQ(scalar(f_lin(xpr::array({1.0, 0.0, 0.0, 0.0}))), -2.0 * 0.5 * 3.0);
  auto [y2, f_vjp] = xpr::vjp(scan_prod, xs);
  EXPECT_EQ(values(std::get<0>(f_vjp(Array(1.0)))), (std::vector<double>{-3.0, 2.25, -9.0, -1.5}));
}

TEST(Scan, Reverse) {
  Array input = xpr::array({1.0, 2.0, 3.0});
  // A reverse scan walks xs from the end and fills ys from the end: a suffix sum.
  auto suffix = [](Array xs) {
    return xpr::scan(
        [](Array acc, Array x) {
          return std::pair{acc + x, acc + x};
        },
        0.0, xs, std::nullopt, true);
  };
  auto [c, ys] = suffix(input);
  EXPECT_EQ(scalar(c), 6.0);
  EXPECT_EQ(values(ys), (std::vector<double>{6.0, 5.0, 3.0}));
  // x_i is in i + 1 of the suffix sums: d/dx sum(ys) = (1, 2, 3).
  auto total = [&](Array xs) { return xpr::sum(suffix(xs).second); };
  EXPECT_EQ(values(xpr::grad(total)(input)), (std::vector<double>{1.0, 2.0, 3.0}));
  // A reverse product under grad: d/dx_i prod = prod / x_i.
  auto rprod = [](Array xs) {
    return xpr::scan(
               [](Array acc, Array x) {
                 return std::pair{acc * x, acc};
               },
               1.0, xs, std::nullopt, true)
        .first;
  };
  EXPECT_EQ(values(xpr::grad(rprod)(input)), (std::vector<double>{6.0, 3.0, 2.0}));
}

TEST(Scan, PytreesOfCarryXsAndYs) {
  // carry: (sum, map{"max": running maximum}); xs: (a, b); ys: (a*b, map{"s": sum so far}).
  using Carry = std::pair<Array, std::map<std::string, Array>>;
  auto f = [](Array a, Array b) {
    Carry init{Array(0.0), {{"max", Array(-1e9)}}};
    auto body = [](Carry c, std::pair<Array, Array> x) {
      Array s = c.first + x.first * x.second;
      Carry next{s, {{"max", xpr::maximum(c.second.at("max"), x.first)}}};
      return std::pair{next,
                       std::tuple{x.first * x.second, std::map<std::string, Array>{{"s", s}}}};
    };
    return xpr::scan(body, init, std::pair{a, b});
  };
  Array a = xpr::array({1.0, 4.0, 2.0}), b = xpr::array({3.0, -1.0, 0.5});
  auto [carry, ys] = f(a, b);
  EXPECT_EQ(scalar(carry.first), 3.0 - 4.0 + 1.0);
  EXPECT_EQ(scalar(carry.second.at("max")), 4.0);
  EXPECT_EQ(values(std::get<0>(ys)), (std::vector<double>{3.0, -4.0, 1.0}));
  EXPECT_EQ(values(std::get<1>(ys).at("s")), (std::vector<double>{3.0, -1.0, 0.0}));
  // d/da of the final sum is b, d/db is a.
  auto total = [&](Array p, Array q) { return f(p, q).first.first; };
  auto [ga, gb] = xpr::grad<0, 1>(total)(a, b);
  EXPECT_EQ(values(ga), values(b));
  EXPECT_EQ(values(gb), values(a));
}

TEST(Scan, ClosedOverTracersAndPerturbationConfusion) {
  // f(x) = d/dy [scan of c -> c + x*y, 3 times] = 3x; d/dx (x * f(x)) = 6x, not 3x + 3x*... .
  auto inner = [](Array x) {
    return xpr::grad([&](Array y) {
      auto body = [&](Array c, std::tuple<>) { return std::pair{c + x * y, std::tuple<>{}}; };
      return xpr::scan(body, 0.0, std::nullopt, 3).first;
    })(Array(1.0));
  };
  EXPECT_EQ(scalar(inner(Array(2.0))), 6.0);
  EXPECT_EQ(scalar(xpr::grad([&](Array x) { return x * inner(x); })(Array(2.0))), 12.0);
  // A body closing over an outer vmap's tracer: each lane scales by its own a.
  auto scaled = [](Array a) {
    auto body = [&](Array c, Array x) { return std::pair{c + a * x, a * x}; };
    return xpr::scan(body, 0.0, xpr::array({1.0, 2.0, 3.0})).first;
  };
  EXPECT_EQ(values(xpr::vmap(scaled)(xpr::array({1.0, -2.0}))), (std::vector<double>{6.0, -12.0}));
  EXPECT_EQ(values(xpr::vmap(xpr::grad(scaled))(xpr::array({1.0, -2.0}))),
            (std::vector<double>{6.0, 6.0}));
}

TEST(Scan, NestedScanInScan) {
  // sum over rows of prod over the row: the outer scan carries the sum, the inner the product.
  auto f = [](Array m) {
    auto outer = [](Array acc, Array row) {
      Array p = xpr::scan([](Array c, Array x) { return std::pair{c * x, c}; }, 1.0, row).first;
      return std::pair{acc + p, p};
    };
    return xpr::scan(outer, 0.0, m).first;
  };
  Array m = xpr::array({{1.0, 2.0, 3.0}, {0.5, -1.0, 4.0}});
  EXPECT_EQ(scalar(f(m)), 6.0 - 2.0);
  // d/dm_ij = prod of the other entries of row i.
  EXPECT_EQ(values(xpr::grad(f)(m)), (std::vector<double>{6.0, 3.0, 2.0, -4.0, 2.0, -0.5}));
  EXPECT_EQ(values(xpr::jacfwd(f)(m)), (std::vector<double>{6.0, 3.0, 2.0, -4.0, 2.0, -0.5}));
  // Second derivative through both levels: d2/dm00 dm01 = m02 = 3.
  std::vector<double> h = values(xpr::hessian(f)(m));
  EXPECT_EQ(h[0 * 6 + 1], 3.0);
  EXPECT_EQ(h[3 * 6 + 5], -1.0);
  EXPECT_EQ(h[0 * 6 + 3], 0.0);
}

// ---- laws
// ----------------------------------------------------------------------------------------

// consts (w), carry (c), xs (a, b) -> final carry, ys: a body that uses every kind of operand.
Arrays law_fn(std::span<const Array> in) {
  const Array& w = in[0];
  auto body = [&](std::pair<Array, Array> c, std::pair<Array, Array> x) {
    Array c1 = xpr::sin(c.first * w) + x.first * c.second;
    Array c2 = c.second * 0.9 + xpr::cos(x.second) * w;
    return std::pair{std::pair{c1, c2}, c1 * x.second};
  };
  auto [c, ys] = xpr::scan(body, std::pair{in[1], in[2]}, std::pair{in[3], in[4]});
  return Arrays{c.first, c.second, ys};
}

std::vector<xpr::laws::ArgSpec> law_specs() {
  using xpr::laws::ArgSpec;
  return {ArgSpec{xpr::Shape{2}}, ArgSpec{xpr::Shape{2}}, ArgSpec{xpr::Shape{2}},
          ArgSpec{xpr::Shape{5, 2}}, ArgSpec{xpr::Shape{5, 2}}};
}

TEST(Scan, LawJvpAgainstFiniteDifferences) {
  auto specs = law_specs();
  xpr::laws::check_jvp(law_fn, specs, 11);
}

TEST(Scan, LawVmapEqualsTheLoop) {
  auto specs = law_specs();
  EXPECT_GT(xpr::laws::check_batch(law_fn, specs, 12, 3, 24), 0);
}

TEST(Scan, LawVjpJvpInnerProduct) {
  // <ct, J t> = <J^T ct, t> for random t and ct.
  auto specs = law_specs();
  xpr::laws::Rng rng(13);
  Arrays primals, tangents;
  for (const auto& s : specs) primals.push_back(xpr::laws::draw(s, rng));
  for (const auto& s : specs) tangents.push_back(xpr::laws::draw(s, rng));
  auto [ys, jt] = xpr::rt::jvp_flat(law_fn, primals, tangents);
  auto [ys2, linear] = xpr::rt::linearize_flat(law_fn, primals);
  std::vector<xpr::rt::Cotangent> cts;
  Arrays ct_arrays;
  for (const Array& y : ys) {
    xpr::laws::ArgSpec s{y.shape()};
    ct_arrays.push_back(xpr::laws::draw(s, rng));
    cts.emplace_back(ct_arrays.back());
  }
  Arrays jtct = xpr::rt::transpose_linear(linear, cts);
  double lhs = 0, rhs = 0;
  for (std::size_t i = 0; i < ys.size(); ++i) {
    std::vector<double> a = values(ct_arrays[i]), b = values(jt[i]);
    for (std::size_t k = 0; k < a.size(); ++k) lhs += a[k] * b[k];
  }
  for (std::size_t i = 0; i < tangents.size(); ++i) {
    std::vector<double> a = values(jtct[i]), b = values(tangents[i]);
    for (std::size_t k = 0; k < a.size(); ++k) rhs += a[k] * b[k];
  }
  EXPECT_NEAR(lhs, rhs, 1e-12 * (1 + std::abs(lhs)));
}

TEST(Scan, LawPrintParsePrint) {
  auto specs = law_specs();
  xpr::laws::Rng rng(14);
  Arrays primals;
  for (const auto& s : specs) primals.push_back(xpr::laws::draw(s, rng));
  xpr::rt::Avals avals;
  for (const Array& p : primals) avals.push_back(p.aval());
  // The scan itself, its jvp, its linearization and its transpose all round-trip.
  std::vector<xpr::ClosedJaxpr> jaxprs{
      xpr::rt::make_jaxpr_flat(law_fn, avals),
      xpr::rt::make_jaxpr_flat(xpr::laws::jvp_of(law_fn),
                               [&] {
                                 xpr::rt::Avals a = avals;
                                 a.insert(a.end(), avals.begin(), avals.end());
                                 return a;
                               }()),
      xpr::rt::linearize_flat(law_fn, primals).second,
      xpr::make_jaxpr(xpr::grad([](Array w, Array x) {
        return xpr::sum(
            law_fn(Arrays{w, w, x, xpr::stack({w, x, w, x, w}), xpr::stack({x, w, x, w, x})})[2]);
      }))(xpr::array({0.5, 1.0}), xpr::array({1.0, 2.0}))};
  for (const xpr::ClosedJaxpr& j : jaxprs) {
    std::string t = text(j);
    EXPECT_NE(t.find("scan["), std::string::npos);
    xpr::ClosedJaxpr parsed = xpr::parse_jaxpr(t, j.consts);
    EXPECT_EQ(text(parsed), t);
    xpr::typecheck_jaxpr(parsed);
  }
  // The parsed scan evaluates like the traced one.
  xpr::ClosedJaxpr parsed = xpr::parse_jaxpr(text(jaxprs[0]));
  Arrays a = xpr::eval_jaxpr(parsed, primals), b = law_fn(primals);
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(values(a[i]), values(b[i]));
}

TEST(Scan, DceAndPartialEvalJaxprRules) {
  // The unused ys and the carry that only feeds them are pruned; the carry the used one reads
  // stays.
  auto f = [](Array xs) {
    auto body = [](std::tuple<Array, Array, Array> c, Array x) {
      auto [a, b, d] = c;
      return std::pair{std::tuple{a + b, b * x, d + x}, std::pair{d * 2.0, a}};
    };
    auto [c, ys] = xpr::scan(body, std::tuple{Array(0.0), Array(1.0), Array(0.0)}, xs);
    return std::get<0>(c);
  };
  xpr::ClosedJaxpr j = xpr::make_jaxpr(f)(xpr::array({1.0, 2.0}));
  auto [pruned, used] = xpr::dce_jaxpr(j.jaxpr, {true});
  ASSERT_EQ(pruned.eqns.size(), 1u);
  const xpr::Eqn& e = pruned.eqns[0];
  EXPECT_EQ(e.params.get<std::int64_t>("num_carry"), 2);
  EXPECT_EQ(e.outputs.size(), 2u);
  EXPECT_EQ(e.inputs.size(), 3u);  // a, b and xs
  const xpr::Jaxpr& body = e.params.get<xpr::rt::JaxprParam>("jaxpr")->jaxpr;
  EXPECT_EQ(body.invars.size(), 3u);
  EXPECT_EQ(body.outvars.size(), 2u);
  // grad through a scan inside a checkpoint inside a scan: partial_eval_jaxpr splits the inner one.
  auto g = [](Array xs) {
    auto inner = xpr::checkpoint([](Array c, Array x) {
      return xpr::scan(
                 [](Array a, Array y) {
                   return std::pair{a * y + xpr::sin(a), a};
                 },
                 c, xpr::stack({x, x}))
          .first;
    });
    return xpr::scan([&](Array c, Array x) { return std::pair{inner(c, x), c}; }, 0.3, xs).first;
  };
  Array xs = xpr::array({0.5, -1.0, 2.0});
  const double eps = 1e-6;
  std::vector<double> grad = values(xpr::grad(g)(xs));
  for (std::size_t i = 0; i < 3; ++i) {
    std::vector<double> p = values(xs), m = values(xs);
    p[i] += eps;
    m[i] -= eps;
    double fd = (scalar(g(xpr::array(p))) - scalar(g(xpr::array(m)))) / (2 * eps);
    EXPECT_NEAR(grad[i], fd, 1e-7) << i;
  }
}

// ---- errors -------------------------------------------------------------------------------------

TEST(Scan, Errors) {
  Array xs = xpr::array({1.0, 2.0});
  // The carry changes type: type_error naming the carry element and both types.
  auto bad_carry = [&] {
    return xpr::scan([](Array c, Array x) { return std::pair{xpr::stack({c, x}), x}; }, 0.0, xs);
  };
  try {
    bad_carry();
    ADD_FAILURE() << "expected type_error";
  } catch (const xpr::type_error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("carry element 0"), std::string::npos) << m;
    EXPECT_NE(m.find("f64[]"), std::string::npos) << m;
    EXPECT_NE(m.find("f64[2]"), std::string::npos) << m;
  }
  // xs of different lengths, a length that disagrees, nothing to scan over.
  auto id = [](Array c, std::pair<Array, Array>) { return std::pair{c, c}; };
  EXPECT_THROW(xpr::scan(id, 0.0, std::pair{xs, xpr::array({1.0, 2.0, 3.0})}), xpr::shape_error);
  EXPECT_THROW(xpr::scan(
                   [](Array c, Array) {
                     return std::pair{c, c};
                   },
                   0.0, xs, 3),
               xpr::shape_error);
  EXPECT_THROW(xpr::scan(
                   [](Array c, Array) {
                     return std::pair{c, c};
                   },
                   0.0, Array(1.0)),
               xpr::shape_error);
  EXPECT_THROW(xpr::scan(
                   [](Array c, std::tuple<>) {
                     return std::pair{c, c};
                   },
                   0.0, std::tuple<>{}),
               xpr::value_error);
  // A zero-length scan returns the init and empty ys.
  auto [c, ys] = xpr::scan(
      [](Array acc, Array x) {
        return std::pair{acc + x, acc * x};
      },
      2.0, xpr::zeros({0}));
  EXPECT_EQ(scalar(c), 2.0);
  EXPECT_EQ(ys.shape(), xpr::Shape{0});
}

TEST(Scan, HugeLengthWithEmptyYsStopsAtTheLoopLimit) {
  // Found while extending the fuzz corpus to scan: a parsed scan of length 2^62 whose ys have no
  // elements is a valid jaxpr (its outputs are small), and its impl sized the ys `length` up front,
  // which threw std::length_error, outside the xpr::error family. It now runs, and a
  // LoopIterationLimit stops it.
  xpr::ClosedJaxpr j = xpr::parse_jaxpr(
      "{ lambda ; a:f64[]. let\n"
      "    b:f64[] c:f64[4611686018427387904,0] = scan[\n"
      "      _split_transpose=False\n"
      "      jaxpr={ lambda ; d:f64[]. let\n"
      "          e:f64[] = add d 1.0:f64[]\n"
      "          f:f64[0] = broadcast_in_dim[broadcast_dimensions=() shape=(0,)] d\n"
      "        in (e, f) }\n"
      "      length=4611686018427387904\n"
      "      linear=(False,)\n"
      "      num_carry=1\n"
      "      num_consts=0\n"
      "      reverse=False\n"
      "      unroll=1\n"
      "    ] a\n"
      "  in (b, c) }");
  xpr::LoopIterationLimit limit(100);
  EXPECT_THROW((void)xpr::eval_jaxpr(j, {Array(1.0)}), xpr::value_error);
}

TEST(Scan, HugeOperandCountsAreATypeError) {
  // Found by the fuzz test under UBSan: num_consts + num_carry overflowed int64 (undefined
  // behaviour) for a parsed num_consts of 2^63 - 1, before the check that they fit the operands.
  for (const char* counts : {"num_carry=1 num_consts=9223372036854775807",
                             "num_carry=9223372036854775807 num_consts=9223372036854775807",
                             "num_carry=9223372036854775807 num_consts=1"}) {
    const std::string text =
        std::string("{ lambda ; a:f64[]. let\n    b:f64[] = scan[_split_transpose=False ") +
        "jaxpr={ lambda ; c:f64[]. let d:f64[] = sin c in (d,) } length=2 linear=(False,) " +
        counts + " reverse=False unroll=1] a\n  in (b,) }";
    try {
      (void)xpr::parse_jaxpr(text);
      ADD_FAILURE() << "expected type_error for " << counts;
    } catch (const xpr::type_error& e) {
      EXPECT_NE(std::string(e.what()).find("expected num_consts + num_carry <= the number of "
                                           "operands (1)"),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace test_rt_scan
