// SPDX-License-Identifier: MIT
// Tests of the control-flow and indexing lowering of include/xpr/codegen/emit.hpp: cond, switch,
// while, scan (and fori_loop), check_max_trips, dynamic_slice, dynamic_update_slice, gather and
// the scatters run as native code (jit with backend=compiled, which never falls back to the
// interpreter) and give the eager interpreter's values, and those of jvp, vmap and grad of the
// jitted functions; user-style programs (Newton, RK4, finite-element assembly) beside them.
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/xpr.hpp"

namespace test_jit_control_flow {

using namespace xpr;

/// jit that must compile: a primitive the generator does not lower throws instead of falling
/// back to the interpreter, so every test below shows the construct ran as native code.
template <class F>
auto compiled(F f) {
  return xpr::jit(f, {.backend = JitBackend::compiled});
}

std::vector<double> values(const Array& a) {
  Array f = a.dtype() == DType::float64 ? a : xpr::convert_element_type(a, DType::float64);
  return std::vector<double>(f.data<double>(), f.data<double>() + f.size());
}

void expect_close(const Array& got, const Array& want, double tol = 1e-12) {
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_EQ(got.dtype(), want.dtype());
  std::vector<double> g = values(got), w = values(want);
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i]))
      EXPECT_TRUE(std::isnan(g[i])) << "at " << i;
    else
      EXPECT_NEAR(g[i], w[i], tol * (1 + std::abs(w[i]))) << "at " << i;
  }
}

// ---- cond and switch ----------------------------------------------------------------------------

TEST(JitControlFlow, CondBothBranchesAndDerivatives) {
  auto f = [](Array x) {
    return xpr::cond(
        x > 0.0, [](Array v) { return xpr::sin(v) * v; }, [](Array v) { return xpr::exp(v); }, x);
  };
  auto jf = compiled(f);
  EXPECT_NE(jf.lower(Array(2.0)).as_text().find("switch (k)"), std::string::npos);
  for (double x : {2.0, -1.0, 0.0}) {
    expect_close(jf(x), f(x));
    // grad(jit(f)): the cotangent through the cond's transpose, compiled too.
    expect_close(xpr::grad(jf)(x), Array(x > 0 ? std::sin(x) + x * std::cos(x) : std::exp(x)));
    expect_close(compiled(xpr::grad(f))(x), xpr::grad(f)(x));
    auto [y, t] = xpr::jvp(jf, x, 1.0);
    expect_close(y, f(x));
    expect_close(t, xpr::grad(f)(x));
  }
  Array xs = xpr::array({-1.0, 0.5, 2.0});
  expect_close(xpr::vmap(jf)(xs), xpr::vmap(f)(xs));
}

TEST(JitControlFlow, SwitchClampsTheIndexLikeTheInterpreter) {
  auto h = [](Array i, Array x) {
    return xpr::switch_(i,
                        std::tuple{[](Array v) { return v; }, [](Array v) { return v * v; },
                                   [](Array v) { return xpr::sin(v); }},
                        x);
  };
  auto jh = compiled(h);
  for (int i : {-3, 0, 1, 2, 7}) {
    expect_close(jh(Array(i), 2.0), h(Array(i), 2.0));
    expect_close(xpr::grad<1>(jh)(Array(i), 2.0), xpr::grad<1>(h)(Array(i), 2.0));
  }
}

TEST(JitControlFlow, CondReturningAnOperandAndAConstant) {
  // Branches that return an operand unchanged and a literal: copies, not equations.
  auto f = [](Array x, Array y) {
    return xpr::cond(
        x > y, [](Array a, Array) { return a; }, [](Array, Array) { return Array(7.0); }, x, y);
  };
  auto jf = compiled(f);
  expect_close(jf(3.0, 1.0), Array(3.0));
  expect_close(jf(0.0, 1.0), Array(7.0));
}

// ---- while --------------------------------------------------------------------------------------

/// sqrt(a) by Newton's method on the residual x^2 - a, as a user writes it.
Array newton_sqrt(Array a) {
  return xpr::while_loop([&](const Array& x) { return xpr::abs(x * x - a) > 1e-14 * a; },
                         [&](const Array& x) { return 0.5 * (x + a / x); }, a);
}

