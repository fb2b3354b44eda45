// The two tiers agree (issue 6, "Checked by"): the same generic lambdas, differentiated by the
// compile-time tier (xpr::ct::grad, value_and_grad, jacfwd, jacrev, hessian) and by the runtime
// tier (xpr::grad, ...), give the same gradients, Jacobians and Hessians to 1e-12 relative, for
// every scalar primitive the compile-time tier has (include/xpr/ct/prims: neg sin cos tan tanh
// exp log log1p expm1 sqrt rsqrt abs sign logistic square exp2 cbrt erf floor ceil copy, add sub
// mul div max min pow, integer_pow,
// the comparisons eq ne lt le gt ge with select, stop_gradient), at several points, and for
// functions of std::array arguments with std::array results. And for every entry of the shared
// list of elementwise primitives (core/ops.hpp), the jvp jaxpr is the same text in both tiers.
#include <array>
#include <cmath>
#include <cstddef>
#include <initializer_list>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/mp11/algorithm.hpp>
#include <gtest/gtest.h>

#include "xpr/xpr.hpp"

namespace test_ct_agreement_rt {

namespace ct = xpr::ct;

/// Every leaf of a result of either tier, as doubles (the runtime tier's pytree functions
/// flatten the compile-time tier's numbers, tuples and std::arrays too).
template <class T>
std::vector<double> leaves(const T& tree) {
  std::vector<double> out;
  for (const xpr::Array& a : xpr::tree_leaves(tree)) out.push_back(a.item<double>());
  return out;
}

/// |a - b| <= 1e-12 max(|a|, |b|): relative agreement. Entries that are zero in exact arithmetic
/// must then be zero in both tiers.
void expect_agree(const std::vector<double>& rt, const std::vector<double>& ct_,
                  const std::string& what) {
  ASSERT_EQ(rt.size(), ct_.size()) << what;
  for (std::size_t i = 0; i < rt.size(); ++i)
    EXPECT_LE(std::abs(rt[i] - ct_[i]), 1e-12 * std::max(std::abs(rt[i]), std::abs(ct_[i])))
        << what << " leaf " << i << ": rt " << rt[i] << ", ct " << ct_[i];
}

/// grad, value_and_grad, jacfwd, jacrev and hessian of `f` (one or two scalar arguments; with
/// two, with respect to both) in both tiers at `x` (and `y`).
template <class F>
void check_scalar(const char* name, F f, double x, double y = 0) {
  SCOPED_TRACE(::testing::Message() << name << " at (" << x << ", " << y << ")");
  if constexpr (std::is_invocable_v<F, double>) {
    expect_agree(leaves(xpr::grad(f)(x)), leaves(ct::grad(f)(x)), "grad");
    expect_agree(leaves(xpr::value_and_grad(f)(x)), leaves(ct::value_and_grad(f)(x)),
                 "value_and_grad");
    expect_agree(leaves(xpr::jacfwd(f)(x)), leaves(ct::jacfwd(f)(x)), "jacfwd");
    expect_agree(leaves(xpr::jacrev(f)(x)), leaves(ct::jacrev(f)(x)), "jacrev");
    expect_agree(leaves(xpr::hessian(f)(x)), leaves(ct::hessian(f)(x)), "hessian");
    // and the runtime tier's value is the function's own on doubles
    expect_agree(leaves(xpr::value_and_grad(f)(x).first), {f(x)}, "value");
  } else {
    expect_agree(leaves(xpr::grad<0, 1>(f)(x, y)), leaves(ct::grad<0, 1>(f)(x, y)), "grad");
    expect_agree(leaves(xpr::value_and_grad<0, 1>(f)(x, y)),
                 leaves(ct::value_and_grad<0, 1>(f)(x, y)), "value_and_grad");
    expect_agree(leaves(xpr::jacfwd<0, 1>(f)(x, y)), leaves(ct::jacfwd<0, 1>(f)(x, y)), "jacfwd");
    expect_agree(leaves(xpr::jacrev<0, 1>(f)(x, y)), leaves(ct::jacrev<0, 1>(f)(x, y)), "jacrev");
    expect_agree(leaves(xpr::hessian<0, 1>(f)(x, y)), leaves(ct::hessian<0, 1>(f)(x, y)),
                 "hessian");
    expect_agree(leaves(xpr::value_and_grad<0, 1>(f)(x, y).first), {f(x, y)}, "value");
  }
}

template <class F>
void check_unary(const char* name, F f, std::initializer_list<double> xs) {
  for (double x : xs) check_scalar(name, f, x);
}
template <class F>
void check_binary(const char* name, F f, std::initializer_list<std::pair<double, double>> xys) {
  for (auto [x, y] : xys) check_scalar(name, f, x, y);
}

// Each unary primitive applied to a non-linear inner function, so that its second derivative
// meets a non-trivial first one (chain rule in both tiers).
TEST(TiersAgree, UnaryPrimitives) {
  const auto pts = {0.3, -0.7, 1.1};
  const auto pos = {0.3, 1.7, 2.6};
  check_unary(
      "neg", [](auto x) { return -(x * x * x); }, pts);
  check_unary(
      "sin", [](auto x) { return xpr::sin(x * x); }, pts);
  check_unary(
      "cos", [](auto x) { return xpr::cos(x * x); }, pts);
  check_unary(
      "tan", [](auto x) { return xpr::tan(x); }, pts);
  check_unary(
      "tanh", [](auto x) { return xpr::tanh(2.0 * x); }, pts);
  check_unary(
      "exp", [](auto x) { return xpr::exp(xpr::sin(x)); }, pts);
  check_unary(
      "log", [](auto x) { return xpr::log(x); }, pos);
  check_unary(
      "log1p", [](auto x) { return xpr::log1p(x * x); }, pts);
  check_unary(
      "expm1", [](auto x) { return xpr::expm1(x); }, pts);
  check_unary(
      "sqrt", [](auto x) { return xpr::sqrt(x); }, pos);
  check_unary(
      "rsqrt", [](auto x) { return xpr::rsqrt(x); }, pos);
  check_unary(
      "abs", [](auto x) { return xpr::abs(x) * x; }, pts);
  check_unary(
      "sign", [](auto x) { return xpr::sign(x) * x * x; }, pts);
  check_unary(
      "logistic", [](auto x) { return xpr::logistic(3.0 * x); }, pts);
  check_unary(
      "integer_pow 3", [](auto x) { return xpr::integer_pow(x, 3); }, pts);
  check_unary(
      "integer_pow -2", [](auto x) { return xpr::integer_pow(x, -2); }, pts);
  check_unary(
      "integer_pow 0", [](auto x) { return xpr::integer_pow(x, 0) * x; }, pts);
  check_unary(
      "square", [](auto x) { return xpr::square(xpr::sin(x)); }, pts);
  check_unary(
      "stop_gradient", [](auto x) { return xpr::stop_gradient(x) * x * x; }, pts);
  check_unary(
      "exp2", [](auto x) { return xpr::exp2(x * x); }, pts);
  check_unary(
      "cbrt", [](auto x) { return xpr::cbrt(x * x + 1.0); }, pts);
  check_unary(
      "erf", [](auto x) { return xpr::erf(2.0 * x); }, pts);
  check_unary(
      "floor", [](auto x) { return xpr::floor(3.0 * x) * x * x; }, pts);
  check_unary(
      "ceil", [](auto x) { return xpr::ceil(3.0 * x) * xpr::sin(x); }, pts);
  check_unary(
      "copy", [](auto x) { return xpr::copy(x * x) * x; }, pts);
}

TEST(TiersAgree, BinaryPrimitives) {
  const auto pts = {std::pair{0.3, 1.4}, std::pair{-0.7, 0.5}, std::pair{1.1, -2.0}};
  const auto pos = {std::pair{0.3, 1.4}, std::pair{1.7, -0.5}, std::pair{2.6, 2.0}};
  check_binary(
      "add", [](auto x, auto y) { return x + y; }, pts);
  check_binary(
      "sub", [](auto x, auto y) { return x * x - y; }, pts);
  check_binary(
      "mul", [](auto x, auto y) { return x * y; }, pts);
  check_binary(
      "div", [](auto x, auto y) { return x / y; }, pts);
  check_binary(
      "max", [](auto x, auto y) { return xpr::maximum(x * x, y); }, pts);
  check_binary(
      "min", [](auto x, auto y) { return xpr::minimum(x * y, y); }, pts);
  check_binary(
      "pow", [](auto x, auto y) { return xpr::pow(x, y); }, pos);
  check_binary(
      "mixed", [](auto x, auto y) { return xpr::sin(x) * y + xpr::exp(x * y); }, pts);
  // ties: both tiers split the derivative evenly (JAX's convention)
  check_binary("max tie", [](auto x, auto y) { return xpr::maximum(x, y); }, {{0.5, 0.5}});
  check_binary("min tie", [](auto x, auto y) { return xpr::minimum(x, y); }, {{0.5, 0.5}});
}

TEST(TiersAgree, ComparisonsWithSelect) {
  const auto pts = {std::pair{0.3, 1.4}, std::pair{-0.7, -1.5}, std::pair{1.1, 1.1}};
  check_binary(
      "eq", [](auto x, auto y) { return xpr::where(x == y, x * y, x - y); }, pts);
  check_binary(
      "ne", [](auto x, auto y) { return xpr::where(x != y, x * y, x - y); }, pts);
  check_binary(
      "lt", [](auto x, auto y) { return xpr::where(x < y, xpr::sin(x), y * y); }, pts);
  check_binary(
      "le", [](auto x, auto y) { return xpr::where(x <= y, xpr::sin(x), y * y); }, pts);
  check_binary(
      "gt", [](auto x, auto y) { return xpr::where(x > y, x * x * y, xpr::exp(y)); }, pts);
  check_binary(
      "ge", [](auto x, auto y) { return xpr::where(x >= y, x * x * y, xpr::exp(y)); }, pts);
}

// Functions of std::array arguments with std::array results: the Jacobian is an array of arrays
// in both tiers.
TEST(TiersAgree, ArrayArgumentsAndResults) {
  auto vector_valued = [](const auto& x) {
    return std::array{x[0] * x[1] * x[2], xpr::sin(x[0]) + x[2] / x[1], xpr::exp(x[1] - x[0])};
  };
  auto scalar = [](const auto& x) {
    return xpr::tanh(x[0] * x[1]) + xpr::log1p(x[2] * x[2]) * x[0] - xpr::sqrt(x[1] * x[1] + 1.0);
  };
  for (const std::array<double, 3>& x :
       {std::array{0.5, 2.0, -1.5}, std::array{-0.3, 0.7, 1.2}, std::array{1.5, -1.0, 0.25}}) {
    SCOPED_TRACE(::testing::Message() << "x = (" << x[0] << ", " << x[1] << ", " << x[2] << ")");
    expect_agree(leaves(xpr::jacfwd(vector_valued)(x)), leaves(ct::jacfwd(vector_valued)(x)),
                 "jacfwd");
    expect_agree(leaves(xpr::jacrev(vector_valued)(x)), leaves(ct::jacrev(vector_valued)(x)),
                 "jacrev");
    expect_agree(leaves(xpr::grad(scalar)(x)), leaves(ct::grad(scalar)(x)), "grad");
    expect_agree(leaves(xpr::hessian(scalar)(x)), leaves(ct::hessian(scalar)(x)), "hessian");
  }
}

// The accumulating loop of docs/compile-time.md, one generic lambda for both tiers: the runtime
// tier's Array has `+=`, `-=`, `*=` and `/=` (each `x = x op y`) as the tracers do.
TEST(TiersAgree, CompoundAssignmentInAccumulatingLoops) {
  constexpr auto rosenbrock = [](const auto& x) {
    decltype(x[0] * x[0]) s = 0;
    for (std::size_t i = 0; i + 1 < x.size(); ++i)
      s += 100 * xpr::square(x[i + 1] - x[i] * x[i]) + xpr::square(1 - x[i]);
    return s;
  };
  constexpr auto mixed = [](const auto& x) {
    decltype(x[0] * x[0]) p = 1, q = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      p *= x[i];
      q -= x[i];
    }
    p /= 2.0;
    return p + q;
  };
  const std::array<double, 4> x{0.5, -1.25, 2.0, 0.75};
  std::array<double, 4> want{};  // the gradient of Rosenbrock's function, by hand
  for (std::size_t i = 0; i + 1 < 4; ++i) {
    const double r = x[i + 1] - x[i] * x[i];
    want[i] += -400 * x[i] * r - 2 * (1 - x[i]);
    want[i + 1] += 200 * r;
  }
  const std::array<double, 4> ct_grad = ct::grad(rosenbrock)(x);
  const std::array<xpr::Array, 4> rt_grad = xpr::grad(rosenbrock)(x);
  const std::array<xpr::Array, 4> jit_grad = xpr::jit(xpr::grad(rosenbrock))(x);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_NEAR(ct_grad[i], want[i], 1e-12) << i;
    EXPECT_NEAR(rt_grad[i].item<double>(), want[i], 1e-12) << i;
    EXPECT_NEAR(jit_grad[i].item<double>(), want[i], 1e-12) << i;
  }
  // d/dx_i of prod(x) / 2 - sum(x): prod of the others / 2 - 1.
  const std::array<double, 4> ct_mixed = ct::grad(mixed)(x);
  const std::array<xpr::Array, 4> rt_mixed = xpr::grad(mixed)(x);
  for (std::size_t i = 0; i < 4; ++i) {
    double others = 1;
    for (std::size_t k = 0; k < 4; ++k)
      if (k != i) others *= x[k];
    EXPECT_NEAR(ct_mixed[i], others / 2 - 1, 1e-14) << i;
    EXPECT_NEAR(rt_mixed[i].item<double>(), others / 2 - 1, 1e-14) << i;
  }
  EXPECT_DOUBLE_EQ(mixed(x), 0.5 * -1.25 * 2.0 * 0.75 / 2 - (0.5 - 1.25 + 2.0 + 0.75));
}

