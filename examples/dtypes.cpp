// Dtypes, promotion and weak types (docs/dtypes.md quotes this file).
#include <iostream>
#include <string>
#include <xpr/xpr.hpp>

// `f32`, or `f32*` for a weak type, as in JAX's promotion table.
std::string show(xpr::WeakDType t) {
  return std::string(xpr::core::short_name(t.dtype)) + (t.weak ? "*" : "");
}

int main() {
  // C++ numbers are weakly typed; arrays built from lists are strongly typed.
  std::cout << xpr::repr(xpr::Array(0.5)) << "\n";
  std::cout << xpr::repr(xpr::Array(2)) << "\n";
  std::cout << xpr::repr(xpr::array({1.0f, 2.0f})) << "\n";

  // A weak number adopts the dtype of a strongly typed array of its kind...
  std::cout << xpr::repr(xpr::array({1.0f, 2.0f}) * 0.5) << "\n";  // f32, not f64
  std::cout << xpr::repr(xpr::array({1, 2}) * 2) << "\n";          // i32
  // ...and wins over a lower kind, staying weak.
  std::cout << xpr::repr(xpr::array({1, 2}) * 0.5) << "\n";  // weak f64

  // The promotion table: result_type of a row type and a column type.
  const xpr::WeakDType types[] = {{xpr::bool_},        {xpr::int32},   {xpr::int64},
                                  {xpr::float32},      {xpr::float64}, {xpr::int32, true},
                                  {xpr::float64, true}};
  auto cell = [](const std::string& s, bool last) {
    return last ? s : s + std::string(6 - s.size(), ' ');
  };
  std::cout << cell("", false);
  for (int c = 0; c < 7; ++c) std::cout << cell(show(types[c]), c == 6);
  std::cout << "\n";
  for (auto r : types) {
    std::cout << cell(show(r), false);
    for (int c = 0; c < 7; ++c) std::cout << cell(show(xpr::result_type(r, types[c])), c == 6);
    std::cout << "\n";
  }
}
