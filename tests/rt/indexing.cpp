// Tests of include/xpr/rt/indexing.hpp: the Rosenbrock function written with x[i] in a loop
// (grad, hessian, jacfwd(grad), jacrev(grad) against the closed forms; its jaxpr against the
// equations jax.numpy's lowering gives); every index form under eval against NumPy's semantics
// worked out by hand, under vmap against the loop, under jvp against finite differences; the
// printed equations of each lowering; bad indices and their messages.
#include "xpr/rt/indexing.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"

#include "tests/laws/laws.hpp"

namespace test_rt_indexing {

namespace laws = xpr::laws;
namespace rt = xpr::rt;
using rt::Arrays;
using rt::FlatFunction;
using xpr::all;
using xpr::Array;
using xpr::ellipsis;
using xpr::newaxis;
using xpr::none;
using xpr::range;
using xpr::Shape;

std::vector<double> values(const Array& a) { return a.to_vector<double>(); }

template <class T>
std::string text(const T& x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

template <class E>
void expect_error(auto f, std::initializer_list<const char*> parts) {
  try {
    f();
    ADD_FAILURE() << "expected an exception";
  } catch (const E& e) {
    std::string msg = e.what();
    for (const char* part : parts) EXPECT_NE(msg.find(part), std::string::npos) << msg;
  }
}

/// A[i][j] = 4 i + j, shape (3, 4), float64.
Array a34() {
  std::vector<double> v(12);
  for (int k = 0; k < 12; ++k) v[static_cast<std::size_t>(k)] = k;
  return xpr::array(v, Shape{3, 4});
}

void expect_array(const Array& y, const Shape& shape, const std::vector<double>& expected) {
  EXPECT_EQ(y.shape(), shape);
  EXPECT_EQ(values(y), expected);
}

// ---- the Rosenbrock function of issue 11, written as a new user writes it -------------------

auto rosen = [](auto x) {
  auto acc = x[0] * 0.0;
  for (int i = 0; i + 1 < 4; ++i) {
    auto d = x[i + 1] - x[i] * x[i];
    acc = acc + 100.0 * d * d + (1.0 - x[i]) * (1.0 - x[i]);
  }
  return acc;
};

const std::vector<double> rosen_x = {0.3, -0.7, 1.1, 0.5};

/// ∂f/∂x_j = [j < n-1] (-400 x_j (x_{j+1} - x_j²) - 2 (1 - x_j)) + [j > 0] 200 (x_j - x_{j-1}²).
std::vector<double> rosen_grad(const std::vector<double>& x) {
  const std::size_t n = x.size();
  std::vector<double> g(n, 0.0);
  for (std::size_t j = 0; j < n; ++j) {
    if (j + 1 < n) g[j] += -400 * x[j] * (x[j + 1] - x[j] * x[j]) - 2 * (1 - x[j]);
    if (j > 0) g[j] += 200 * (x[j] - x[j - 1] * x[j - 1]);
  }
  return g;
}

/// H_jj = [j < n-1] (1200 x_j² - 400 x_{j+1} + 2) + [j > 0] 200, H_{j,j+1} = H_{j+1,j} = -400 x_j.
std::vector<double> rosen_hessian(const std::vector<double>& x) {
  const std::size_t n = x.size();
  std::vector<double> h(n * n, 0.0);
  for (std::size_t j = 0; j < n; ++j) {
    if (j + 1 < n) {
      h[j * n + j] += 1200 * x[j] * x[j] - 400 * x[j + 1] + 2;
      h[j * n + j + 1] = h[(j + 1) * n + j] = -400 * x[j];
    }
    if (j > 0) h[j * n + j] += 200;
  }
  return h;
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t k = 0; k < got.size(); ++k)
    EXPECT_NEAR(got[k], want[k], tol * (1 + std::abs(want[k]))) << "element " << k;
}

TEST(IndexingRosenbrock, GradIsTheClosedForm) {
  Array x = xpr::array(rosen_x);
  std::vector<double> g = values(xpr::grad(rosen)(x));
  expect_near(g, rosen_grad(rosen_x), 1e-13);
  EXPECT_NE(g[0], 0.0);  // issue 11: it was silently [0, 0, 0, 0]
}

TEST(IndexingRosenbrock, SecondDerivativesAreTheClosedForm) {
  Array x = xpr::array(rosen_x);
  const std::vector<double> h = rosen_hessian(rosen_x);
  Array hess = xpr::hessian(rosen)(x);
  EXPECT_EQ(hess.shape(), (Shape{4, 4}));
  expect_near(values(hess), h, 1e-13);
  expect_near(values(xpr::jacfwd(xpr::grad(rosen))(x)), h, 1e-13);
  expect_near(values(xpr::jacrev(xpr::grad(rosen))(x)), h, 1e-13);
}

TEST(IndexingRosenbrock, JvpAndVmapOfGrad) {
  Array x = xpr::array(rosen_x), t = xpr::array({1.0, -2.0, 0.5, 3.0});
  auto [g, hv] = xpr::jvp(xpr::grad(rosen), std::tuple{x}, std::tuple{t});
  const std::vector<double> h = rosen_hessian(rosen_x), tv = values(t);
  std::vector<double> want(4, 0.0);
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t j = 0; j < 4; ++j) want[i] += h[i * 4 + j] * tv[j];
  expect_near(values(hv), want, 1e-13);
  // vmap of grad over a batch of points equals the closed form at each point.
  std::vector<double> batch = {0.3, -0.7, 1.1, 0.5, 1.0, 1.0, 1.0, 1.0, -1.2, 1.0, 0.0, 2.0};
  Array g2 = xpr::vmap(xpr::grad(rosen))(xpr::array(batch, Shape{3, 4}));
  std::vector<double> gv = values(g2);
  for (std::size_t b = 0; b < 3; ++b) {
    std::vector<double> xb(batch.begin() + static_cast<std::ptrdiff_t>(4 * b),
                           batch.begin() + static_cast<std::ptrdiff_t>(4 * b + 4));
    std::vector<double> gb(gv.begin() + static_cast<std::ptrdiff_t>(4 * b),
                           gv.begin() + static_cast<std::ptrdiff_t>(4 * b + 4));
    expect_near(gb, rosen_grad(xb), 1e-13);
  }
}

/// jax.numpy lowers x[i] for a static i >= 0 to `slice` then `squeeze`
/// (`_attempt_rewriting_take_via_slice`): for x:f64[4],
///   b:f64[1] = slice[limit_indices=(i+1,) start_indices=(i,) strides=None] a
///   c:f64[] = squeeze[dimensions=(0,)] b
/// Every x[i] of the Rosenbrock function is these two equations: x[0] once for the
/// accumulator, then per iteration x[i+1] once and x[i] four times, 16 pairs in all.
TEST(IndexingRosenbrock, JaxprHasJaxEquationsForEachIndex) {
  std::string s = text(xpr::make_jaxpr(rosen)(xpr::array(rosen_x)));
  std::istringstream lines(s);
  std::string line, pending;
  const std::regex slice_re(
      R"(^\s*(\w+):f64\[1\] = slice\[limit_indices=\((\d+),\) start_indices=\((\d+),\) strides=None\] a$)");
  const std::regex squeeze_re(R"(^\s*(\w+):f64\[\] = squeeze\[dimensions=\(0,\)\] (\w+)$)");
  std::vector<int> starts(4, 0);
  int slices = 0;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (std::regex_match(line, m, slice_re)) {
      EXPECT_TRUE(pending.empty()) << "a slice not followed by its squeeze: " << s;
      EXPECT_EQ(std::stoi(m[2]), std::stoi(m[3]) + 1) << line;
      ++starts[static_cast<std::size_t>(std::stoi(m[3]))];
      pending = m[1];
      ++slices;
      continue;
    }
    if (!pending.empty()) {
      ASSERT_TRUE(std::regex_match(line, m, squeeze_re)) << line << "\n" << s;
      EXPECT_EQ(m[2], pending);
      pending.clear();
    }
    EXPECT_EQ(line.find("slice"), std::string::npos) << line;  // no other slicing equation
  }
  EXPECT_EQ(slices, 16) << s;
  EXPECT_EQ(starts, (std::vector<int>{5, 5, 5, 1})) << s;
}