TEST(JitControlFlow, NewtonSqrtTwo) {
  auto jf = compiled(newton_sqrt);
  EXPECT_NE(jf.lower(Array(2.0)).as_text().find("for (;;)"), std::string::npos);
  EXPECT_NEAR(jf(2.0).item<double>(), std::sqrt(2.0), 1e-15);
  expect_close(jf(2.0), newton_sqrt(2.0), 0);
  for (double a : {0.25, 9.0, 1e6}) EXPECT_NEAR(jf(a).item<double>(), std::sqrt(a), 1e-9);
  // jvp of the jitted loop: d sqrt(a) / da = 1 / (2 sqrt a).
  auto [y, t] = xpr::jvp(jf, 2.0, 1.0);
  EXPECT_NEAR(t.item<double>(), 0.5 / std::sqrt(2.0), 1e-12);
  // vmap: a batched predicate runs until every lane is done.
  Array as = xpr::array({2.0, 3.0, 100.0});
  expect_close(xpr::vmap(jf)(as), xpr::vmap(newton_sqrt)(as));
  EXPECT_NEAR(values(xpr::vmap(jf)(as))[2], 10.0, 1e-12);
}

TEST(JitControlFlow, NewtonSystemOfThreeEquations) {
  // F(x) = 0 for x^2 + y + z = 6, x + y^2 - z = 2, x y z = 6 (root (1, 2, 3) from a start
  // nearby), Newton steps with the Jacobian from jacfwd and a 3x3 solve by Cramer's rule.
  auto F = [](Array v) {
    Array x = v[0], y = v[1], z = v[2];
    return xpr::stack({x * x + y + z - 6.0, x + y * y - z - 2.0, x * y * z - 6.0});
  };
  auto det3 = [](const Array& m) {
    return m(0, 0) * (m(1, 1) * m(2, 2) - m(1, 2) * m(2, 1)) -
           m(0, 1) * (m(1, 0) * m(2, 2) - m(1, 2) * m(2, 0)) +
           m(0, 2) * (m(1, 0) * m(2, 1) - m(1, 1) * m(2, 0));
  };
  auto solve = [&](Array v0) {
    using State = std::tuple<Array, Array>;  // x, iterations
    auto out = xpr::while_loop(
        [&](const State& s) { return xpr::sum(xpr::abs(F(std::get<0>(s)))) > 1e-13; },
        [&](const State& s) {
          Array v = std::get<0>(s);
          Array J = xpr::jacfwd(F)(v), r = F(v);
          Array d = det3(J);
          std::vector<Array> dx;
          for (int c = 0; c < 3; ++c) {
            // Column c of J replaced by r.
            Array col = xpr::reshape(r, {3, 1});
            Array Jc = xpr::concatenate(
                {J(xpr::all, xpr::range(0, c)), col, J(xpr::all, xpr::range(c + 1, 3))}, 1);
            dx.push_back(det3(Jc) / d);
          }
          return State{v - xpr::stack(dx), std::get<1>(s) + 1};
        },
        State{v0, Array(0)});
    return out;
  };
  auto jsolve = compiled(solve);
  Array v0 = xpr::array({1.1, 1.9, 3.1});
  auto [v, n] = jsolve(v0);
  auto [ve, ne] = solve(v0);
  expect_close(v, ve, 1e-12);
  EXPECT_EQ(n.item<std::int32_t>(), ne.item<std::int32_t>());
  EXPECT_GT(n.item<std::int32_t>(), 2);
  expect_close(v, xpr::array({1.0, 2.0, 3.0}), 1e-13);
}

TEST(JitControlFlow, WhileCarryPermutationIsStaged) {
  // (a, b, i) -> (b, a + b, i + 1): Fibonacci; the new `a` is the old `b`, another carry.
  using S = std::tuple<Array, Array, Array>;
  auto fib = [](Array n) {
    return std::get<0>(xpr::while_loop([&](const S& s) { return std::get<2>(s) < n; },
                                       [](const S& s) {
                                         auto [a, b, i] = s;
                                         return S{b, a + b, i + 1};
                                       },
                                       S{Array(0.0), Array(1.0), Array(0)}));
  };
  auto swap = [](Array x, Array y, Array n) {
    using T = std::tuple<Array, Array, Array>;
    return xpr::while_loop([&](const T& s) { return std::get<2>(s) < n; },
                           [](const T& s) {
                             return T{std::get<1>(s), std::get<0>(s), std::get<2>(s) + 1};
                           },
                           T{x, y, Array(0)});
  };
  EXPECT_EQ(compiled(fib)(Array(30)).item<double>(), 832040.0);
  Array x = xpr::array({1.0, 2.0}), y = xpr::array({3.0, 4.0});
  auto [a, b, i] = compiled(swap)(x, y, Array(3));
  expect_close(a, y);
  expect_close(b, x);
}

