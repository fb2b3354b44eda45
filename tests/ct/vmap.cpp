// Tests of xpr::ct::vmap (include/xpr/ct/vmap.hpp): the SIMD loop equals the scalar evaluation
// point by point for every tail length, both dtypes and every container; `into` allocates
// nothing; per-point arguments broadcast; in_axes; shape errors; the OpenMP split; and the
// Black-Scholes Greeks of examples/ct_w3_black_scholes.cpp against their closed forms.
#include <array>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <new>
#include <numbers>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <Eigen/Core>
#include <gtest/gtest.h>
#include <xsimd/xsimd.hpp>

#include "xpr/ct/ct.hpp"

// A counting global operator new: `into` must not allocate. Only calls made while `counting` is
// set are counted, so gtest's own allocations do not interfere. (Eigen allocates with malloc,
// which this does not see; vmap's own buffers are std::arrays on the stack.)
namespace test_ct_vmap {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};
}  // namespace test_ct_vmap

void* operator new(std::size_t n) {
  if (test_ct_vmap::counting) ++test_ct_vmap::allocations;
  if (void* p = std::malloc(n > 0 ? n : 1)) return p;
  throw std::bad_alloc{};
}
// Out of line, so that GCC does not see free() meet a pointer from new (-Wmismatched-new-delete).
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace test_ct_vmap {

namespace ct = xpr::ct;

constexpr auto w1 = [](auto x, auto y, auto z) {
  return xpr::sin(x) * y + xpr::exp(x * z) - xpr::log(1 + y * y) * z;
};
constexpr auto vg = ct::value_and_grad<0, 1, 2>(w1);

// The same program on batches and on scalars differs only by the SIMD math library's rounding.
template <class T>
constexpr double tol = std::is_same_v<T, float> ? 1e-6 : 1e-14;

double rel_err(double got, double want) { return std::abs(got - want) / (1 + std::abs(want)); }

template <class T>
struct Points {
  std::vector<T> x, y, z;
  explicit Points(std::size_t n) : x(n), y(n), z(n) {
    for (std::size_t i = 0; i < n; ++i) {
      const double d = static_cast<double>(i);
      x[i] = static_cast<T>(0.9 * std::sin(1.0 + d));
      y[i] = static_cast<T>(0.5 - 0.3 * std::cos(0.7 * d));
      z[i] = static_cast<T>(0.25 + 0.1 * std::sin(0.3 * d));
    }
  }
};

template <class T>
std::vector<std::size_t> lengths() {
  constexpr std::size_t W = xsimd::batch<T>::size;
  return {0, 1, W - 1, W, W + 1, 2 * W - 1, 3 * W + 2, 1000};
}

/// vmap(vg) on arguments made by `make` from std::vectors equals vg point by point.
template <class T, class Make>
void check_value_and_grad(Make make) {
  for (std::size_t n : lengths<T>()) {
    SCOPED_TRACE(::testing::Message() << "n = " << n);
    Points<T> p(n);
    auto xs = make(p.x);
    auto ys = make(p.y);
    auto zs = make(p.z);
    auto [v, gx, gy, gz] = ct::vmap(vg)(xs, ys, zs);
    static_assert(std::is_same_v<decltype(v), Eigen::Array<T, Eigen::Dynamic, 1>>);
    ASSERT_EQ(static_cast<std::size_t>(v.size()), n);
    ASSERT_EQ(static_cast<std::size_t>(gz.size()), n);
    for (std::size_t i = 0; i < n; ++i) {
      const auto k = static_cast<Eigen::Index>(i);
      auto [sv, sg] = vg(p.x[i], p.y[i], p.z[i]);
      static_assert(std::is_same_v<decltype(sv), T>);
      EXPECT_LT(rel_err(v[k], sv), tol<T>) << "point " << i;
      EXPECT_LT(rel_err(gx[k], std::get<0>(sg)), tol<T>) << "point " << i;
      EXPECT_LT(rel_err(gy[k], std::get<1>(sg)), tol<T>) << "point " << i;
      EXPECT_LT(rel_err(gz[k], std::get<2>(sg)), tol<T>) << "point " << i;
    }
  }
}

template <class T>
void check_every_container() {
  using A = Eigen::Array<T, Eigen::Dynamic, 1>;
  using V = Eigen::Matrix<T, Eigen::Dynamic, 1>;
  {
    SCOPED_TRACE("std::vector");
    check_value_and_grad<T>([](const std::vector<T>& v) { return v; });
  }
  {
    SCOPED_TRACE("std::span<const T>");
    check_value_and_grad<T>([](const std::vector<T>& v) { return std::span<const T>(v); });
  }
  {
    SCOPED_TRACE("std::span<T>");
    check_value_and_grad<T>([](std::vector<T>& v) { return std::span<T>(v); });
  }
  {
    SCOPED_TRACE("Eigen::Array");
    check_value_and_grad<T>([](const std::vector<T>& v) {
      return A(Eigen::Map<const A>(v.data(), static_cast<Eigen::Index>(v.size())));
    });
  }
  {
    SCOPED_TRACE("Eigen::Matrix (VectorX)");
    check_value_and_grad<T>([](const std::vector<T>& v) {
      return V(Eigen::Map<const V>(v.data(), static_cast<Eigen::Index>(v.size())));
    });
  }
  {
    SCOPED_TRACE("Eigen::Map (unaligned data)");
    check_value_and_grad<T>([](const std::vector<T>& v) {
      return Eigen::Map<const A>(v.data(), static_cast<Eigen::Index>(v.size()));
    });
  }
}

TEST(CtVmap, EqualsTheScalarEvaluationF64) { check_every_container<double>(); }
TEST(CtVmap, EqualsTheScalarEvaluationF32) { check_every_container<float>(); }

TEST(CtVmap, MixedContainersAndOneResult) {
  Points<double> p(37);
  const Eigen::ArrayXd zs = Eigen::Map<const Eigen::ArrayXd>(p.z.data(), 37);
  Eigen::ArrayXd f = ct::vmap(w1)(p.x, std::span<const double>(p.y), zs);
  static_assert(std::is_same_v<decltype(ct::vmap(w1)(p.x, p.y, p.z)), Eigen::ArrayXd>);
  for (std::size_t i = 0; i < 37; ++i)
    EXPECT_LT(rel_err(f[static_cast<Eigen::Index>(i)], w1(p.x[i], p.y[i], p.z[i])), 1e-14);
}

TEST(CtVmap, IntoAllocatesNothing) {
  for (std::size_t n : lengths<double>()) {
    SCOPED_TRACE(::testing::Message() << "n = " << n);
    Points<double> p(n);
    std::vector<double> v(n), gx(n), gy(n), gz(n);
    const auto outs = std::tuple{std::span(v), std::span(gx), std::span(gy), std::span(gz)};
    constexpr auto mapped = ct::vmap(vg);
    allocations = 0;
    counting = true;
    mapped.into(outs, p.x, p.y, p.z);
    counting = false;
    EXPECT_EQ(allocations, 0);
    for (std::size_t i = 0; i < n; ++i) {
      auto [sv, sg] = vg(p.x[i], p.y[i], p.z[i]);
      EXPECT_LT(rel_err(v[i], sv), 1e-14);
      EXPECT_LT(rel_err(gx[i], std::get<0>(sg)), 1e-14);
      EXPECT_LT(rel_err(gy[i], std::get<1>(sg)), 1e-14);
      EXPECT_LT(rel_err(gz[i], std::get<2>(sg)), 1e-14);
    }
  }
  // the counter itself works
  counting = true;
  auto* probe = new std::vector<double>(3);
  counting = false;
  delete probe;
  EXPECT_GE(allocations, 1);
}

TEST(CtVmap, IntoOtherOutputStructures) {
  Points<float> p(13);
  // a std::array of spans, and Eigen arrays through std::tie
  std::array<std::vector<float>, 3> g{std::vector<float>(13), std::vector<float>(13),
                                      std::vector<float>(13)};
  ct::vmap(ct::grad<0, 1, 2>(w1))
      .into(std::array{std::span(g[0]), std::span(g[1]), std::span(g[2])}, p.x, p.y, p.z);
  Eigen::ArrayXf v(13), gx(13), gy(13), gz(13);
  ct::vmap(vg).into(std::tie(v, gx, gy, gz), p.x, p.y, p.z);
  for (std::size_t i = 0; i < 13; ++i) {
    const auto k = static_cast<Eigen::Index>(i);
    auto [sv, sg] = vg(p.x[i], p.y[i], p.z[i]);
    EXPECT_LT(rel_err(g[0][i], std::get<0>(sg)), tol<float>);
    EXPECT_LT(rel_err(g[2][i], std::get<2>(sg)), tol<float>);
    EXPECT_LT(rel_err(v[k], sv), tol<float>);
    EXPECT_LT(rel_err(gy[k], std::get<1>(sg)), tol<float>);
  }
}

TEST(CtVmap, InPlace) {
  // a point's inputs are read before its outputs are written
  Points<double> p(11);
  std::vector<double> x = p.x;
  ct::vmap(w1).into(std::span(x), x, p.y, p.z);
  for (std::size_t i = 0; i < 11; ++i) EXPECT_LT(rel_err(x[i], w1(p.x[i], p.y[i], p.z[i])), 1e-14);
}

TEST(CtVmap, InPlaceWithSeveralOutputs) {
  // The schedule stores an output as soon as it is computed, but reads every input of a batch
  // first: outputs written over the inputs (the value over x, d/dx over y, d/dy over z) give
  // what separate outputs give, for whole batches and the tail.
  constexpr auto w1_vg = ct::value_and_grad<0, 1, 2>(w1);
  const std::size_t n = 37;
  Points<double> p(n);
  std::vector<double> x = p.x, y = p.y, z = p.z, dz(n);
  ct::vmap(w1_vg).into(std::tuple{std::span(x), std::span(y), std::span(z), std::span(dz)}, x, y,
                       z);
  const auto [v, gx, gy, gz] = ct::vmap(w1_vg)(p.x, p.y, p.z);
  for (std::size_t i = 0; i < n; ++i) {
    const auto k = static_cast<Eigen::Index>(i);
    EXPECT_EQ(x[i], v[k]);
    EXPECT_EQ(y[i], gx[k]);
    EXPECT_EQ(z[i], gy[k]);
    EXPECT_EQ(dz[i], gz[k]);
  }
}

TEST(CtVmap, PerPointArgumentsBroadcast) {
  Points<float> p(19);
  // a C++ double with f32 arrays is weakly typed: the program is f32
  auto [v, gx, gy, gz] = ct::vmap(vg)(p.x, p.y, 0.5);
  static_assert(std::is_same_v<decltype(v), Eigen::ArrayXf>);
  // an Eigen fixed-size vector and a std::array as parameters shared by all points
  constexpr auto model = [](auto x, const auto& c, const auto& d) {
    return c[0] + c[1] * x + c[2] * x * x + d[0] * xpr::exp(d[1] * x);
  };
  const Eigen::Vector3d c(1.0, -2.0, 0.5);
  const std::array<double, 2> d{0.25, -1.5};
  Points<double> q(9);
  Eigen::ArrayXd dm = ct::vmap(ct::grad<0>(model))(q.x, c, d);
  for (std::size_t i = 0; i < 19; ++i) {
    const auto k = static_cast<Eigen::Index>(i);
    auto [sv, sg] = vg(p.x[i], p.y[i], 0.5f);
    EXPECT_LT(rel_err(v[k], sv), tol<float>);
    EXPECT_LT(rel_err(gz[k], std::get<2>(sg)), tol<float>);
  }
  for (std::size_t i = 0; i < 9; ++i) {
    const double x = q.x[i];
    const double want = c[1] + 2 * c[2] * x + d[0] * d[1] * std::exp(d[1] * x);  // by hand
    EXPECT_LT(rel_err(dm[static_cast<Eigen::Index>(i)], want), 1e-14);
  }
}

TEST(CtVmap, InAxesWithNotMapped) {
  Points<double> p(10);
  auto [v, g] = std::pair{ct::vmap(w1, std::tuple{0, 0, xpr::not_mapped})(p.x, p.y, 0.5),
                          ct::vmap(ct::grad<1>(w1), 0)(p.x, p.y, p.z)};
  for (std::size_t i = 0; i < 10; ++i) {
    const auto k = static_cast<Eigen::Index>(i);
    EXPECT_LT(rel_err(v[k], w1(p.x[i], p.y[i], 0.5)), 1e-14);
    EXPECT_LT(rel_err(g[k], ct::grad<1>(w1)(p.x[i], p.y[i], p.z[i])), 1e-14);
  }
  try {
    (void)ct::vmap(w1, std::tuple{1, 0, xpr::not_mapped})(p.x, p.y, 0.5);
    ADD_FAILURE() << "expected xpr::value_error";
  } catch (const xpr::value_error& e) {
    EXPECT_NE(std::string(e.what()).find("in_axes for argument 0 is 1"), std::string::npos)
        << e.what();
  }
}

// Unqualified, as a user writes it after `using namespace xpr::ct;`: xpr::not_mapped's type lives
// in xpr::core, so argument-dependent lookup does not bring the runtime tier's vmap in as well
// (the call was ambiguous).
namespace unqualified {
using namespace xpr::ct;
inline Eigen::ArrayXd call(const std::vector<double>& x, const std::vector<double>& y) {
  return vmap(w1, std::tuple{0, 0, xpr::not_mapped})(x, y, 0.5);
}
}  // namespace unqualified

TEST(CtVmap, NotMappedWithAUsingDirective) {
  const std::vector<double> x{0.25, 0.5, 1.0}, y{2.0, -1.0, 0.5};
  Eigen::ArrayXd v = unqualified::call(x, y);
  // in_axes -1 is the last axis, axis 0 of a one-dimensional array, as JAX counts it.
  Eigen::ArrayXd u = ct::vmap(w1, std::tuple{-1, 0, xpr::not_mapped})(x, y, 0.5);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_LT(rel_err(v[static_cast<Eigen::Index>(i)], w1(x[i], y[i], 0.5)), 1e-14);
    EXPECT_EQ(u[static_cast<Eigen::Index>(i)], v[static_cast<Eigen::Index>(i)]);
  }
}

