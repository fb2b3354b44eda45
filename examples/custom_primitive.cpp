// A primitive defined in user code, the way JAX users define one: an object that carries its
// rules (impl, abstract_eval, jvp, batch). It then works under jvp, vmap and make_jaxpr like the
// built-in ones, and prints and parses under its own name. Under jit the code around it is
// compiled, and the kernel calls back into the host for it (its impl), as XLA calls a custom call.
#include <xpr/xpr.hpp>

#include <cmath>
#include <iostream>
#include <span>
#include <tuple>

namespace rt = xpr::rt;

/// softplus(x) = log(1 + e^x), computed stably; d/dx softplus = logistic(x).
class Softplus final : public rt::Primitive {
 public:
  Softplus() : Primitive("softplus") {}

  // impl: evaluate on concrete f64 arrays.
  rt::Arrays impl(std::span<const xpr::Array> args, const rt::Params&) const override {
    const xpr::Array& x = args[0];
    rt::ArrayBuilder out(x.aval());
    const double* in = x.data<double>();
    for (std::int64_t i = 0; i < x.size(); ++i)
      out.data<double>()[i] = in[i] > 0 ? in[i] + std::log1p(std::exp(-in[i]))
                                        : std::log1p(std::exp(in[i]));
    return {std::move(out).finish()};
  }
  // abstract_eval: same shape and dtype; only f64 is implemented here.
  rt::Avals abstract_eval(std::span<const xpr::ShapedArray> args,
                          const rt::Params&) const override {
    if (args[0].dtype != xpr::float64)
      throw xpr::dtype_error("softplus: expected a float64 operand, found " + args[0].str());
    return {args[0]};
  }
  // jvp: the tangent times logistic(x), written with xpr's functions.
  std::pair<rt::Arrays, rt::Arrays> jvp(std::span<const xpr::Array> primals,
                                        std::span<const xpr::Array> tangents,
                                        const rt::Params&) const override {
    return {{rt::bind1(*this, {primals[0]})}, {tangents[0] * xpr::logistic(primals[0])}};
  }
  // batch: elementwise, so the batch axis stays where it is.
  std::pair<rt::Arrays, rt::BatchDims> batch(std::span<const xpr::Array> args,
                                             std::span<const rt::BatchDim> dims, std::int64_t,
                                             const rt::Params&) const override {
    return {{rt::bind1(*this, {args[0]})}, {dims[0]}};
  }
};
// Constructed at run time (its constructor is not constexpr), it registers itself by name, so
// parse_jaxpr below reads it; one constructed at compile time would call
// rt::register_primitive(softplus_p) instead (the library's own primitives are listed for the
// parser in xpr/rt/primitive_table.hpp).
inline const Softplus softplus_p;

xpr::Array softplus(const xpr::Array& x) { return rt::bind1(softplus_p, {x}); }

int main() {
  std::cout << "softplus(0.5) = " << softplus(0.5) << "\n";
  auto [y, dy] = xpr::jvp(softplus, std::tuple{0.5}, std::tuple{1.0});
  std::cout << "jvp: " << y << ", " << dy << " (logistic(0.5) = " << xpr::logistic(0.5) << ")\n";
  std::cout << "vmap: " << xpr::vmap(softplus)(xpr::array({-1.0, 0.0, 1.0})) << "\n";
  auto f = [](auto x) { return softplus(x * 2.0); };
  auto df = [&](auto x) { return xpr::jvp(f, std::tuple{x}, std::tuple{1.0}).second; };
  std::cout << xpr::make_jaxpr(df)(0.5) << "\n";
  std::cout << xpr::parse_jaxpr("{ lambda ; a:f64[]. let b:f64[] = softplus a in (b,) }") << "\n";
  auto jf = xpr::jit([](const xpr::Array& x) { return xpr::sin(softplus(x * 2.0)) + 1.0; });
  std::cout << "jit: " << jf(xpr::array({-1.0, 0.0, 1.0})) << "\n";
}
