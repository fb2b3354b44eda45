// W3: Black-Scholes call prices with delta, vega and rho for a batch of options, by reverse
// mode at compile time and xpr::ct::vmap. The normal CDF is Abramowitz & Stegun 26.2.17
// (absolute error below 7.5e-8) built from exp, the formula benchmark W3 gives every contender
// (it predates xpr::erf); tests/ct/vmap.cpp checks the Greeks against the closed forms.
// Output: examples/ct_w3_black_scholes.out. See docs/compile-time.md.
#include <xpr/ct/ct.hpp>

#include <cstdio>
#include <vector>

// N(x) = 1 - phi(x) (b1 t + ... + b5 t^5), t = 1 / (1 + p x), for x >= 0; N(-x) = 1 - N(x).
constexpr auto norm_cdf = [](auto x) {
  const auto a = xpr::abs(x);
  const auto t = 1 / (1 + 0.2316419 * a);
  const auto poly =
      t * (0.319381530 + t * (-0.356563782 + t * (1.781477937 + t * (-1.821255978 + t * 1.330274429))));
  const auto tail = 0.3989422804014327 * xpr::exp(-0.5 * a * a) * poly;  // 1 - N(|x|)
  return xpr::where(x >= 0, 1 - tail, tail);
};

// spot s, strike k, time to expiry t (years), rate r, volatility sigma
constexpr auto call_price = [](auto s, auto k, auto t, auto r, auto sigma) {
  const auto vol = sigma * xpr::sqrt(t);
  const auto d1 = (xpr::log(s / k) + (r + 0.5 * sigma * sigma) * t) / vol;
  const auto d2 = d1 - vol;
  return s * norm_cdf(d1) - k * xpr::exp(-r * t) * norm_cdf(d2);
};

int main() {
  const std::size_t n = 7;
  std::vector<double> s(n), k(n, 100.0), t(n), sigma(n);
  for (std::size_t i = 0; i < n; ++i) {
    s[i] = 85.0 + 5.0 * static_cast<double>(i);
    t[i] = 0.5 + 0.25 * static_cast<double>(i % 3);
    sigma[i] = 0.2 + 0.05 * static_cast<double>(i % 2);
  }
  const double r = 0.03;  // one rate for every option: a per-point value, broadcast

  // The price and its partials with respect to s (delta), sigma (vega) and r (rho).
  constexpr auto greeks = xpr::ct::value_and_grad<0, 4, 3>(call_price);
  auto [price, delta, vega, rho] = xpr::ct::vmap(greeks)(s, k, t, r, sigma);

  std::printf("    S      K     T  sigma    price    delta     vega      rho\n");
  for (std::size_t i = 0; i < n; ++i) {
    const auto j = static_cast<Eigen::Index>(i);
    std::printf("%5.1f  %5.1f  %4.2f  %5.2f  %7.4f  %7.4f  %7.4f  %7.4f\n", s[i], k[i], t[i],
                sigma[i], price[j], delta[j], vega[j], rho[j]);
  }
}