// Compositions agree too: grad of grad, jvp of grad, jacrev of jacfwd.
TEST(TiersAgree, Compositions) {
  auto f = [](auto x, auto y) { return xpr::sin(x) * y + xpr::exp(x * y); };
  for (auto [x, y] : {std::pair{0.8, 1.4}, std::pair{-0.2, 0.6}}) {
    SCOPED_TRACE(::testing::Message() << "(" << x << ", " << y << ")");
    expect_agree(leaves(xpr::grad(xpr::grad(f))(x, y)), leaves(ct::grad(ct::grad(f))(x, y)),
                 "grad(grad)");
    expect_agree(leaves(xpr::grad<1>(xpr::grad(f))(x, y)), leaves(ct::grad<1>(ct::grad(f))(x, y)),
                 "grad<1>(grad)");
    expect_agree(
        leaves(xpr::jvp(xpr::grad<0, 1>(f), std::tuple{x, y}, std::tuple{1.0, 2.0}).second),
        leaves(ct::jvp(ct::grad<0, 1>(f), std::tuple{x, y}, std::tuple{1.0, 2.0}).second),
        "jvp(grad)");
    expect_agree(leaves(xpr::jacrev<0, 1>(xpr::jacfwd<0, 1>(f))(x, y)),
                 leaves(ct::jacrev<0, 1>(ct::jacfwd<0, 1>(f))(x, y)), "jacrev(jacfwd)");
  }
}