/// The message of the value_error `run` throws under an iteration limit of `limit` (empty if it
/// throws none): eager and jitted loops must stop alike.
template <class F>
std::string limit_error(std::int64_t limit, F run) {
  LoopIterationLimit guard(limit);
  try {
    run();
  } catch (const xpr::value_error& e) {
    return e.what();
  }
  return {};
}

TEST(JitControlFlow, RunawayWhileStopsAtTheIterationLimit) {
  auto forever = [](Array x) {
    return xpr::while_loop([](const Array& v) { return v > 0.0; },
                           [](const Array& v) { return v + 1.0; }, x);
  };
  auto jf = compiled(forever);
  const std::string eager = limit_error(1000, [&] { (void)forever(1.0); });
  EXPECT_FALSE(eager.empty());
  EXPECT_EQ(limit_error(1000, [&] { (void)jf(1.0); }), eager);
  // Iterations run by a kernel count against the guard: 600 + 600 > 1000.
  auto count_to = [](Array n) {
    return xpr::while_loop([&](const Array& v) { return v < n; },
                           [](const Array& v) { return v + 1; }, Array(0));
  };
  auto jc = compiled(count_to);
  LoopIterationLimit guard(1000);
  EXPECT_EQ(jc(Array(600)).item<std::int32_t>(), 600);
  EXPECT_THROW((void)jc(Array(600)), xpr::value_error);
}

TEST(JitControlFlow, RunawayScanStopsAtTheIterationLimit) {
  auto f = [](Array x) {
    return xpr::fori_loop(
        0, 5000, [](Array, Array v) { return v * 0.5 + 1.0; }, x);
  };
  auto jf = compiled(f);
  const std::string eager = limit_error(1000, [&] { (void)f(1.0); });
  EXPECT_FALSE(eager.empty());
  EXPECT_EQ(limit_error(1000, [&] { (void)jf(1.0); }), eager);
  // Exactly the budget: 5000 compiled and 5000 interpreted iterations, then none is left.
  LoopIterationLimit guard(10000);
  expect_close(jf(1.0), f(1.0));
  EXPECT_THROW((void)jf(1.0), xpr::value_error);
}

TEST(JitControlFlow, NestedLoopsAndBranches) {
  // For each a in xs (a scan), sqrt(a) by a while loop whose body branches (a cond): step up by
  // one while below the root, Newton steps above it.
  auto f = [](Array xs) {
    auto root = [](Array a) {
      return xpr::while_loop([&](const Array& x) { return xpr::abs(x * x - a) > 1e-14 * a; },
                             [&](const Array& x) {
                               return xpr::cond(
                                   x * x > a, [&](Array v) { return 0.5 * (v + a / v); },
                                   [](Array v) { return v + 1.0; }, x);
                             },
                             Array(0.5));
    };
    return xpr::scan(
        [&](Array acc, Array a) {
          Array r = root(a);
          return std::pair{acc + r, r};
        },
        0.0, xs);
  };
  Array xs = xpr::array({2.0, 9.0, 30.0, 0.25});
  auto [total, roots] = compiled(f)(xs);
  auto [te, re] = f(xs);
  expect_close(roots, re, 0);
  expect_close(total, te, 0);
  expect_close(roots, xpr::sqrt(xs), 1e-14);
}

TEST(JitControlFlow, MaxTripsErrorIsTheInterpretersError) {
  auto cbrt = [](Array a, int trips) {
    return xpr::while_loop([&](const Array& x) { return xpr::abs(x * x * x - a) > 1e-12 * a; },
                           [&](const Array& x) { return x - (x * x * x - a) / (3.0 * x * x); },
                           1.0 + a / 3.0, xpr::max_trips(trips));
  };
  auto ok = compiled([&](Array a) { return cbrt(a, 50); });
  EXPECT_NEAR(ok(8.0).item<double>(), 2.0, 1e-12);
  EXPECT_NEAR(xpr::grad(ok)(8.0).item<double>(), 1.0 / 12.0, 1e-10);
  auto short_loop = [&](Array a) { return cbrt(a, 2); };
  std::string eager, jitted;
  try {
    (void)xpr::grad(short_loop)(8.0);
  } catch (const xpr::value_error& e) {
    eager = e.what();
  }
  try {
    (void)compiled(short_loop)(8.0);
  } catch (const xpr::value_error& e) {
    jitted = e.what();
  }
  EXPECT_FALSE(eager.empty());
  EXPECT_EQ(jitted, eager);
}

