// Pytrees: nested containers of numbers and arrays, flattened to leaves and a structure and
// rebuilt from them (docs/pytrees.md quotes this file).
#include <iostream>
#include <map>
#include <string>
#include <tuple>
#include <vector>
#include <xpr/xpr.hpp>

// A struct becomes a pytree node with one line. Writing it over its leaf type lets
// transformations rebuild it with Array leaves (Params<double> -> Params<xpr::Array>).
template <class T>
struct Params {
  T w;
  T b;
};
template <class T>
struct xpr::pytree_node<Params<T>> : xpr::fields<&Params<T>::w, &Params<T>::b> {};

// A plain struct, registered with the one line docs/pytrees.md shows.
struct MyParams {
  double w = 0;
  double b = 0;
};
template <> struct xpr::pytree_node<MyParams> : xpr::fields<&MyParams::w, &MyParams::b> {};

int main() {
  // 1. Flatten: the leaves in order, and the structure.
  std::tuple<double, std::vector<float>, std::map<std::string, xpr::Array>> x{
      1.0, {2.f, 3.f}, {{"a", xpr::array({4.0, 5.0})}}};
  auto [leaves, treedef] = xpr::tree_flatten(x);
  std::cout << treedef << " with " << treedef.num_leaves() << " leaves\n";
  for (const xpr::Array& leaf : leaves) std::cout << "  " << xpr::repr(leaf) << "\n";

  // 2. Unflatten: the same structure with other leaves.
  std::vector<xpr::Array> doubled;
  for (const xpr::Array& leaf : leaves) doubled.push_back(leaf * 2);
  // y has x's type: std::tuple<double, std::vector<float>, std::map<std::string, xpr::Array>>.
  auto y = xpr::tree_unflatten(treedef, doubled);
  std::cout << std::get<0>(y) << " " << std::get<1>(y)[1] << " " << std::get<2>(y).at("a") << "\n";

  // 3. Registered structs and tree_map over two trees of the same structure.
  Params<double> params{1.0, 2.0};
  Params<double> grads{0.5, -1.0};
  std::cout << xpr::tree_structure(params) << "\n";
  Params<xpr::Array> updated = xpr::tree_map(
      [](const xpr::Array& p, const xpr::Array& g) { return p - 0.1 * g; }, params, grads);
  std::cout << updated.w << " " << updated.b << "\n";

  // 4. What a transformation does with f(args...): flatten all arguments into one list of
  //    leaves, rebuild them with Array leaves (tracers, in a real transformation), call f.
  auto f = [](const xpr::Array& s, const Params<xpr::Array>& p) { return p.w * s + p.b; };
  auto [in_leaves, in_tree] = xpr::tree_flatten(std::forward_as_tuple(3.0, params));
  std::cout << in_tree << "\n";
  // args is a std::tuple<xpr::Array, Params<xpr::Array>>.
  auto args = xpr::tree_unflatten_as_arrays(in_tree, in_leaves);
  std::cout << std::apply(f, args) << "\n";

  std::cout << xpr::tree_structure(MyParams{1.0, 2.0}) << "\n";

  // 5. Structures that do not match are a type_error naming both.
  try {
    xpr::tree_map([](const xpr::Array& a, const xpr::Array& b) { return a + b; },
                  std::vector<double>{1.0, 2.0}, std::vector<double>{1.0});
  } catch (const xpr::type_error& e) {
    std::cout << "type_error: " << e.what() << "\n";
  }
}