// ---- the equations of each lowering ---------------------------------------------------------

TEST(IndexingJaxpr, StaticIntegerIsSliceThenSqueeze) {
  Array x = xpr::array({1.0, 2.0, 3.0, 4.0});
  EXPECT_EQ(text(xpr::make_jaxpr([](Array v) { return v[1]; })(x)),
            "{ lambda ; a:f64[4]. let\n"
            "    b:f64[1] = slice[limit_indices=(2,) start_indices=(1,) strides=None] a\n"
            "    c:f64[] = squeeze[dimensions=(0,)] b\n"
            "  in (c,) }");
  // Several axes: one slice over all of them, one squeeze.
  EXPECT_EQ(text(xpr::make_jaxpr([](Array v) { return v(1, 2); })(a34())),
            "{ lambda ; a:f64[3,4]. let\n"
            "    b:f64[1,1] = slice[limit_indices=(2, 3) start_indices=(1, 2) strides=None] a\n"
            "    c:f64[] = squeeze[dimensions=(0, 1)] b\n"
            "  in (c,) }");
  // A partial range keeps its axis; `all` and the trailing axes take everything.
  EXPECT_EQ(text(xpr::make_jaxpr([](Array v) { return v(all, range(1, 3)); })(a34())),
            "{ lambda ; a:f64[3,4]. let\n"
            "    b:f64[3,2] = slice[limit_indices=(3, 3) start_indices=(0, 1) strides=None] a\n"
            "  in (b,) }");
  // Nothing to do: no equation.
  EXPECT_EQ(text(xpr::make_jaxpr([](Array v) { return v(ellipsis); })(a34())),
            "{ lambda ; a:f64[3,4]. let  in (a,) }");
}

/// A static negative integer: jax.numpy passes it to lax.dynamic_slice, whose
/// `_dynamic_slice_indices` turns it into the constant i + n of the index's dtype (int32 for a
/// C++ int, as for a Python int).
TEST(IndexingJaxpr, StaticNegativeIntegerIsDynamicSliceOfALiteral) {
  Array x = xpr::array({1.0, 2.0, 3.0, 4.0});
  EXPECT_EQ(text(xpr::make_jaxpr([](Array v) { return v[-1]; })(x)),
            "{ lambda ; a:f64[4]. let\n"
            "    b:f64[1] = dynamic_slice[slice_sizes=(1,)] a 3:i32[]\n"
            "    c:f64[] = squeeze[dimensions=(0,)] b\n"
            "  in (c,) }");
}

/// A traced rank-0 integer index: select(i < 0, i + n, i) (lt, add, select_n), then
/// dynamic_slice and squeeze.
TEST(IndexingJaxpr, TracedIntegerIsWrappedThenDynamicSlice) {
  Array x = xpr::array({1.0, 2.0, 3.0, 4.0});
  EXPECT_EQ(text(xpr::make_jaxpr([](Array v, Array i) { return v[i]; })(x, Array(2))),
            "{ lambda ; a:f64[4] b:i32[]. let\n"
            "    c:bool[] = lt b 0:i32[]\n"
            "    d:i32[] = add b 4:i32[]\n"
            "    e:i32[] = select_n c b d\n"
            "    f:f64[1] = dynamic_slice[slice_sizes=(1,)] a e\n"
            "    g:f64[] = squeeze[dimensions=(0,)] f\n"
            "  in (g,) }");
  // With a static index beside it: the static start is a literal of the traced index's dtype.
  EXPECT_EQ(text(xpr::make_jaxpr([](Array v, Array i) { return v(i, 1); })(a34(), Array(2))),
            "{ lambda ; a:f64[3,4] b:i32[]. let\n"
            "    c:bool[] = lt b 0:i32[]\n"
            "    d:i32[] = add b 3:i32[]\n"
            "    e:i32[] = select_n c b d\n"
            "    f:f64[1,1] = dynamic_slice[slice_sizes=(1, 1)] a e 1:i32[]\n"
            "    g:f64[] = squeeze[dimensions=(0, 1)] f\n"
            "  in (g,) }");
}

TEST(IndexingJaxpr, ReversalsStridesAndNewaxis) {
  // A plain ::-1 is lax.rev, as in jax.numpy.
  EXPECT_EQ(text(xpr::make_jaxpr([](Array v) { return v(range(none, none, -1)); })(a34())),
            "{ lambda ; a:f64[3,4]. let b:f64[3,4] = rev[dimensions=(0,)] a in (b,) }");
  // Other steps: a strided slice of the selected box, rev for a negative step, expand_dims for
  // newaxis (jax.numpy uses a gather for these; the values are the same).
  EXPECT_EQ(text(xpr::make_jaxpr([](Array v) { return v(newaxis, range(3, 0, -2)); })(a34()(0))),
            "{ lambda ; a:f64[4]. let\n"
            "    b:f64[2] = slice[limit_indices=(4,) start_indices=(1,) strides=(2,)] a\n"
            "    c:f64[2] = rev[dimensions=(0,)] b\n"
            "    d:f64[1,2] = expand_dims[dimensions=(0,)] c\n"
            "  in (d,) }");
}

// ---- every form under eval, against NumPy's semantics worked out by hand ---------------------

TEST(IndexingEval, IntegersCountFromTheEnd) {
  Array a = a34();
  expect_array(a[1], Shape{4}, {4, 5, 6, 7});
  expect_array(a[-1], Shape{4}, {8, 9, 10, 11});
  expect_array(a(1, 2), Shape{}, {6});
  expect_array(a(-1, -2), Shape{}, {10});
  expect_array(a[std::int64_t{2}][std::size_t{3}], Shape{}, {11});
  expect_array(a(-3), Shape{4}, {0, 1, 2, 3});
}

TEST(IndexingEval, RangesAllEllipsisNewaxis) {
  Array a = a34();
  expect_array(a(all, 1), Shape{3}, {1, 5, 9});
  expect_array(a(range(0, none, 2)), Shape{2, 4}, {0, 1, 2, 3, 8, 9, 10, 11});
  expect_array(a(all, range(none, none, -1)), Shape{3, 4}, {3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8});
  expect_array(a(range(2, 0, -1), range(1, 4, 2)), Shape{2, 2}, {9, 11, 5, 7});
  expect_array(a(range(-2, none)), Shape{2, 4}, {4, 5, 6, 7, 8, 9, 10, 11});
  expect_array(a(range(10, 20)), Shape{0, 4}, {});
  expect_array(a(range(none, -5)), Shape{0, 4}, {});
  expect_array(a(range(none, none, -2), 0), Shape{2}, {8, 0});
  expect_array(a(range(-1, -4, -1), -1), Shape{3}, {11, 7, 3});
  expect_array(a(all, range(100, none, -3)), Shape{3, 2}, {3, 0, 7, 4, 11, 8});
  // Steps as long as the axis or longer take one element, as Python's x[::-2**63] is [x[-1]].
  constexpr std::int64_t lowest = std::numeric_limits<std::int64_t>::min();
  constexpr std::int64_t highest = std::numeric_limits<std::int64_t>::max();
  expect_array(a(all, range(none, none, lowest)), Shape{3, 1}, {3, 7, 11});
  expect_array(a(all, range(none, none, highest)), Shape{3, 1}, {0, 4, 8});
  expect_array(a(all, range(1, none, highest)), Shape{3, 1}, {1, 5, 9});
  expect_array(a(all, range(2, none, -5)), Shape{3, 1}, {2, 6, 10});
  expect_array(a(range(none, none, lowest), range(none, none, 4)), Shape{1, 1}, {8});
  expect_array(a(newaxis, 1), Shape{1, 4}, {4, 5, 6, 7});
  expect_array(a(1, newaxis), Shape{1, 4}, {4, 5, 6, 7});
  expect_array(a(all, newaxis, range(none, none, -2)), Shape{3, 1, 2}, {3, 1, 7, 5, 11, 9});
  expect_array(a(ellipsis, 0), Shape{3}, {0, 4, 8});
  expect_array(a(1, ellipsis), Shape{4}, {4, 5, 6, 7});
  expect_array(a(ellipsis, newaxis), Shape{3, 4, 1}, values(a));
  expect_array(a(newaxis, ellipsis, 2, newaxis), Shape{1, 3, 1}, {2, 6, 10});
  expect_array(a(), Shape{3, 4}, values(a));
  Array s = Array(5.0);
  expect_array(s(newaxis), Shape{1}, {5});
  expect_array(s(ellipsis), Shape{}, {5});
}