// ---- scan and fori_loop -------------------------------------------------------------------------

TEST(JitControlFlow, ScanWithXsYsAndReverse) {
  auto cumsum = [](Array xs) {
    auto body = [](Array c, Array x) { return std::pair{c + x, c * x}; };
    return xpr::scan(body, 0.0, xs);
  };
  auto horner = [](Array coeffs, Array w) {
    auto body = [&](Array acc, Array c) { return std::pair{acc * w + c, std::tuple<>{}}; };
    return xpr::scan(body, 0.0, coeffs, std::nullopt, /*reverse=*/true).first;
  };
  Array xs = xpr::array({1.0, 2.0, 3.0, 4.0, 5.0});
  auto [c, ys] = compiled(cumsum)(xs);
  auto [ce, yse] = cumsum(xs);
  expect_close(c, ce);
  expect_close(ys, yse);
  Array coeffs = xpr::array({1.0, -2.0, 0.5});
  expect_close(compiled(horner)(coeffs, 3.0), Array(1.0 - 6.0 + 4.5));
  expect_close(xpr::grad<1>(compiled(horner))(coeffs, 3.0), Array(-2.0 + 3.0));
  expect_close(xpr::grad<0>(compiled(horner))(coeffs, 3.0), xpr::array({1.0, 3.0, 9.0}));
  // Rows of a matrix as xs: slices of rank 1.
  Array m = xpr::reshape(xpr::arange(0.0, 6.0), {3, 2});
  auto rowsum = [](Array a) {
    return xpr::scan(
        [](Array acc, Array row) {
          return std::pair{acc + row, xpr::sum(row)};
        },
        xpr::zeros({2}), a);
  };
  auto [acc, sums] = compiled(rowsum)(m);
  expect_close(acc, xpr::array({6.0, 9.0}));
  expect_close(sums, xpr::array({1.0, 5.0, 9.0}));
}

/// y'' = -w^2 y by classical RK4 with fori_loop (a scan: static bounds), as a user writes it.
Array rk4_oscillator(Array w, Array y0, int steps, double h) {
  using S = std::pair<Array, Array>;
  auto rhs = [&](const Array& y, const Array& v) { return S{v, -w * w * y}; };
  auto body = [&](Array, S s) {
    auto [y, v] = s;
    auto [k1y, k1v] = rhs(y, v);
    auto [k2y, k2v] = rhs(y + 0.5 * h * k1y, v + 0.5 * h * k1v);
    auto [k3y, k3v] = rhs(y + 0.5 * h * k2y, v + 0.5 * h * k2v);
    auto [k4y, k4v] = rhs(y + h * k3y, v + h * k3v);
    return S{y + h / 6.0 * (k1y + 2.0 * k2y + 2.0 * k3y + k4y),
             v + h / 6.0 * (k1v + 2.0 * k2v + 2.0 * k3v + k4v)};
  };
  return xpr::fori_loop(0, steps, body, S{y0, Array(0.0)}).first;
}

TEST(JitControlFlow, Rk4IntegrationWithForiLoop) {
  auto f = [](Array w, Array y0) { return rk4_oscillator(w, y0, 1000, 0.001); };
  auto jf = compiled(f);
  EXPECT_NE(jf.lower(Array(2.0), Array(1.0)).as_text().find("for (long long step"),
            std::string::npos);
  // y(1) = y0 cos(w): RK4 with h = 1e-3 is accurate to ~1e-12 here.
  EXPECT_NEAR(jf(2.0, 1.0).item<double>(), std::cos(2.0), 1e-10);
  expect_close(jf(2.0, 1.0), f(2.0, 1.0), 1e-13);
  // d y(1) / dw = -y0 sin(w) (1 s); grad through the jitted scan's transpose.
  EXPECT_NEAR(xpr::grad<0>(jf)(2.0, 1.0).item<double>(), -std::sin(2.0), 1e-8);
  expect_close(xpr::grad<0>(jf)(2.0, 1.0), xpr::grad<0>(f)(2.0, 1.0), 1e-10);
  Array ws = xpr::array({0.5, 1.0, 3.0});
  expect_close(xpr::vmap(jf, std::tuple{0, xpr::not_mapped})(ws, Array(1.0)),
               xpr::vmap(f, std::tuple{0, xpr::not_mapped})(ws, Array(1.0)), 1e-12);
}