// ---- the jvp jaxpr of every elementwise primitive, as text, in both tiers -----------------------

template <class J>
std::string text_of(const J& jaxpr) {
  std::ostringstream os;
  os << jaxpr;
  return os.str();
}

/// The text with its layout normalized: the runtime tier's printer puts a short jaxpr on one line
/// (equations separated by `;`), as JAX's does; the compile-time tier's never does.
std::string layout_free(std::string s) {
  std::string out;
  const std::string binders = "lambda ; ";
  const std::size_t b = s.find(binders);
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == ';' && !(b != std::string::npos && i == b + binders.size() - 2)) continue;
    if (c == '\n') c = ' ';
    if (c == ' ' && !out.empty() && out.back() == ' ') continue;
    out += c;
  }
  return out;
}

/// The jaxprs of `(x..., tangents...) -> jvp(op, x, tangents)` (primal and tangent out) in both
/// tiers: for a unary entry one; for a binary one three, with a tangent for x only (y the
/// constant 1.5, unused input), for y only (x the constant 1.5), and for both.
template <class Op>
struct JvpTexts {
  static constexpr auto f = [](auto... x) { return xpr::core::function<Op>{}(x...); };
  // pow folds constant subexpressions in the compile-time tier (`sub 1.5 1.0`, `log 1.5`), so
  // its other operand is a traced value whose derivative is stopped, in both tiers.
  static constexpr bool traced_other = std::is_same_v<Op, xpr::op::pow>;
  static constexpr auto of_x = [](auto a, auto b) {
    if constexpr (traced_other)
      return f(a, xpr::stop_gradient(b));
    else
      return f(a, 1.5);
  };
  static constexpr auto of_y = [](auto a, auto b) {
    if constexpr (traced_other)
      return f(xpr::stop_gradient(a), b);
    else
      return f(1.5, b);
  };
  static void check() {
    SCOPED_TRACE(std::string(Op::name));
    if constexpr (Op::arity == 1) {
      constexpr auto c = [](auto x, auto t) { return ct::jvp(f, std::tuple{x}, std::tuple{t}); };
      auto r = [](auto x, auto t) { return xpr::jvp(f, std::tuple{x}, std::tuple{t}); };
      EXPECT_EQ(layout_free(text_of(xpr::make_jaxpr(r)(0.5, 1.0))),
                layout_free(std::string(ct::make_jaxpr<double, double>(c).view())));
    } else {
      constexpr auto cx = [](auto x, auto y, auto t) {
        return ct::jvp(of_x, std::tuple{x, y}, std::tuple{t, 0.0});
      };
      auto rx = [](auto x, auto y, auto t) {
        return xpr::jvp(of_x, std::tuple{x, y}, std::tuple{t, 0.0});
      };
      EXPECT_EQ(layout_free(text_of(xpr::make_jaxpr(rx)(0.5, 1.5, 1.0))),
                layout_free(std::string(ct::make_jaxpr<double, double, double>(cx).view())))
          << "tangent for x only";
      constexpr auto cy = [](auto x, auto y, auto t) {
        return ct::jvp(of_y, std::tuple{x, y}, std::tuple{0.0, t});
      };
      auto ry = [](auto x, auto y, auto t) {
        return xpr::jvp(of_y, std::tuple{x, y}, std::tuple{0.0, t});
      };
      EXPECT_EQ(layout_free(text_of(xpr::make_jaxpr(ry)(0.5, 1.5, 1.0))),
                layout_free(std::string(ct::make_jaxpr<double, double, double>(cy).view())))
          << "tangent for y only";
      constexpr auto cxy = [](auto x, auto y, auto t, auto u) {
        return ct::jvp(f, std::tuple{x, y}, std::tuple{t, u});
      };
      auto rxy = [](auto x, auto y, auto t, auto u) {
        return xpr::jvp(f, std::tuple{x, y}, std::tuple{t, u});
      };
      // The compile-time tier's deliberate special case: div shares its division when both
      // operands have tangents, (tx - ty ans) / y (ct/prims/binary.hpp).
      if constexpr (!std::is_same_v<Op, xpr::op::div>) {
        EXPECT_EQ(
            layout_free(text_of(xpr::make_jaxpr(rxy)(0.5, 1.5, 1.0, 1.0))),
            layout_free(std::string(ct::make_jaxpr<double, double, double, double>(cxy).view())))
            << "tangents for both";
      }
    }
  }
};

