// SPDX-License-Identifier: MIT
// W1: value and three partials of f(x, y, z) = sin(x) y + exp(x z) - log(1 + y^2) z at 1M
// points, f64 and f32: xpr::ct::vmap(value_and_grad<0, 1, 2>(w1)).into(...) against a
// hand-written scalar loop and a hand-written xsimd loop (derivatives by hand), and the peers
// that CMake found. benchmarks/ct_table.py prints the ratios; the table is in docs/benchmarks.md.
#include <cstddef>
#include <memory>
#include <tuple>
#include <xpr/ct/ct.hpp>

#include "benchmarks/ct/common.hpp"
#include "benchmarks/ct/peers.hpp"
#include "benchmarks/ct/xpr_loop.hpp"

namespace {

constexpr std::size_t n = std::size_t{1} << 20;

constexpr auto w1 = [](auto x, auto y, auto z) {
  return xpr::sin(x) * y + xpr::exp(x * z) - xpr::log(1 + y * y) * z;
};

/// The same function for the peers' number types (their functions are found by ADL).
template <class R, class X, class Y, class Z>
auto w1_peer(const X& x, const Y& y, const Z& z) {
  using std::exp, std::log, std::sin;
  return sin(x) * y + exp(x * z) - log(R(1) + y * y) * z;
}

template <class T>
struct Data {
  bench::Vec<T> x = bench::input<T>(n, -2, 2, 1), y = bench::input<T>(n, -2, 2, 2),
                z = bench::input<T>(n, -1, 1, 3);
  bench::Vec<T> f = bench::Vec<T>(n), fx = bench::Vec<T>(n), fy = bench::Vec<T>(n),
                fz = bench::Vec<T>(n);
  std::vector<bench::Vec<T>*> outs() { return {&f, &fx, &fy, &fz}; }
};

// Hand-written: f and its partials derived on paper,
//   fx = cos(x) y + z exp(x z),  fy = sin(x) - 2 y z / (1 + y^2),  fz = x exp(x z) - log(1 + y^2).
template <class V>
[[gnu::always_inline]] inline void w1_hand(const V& x, const V& y, const V& z, V& f, V& fx, V& fy,
                                           V& fz) {
  using std::cos, std::exp, std::log, std::sin;
  const V s = sin(x), c = cos(x), e = exp(x * z), q = V(1) + y * y, l = log(q);
  f = s * y + e - l * z;
  fx = c * y + z * e;
  fy = s - V(2) * y * z / q;
  fz = x * e - l;
}

template <class T>
void hand_scalar(Data<T>& d) {
  for (std::size_t i = 0; i < n; ++i)
    w1_hand<T>(d.x[i], d.y[i], d.z[i], d.f[i], d.fx[i], d.fy[i], d.fz[i]);
}

template <class T>
void hand_xsimd(Data<T>& d) {
  using B = xsimd::batch<T>;
  static_assert(n % B::size == 0);  // no tail
  for (std::size_t i = 0; i < n; i += B::size) {
    B f, fx, fy, fz;
    w1_hand(B::load_aligned(&d.x[i]), B::load_aligned(&d.y[i]), B::load_aligned(&d.z[i]), f, fx, fy,
            fz);
    f.store_aligned(&d.f[i]);
    fx.store_aligned(&d.fx[i]);
    fy.store_aligned(&d.fy[i]);
    fz.store_aligned(&d.fz[i]);
  }
}

template <class T>
void xpr_vmap(Data<T>& d) {
  constexpr auto vg = xpr::ct::vmap(xpr::ct::value_and_grad<0, 1, 2>(w1));
  vg.into(std::tuple{std::span<T>(d.f), std::span<T>(d.fx), std::span<T>(d.fy), std::span<T>(d.fz)},
          std::span<const T>(d.x), std::span<const T>(d.y), std::span<const T>(d.z));
}

// The same program through the flat entry point compiled_t<G, B...>::run in a plain loop: the
// difference to `xpr` is the cost of vmap's loop itself.
template <class T>
void xpr_run(Data<T>& d) {
  constexpr auto vg = xpr::ct::value_and_grad<0, 1, 2>(w1);
  bench::xpr_into(
      vg, std::tuple{std::span<T>(d.f), std::span<T>(d.fx), std::span<T>(d.fy), std::span<T>(d.fz)},
      std::span<const T>(d.x), std::span<const T>(d.y), std::span<const T>(d.z));
}

#if XPR_BENCH_CERES
template <class T>
void ceres_jet(Data<T>& d) {
  using J = ceres::Jet<T, 3>;
  for (std::size_t i = 0; i < n; ++i) {
    const J r = w1_peer<T>(J(d.x[i], 0), J(d.y[i], 1), J(d.z[i], 2));
    d.f[i] = r.a;
    d.fx[i] = r.v[0];
    d.fy[i] = r.v[1];
    d.fz[i] = r.v[2];
  }
}
#endif

#if XPR_BENCH_ADOLC
void adolc_tapeless(Data<double>& d) {
  for (std::size_t i = 0; i < n; ++i) {
    adtl::adouble x(d.x[i]), y(d.y[i]), z(d.z[i]);
    x.setADValue(0, 1);
    y.setADValue(1, 1);
    z.setADValue(2, 1);
    const adtl::adouble r = w1_peer<double>(x, y, z);
    d.f[i] = r.getValue();
    d.fx[i] = r.getADValue(0);
    d.fy[i] = r.getADValue(1);
    d.fz[i] = r.getADValue(2);
  }
}

constexpr short w1_tape = 1;
void adolc_record() {
  trace_on(w1_tape, 1);  // keep = 1: the tape is replayed, not re-recorded, per point
  adouble x, y, z;
  double f = 0;
  x <<= 0.5;
  y <<= 0.5;
  z <<= 0.5;
  adouble r = w1_peer<double>(x, y, z);
  r >>= f;
  trace_off();
}

constexpr std::size_t taped_points = n / 16;  // 3.5 us a point: a prefix is enough

void adolc_taped(Data<double>& d) {
  // Per point: a zero-order forward sweep (keeping the Taylor buffer) and a first-order reverse.
  for (std::size_t i = 0; i < taped_points; ++i) {
    double in[3] = {d.x[i], d.y[i], d.z[i]}, f = 0, u = 1, g[3];
    zos_forward(w1_tape, 1, 3, 1, in, &f);
    fos_reverse(w1_tape, 1, 3, &u, g);
    d.f[i] = f;
    d.fx[i] = g[0];
    d.fy[i] = g[1];
    d.fz[i] = g[2];
  }
}
#endif

#if XPR_BENCH_BOOST_AUTODIFF
template <class T>
void boost_autodiff(Data<T>& d) {
  namespace ad = boost::math::differentiation;
  for (std::size_t i = 0; i < n; ++i) {
    const auto v = ad::make_ftuple<T, 1, 1, 1>(d.x[i], d.y[i], d.z[i]);
    const auto r = w1_peer<T>(std::get<0>(v), std::get<1>(v), std::get<2>(v));
    d.f[i] = static_cast<T>(r.derivative(0, 0, 0));
    d.fx[i] = static_cast<T>(r.derivative(1, 0, 0));
    d.fy[i] = static_cast<T>(r.derivative(0, 1, 0));
    d.fz[i] = static_cast<T>(r.derivative(0, 0, 1));
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
  auto add = [&](const char* name, void (*run)(Data<T>&), std::size_t points = n) {
    bench::add<T>(
        "w1", name, points, [d, run] { run(*d); }, [d] { return d->outs(); }, reference,
        bench::tolerance<T>, n, points);
  };
  add("hand_scalar", hand_scalar<T>);
  add("hand_xsimd", hand_xsimd<T>);
  add("xpr", xpr_vmap<T>);
  add("xpr_run", xpr_run<T>);
#if XPR_BENCH_CERES
  add("ceres_jet", ceres_jet<T>);
#endif
#if XPR_BENCH_ADOLC
  if constexpr (std::is_same_v<T, double>) {
    add("adolc_tapeless", adolc_tapeless);
    adolc_record();
    add("adolc_taped", adolc_taped, taped_points);
  }
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