TEST(JitControlFlow, ForiLoopWithTracedBoundsIsAWhile) {
  auto power = [](Array x, Array n) {
    return xpr::fori_loop(
        Array(0), n, [&](Array, Array acc) { return acc * x; }, Array(1.0));
  };
  auto jp = compiled(power);
  EXPECT_NEAR(jp(2.0, Array(10)).item<double>(), 1024.0, 0);
  auto [y, t] = xpr::jvp([&](Array x) { return jp(x, Array(5)); }, 2.0, 1.0);
  EXPECT_NEAR(t.item<double>(), 5 * 16.0, 1e-12);
}

// ---- indexing -----------------------------------------------------------------------------------

TEST(JitIndexing, DynamicSliceClampsOutOfBoundsStarts) {
  Array x = xpr::arange(0.0, 10.0);
  auto win = [](Array v, Array i) { return xpr::dynamic_slice(v, {i}, {3}); };
  auto get = [](Array v, Array i) { return v[i]; };
  auto jw = compiled(win);
  auto jg = compiled(get);
  for (int i : {-5, -1, 0, 4, 7, 8, 100}) {
    expect_close(jw(x, Array(i)), win(x, Array(i)));
    expect_close(jg(x, Array(i)), get(x, Array(i)));
  }
  // Rank 2, int64 indices.
  Array m = xpr::reshape(xpr::arange(0.0, 20.0), {4, 5});
  auto w2 = [](Array v, Array i, Array j) { return xpr::dynamic_slice(v, {i, j}, {2, 3}); };
  for (std::int64_t i : {-1, 1, 3})
    for (std::int64_t j : {0, 4, 9})
      expect_close(compiled(w2)(m, Array(i), Array(j)), w2(m, Array(i), Array(j)));
  // grad of jit: the transpose is a dynamic_update_slice, compiled too.
  expect_close(xpr::grad([&](Array v) { return xpr::sum(jw(v, Array(8)) * 2.0); })(x),
               xpr::grad([&](Array v) { return xpr::sum(win(v, Array(8)) * 2.0); })(x));
}

TEST(JitIndexing, DynamicUpdateSliceClamps) {
  auto put = [](Array v, Array u, Array i) { return xpr::dynamic_update_slice(v, u, {i}); };
  Array x = xpr::zeros({6});
  Array u = xpr::array({1.0, 2.0});
  for (int i : {-2, 0, 3, 5, 9}) expect_close(compiled(put)(x, u, Array(i)), put(x, u, Array(i)));
}

TEST(JitIndexing, GatherWithIntegerArraysAndModes) {
  Array a = xpr::reshape(xpr::arange(0.0, 12.0), {3, 4});
  Array idx = xpr::array(std::vector<std::int32_t>{2, 0, -1});
  auto rows = [](Array m, Array i) { return m[i]; };
  auto cols = [](Array m, Array i) { return m(xpr::all, i); };
  auto pts = [](Array m, Array i) { return m(i, i); };
  expect_close(compiled(rows)(a, idx), rows(a, idx));
  expect_close(compiled(cols)(a, idx), cols(a, idx));
  expect_close(compiled(pts)(a, idx), pts(a, idx));
  auto take = [](Array m, Array i) { return xpr::take(m, i); };
  Array far = xpr::array(std::vector<std::int32_t>{3, 12, -20, 11});
  expect_close(compiled(take)(a, far), take(a, far));
  // vmap of a jitted gather (batched operand and indices: batching dimensions).
  Array ms = xpr::reshape(xpr::arange(0.0, 24.0), {2, 3, 4});
  Array is = xpr::array(std::vector<std::int32_t>{1, 2, 0, 0, 2, 1}, {2, 3});
  expect_close(xpr::vmap(compiled(rows))(ms, is), xpr::vmap(rows)(ms, is));
}

