// Tests of include/xpr/rt/indexing.hpp: the Rosenbrock function written with x[i] in a loop
// (grad, hessian, jacfwd(grad), jacrev(grad) against the closed forms; its jaxpr against the
// equations jax.numpy's lowering gives); every index form under eval against NumPy's semantics
// worked out by hand, under vmap against the loop, under jvp against finite differences; the
// printed equations of each lowering; bad indices and their messages.
#include "xpr/rt/indexing.hpp"

#include <cmath>
#include <cstdint>
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
  expect_error<xpr::index_error>([&] { (void)Array(1.0)[0]; }, {"too many indices"});
  expect_error<xpr::index_error>([&] { (void)x(ellipsis, ellipsis); }, {"single ellipsis"});
  expect_error<xpr::value_error>([&] { (void)x(range(0, 4, 0)); }, {"nonzero step"});
  expect_error<xpr::index_error>([&] { (void)xpr::zeros(Shape{0})[Array(0)]; },
                                 {"out of bounds for axis 0 with size 0"});
}

}  // namespace test_rt_indexing