TEST(TiersAgree, JvpJaxprOfEveryElementwisePrimitive) {
  boost::mp11::mp_for_each<xpr::elementwise_t<>>([](auto op) { JvpTexts<decltype(op)>::check(); });
}

// integer_pow's jvp comes from its struct (core/ops.hpp) in both tiers, the parameter included:
// the same text. (Not for y = 1, 2 and -1: the compile-time tier's exact simplifications rewrite
// `integer_pow[y=1] x` to `x` and `-1.0 * z` to `neg z`, where the runtime tier, as JAX, binds
// what was written.)
template <int Y>
struct IntegerPowJvp {
  static constexpr auto f = [](auto x) { return xpr::integer_pow(x, Y); };
  static constexpr auto c = [](auto x, auto t) { return ct::jvp(f, std::tuple{x}, std::tuple{t}); };
  static constexpr auto r = [](auto x, auto t) {
    return xpr::jvp(f, std::tuple{x}, std::tuple{t});
  };
};
TEST(TiersAgree, JvpJaxprOfIntegerPow) {
  boost::mp11::mp_for_each<boost::mp11::mp_list_c<int, -2, 3, 4>>([](auto n) {
    using J = IntegerPowJvp<decltype(n)::value>;
    SCOPED_TRACE("y = " + std::to_string(decltype(n)::value));
    EXPECT_EQ(layout_free(text_of(xpr::make_jaxpr(J::r)(0.5, 1.0))),
              layout_free(std::string(ct::make_jaxpr<double, double>(J::c).view())));
  });
}

// A comparison's tangent is a symbolic zero in both tiers (its struct says `differentiable =
// false`): the jvp of where(x < y, x, y) selects the tangents with the same comparison.
template <class Op>
struct ComparisonJvp {
  static constexpr auto f = [](auto x, auto y) {
    return xpr::where(xpr::core::function<Op>{}(x, y), x, y);
  };
  static constexpr auto c = [](auto x, auto y, auto t, auto u) {
    return ct::jvp(f, std::tuple{x, y}, std::tuple{t, u});
  };
  static constexpr auto r = [](auto x, auto y, auto t, auto u) {
    return xpr::jvp(f, std::tuple{x, y}, std::tuple{t, u});
  };
};
TEST(TiersAgree, JvpJaxprOfEveryComparison) {
  boost::mp11::mp_for_each<xpr::comparison_ops>([](auto op) {
    using J = ComparisonJvp<decltype(op)>;
    SCOPED_TRACE(std::string(decltype(op)::name));
    EXPECT_EQ(
        layout_free(text_of(xpr::make_jaxpr(J::r)(0.5, 1.5, 1.0, 1.0))),
        layout_free(std::string(ct::make_jaxpr<double, double, double, double>(J::c).view())));
  });
}

}  // namespace test_ct_agreement_rt