/// Rank-0 integer arrays index like integers (negative ones count from the end), whether or not
/// they are traced; out-of-range ones are clamped into range, as lax.dynamic_slice clamps.
TEST(IndexingEval, ArrayScalarsCountFromTheEndAndClamp) {
  Array a = a34();
  expect_array(a[Array(1)], Shape{4}, {4, 5, 6, 7});
  expect_array(a(Array(-1), 2), Shape{}, {10});
  expect_array(a(Array(std::int64_t{-4}), Array(1)), Shape{}, {1});  // -4 + 3 = -1, clamped to 0
  expect_array(a[Array(5)], Shape{4}, {8, 9, 10, 11});               // clamped to 2
  // Traced: the same program for every index value (the jaxpr evaluated at each).
  auto j = xpr::make_jaxpr([](Array x, Array i) { return x(all, i); })(a, Array(0));
  expect_array(rt::eval_jaxpr(j, {a, Array(7)})[0], Shape{3}, {3, 7, 11});
  expect_array(rt::eval_jaxpr(j, {a, Array(-2)})[0], Shape{3}, {2, 6, 10});
  expect_array(rt::eval_jaxpr(j, {a, Array(-9)})[0], Shape{3}, {0, 4, 8});
}

TEST(IndexingEval, ViewsKeepDtypeAndWeakType) {
  Array i = xpr::array(std::vector<std::int32_t>{3, 4, 5});
  EXPECT_EQ(i[1].dtype(), xpr::int32);
  EXPECT_EQ(i[1].item<int>(), 4);
  Array w = xpr::full(Shape{2}, 1.5);  // weakly typed
  EXPECT_TRUE(w.weak_type());
  EXPECT_TRUE(w[0].weak_type());
  EXPECT_TRUE(xpr::make_jaxpr([](Array v) { return v[0]; })(w).out_avals()[0].weak_type);
}

// ---- under vmap: equal to the loop ------------------------------------------------------------

/// Each index form as a function of x:f64[3,4].
std::vector<std::pair<std::string, FlatFunction>> forms() {
  auto f = [](auto g) -> FlatFunction {
    return [g](std::span<const Array> a) { return Arrays{g(a[0])}; };
  };
  return {
      {"x[1]", f([](Array x) { return x[1]; })},
      {"x[-1]", f([](Array x) { return x[-1]; })},
      {"x(1, -2)", f([](Array x) { return x(1, -2); })},
      {"x(all, 2)", f([](Array x) { return x(all, 2); })},
      {"x(range(1, 3))", f([](Array x) { return x(range(1, 3)); })},
      {"x(range(none, none, -1))", f([](Array x) { return x(range(none, none, -1)); })},
      {"x(all, range(3, none, -2))", f([](Array x) { return x(all, range(3, none, -2)); })},
      {"x(range(none, none, 2), newaxis)",
       f([](Array x) { return x(range(none, none, 2), newaxis); })},
      {"x(ellipsis, 1)", f([](Array x) { return x(ellipsis, 1); })},
      {"x[Array(-2)]", f([](Array x) { return x[Array(-2)]; })},
      {"x(Array(1), Array(9))", f([](Array x) { return x(Array(1), Array(9)); })},
  };
}

TEST(IndexingVmap, EveryFormEqualsTheLoop) {
  std::uint64_t seed = 1;
  for (const auto& [name, f] : forms()) {
    SCOPED_TRACE(name);
    EXPECT_GT(laws::check_batch(f, std::vector<laws::ArgSpec>{{Shape{3, 4}}}, seed++), 0);
  }
}

/// A batched traced index (each example reads its own element) and a batched operand with it.
TEST(IndexingVmap, BatchedTracedIndexEqualsTheLoop) {
  FlatFunction f = [](std::span<const Array> a) { return Arrays{a[0][a[1]]}; };
  Array x = a34();
  Array idx = xpr::array(std::vector<std::int32_t>{2, -1, 0, 7});
  Array got = rt::vmap_flat(f, std::vector<Array>{x, idx}, rt::BatchDims{std::nullopt, 0},
                            rt::BatchDims{0})[0];
  expect_array(got, Shape{4, 4}, {8, 9, 10, 11, 8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11});
  Array xs = xpr::reshape(xpr::arange(0.0, 24.0), {2, 3, 4});
  Array is = xpr::array(std::vector<std::int32_t>{1, -3});
  FlatFunction g = [](std::span<const Array> a) { return Arrays{a[0](all, a[1])}; };
  Array got2 =
      rt::vmap_flat(g, std::vector<Array>{xs, is}, rt::BatchDims{0, 0}, rt::BatchDims{0})[0];
  expect_array(got2, Shape{2, 3}, {1, 5, 9, 12 + 1, 12 + 5, 12 + 9});
}

// ---- under jvp: finite differences ------------------------------------------------------------

TEST(IndexingJvp, EveryFormMatchesFiniteDifferences) {
  std::uint64_t seed = 50;
  for (const auto& [name, f] : forms()) {
    SCOPED_TRACE(name);
    laws::check_jvp(f, std::vector<laws::ArgSpec>{{Shape{3, 4}}}, seed++);
  }
}

TEST(IndexingJvp, VjpIsTheTransposeOfJvp) {
  // <t, vjp(c)> = <jvp(t), c> for each form, with random t and c.
  laws::Rng rng(7);
  for (const auto& [name, f] : forms()) {
    SCOPED_TRACE(name);
    Array x = laws::draw({Shape{3, 4}}, rng), t = laws::draw({Shape{3, 4}}, rng);
    Array y = f(std::vector<Array>{x})[0];
    Array c = laws::draw({y.shape()}, rng);
    auto [out, pullback] = xpr::vjp([&](Array v) { return f(std::vector<Array>{v})[0]; }, x);
    auto [ct] = pullback(c);
    Array jt = rt::jvp_flat(f, std::vector<Array>{x}, std::vector<Array>{t}).second[0];
    double lhs = 0, rhs = 0;
    auto tv = values(t), cv = values(ct), jv = values(jt), cc = values(c);
    for (std::size_t k = 0; k < tv.size(); ++k) lhs += tv[k] * cv[k];
    for (std::size_t k = 0; k < jv.size(); ++k) rhs += jv[k] * cc[k];
    EXPECT_NEAR(lhs, rhs, 1e-12 * (1 + std::abs(rhs)));
  }
}

// ---- bad indices --------------------------------------------------------------------------------