TEST(JitIndexing, ScatterAddSetMinMax) {
  Array z = xpr::zeros({5});
  Array ids = xpr::array(std::vector<std::int32_t>{1, 1, 3, 7, -1});
  Array v = xpr::array({1.0, 2.0, 3.0, 4.0, 5.0});
  auto add = [](Array a, Array i, Array u) { return a.at(i).add(u); };
  auto set = [](Array a, Array i, Array u) { return a.at(i).set(u); };
  auto mn = [](Array a, Array i, Array u) { return a.at(i).min(u); };
  auto mx = [](Array a, Array i, Array u) { return a.at(i).max(u); };
  expect_close(compiled(add)(z, ids, v), add(z, ids, v), 0);
  expect_close(compiled(set)(z, ids, v), set(z, ids, v), 0);
  expect_close(compiled(mn)(z, ids, v), mn(z, ids, v), 0);
  expect_close(compiled(mx)(z, ids, v), mx(z, ids, v), 0);
  // grad through a jitted gather: its transpose is a scatter-add, compiled too.
  Array x = xpr::array({0.3, -0.7, 1.1, 0.5});
  auto g = [](Array a) {
    Array i = xpr::array(std::vector<std::int32_t>{0, 2, 2, 3});
    return xpr::sum(a[i] * a[i]);
  };
  expect_close(compiled(xpr::grad(g))(x), xpr::array({0.6, 0.0, 4.4, 1.0}));
}

TEST(JitIndexing, FiniteElementAssemblyByScatterAdd) {
  // 1-D linear elements on n nodes: element e joins nodes e and e+1 with stiffness k_e; K is
  // assembled by scatter-adding each element's 2x2 matrix k_e [[1, -1], [-1, 1]] into an n*n
  // array, as a finite-element code does, inside a fori_loop over the elements.
  const int n = 6;
  auto assemble = [n](Array k) {
    auto body = [&](Array e, Array K) {
      Array ke = k[e];
      Array i0 = e * n + e;  // flat index of (e, e)
      Array at = xpr::stack({i0, i0 + 1, i0 + n, i0 + n + 1});
      return K.at(at).add(xpr::stack({ke, -ke, -ke, ke}));
    };
    return xpr::reshape(xpr::fori_loop(0, n - 1, body, xpr::zeros({n * n})), {n, n});
  };
  Array k = xpr::array({1.0, 2.0, 3.0, 4.0, 5.0});
  Array K = compiled(assemble)(k);
  expect_close(K, assemble(k), 0);
  // By hand: K(i, i) = k_{i-1} + k_i, K(i, i+1) = -k_i.
  std::vector<double> kv = values(k), Kv = values(K);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      double want = 0;
      if (i == j) want = (i > 0 ? kv[i - 1] : 0) + (i < n - 1 ? kv[i] : 0);
      if (j == i + 1) want = -kv[i];
      if (i == j + 1) want = -kv[j];
      EXPECT_EQ(Kv[static_cast<std::size_t>(i * n + j)], want) << i << ", " << j;
    }
  // d trace(K) / d k_e = 2 for every element: grad through the jitted loop of scatter-adds.
  auto tr = [&](Array kk) {
    Array M = compiled(assemble)(kk);
    Array s = M(0, 0) * 0.0;
    for (int i = 0; i < n; ++i) s = s + M(i, i);
    return s;
  };
  expect_close(xpr::grad(tr)(k), xpr::full({5}, 2.0));
}

TEST(JitIndexing, ScatterOfACarryInPlaceOnlyWhenNothingElseReadsIt) {
  // In place: the carry is only the scatter's operand (the source says so where it skips the
  // operand's copy).
  auto inplace = [](Array x) {
    return xpr::fori_loop(
        0, 4, [](Array i, Array v) { return v.at(i).add(1.0); }, x);
  };
  // Not in place: the old carry is also read (its sum) and also returned as another carry.
  using S = std::tuple<Array, Array, Array>;
  auto shared = [](Array x) {
    auto body = [](Array i, S s) {
      auto [v, old, t] = s;
      return S{v.at(i).add(t), v, t + xpr::sum(v)};
    };
    return xpr::fori_loop(0, 4, body, S{x, x, Array(1.0)});
  };
  Array x = xpr::arange(0.0, 5.0);
  expect_close(compiled(inplace)(x), inplace(x), 0);
  auto [a, b, c] = compiled(shared)(x);
  auto [ae, be, ce] = shared(x);
  expect_close(a, ae, 0);
  expect_close(b, be, 0);
  expect_close(c, ce, 0);
  EXPECT_NE(compiled(inplace).lower(x).as_text().find("// in place"), std::string::npos);
  EXPECT_EQ(compiled(shared).lower(x).as_text().find("// in place"), std::string::npos);
}

}  // namespace test_jit_control_flow
