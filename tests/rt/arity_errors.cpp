// Tests of the arity errors known only at run time (the static ones are compile-fail tests in
// tests/compile_fail/): pytrees of run-time length (std::vector) whose lengths disagree between
// primals and tangents, arguments and in_axes, outputs and cotangents, each a type_error that
// names what was expected and what was found; and grad of an integer argument, whose message
// says what to do in xpr (JAX's suggests allow_int, which xpr does not have).
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"

namespace test_rt_arity_errors {

using xpr::Array;

template <class F>
std::string type_error_of(F&& f) {
  try {
    f();
  } catch (const xpr::type_error& e) {
    return e.what();
  }
  return "no type_error";
}

auto sum_of = [](const std::vector<Array>& xs) {
  Array s = xs[0];
  for (std::size_t i = 1; i < xs.size(); ++i) s = s + xs[i];
  return s;
};

TEST(ArityErrors, JvpTangentsOfAnotherLength) {
  std::vector<Array> p{xpr::array({1.0}), xpr::array({2.0})};
  std::vector<Array> t{xpr::array({1.0})};
  std::string msg = type_error_of([&] { xpr::jvp(sum_of, std::tuple{p}, std::tuple{t}); });
  EXPECT_NE(msg.find("primal and tangent arguments must have the same tree structure"),
            std::string::npos)
      << msg;
  // The right length works: d(x0 + x1) = t0 + t1.
  std::vector<Array> t2{xpr::array({1.0}), xpr::array({0.5})};
  EXPECT_EQ(xpr::jvp(sum_of, std::tuple{p}, std::tuple{t2}).second.to_vector<double>()[0], 1.5);
}

TEST(ArityErrors, VmapInAxesOfAnotherLength) {
  std::vector<Array> xs{xpr::array({1.0, 2.0}), xpr::array({3.0, 4.0})};
  std::vector<int> axes{0, 0, 0};
  std::string msg = type_error_of([&] { xpr::vmap(sum_of, std::tuple{axes})(xs); });
  EXPECT_NE(msg.find("vmap in_axes specification must be a tree prefix"), std::string::npos) << msg;
  std::vector<int> two{0, 0};
  EXPECT_EQ(xpr::vmap(sum_of, std::tuple{two})(xs).to_vector<double>(),
            (std::vector<double>{4.0, 6.0}));
}

TEST(ArityErrors, LinearizeWithTheWrongNumberOfTangents) {
  auto f = [](auto x, auto y) { return x * y; };
  auto [y, f_lin] = xpr::linearize(f, 2.0, 3.0);
  std::string msg = type_error_of([&] { f_lin(1.0); });
  EXPECT_NE(msg.find("linearize: expected tangents of the primals' tree structure"),
            std::string::npos)
      << msg;
  // d(xy) = y dx + x dy = 3 * 1 + 2 * 0.5.
  EXPECT_EQ(f_lin(1.0, 0.5).item<double>(), 4.0);
}

TEST(ArityErrors, VjpCotangentOfAnotherStructure) {
  auto f = [](auto x) { return std::tuple{x * 2.0, x * 3.0}; };
  auto [y, f_vjp] = xpr::vjp(f, 1.0);
  std::string msg = type_error_of([&] { f_vjp(1.0); });
  EXPECT_NE(msg.find("vjp: expected a cotangent of the output's tree structure"), std::string::npos)
      << msg;
  EXPECT_EQ(std::get<0>(f_vjp(std::tuple{1.0, 1.0})).item<double>(), 5.0);
}

TEST(ArityErrors, GradOfAnIntegerSaysWhatToDo) {
  auto f = [](auto x, auto n) { return x * n; };
  std::string msg = type_error_of([&] { xpr::grad(f)(3, 2.0); });
  EXPECT_NE(msg.find("grad requires real-valued inputs (a floating dtype), but got int32"),
            std::string::npos)
      << msg;
  EXPECT_EQ(msg.find("allow_int"), std::string::npos) << msg;
  std::string jac = type_error_of([&] { xpr::jacfwd(f)(3, 2.0); });
  EXPECT_NE(jac.find("jacfwd requires real-valued inputs"), std::string::npos) << jac;
  EXPECT_EQ(jac.find("holomorphic"), std::string::npos) << jac;
  // What the message suggests works: a floating value, or the integer outside argnums.
  EXPECT_EQ(xpr::grad(f)(3.0, 2.0).item<double>(), 2.0);
  EXPECT_EQ(xpr::grad<1>(f)(3, 2.0).item<double>(), 3.0);
}

}  // namespace test_rt_arity_errors
