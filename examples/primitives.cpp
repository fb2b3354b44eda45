// Adding an elementwise primitive to both tiers: one struct and one list entry. `softplus(x) =
// log(1 + e^x)` gets its meaning on numbers and its derivative, `logistic(x)`, written once;
// both tiers derive their rules from it (evaluation, jvp, vmap, reverse mode, printing).
// Output: examples/primitives.out. See docs/primitives.md.
#include <xpr/core/ops.hpp>  // first: the list and its extension point

#include <cmath>
#include <string_view>

namespace my {
/// softplus x = log(1 + exp(x)); d softplus x = logistic x.
struct softplus {
  static constexpr std::string_view name = "softplus";
  static constexpr int arity = 1;
  static constexpr xpr::core::Accepts accepts = xpr::core::Accepts::floating;
  template <class T>
  static constexpr auto number(const T& x) {  // a double, an xsimd batch or an Eigen array
    using std::exp, std::log1p;
    return log1p(exp(x));
  }
  template <class T>
  static constexpr T jvp(const T& g, const T&, const T& x) {  // g: x's tangent
    return g * xpr::logistic(x);
  }
};
/// The name to call it by, in every tier.
inline constexpr xpr::core::function<softplus> softplus_fn{};
}  // namespace my

// The list entry: before any other xpr header, the same in every translation unit.
template <>
struct xpr::user_primitives<void> {
  using type = boost::mp11::mp_list<my::softplus>;
};

#include <xpr/xpr.hpp>

#include <cstdio>
#include <iostream>
#include <vector>

int main() {
  constexpr auto f = [](auto x) { return my::softplus_fn(2.0 * x); };

  // Plain numbers compute at once.
  std::printf("f(0.5) = %.6f\n", f(0.5));

  // The compile-time tier: a jaxpr in a type, its gradient resolved by the compiler.
  std::cout << xpr::ct::make_jaxpr<double>(xpr::ct::grad(f)) << "\n";
  std::printf("ct grad f(0.5) = %.6f\n", xpr::ct::grad(f)(0.5));

  // The runtime tier: the same primitive, staged, differentiated and batched.
  std::cout << xpr::make_jaxpr(xpr::grad(f))(0.5) << "\n";
  std::printf("rt grad f(0.5) = %.6f\n", xpr::grad(f)(0.5).item<double>());
  xpr::Array g = xpr::vmap(xpr::grad(f))(xpr::array({-1.0, 0.0, 1.0}));
  for (double v : g.to_vector<double>()) std::printf("%.6f ", v);
  std::printf("\n");
}
