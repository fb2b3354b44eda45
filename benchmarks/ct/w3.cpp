// SPDX-License-Identifier: MIT
// W3: Black-Scholes call price with delta, vega and rho at 1M options (spot S, volatility sigma,
// rate r, strike K, maturity T each an array), f64 and f32: xpr::ct::vmap(value_and_grad<0, 1,
// 2>(call)).into(...) against hand-written scalar and xsimd loops with the closed-form Greeks,
// and the peers CMake found.
//
// The normal CDF: the compile-time tier has no erf primitive, so every contender uses the same
// exp-based approximation, Abramowitz & Stegun 26.2.17 (absolute error < 7.5e-8):
//   N(x) = 1 - phi(x) (b1 t + ... + b5 t^5), t = 1 / (1 + p x) for x >= 0, N(x) = 1 - N(-x).
// The hand code uses N for the price, delta and rho and phi for vega (the closed forms); AD
// differentiates the approximation instead, so the two agree to the approximation's accuracy.
#include <cstddef>
#include <memory>
#include <span>
#include <tuple>
#include <type_traits>
#include <xpr/ct/ct.hpp>

#include "benchmarks/ct/common.hpp"
#include "benchmarks/ct/peers.hpp"

namespace {

constexpr std::size_t n = std::size_t{1} << 20;

constexpr double p_as = 0.2316419, b1 = 0.319381530, b2 = -0.356563782, b3 = 1.781477937,
                 b4 = -1.821255978, b5 = 1.330274429, inv_sqrt_2pi = 0.3989422804014327;

/// N(x) for xpr (weakly typed literals: f32 stays f32).
constexpr auto norm_cdf = [](auto x) {
  const auto a = xpr::abs(x);
  const auto t = 1 / (1 + p_as * a);
  const auto poly = t * (b1 + t * (b2 + t * (b3 + t * (b4 + t * b5))));
  const auto q = inv_sqrt_2pi * xpr::exp(-0.5 * a * a) * poly;
  return xpr::where(x >= 0, 1 - q, q);
};

constexpr auto call = [](auto s, auto sigma, auto r, auto k, auto t) {
  const auto st = xpr::sqrt(t);
  const auto d1 = (xpr::log(s / k) + (r + 0.5 * sigma * sigma) * t) / (sigma * st);
  const auto d2 = d1 - sigma * st;
  return s * norm_cdf(d1) - k * xpr::exp(-r * t) * norm_cdf(d2);
};

template <class T>
struct Data {
  bench::Vec<T> s = bench::input<T>(n, 80, 120, 1), sigma = bench::input<T>(n, 0.1, 0.5, 2),
                r = bench::input<T>(n, 0.0, 0.08, 3), k = bench::input<T>(n, 90, 110, 4),
                t = bench::input<T>(n, 0.25, 2, 5);
  bench::Vec<T> price = bench::Vec<T>(n), delta = bench::Vec<T>(n), vega = bench::Vec<T>(n),
                rho = bench::Vec<T>(n);
  std::vector<bench::Vec<T>*> outs() { return {&price, &delta, &vega, &rho}; }
};

/// N(x) for the hand code, the same operations on float, double or an xsimd batch.
template <class V>
[[gnu::always_inline]] inline V norm_cdf_hand(const V& x) {
  using std::abs, std::exp;
  const V a = abs(x);
  const V t = V(1) / (V(1) + V(p_as) * a);
  const V poly = t * (V(b1) + t * (V(b2) + t * (V(b3) + t * (V(b4) + t * V(b5)))));
  const V q = V(inv_sqrt_2pi) * exp(V(-0.5) * a * a) * poly;
  if constexpr (std::is_arithmetic_v<V>)
    return x >= V(0) ? V(1) - q : q;
  else
    return xsimd::select(x >= V(0), V(1) - q, q);
}

// Hand-written closed forms: delta = N(d1), vega = S phi(d1) sqrt(T), rho = K T e^{-rT} N(d2).
template <class V>
[[gnu::always_inline]] inline void call_hand(const V& s, const V& sigma, const V& r, const V& k,
                                             const V& t, V& price, V& delta, V& vega, V& rho) {
  using std::exp, std::log, std::sqrt;
  const V st = sqrt(t), sst = sigma * st;
  const V d1 = (log(s / k) + (r + V(0.5) * sigma * sigma) * t) / sst, d2 = d1 - sst;
  const V nd1 = norm_cdf_hand(d1), nd2 = norm_cdf_hand(d2);
  const V kdf = k * exp(-r * t);
  price = s * nd1 - kdf * nd2;
  delta = nd1;
  vega = s * (V(inv_sqrt_2pi) * exp(V(-0.5) * d1 * d1)) * st;
  rho = kdf * t * nd2;
}

template <class T>
void hand_scalar(Data<T>& d) {
  for (std::size_t i = 0; i < n; ++i)
    call_hand<T>(d.s[i], d.sigma[i], d.r[i], d.k[i], d.t[i], d.price[i], d.delta[i], d.vega[i],
                 d.rho[i]);
}

template <class T>
void hand_xsimd(Data<T>& d) {
  using B = xsimd::batch<T>;
  static_assert(n % B::size == 0);  // no tail
  for (std::size_t i = 0; i < n; i += B::size) {
    B price, delta, vega, rho;
    call_hand(B::load_aligned(&d.s[i]), B::load_aligned(&d.sigma[i]), B::load_aligned(&d.r[i]),
              B::load_aligned(&d.k[i]), B::load_aligned(&d.t[i]), price, delta, vega, rho);
    price.store_aligned(&d.price[i]);
    delta.store_aligned(&d.delta[i]);
    vega.store_aligned(&d.vega[i]);
    rho.store_aligned(&d.rho[i]);
  }
}

template <class T>
void xpr_vmap(Data<T>& d) {
  constexpr auto greeks = xpr::ct::vmap(xpr::ct::value_and_grad<0, 1, 2>(call));
  using In = std::span<const T>;
  using Out = std::span<T>;
  greeks.into(std::tuple{Out(d.price), Out(d.delta), Out(d.vega), Out(d.rho)}, In(d.s), In(d.sigma),
              In(d.r), In(d.k), In(d.t));
}

/// The same formulation for the peers' number types (functions found by ADL).
template <class R, class X>
X norm_cdf_peer(const X& x) {
  using std::abs, std::exp;
  const X a = x >= R(0) ? x : -x;
  const X t = R(1) / (R(1) + R(p_as) * a);
  const X poly = t * (R(b1) + t * (R(b2) + t * (R(b3) + t * (R(b4) + t * R(b5)))));
  const X q = R(inv_sqrt_2pi) * exp(R(-0.5) * a * a) * poly;
  return x >= R(0) ? R(1) - q : q;
}

template <class R, class S, class Sig, class Rate>
auto call_peer(const S& s, const Sig& sigma, const Rate& r, R k, R t) {
  using std::exp, std::log, std::sqrt;
  const R st = sqrt(t);
  const auto d1 = (log(s / k) + (r + R(0.5) * sigma * sigma) * t) / (sigma * st);
  const auto d2 = d1 - sigma * st;
  return s * norm_cdf_peer<R>(d1) - k * exp(-r * t) * norm_cdf_peer<R>(d2);
}

#if XPR_BENCH_CERES
template <class T>
void ceres_jet(Data<T>& d) {
  using J = ceres::Jet<T, 3>;
  for (std::size_t i = 0; i < n; ++i) {
    const J v = call_peer<T>(J(d.s[i], 0), J(d.sigma[i], 1), J(d.r[i], 2), d.k[i], d.t[i]);
    d.price[i] = v.a;
    d.delta[i] = v.v[0];
    d.vega[i] = v.v[1];
    d.rho[i] = v.v[2];
  }
}
#endif

#if XPR_BENCH_ADOLC
// Tapeless only: a tape records one branch of N(x)'s sign test, so replaying it per option would
// need ADOL-C's condassign rewrite of the function.
void adolc_tapeless(Data<double>& d) {
  for (std::size_t i = 0; i < n; ++i) {
    adtl::adouble s(d.s[i]), sigma(d.sigma[i]), r(d.r[i]);
    s.setADValue(0, 1);
    sigma.setADValue(1, 1);
    r.setADValue(2, 1);
    const adtl::adouble v = call_peer<double>(s, sigma, r, d.k[i], d.t[i]);
    d.price[i] = v.getValue();
    d.delta[i] = v.getADValue(0);
    d.vega[i] = v.getADValue(1);
    d.rho[i] = v.getADValue(2);
  }
}
#endif

#if XPR_BENCH_BOOST_AUTODIFF
template <class T>
void boost_autodiff(Data<T>& d) {
  namespace ad = boost::math::differentiation;
  for (std::size_t i = 0; i < n; ++i) {
    const auto v = ad::make_ftuple<T, 1, 1, 1>(d.s[i], d.sigma[i], d.r[i]);
    const auto c = call_peer<T>(std::get<0>(v), std::get<1>(v), std::get<2>(v), d.k[i], d.t[i]);
    d.price[i] = static_cast<T>(c.derivative(0, 0, 0));
    d.delta[i] = static_cast<T>(c.derivative(1, 0, 0));
    d.vega[i] = static_cast<T>(c.derivative(0, 1, 0));
    d.rho[i] = static_cast<T>(c.derivative(0, 0, 1));
  }
}
#endif

template <class T>
void register_all() {
  auto ref = std::make_shared<Data<T>>();
  hand_scalar(*ref);
  auto reference = [ref] { return ref->outs(); };
  auto d =
      std::make_shared<Data<T>>();  // shared by all contenders: each is checked right after it runs
  // AD differentiates the approximation of N, the hand code uses phi: delta differs by up to
  // 1.9e-5 (every AD contender alike), so this guard allows 1e-4; f32 its own rounding.
  const double tol = sizeof(T) == 8 ? 1e-4 : 1e-3;
  auto add = [&](const char* name, void (*run)(Data<T>&)) {
    bench::add<T>(
        "w3", name, n, [d, run] { run(*d); }, [d] { return d->outs(); }, reference, tol);
  };
  add("hand_scalar", hand_scalar<T>);
  add("hand_xsimd", hand_xsimd<T>);
  add("xpr", xpr_vmap<T>);
#if XPR_BENCH_CERES
  add("ceres_jet", ceres_jet<T>);
#endif
#if XPR_BENCH_ADOLC
  if constexpr (std::is_same_v<T, double>) add("adolc_tapeless", adolc_tapeless);
#endif
#if XPR_BENCH_BOOST_AUTODIFF
  add("boost_autodiff", boost_autodiff<T>);
#endif
}

}  // namespace

int main(int argc, char** argv) {
#if XPR_BENCH_ADOLC
  adtl::setNumDir(3);
#endif
  register_all<double>();
  register_all<float>();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