TEST(IndexingErrors, StaticOutOfRange) {
  Array x = xpr::array({1.0, 2.0, 3.0, 4.0});
  expect_error<xpr::index_error>([&] { (void)x[4]; },
                                 {"index 4 is out of bounds for axis 0 with size 4"});
  expect_error<xpr::index_error>([&] { (void)x[-5]; },
                                 {"index -5 is out of bounds for axis 0 with size 4"});
  expect_error<xpr::index_error>([&] { (void)a34()(0, 4); },
                                 {"index 4 is out of bounds for axis 1 with size 4"});
  // Also when traced: the bound is static.
  expect_error<xpr::index_error>([&] { (void)xpr::grad([](Array v) { return v[9]; })(x); },
                                 {"index 9 is out of bounds"});
}

TEST(IndexingErrors, FloatIndexIsADtypeError) {
  Array x = xpr::array({1.0, 2.0, 3.0, 4.0});
  expect_error<xpr::dtype_error>([&] { (void)x[1.5]; },
                                 {"expected an integer index", "float64", "position 0"});
  expect_error<xpr::dtype_error>([&] { (void)a34()(0, xpr::array({1.0f})); },
                                 {"expected an integer index", "float32", "position 1"});
  expect_error<xpr::dtype_error>([&] { (void)x[true]; }, {"bool", "boolean masks"});
}

TEST(IndexingErrors, TooManyIndices) {
  Array x = xpr::array({1.0, 2.0, 3.0, 4.0});
  expect_error<xpr::index_error>(
      [&] { (void)x(0, 0); },
      {"too many indices", "1-dimensional array of shape (4,) indexed with 2 regular indices"});
  expect_error<xpr::index_error>([&] { (void)Array(1.0)[0]; },
                                 {"too many indices", "rank-0 array indexed with 1 regular index"});
  expect_error<xpr::index_error>([&] { (void)x(ellipsis, ellipsis); }, {"single ellipsis"});
  expect_error<xpr::value_error>([&] { (void)x(range(0, 4, 0)); }, {"nonzero step"});
  expect_error<xpr::index_error>([&] { (void)xpr::zeros(Shape{0})[Array(0)]; },
                                 {"out of bounds for axis 0 with size 0"});
}

// ---- advanced (integer-array) indexing --------------------------------------------------------

Array ints(const std::vector<std::int32_t>& v, const Shape& shape) { return xpr::array(v, shape); }
Array ints(const std::vector<std::int32_t>& v) {
  return xpr::array(v, Shape{static_cast<std::int64_t>(v.size())});
}

/// NumPy's rules, worked by hand on A[i][j] = 4 i + j: the broadcast index arrays' dimensions
/// replace the indexed axes where they stand when the advanced indices (integers included) are
/// adjacent, and go first when they are not.
TEST(IndexingAdvanced, NumpySemantics) {
  Array a = a34();
  Array i = ints({2, 0, -1});
  expect_array(a[i], Shape{3, 4}, {8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11});
  expect_array(a(all, i), Shape{3, 3}, {2, 0, 3, 6, 4, 7, 10, 8, 11});
  expect_array(a(i, i), Shape{3}, {10, 0, 11});
  expect_array(a(1, i), Shape{3}, {6, 4, 7});
  expect_array(a(ints({0, 2}, Shape{2, 1}), ints({1, 3})), Shape{2, 2}, {1, 3, 9, 11});
  expect_array(a(i, newaxis, range(none, none, -2)), Shape{3, 1, 2}, {11, 9, 3, 1, 11, 9});
  expect_array(a(ints({1}), range(1, 3)), Shape{1, 2}, {5, 6});
  // Not adjacent (an integer, a range, an array): the advanced dimension goes first.
  Array b = xpr::reshape(xpr::arange(0.0, 24.0), {2, 3, 4});  // B[i][j][k] = 12 i + 4 j + k
  expect_array(b(1, all, ints({0, 3})), Shape{2, 3}, {12, 16, 20, 15, 19, 23});
  expect_array(b(all, ints({2, 0}), ints({1, 1})), Shape{2, 2}, {9, 1, 21, 13});
  expect_array(b(ints({1, 0}), all, ints({3, 2})), Shape{2, 3}, {15, 19, 23, 2, 6, 10});
  // An empty index array gives an empty result.
  expect_array(a[xpr::array(std::vector<std::int32_t>{}, Shape{0})], Shape{0, 4}, {});
  // Out of bounds: clamped (gather's default mode for reads).
  expect_array(a(1, ints({9, -9})), Shape{2}, {7, 4});
}

