// Creating arrays and printing them: `<<` prints NumPy's str(), xpr::repr JAX's repr().
#include <iostream>
#include <vector>
#include <xpr/xpr.hpp>

#include <Eigen/Core>

int main() {
  std::cout << xpr::array({1.0, 2.0, 3.0}) << "\n";
  std::cout << xpr::array({{1, 2}, {3, 4}}) << "\n";
  std::cout << xpr::array({true, false}) << "\n";
  std::cout << xpr::array(std::vector<double>{0.0, -0.682941969615793, 0.181405146234}) << "\n";
  std::cout << xpr::array({1e-5, 1.0}) << "\n";
  std::cout << xpr::Array(2.5) << "\n";  // rank 0: the bare number

  std::cout << xpr::repr(xpr::ones({4}, xpr::float32)) << "\n";
  std::cout << xpr::repr(xpr::full({2}, 0.5)) << "\n";  // weak, like jnp.full of a Python float
  std::cout << xpr::repr(xpr::arange(6)) << "\n";
  std::cout << xpr::repr(xpr::linspace(0.0, 1.0, 5)) << "\n";
  std::cout << xpr::repr(xpr::eye(2, 3, 1, xpr::int32)) << "\n";

  Eigen::Matrix2d m;
  m << 1, 2, 3, 4;
  std::cout << xpr::array(m.transpose()) << "\n";
  std::cout << xpr::arange(2000) << "\n";  // more than 1000 elements: summarized
}