TEST(CtVmap, StructuredPerPointArguments) {
  // Rosenbrock in 4 dimensions over a batch of points stored as one array per coordinate
  constexpr auto rosenbrock = [](const auto& x) {
    decltype(x[0] * x[0]) s = 0;
    for (std::size_t i = 0; i + 1 < x.size(); ++i)
      s += 100 * xpr::square(x[i + 1] - x[i] * x[i]) + xpr::square(1 - x[i]);
    return s;
  };
  const std::size_t m = 23;
  std::array<std::vector<double>, 4> xs;
  for (std::size_t j = 0; j < 4; ++j) {
    xs[j].resize(m);
    for (std::size_t i = 0; i < m; ++i)
      xs[j][i] = std::sin(0.3 * static_cast<double>(i) + static_cast<double>(j));
  }
  std::array<std::vector<double>, 4> g;
  for (auto& gj : g) gj.resize(m);
  ct::vmap(ct::grad(rosenbrock))
      .into(std::array{std::span(g[0]), std::span(g[1]), std::span(g[2]), std::span(g[3])}, xs);
  auto [g0, g1, g2, g3] = ct::vmap(ct::grad(rosenbrock))(xs);
  for (std::size_t i = 0; i < m; ++i) {
    const double x[4] = {xs[0][i], xs[1][i], xs[2][i], xs[3][i]};
    double want[4] = {};
    for (std::size_t j = 0; j + 1 < 4; ++j) {  // the gradient by hand
      want[j] += -400 * x[j] * (x[j + 1] - x[j] * x[j]) - 2 * (1 - x[j]);
      want[j + 1] += 200 * (x[j + 1] - x[j] * x[j]);
    }
    for (std::size_t j = 0; j < 4; ++j) EXPECT_LT(rel_err(g[j][i], want[j]), 1e-13);
    const auto k = static_cast<Eigen::Index>(i);
    EXPECT_EQ(g0[k], g[0][i]);
    EXPECT_EQ(g1[k], g[1][i]);
    EXPECT_EQ(g2[k], g[2][i]);
    EXPECT_EQ(g3[k], g[3][i]);
  }
}