TEST(IndexingAdvanced, JaxprIsOneGather) {
  std::string s =
      text(xpr::make_jaxpr([](Array x, Array j) { return x(all, j); })(a34(), ints({1, 2})));
  EXPECT_NE(s.find("lt b 0:i32[]"), std::string::npos) << s;
  EXPECT_NE(s.find("select_n"), std::string::npos) << s;
  EXPECT_NE(s.find("offset_dims=(0,), collapsed_slice_dims=(1,), start_index_map=(1,)"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("mode=GatherScatterMode.PROMISE_IN_BOUNDS"), std::string::npos) << s;
  EXPECT_NE(s.find("slice_sizes=(3, 1)"), std::string::npos) << s;
}

std::vector<std::pair<std::string, FlatFunction>> advanced_forms() {
  auto f = [](auto g) -> FlatFunction {
    return [g](std::span<const Array> a) { return Arrays{g(a[0])}; };
  };
  return {
      {"x[i]", f([](Array x) {
         return x[ints({2, 0, -1, 2})];
       })},
      {"x(all, i)", f([](Array x) {
         return x(all, ints({3, 3, 0}));
       })},
      {"x(i, j)", f([](Array x) {
         return x(ints({0, 2}, Shape{2, 1}), ints({1, 3}));
       })},
      {"x(i, newaxis, ::-2)", f([](Array x) {
         return x(ints({1, 0}), newaxis, range(none, none, -2));
       })},
      {"take axis 1", f([](Array x) {
         return xpr::take(x, ints({3, -1, 0}), 1);
       })},
      {"take flat", f([](Array x) {
         return xpr::take(x, ints({11, 0, 5}, Shape{3, 1}));
       })},
      {"take_along_axis 1", f([](Array x) {
         return xpr::take_along_axis(x, ints({3, 0, 1, 1, 2, -1}, Shape{3, 2}), 1);
       })},
      {"take_along_axis 0", f([](Array x) {
         return xpr::take_along_axis(x, ints({2, 0, 1, 0}, Shape{1, 4}), 0);
       })},
  };
}

TEST(IndexingAdvanced, VmapJvpVjpLaws) {
  std::uint64_t seed = 300;
  laws::Rng rng(11);
  for (const auto& [name, f] : advanced_forms()) {
    SCOPED_TRACE(name);
    EXPECT_GT(laws::check_batch(f, std::vector<laws::ArgSpec>{{Shape{3, 4}}}, seed++), 0);
    laws::check_jvp(f, std::vector<laws::ArgSpec>{{Shape{3, 4}}}, seed++);
    Array x = laws::draw({Shape{3, 4}}, rng), t = laws::draw({Shape{3, 4}}, rng);
    Array y = f(std::vector<Array>{x})[0];
    Array c = laws::draw({y.shape()}, rng);
    auto [out, pullback] = xpr::vjp([&](Array v) { return f(std::vector<Array>{v})[0]; }, x);
    auto [ct] = pullback(c);
    Array jt = rt::jvp_flat(f, std::vector<Array>{x}, std::vector<Array>{t}).second[0];
    double lhs = 0, rhs = 0;
    auto tv = values(t), cv = values(ct), jv = values(jt), cc = values(c);
    for (std::size_t k = 0; k < tv.size(); ++k) lhs += tv[k] * cv[k];
    for (std::size_t k = 0; k < jv.size(); ++k) rhs += jv[k] * cc[k];
    EXPECT_NEAR(lhs, rhs, 1e-12 * (1 + std::abs(rhs)));
  }
}

/// A traced index array under vmap: each example gathers with its own indices.
TEST(IndexingAdvanced, BatchedIndexArraysEqualTheLoop) {
  FlatFunction f = [](std::span<const Array> a) { return Arrays{a[0](all, a[1])}; };
  std::vector<laws::ArgSpec> specs{{Shape{3, 4}}, {Shape{2}, xpr::int32, -4, 3, false, true}};
  EXPECT_GT(laws::check_batch(f, specs, 77), 0);
}

// An empty batch (no particles left, a trailing minibatch): v[i] with both batched gathers
// nothing and gives the empty result, as JAX's batching rule special-cases (gather's shape rule
// rejects the size-1 slice of a size-0 batching dimension); the same under jit, grad and for
// the scatter of x.at(i).add(u).
TEST(IndexingVmap, BothBatchedOverAnEmptyBatch) {
  auto pick = [](const Array& v, const Array& i) { return v(i); };
  const Array v = xpr::zeros(Shape{0, 3}), i = xpr::zeros(Shape{0}, xpr::int32);
  EXPECT_EQ(xpr::vmap(pick)(v, i).aval(), (xpr::ShapedArray{Shape{0}, xpr::float64, false}));
  EXPECT_EQ(xpr::jit(xpr::vmap(pick))(v, i).shape(), Shape{0});
  auto rows = [](const Array& m, const Array& k) { return m(k); };  // a row of each example
  EXPECT_EQ(xpr::vmap(rows)(xpr::zeros(Shape{0, 4, 2}), xpr::zeros(Shape{0}, xpr::int32)).shape(),
            (Shape{0, 2}));
  auto energy = [&](const Array& w, const Array& k) {
    return xpr::sum(xpr::vmap(pick)(w, k) * 2.0);
  };
  Array g = xpr::grad(energy)(v, i);
  EXPECT_EQ(g.shape(), (Shape{0, 3}));
  auto add_at = [](const Array& x, const Array& k, const Array& u) { return x.at(k).add(u); };
  EXPECT_EQ(xpr::vmap(add_at)(v, i, xpr::zeros(Shape{0})).shape(), (Shape{0, 3}));
  // A batch of two still reads example k's own row.
  Array two = xpr::reshape(xpr::array({0.0, 1.0, 2.0, 3.0, 4.0, 5.0}), {2, 3});
  EXPECT_EQ(values(xpr::vmap(pick)(two, ints({2, 0}))), (std::vector<double>{2.0, 3.0}));
}

// ---- take, take_along_axis: jax.numpy's semantics ----------------------------------------------

TEST(IndexingTake, SemanticsAndOutOfBoundFill) {
  Array a = a34();
  expect_array(xpr::take(a, ints({2, 0}), 1), Shape{3, 2}, {2, 0, 6, 4, 10, 8});
  expect_array(xpr::take(a, ints({11, -1, 1})), Shape{3}, {11, 11, 1});
  expect_array(xpr::take(a, ints({-1}), 0), Shape{1, 4}, {8, 9, 10, 11});
  // jnp.take's default mode is "fill": NaN for an out-of-bound index of a float array.
  std::vector<double> v = values(xpr::take(a, ints({12, -13})));
  EXPECT_TRUE(std::isnan(v[0]) && std::isnan(v[1]));
  Array k = xpr::array(std::vector<std::int32_t>{5, 6, 7});
  EXPECT_EQ(xpr::take(k, ints({3}))[0].item<std::int32_t>(), -2147483648);
  expect_error<xpr::dtype_error>([&] { (void)xpr::take(a, xpr::array({1.0})); },
                                 {"take: expected integer indices", "float64"});
}

TEST(IndexingTake, TakeAlongAxis) {
  Array a = a34();
  expect_array(xpr::take_along_axis(a, ints({3, 0, 1}, Shape{3, 1}), 1), Shape{3, 1}, {3, 4, 9});
  expect_array(xpr::take_along_axis(a, ints({0, 2, 1, 1, -1, 0}, Shape{3, 2}), -1), Shape{3, 2},
               {0, 2, 5, 5, 11, 8});
  expect_array(xpr::take_along_axis(a, ints({2, 0, 1, 0}, Shape{1, 4}), 0), Shape{1, 4},
               {8, 1, 6, 3});
  std::vector<double> v = values(xpr::take_along_axis(a, ints({4, 0, 0}, Shape{3, 1}), 1));
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ(v[1], 4);
  expect_error<xpr::shape_error>(
      [&] {
        (void)xpr::take_along_axis(a, ints({0, 1}), 1);
      },
      {"expected indices of the array's rank 2"});
}

// ---- x.at(...): functional updates --------------------------------------------------------------

TEST(IndexingAt, UpdatesWithRepeatedIndices) {
  Array x = xpr::array({1.0, 2.0, 3.0, 4.0});
  Array idx = ints({1, 1, 3});
  Array v = xpr::array({10.0, 20.0, 30.0});
  expect_array(x.at(idx).add(v), Shape{4}, {1, 32, 3, 34});    // repeated indices add up
  expect_array(x.at(idx).set(v), Shape{4}, {1, 20, 3, 30});    // the last update wins
  expect_array(x.at(idx).mul(v), Shape{4}, {1, 400, 3, 120});  // all factors apply
  expect_array(x.at(idx).min(xpr::array({0.5, 9.0, 5.0})), Shape{4}, {1, 0.5, 3, 4});
  expect_array(x.at(idx).max(xpr::array({0.5, 9.0, 5.0})), Shape{4}, {1, 9, 3, 5});
  expect_array(x.at(idx).get(), Shape{3}, {2, 2, 4});
  expect_array(x, Shape{4}, {1, 2, 3, 4});  // x itself is unchanged
  // Static indices, ranges and scalars broadcast, as with x[...] = v.
  expect_array(x.at(-1).set(7.0), Shape{4}, {1, 2, 3, 7});
  expect_array(x.at(range(none, none, 2)).add(1.0), Shape{4}, {2, 2, 4, 4});
  expect_array(x.at(range(none, none, -1)).set(xpr::array({5.0, 6.0, 7.0, 8.0})), Shape{4},
               {8, 7, 6, 5});
  expect_array(a34().at(1, range(1, 3)).set(0.0), Shape{3, 4},
               {0, 1, 2, 3, 4, 0, 0, 7, 8, 9, 10, 11});
  // Out-of-bound indices of updates are dropped (JAX's default for updates), negative ones wrap.
  expect_array(x.at(ints({4, -1, -5})).add(xpr::array({1.0, 1.0, 1.0})), Shape{4}, {1, 2, 3, 5});
  // An int32 array updated with a float keeps its dtype.
  Array k = xpr::array(std::vector<std::int32_t>{1, 2, 3});
  Array k2 = k.at(0).mul(2.5);
  EXPECT_EQ(k2.dtype(), xpr::int32);
  EXPECT_EQ(k2.to_vector<std::int32_t>(), (std::vector<std::int32_t>{2, 2, 3}));
}

/// f(x, v) = sum(w * x.at(idx).op(v)) with idx = [1, 1, 3], derived by hand.
TEST(IndexingAt, GradientsWithRepeatedIndices) {
  Array x = xpr::array({1.0, 2.0, 3.0, 4.0}), w = xpr::array({1.0, 2.0, 3.0, 4.0});
  Array idx = ints({1, 1, 3});
  auto loss = [&](int op) {
    return [&, op](Array a, Array b) {
      Array y = op == 0 ? a.at(idx).add(b) : op == 1 ? a.at(idx).set(b) : a.at(idx).max(b);
      return xpr::sum(w * y);
    };
  };
  Array v = xpr::array({10.0, 0.5, 3.5});
  // add: every update reaches its element: d/dx = w, d/dv = w[idx].
  auto [ax, av] = xpr::grad<0, 1>(loss(0))(x, v);
  EXPECT_EQ(values(ax), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(values(av), (std::vector<double>{2, 2, 4}));
  // set: the overwritten x elements get nothing; of the two updates of element 1 only the
  // winner (the last) gets its weight.
  auto [sx, sv] = xpr::grad<0, 1>(loss(1))(x, v);
  EXPECT_EQ(values(sx), (std::vector<double>{1, 0, 3, 0}));
  EXPECT_EQ(values(sv), (std::vector<double>{0, 2, 4}));
  // max: element 1 becomes 10 (the first update), element 3 stays 4 (x wins over 3.5).
  auto [mx, mv] = xpr::grad<0, 1>(loss(2))(x, v);
  EXPECT_EQ(values(mx), (std::vector<double>{1, 0, 3, 4}));
  EXPECT_EQ(values(mv), (std::vector<double>{2, 0, 0}));
  // mul by a constant: d/dx = w times the product of the factors.
  Array c = xpr::array({2.0, 3.0, 5.0});
  Array gx = xpr::grad([&](Array a) { return xpr::sum(w * a.at(idx).mul(c)); })(x);
  EXPECT_EQ(values(gx), (std::vector<double>{1, 12, 3, 20}));
}

TEST(IndexingAt, VmapAndJvpLaws) {
  Array idx = ints({1, 1, 3});
  std::vector<std::pair<std::string, FlatFunction>> ops = {
      {"add", [idx](std::span<const Array> a) { return Arrays{a[0].at(idx).add(a[1])}; }},
      {"set", [idx](std::span<const Array> a) { return Arrays{a[0].at(idx).set(a[1])}; }},
      {"mul",
       [idx](std::span<const Array> a) {
         return Arrays{a[0].at(ints({0, 2, 3})).mul(a[1])};
       }},
      {"min", [idx](std::span<const Array> a) { return Arrays{a[0].at(idx).min(a[1])}; }},
      {"max", [idx](std::span<const Array> a) { return Arrays{a[0].at(idx).max(a[1])}; }},
      {"static add",
       [](std::span<const Array> a) { return Arrays{a[0].at(range(1, 4)).add(a[1])}; }},
  };
  std::vector<laws::ArgSpec> specs{{Shape{4}}, {Shape{3}}};
  std::uint64_t seed = 500;
  for (const auto& [name, f] : ops) {
    SCOPED_TRACE(name);
    EXPECT_GT(laws::check_batch(f, specs, seed++), 0);
    if (name != "mul")
      laws::check_jvp(f, specs, seed++);  // JAX: scatter-mul's update gradient
                                          // needs unique indices
  }
}

// ---- segment_sum and a 1-D finite-element Poisson problem ---------------------------------------

TEST(IndexingSegmentSum, SumsAndDrops) {
  Array data = xpr::array({1.0, 2.0, 3.0, 4.0, 5.0});
  expect_array(xpr::segment_sum(data, ints({0, 2, 0, -1, 3}), 3), Shape{3}, {4, 0, 2});
  Array rows = xpr::reshape(xpr::arange(0.0, 6.0), {3, 2});
  expect_array(xpr::segment_sum(rows, ints({1, 1, 0}), 2), Shape{2, 2}, {4, 5, 2, 4});
  expect_error<xpr::value_error>([&] { (void)xpr::segment_sum(data, ints({0}), -1); },
                                 {"num_segments >= 0"});
  expect_error<xpr::shape_error>(
      [&] {
        (void)xpr::segment_sum(data, ints({0, 1}), 2);
      },
      {"segment_ids"});
}

/// Linear elements on [0, 1]: n elements of length h = 1/n, nodes 0..n, element e joining nodes e
/// and e + 1 with stiffness [[1, -1], [-1, 1]] / h; load f = 1, so F = h (h/2 at the two ends).
struct Poisson {
  std::int64_t n = 6;
  double h = 1.0 / 6;
  Array conn;  // i32[n, 2]
  Array load;  // f64[n + 1]
  Poisson() {
    std::vector<std::int32_t> c;
    for (std::int32_t e = 0; e < n; ++e) c.insert(c.end(), {e, e + 1});
    conn = xpr::array(c, Shape{n, 2});
    std::vector<double> f(static_cast<std::size_t>(n + 1), h);
    f.front() = f.back() = h / 2;
    load = xpr::array(f);
  }
  /// K_ii = 2/h (1/h at the ends), K_i,i±1 = -1/h.
  std::vector<double> stiffness() const {
    const auto m = static_cast<std::size_t>(n + 1);
    std::vector<double> k(m * m, 0.0);
    for (std::size_t i = 0; i < m; ++i) {
      k[i * m + i] = (i == 0 || i + 1 == m ? 1.0 : 2.0) / h;
      if (i + 1 < m) k[i * m + i + 1] = k[(i + 1) * m + i] = -1.0 / h;
    }
    return k;
  }
  /// The element residuals K_e u_e: ((u0 - u1) / h, (u1 - u0) / h) per element, f64[n, 2].
  Array element_residuals(const Array& u) const {
    Array ue = u[conn];  // gather: f64[n, 2]
    Array du = (ue(all, 1) - ue(all, 0)) / h;
    return xpr::stack({-du, du}, 1);
  }
  Array residual_segment_sum(const Array& u) const {
    return xpr::segment_sum(xpr::ravel(element_residuals(u)), xpr::ravel(conn), n + 1) - load;
  }
  Array residual_at_add(const Array& u) const {
    return xpr::zeros(Shape{n + 1}).at(conn).add(element_residuals(u)) - load;
  }
  /// 1/2 u^T K u - F^T u, summed element by element: (u1 - u0)² / (2h) per element.
  Array energy(const Array& u) const {
    Array ue = u[conn];
    Array du = ue(all, 1) - ue(all, 0);
    return xpr::sum(du * du) / (2 * h) - xpr::sum(load * u);
  }
};

TEST(IndexingPoisson, JacobianOfTheAssembledResidualIsTheStiffnessMatrix) {
  Poisson p;
  std::vector<double> u0(7);
  for (std::size_t i = 0; i < u0.size(); ++i) u0[i] = std::sin(1.0 + static_cast<double>(i));
  Array u = xpr::array(u0);
  const std::vector<double> k = p.stiffness();
  auto r1 = [&p](Array v) { return p.residual_segment_sum(v); };
  auto r2 = [&p](Array v) { return p.residual_at_add(v); };
  Array k1 = xpr::jacfwd(r1)(u), k2 = xpr::jacfwd(r2)(u), k3 = xpr::jacrev(r1)(u);
  EXPECT_EQ(k1.shape(), (Shape{7, 7}));
  expect_near(values(k1), k, 1e-14);
  expect_near(values(k2), k, 1e-14);
  expect_near(values(k3), k, 1e-14);
  // The residual itself is K u - F, computed here on the host.
  std::vector<double> want(7, 0.0), f = values(p.load);
  for (std::size_t i = 0; i < 7; ++i) {
    for (std::size_t j = 0; j < 7; ++j) want[i] += k[i * 7 + j] * u0[j];
    want[i] -= f[i];
  }
  expect_near(values(r1(u)), want, 1e-13);
  expect_near(values(r2(u)), want, 1e-13);
}

TEST(IndexingPoisson, GradOfTheEnergyIsTheResidual) {
  Poisson p;
  Array u = xpr::array({0.0, 0.3, -0.2, 0.9, 0.4, -0.6, 0.1});
  auto energy = [&p](Array v) { return p.energy(v); };
  expect_near(values(xpr::grad(energy)(u)), values(p.residual_segment_sum(u)), 1e-13);
  // Its hessian is the stiffness matrix too, and vmap over several fields equals the loop.
  expect_near(values(xpr::hessian(energy)(u)), p.stiffness(), 1e-13);
  Array us = xpr::stack({u, u * 2.0, u - 1.0});
  Array rs = xpr::vmap([&p](Array v) { return p.residual_segment_sum(v); })(us);
  for (std::int64_t b = 0; b < 3; ++b)
    expect_near(values(rs[b]), values(p.residual_segment_sum(us[b])), 1e-15);
}

// ---- the audit: every read is explicit, every Array-returning operation is traced ---------------

/// The explicit reads of Array (item, to_vector, operator bool, data, eigen) read the primal of a
/// jvp tracer (allowed under jvp and grad, as JAX allows concrete control flow: the value is a
/// constant of the program) and throw concretization_error under make_jaxpr and vmap, where there
/// is no value to read.
TEST(IndexingAudit, ExplicitReadsReadPrimalsOrThrow) {
  using Read = std::function<double(const Array&)>;
  const std::vector<std::pair<std::string, Read>> reads = {
      {"item", [](const Array& v) { return xpr::sum(v).item<double>(); }},
      {"to_vector", [](const Array& v) { return v.to_vector<double>()[1]; }},
      {"operator bool", [](const Array& v) { return static_cast<bool>(v[0] > 0.0) ? 2.0 : -3.0; }},
      {"data", [](const Array& v) { return v.data<double>()[2]; }},
      {"eigen", [](const Array& v) { return v.eigen<double>()(1, 0); }},
  };
  Array x = xpr::array({0.5, -1.5, 2.0}), t = xpr::array({1.0, 2.0, -1.0});
  for (const auto& [name, read] : reads) {
    SCOPED_TRACE(name);
    const double r = read(x);  // the value read outside every transformation
    auto f = [&read](Array v) { return v * read(v); };
    auto [y, ty] = xpr::jvp(f, std::tuple{x}, std::tuple{t});
    EXPECT_EQ(values(y), values(x * r));
    EXPECT_EQ(values(ty), values(t * r));  // the read value is a constant: d(v r) = r dv
    EXPECT_EQ(values(xpr::grad([&](Array v) { return xpr::sum(f(v)); })(x)),
              (std::vector<double>{r, r, r}));
    expect_error<xpr::concretization_error>([&] { (void)xpr::make_jaxpr(f)(x); },
                                            {"concrete value is expected"});
    expect_error<xpr::concretization_error>(
        [&] {
          (void)xpr::vmap(f)(xpr::stack({x, x}));
        },
        {"concrete value is expected"});
  }
}

/// Every function of the runtime tier's jax.numpy layer that returns an Array (and the indexing
/// members) is traced: jvp equals finite differences, vmap equals the loop, and the jaxpr of
/// make_jaxpr evaluates to the eager result. None reads a tracer's data (which would drop its
/// tangent or batch axis, or throw under make_jaxpr).
TEST(IndexingAudit, ArrayFunctionsAreTracedUnderEveryTransformation) {
  auto f = [](auto g) -> FlatFunction {
    return [g](std::span<const Array> a) { return Arrays{g(a[0])}; };
  };
  using std::int32_t;
  const std::vector<std::pair<std::string, FlatFunction>> fns = {
      {"x[1]", f([](Array x) { return x[1]; })},
      {"x(1, -1)", f([](Array x) { return x(1, -1); })},
      {"x[Array(2)]", f([](Array x) { return x[Array(2)]; })},
      {"x(all, ints)", f([](Array x) {
         return x(all, ints({0, 3, 0}));
       })},
      {"x.at().get", f([](Array x) {
         return x.at(ints({2, 0})).get();
       })},
      {"x.at().set", f([](Array x) { return x.at(1, 2).set(x(0, 0)); })},
      {"x.at().add", f([](Array x) {
         return x.at(ints({0, 0})).add(x(range(1, 3)));
       })},
      {"x.at().min", f([](Array x) { return x.at(all, 1).min(x(all, 2)); })},
      {"x.at().max", f([](Array x) { return x.at(2).max(x[0]); })},
      {"x.at().mul", f([](Array x) { return x.at(0).mul(x[1]); })},
      {"take", f([](Array x) {
         return xpr::take(x, ints({1, -1}), 0);
       })},
      {"take_along_axis", f([](Array x) {
         return xpr::take_along_axis(x, ints({1, 0, 2}, Shape{3, 1}), 1);
       })},
      {"segment_sum", f([](Array x) {
         return xpr::segment_sum(x, ints({1, 0, 1}), 2);
       })},
      {"rev", f([](Array x) {
         return xpr::rev(x, {0, 1});
       })},
      {"sum", f([](Array x) { return xpr::sum(x, 1); })},
      {"max", f([](Array x) { return xpr::max(x, 0); })},
      {"min", f([](Array x) { return xpr::min(x); })},
      {"mean", f([](Array x) { return xpr::mean(x, 1); })},
      {"reshape", f([](Array x) {
         return xpr::reshape(x, {4, 3});
       })},
      {"ravel", f([](Array x) { return xpr::ravel(x); })},
      {"transpose", f([](Array x) { return xpr::transpose(x); })},
      {"expand_dims+squeeze", f([](Array x) { return xpr::squeeze(xpr::expand_dims(x, 1), 1); })},
      {"broadcast_to", f([](Array x) {
         return xpr::broadcast_to(x[0], Shape{2, 4});
       })},
      {"dot", f([](Array x) { return xpr::dot(x, xpr::transpose(x)); })},
      {"matmul", f([](Array x) { return xpr::matmul(x[0], xpr::transpose(x)); })},
      {"inner", f([](Array x) { return xpr::inner(x, x); })},
      {"vdot", f([](Array x) { return xpr::vdot(x, x); })},
      {"concatenate", f([](Array x) {
         return xpr::concatenate({x, x * 2.0}, 1);
       })},
      {"stack", f([](Array x) {
         return xpr::stack({x, -x}, 2);
       })},
      {"slice", f([](Array x) {
         return xpr::slice(x, {0, 1}, {3, 4}, {2, 2});
       })},
      {"pad", f([](Array x) {
         return xpr::pad(x, {{{1, 0, 0}}, {{0, 2, 1}}}, x(0, 0));
       })},
      {"dynamic_slice", f([](Array x) {
         return xpr::dynamic_slice(x, {Array(1), Array(-1)}, {2, 2});
       })},
      {"dynamic_update_slice", f([](Array x) {
         return xpr::dynamic_update_slice(x, x(range(0, 1)) * 3.0, {Array(2), Array(0)});
       })},
      {"where", f([](Array x) { return xpr::where(x > 0.0, x * x, -x); })},
      {"maximum", f([](Array x) { return xpr::maximum(x, x[1]); })},
      {"astype", f([](Array x) { return xpr::astype(x, xpr::float32); })},
      {"full_like", f([](Array x) { return xpr::full_like(x, 2.0) + x; })},
  };
  laws::JvpOptions to_f32;  // astype's reference: the same map in float64
  to_f32.reference = [](std::span<const Array> a) { return Arrays{a[0]}; };
  std::uint64_t seed = 900;
  laws::Rng rng(3);
  for (const auto& [name, g] : fns) {
    SCOPED_TRACE(name);
    std::vector<laws::ArgSpec> specs{{Shape{3, 4}, xpr::float64, 0.5, 2, true}};
    laws::check_jvp(g, specs, seed++, name == "astype" ? to_f32 : laws::JvpOptions{});
    EXPECT_GT(laws::check_batch(g, specs, seed++, 3, 8), 0);
    Array x = laws::draw(specs[0], rng);
    rt::ClosedJaxpr j = rt::make_jaxpr_flat(g, std::vector<xpr::ShapedArray>{x.aval()});
    EXPECT_TRUE(laws::identical(rt::eval_jaxpr(j, {x})[0], g(std::vector<Array>{x})[0])) << j;
  }
}

// ---- the rev primitive (prims/rev.hpp)
// ------------------------------------------------------------

TEST(IndexingRev, ValuesLawsAndText) {
  expect_array(xpr::rev(a34(), {1}), Shape{3, 4}, {3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8});
  expect_array(xpr::rev(a34(), {0, -1}), Shape{3, 4}, {11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
  expect_array(xpr::rev(xpr::zeros(Shape{0, 2}), {0}), Shape{0, 2}, {});
  std::uint64_t seed = 700;
  for (const rt::Axes& dims : {rt::Axes{0}, rt::Axes{1, 2}, rt::Axes{}}) {
    FlatFunction f = [dims](std::span<const Array> a) {
      return Arrays{rt::bind1(rt::rev_p, {a[0]}, {{"dimensions", dims}})};
    };
    std::vector<laws::ArgSpec> specs{{Shape{2, 3, 4}}};
    laws::check_jvp(f, specs, seed++);
    EXPECT_GT(laws::check_batch(f, specs, seed++), 0);
    // Its own transpose: <rev(t), c> = <t, rev(c)>, through vjp.
    laws::Rng rng(seed++);
    Array t = laws::draw(specs[0], rng), c = laws::draw(specs[0], rng);
    auto [y, pullback] = xpr::vjp([&](Array v) { return f(std::vector<Array>{v})[0]; }, t);
    auto [ct] = pullback(c);
    EXPECT_TRUE(laws::identical(ct, f(std::vector<Array>{c})[0]));
    // print -> parse -> print.
    rt::ClosedJaxpr j = rt::make_jaxpr_flat(f, std::vector<xpr::ShapedArray>{t.aval()});
    EXPECT_EQ(text(rt::parse_jaxpr(text(j))), text(j));
  }
  expect_error<xpr::index_error>([] { (void)xpr::rev(a34(), {2}); }, {"rev"});
  expect_error<xpr::value_error>([] { (void)xpr::rev(a34(), {0, 0}); }, {"rev"});
}

TEST(IndexingUnderTransformations, PairForcesByADoubleLoopAgainstHand) {
  // As HPC users write a pair potential: a double loop over i < j indexing the rows of the
  // positions, the forces -grad of the energy; against the forces written by hand. Then the
  // Hessian both ways (jacfwd of grad, jacrev of grad), and vmap over two configurations.
  const std::int64_t n = 6;
  std::vector<double> p;
  for (std::int64_t k = 0; k < 3 * n; ++k)
    p.push_back(1.3 * static_cast<double>(k % 4) + 0.2 * std::sin(static_cast<double>(k)));
  auto energy = [n](const Array& x) {
    Array e = Array(0.0);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = i + 1; j < n; ++j) {
        Array d = x[i] - x[j];
        Array inv6 = 1.0 / xpr::pow(xpr::sum(d * d), 3.0);
        e = e + 4.0 * (inv6 * inv6 - inv6);
      }
    return e;
  };
  std::vector<double> want(p.size(), 0.0);  // F_i = 24 inv2 inv6 (2 inv6 - 1) (r_i - r_j)
  for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i)
    for (std::size_t j = i + 1; j < static_cast<std::size_t>(n); ++j) {
      double d[3], r2 = 0;
      for (std::size_t k = 0; k < 3; ++k) {
        d[k] = p[3 * i + k] - p[3 * j + k];
        r2 += d[k] * d[k];
      }
      const double inv2 = 1 / r2, inv6 = inv2 * inv2 * inv2, s = 24 * inv2 * inv6 * (2 * inv6 - 1);
      for (std::size_t k = 0; k < 3; ++k) {
        want[3 * i + k] += s * d[k];
        want[3 * j + k] -= s * d[k];
      }
    }
  Array x = xpr::array(p, xpr::Shape{n, 3});
  const std::vector<double> force = (-xpr::grad(energy)(x)).to_vector<double>();
  for (std::size_t k = 0; k < want.size(); ++k)
    EXPECT_NEAR(force[k], want[k], 1e-12 * (1 + std::abs(want[k]))) << "force " << k;
  auto gradient = xpr::grad(energy);
  const std::vector<double> hf = xpr::jacfwd(gradient)(x).to_vector<double>(),
                            hr = xpr::jacrev(gradient)(x).to_vector<double>();
  const std::size_t m = want.size();
  ASSERT_EQ(hf.size(), m * m);
  for (std::size_t r = 0; r < m; ++r)
    for (std::size_t k = 0; k < m; ++k) {
      EXPECT_NEAR(hf[r * m + k], hr[r * m + k], 1e-10 * (1 + std::abs(hf[r * m + k])));
      EXPECT_NEAR(hf[r * m + k], hf[k * m + r], 1e-10 * (1 + std::abs(hf[r * m + k])));
    }
  // Each row of the Hessian sums to 0 over the particles (translation invariance), up to the
  // rounding of its terms (close pairs give entries of order r^-14).
  for (std::size_t r = 0; r < m; ++r)
    for (std::size_t c = 0; c < 3; ++c) {
      double row = 0, size = 0;
      for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) {
        row += hf[r * m + 3 * i + c];
        size += std::abs(hf[r * m + 3 * i + c]);
      }
      EXPECT_NEAR(row, 0.0, 1e-14 * size) << "row " << r << ", coordinate " << c << ": " << size;
    }
  Array both = xpr::stack({x, x * 1.1});
  const std::vector<double> batched = xpr::vmap(gradient)(both).to_vector<double>();
  for (std::size_t b = 0; b < 2; ++b) {
    const std::vector<double> one =
        gradient(both[static_cast<std::int64_t>(b)]).to_vector<double>();
    for (std::size_t k = 0; k < m; ++k) EXPECT_EQ(batched[b * m + k], one[k]) << b << ", " << k;
  }
}

// int64 indices beyond int32's range, with an int32 gather index dtype (every axis below 2^31):
// they are out of bounds and stay so, where narrowing alone would wrap 2^32 + 1 to 1. Reads
// clamp, updates and segment ids out of range are dropped, take_along_axis fills; eager and jit.
TEST(IndexingInt64, IndicesBeyondInt32AreClampedOrDroppedNotWrapped) {
  const Array z = xpr::array({10.0, 20.0, 30.0, 40.0, 50.0});
  const std::int64_t big = (std::int64_t{1} << 32) + 1;
  const Array idx = xpr::array(std::vector<std::int64_t>{big, -big, 2});
  auto read = [](const Array& x, const Array& i) { return x[i]; };
  auto add = [](const Array& x, const Array& i) { return x.at(i).add(1.0); };
  auto set = [](const Array& x, const Array& i) { return x.at(i).set(0.0); };
  auto seg = [](const Array& x, const Array& i) { return xpr::segment_sum(x[i * 0], i, 5); };
  auto along = [](const Array& x, const Array& i) { return xpr::take_along_axis(x, i, 0); };
  const std::vector<double> want_read{50.0, 10.0, 30.0}, want_add{10, 20, 31, 40, 50},
      want_seg{0, 0, 10, 0, 0};
  for (bool jitted : {false, true}) {
    SCOPED_TRACE(jitted ? "jit" : "eager");
    auto run = [&](auto f, const Array& i) { return jitted ? xpr::jit(f)(z, i) : f(z, i); };
    EXPECT_EQ(run(read, idx).to_vector<double>(), want_read);
    EXPECT_EQ(run(add, idx).to_vector<double>(), want_add);
    EXPECT_EQ(run(set, Array(big)).to_vector<double>(), z.to_vector<double>());
    EXPECT_EQ(run(seg, idx).to_vector<double>(), want_seg);
    const std::vector<double> got = run(along, idx).to_vector<double>();
    EXPECT_TRUE(std::isnan(got[0]) && std::isnan(got[1])) << got[0] << " " << got[1];
    EXPECT_EQ(got[2], 30.0);
  }
}

}  // namespace test_rt_indexing
