// SPDX-License-Identifier: MIT
// The gradient of a generated function of 3000 primitive applications (a long chain without
// sharing, from benchmarks/compile_time/generate.py) through the compile-time tier with the default
// -fconstexpr-* limits, checked against dual numbers and central finite differences. Its own
// executable (ctest label `large`), because the compile costs tens of seconds of CPU.
#include "tests/ct/generated/chain3000.hpp"

#include <cmath>
#include <tuple>

#include <gtest/gtest.h>

#include "xpr/ct/ct.hpp"

#include "tests/ct/generated/reference.hpp"

namespace test_ct_large_chain3000 {

namespace ct = xpr::ct;
namespace ref = xpr_test_reference;

TEST(CtLarge, GradientOf3000PrimitivesChain) {
  const double x[4] = {0.3, -0.7, 1.1, 0.45};
  auto [v, g] = ct::value_and_grad<0, 1, 2, 3>(chain3000)(x[0], x[1], x[2], x[3]);
  const ref::Dual want = ref::dual_gradient(chain3000, x);
  const double got[4] = {std::get<0>(g), std::get<1>(g), std::get<2>(g), std::get<3>(g)};
  EXPECT_NEAR(v, want.v, 1e-12 * (1 + std::abs(want.v)));
  for (std::size_t k = 0; k < 4; ++k) {
    EXPECT_NE(want.d[k], 0.0);
    EXPECT_NEAR(got[k], want.d[k], 1e-10 * (1 + std::abs(want.d[k]))) << k;
    EXPECT_NEAR(got[k], ref::central_difference(chain3000, x, k), 1e-6 * (1 + std::abs(want.d[k])))
        << k;
  }
}

}  // namespace test_ct_large_chain3000