TEST(CtVmap, MismatchedLengthsThrowShapeError) {
  Points<double> p(8);
  std::vector<double> short_z(7);
  try {
    (void)ct::vmap(w1)(p.x, p.y, short_z);
    ADD_FAILURE() << "expected xpr::shape_error";
  } catch (const xpr::shape_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "xpr::ct::vmap: mapped arrays must have equal lengths, but argument 0 has length 8 "
              "and argument 2 has length 7");
  }
  std::vector<double> v(8), wrong(9);
  try {
    ct::vmap(ct::value_and_grad(w1))
        .into(std::tuple{std::span(v), std::span(wrong)}, p.x, p.y, p.z);
    ADD_FAILURE() << "expected xpr::shape_error";
  } catch (const xpr::shape_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "xpr::ct::vmap(g).into: output 1 has length 9, expected the inputs' length 8");
  }
  std::array<std::vector<double>, 2> xs{std::vector<double>(5), std::vector<double>(4)};
  constexpr auto sum = [](const auto& x) { return x[0] + x[1]; };
  EXPECT_THROW((void)ct::vmap(sum)(xs), xpr::shape_error);
}

TEST(CtVmap, ParallelGivesTheSameResults) {
  // Without OpenMP, parallel() runs the same single-threaded loop; with it (compile with
  // -fopenmp), blocks of whole batches go to threads and every point computes the same bits.
  Points<double> p(100003);
  auto [v, gx, gy, gz] = ct::vmap(vg)(p.x, p.y, p.z);
  auto [pv, pgx, pgy, pgz] = ct::vmap(vg).parallel(0)(p.x, p.y, p.z);
  EXPECT_TRUE((v == pv).all());
  EXPECT_TRUE((gx == pgx).all());
  EXPECT_TRUE((gy == pgy).all());
  EXPECT_TRUE((gz == pgz).all());
}

// ---------------------------------------------------------------------------------------------
// W3: Black-Scholes, as in examples/ct_w3_black_scholes.cpp. The tier has no erf, so the normal
// CDF is Abramowitz & Stegun 26.2.17 (|error| < 7.5e-8) built from exp.
// ---------------------------------------------------------------------------------------------
constexpr auto norm_cdf = [](auto x) {
  const auto a = xpr::abs(x);
  const auto t = 1 / (1 + 0.2316419 * a);
  const auto poly =
      t *
      (0.319381530 + t * (-0.356563782 + t * (1.781477937 + t * (-1.821255978 + t * 1.330274429))));
  const auto tail = 0.3989422804014327 * xpr::exp(-0.5 * a * a) * poly;  // 1 - N(|x|)
  return xpr::where(x >= 0, 1 - tail, tail);
};
constexpr auto call_price = [](auto s, auto k, auto t, auto r, auto sigma) {
  const auto vol = sigma * xpr::sqrt(t);
  const auto d1 = (xpr::log(s / k) + (r + 0.5 * sigma * sigma) * t) / vol;
  const auto d2 = d1 - vol;
  return s * norm_cdf(d1) - k * xpr::exp(-r * t) * norm_cdf(d2);
};

TEST(CtVmap, BlackScholesGreeks) {
  const std::size_t n = 37;
  std::vector<double> s(n), k(n), t(n), sigma(n);
  const double r = 0.03;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(i);
    s[i] = 100 * (0.8 + 0.4 * std::fmod(0.37 * d, 1.0));
    k[i] = 100;
    t[i] = 0.25 + 1.75 * std::fmod(0.61 * d, 1.0);
    sigma[i] = 0.1 + 0.4 * std::fmod(0.73 * d, 1.0);
  }
  // delta = dC/dS, vega = dC/dsigma, rho = dC/dr
  auto [price, delta, vega, rho] =
      ct::vmap(ct::value_and_grad<0, 4, 3>(call_price))(s, k, t, r, sigma);
  // Bounds of the approximation: |N~ - N| <= e0, and |N~' - phi| <= e1 (the derivative of
  // A&S 26.2.17 measured on a grid of step 1e-4 over [-8, 8]: 2.57e-6).
  const double e0 = 7.5e-8, e1 = 2.6e-6;
  auto N = [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); };
  auto phi = [](double x) { return std::exp(-0.5 * x * x) / std::sqrt(2 * std::numbers::pi); };
  for (std::size_t i = 0; i < n; ++i) {
    SCOPED_TRACE(::testing::Message() << "option " << i);
    const auto j = static_cast<Eigen::Index>(i);
    const double S = s[i], K = k[i], T = t[i], sg = sigma[i], D = std::exp(-r * T);
    const double sq = std::sqrt(T), d1 = (std::log(S / K) + (r + sg * sg / 2) * T) / (sg * sq),
                 d2 = d1 - sg * sq;
    // closed forms, within what the approximation of N can move each (chain rule through
    // d1 and d2; the exact terms S phi(d1) = K D phi(d2) cancel), plus rounding
    const double round = 1e-12 * S;
    EXPECT_NEAR(price[j], S * N(d1) - K * D * N(d2), e0 * (S + K * D) + round);
    EXPECT_NEAR(delta[j], N(d1), e0 + e1 * (S + K * D) / (S * sg * sq) + 1e-12);
    EXPECT_NEAR(vega[j], S * phi(d1) * sq,
                e1 * (S * std::abs(sq - d1 / sg) + K * D * std::abs(d1 / sg)) + round);
    EXPECT_NEAR(rho[j], K * T * D * N(d2), e1 * (S + K * D) * sq / sg + e0 * K * T * D + round);
    // and the derivatives of the approximated price itself, by central differences (truncation
    // O(h^2) and rounding O(eps C / h) both stay below 1e-8 here)
    const double hs = 1e-5 * S, hv = 1e-6, hr = 1e-6;
    const double fd_delta =
        (call_price(S + hs, K, T, r, sg) - call_price(S - hs, K, T, r, sg)) / (2 * hs);
    const double fd_vega =
        (call_price(S, K, T, r, sg + hv) - call_price(S, K, T, r, sg - hv)) / (2 * hv);
    const double fd_rho =
        (call_price(S, K, T, r + hr, sg) - call_price(S, K, T, r - hr, sg)) / (2 * hr);
    EXPECT_NEAR(delta[j], fd_delta, 1e-7);
    EXPECT_NEAR(vega[j], fd_vega, 1e-7 * (1 + std::abs(fd_vega)));
    EXPECT_NEAR(rho[j], fd_rho, 1e-7 * (1 + std::abs(fd_rho)));
  }
}

}  // namespace test_ct_vmap
