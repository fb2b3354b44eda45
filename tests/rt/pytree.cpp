// Tests of rt/pytree.hpp: flattening every node kind, rebuilding values, registered structs,
// treedef equality and printing (JAX's spelling), tree_of_arrays_t, tree_map, and the type_error
// raised for mismatched structures.
#include "xpr/rt/pytree.hpp"

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/creation.hpp"

namespace test_rt_pytree {

// A class template over its leaf type: Params<double> and Params<Array> are both registered.
template <class T>
struct Params {
  T w{};
  T b{};
};

// A struct whose leaves are Arrays already, with a vector inside.
struct Mlp {
  std::vector<xpr::Array> layers;
  xpr::Array scale;
};

// A struct with a number field and no Array counterpart: a pytree, but not rebuildable as arrays.
struct Config {
  double rate = 0;
  int steps = 0;
};

// A struct that names itself.
struct Named {
  xpr::Array x;
};

}  // namespace test_rt_pytree

template <class T>
struct xpr::pytree_node<test_rt_pytree::Params<T>>
    : xpr::fields<&test_rt_pytree::Params<T>::w, &test_rt_pytree::Params<T>::b> {};
template <>
struct xpr::pytree_node<test_rt_pytree::Mlp>
    : xpr::fields<&test_rt_pytree::Mlp::layers, &test_rt_pytree::Mlp::scale> {};
template <>
struct xpr::pytree_node<test_rt_pytree::Config>
    : xpr::fields<&test_rt_pytree::Config::steps, &test_rt_pytree::Config::rate> {};
template <>
struct xpr::pytree_node<test_rt_pytree::Named> : xpr::fields<&test_rt_pytree::Named::x> {
  static constexpr std::string_view name = "MyName";
};

namespace test_rt_pytree {

using xpr::Array;
using xpr::DType;
using xpr::Shape;
using xpr::ShapedArray;

template <class E>
void expect_message_has(const E& e, std::initializer_list<std::string> parts) {
  std::string what = e.what();
  for (const auto& p : parts)
    EXPECT_NE(what.find(p), std::string::npos) << what << "\nlacks: " << p;
}

class FakeTracer final : public xpr::rt::detail::ArrayImpl {
 public:
  using ArrayImpl::ArrayImpl;
  const xpr::rt::detail::ConcreteArray* concrete() const noexcept override { return nullptr; }
  bool is_tracer() const noexcept override { return true; }
};

// ---- concepts and type mappings
// -------------------------------------------------------------------

static_assert(xpr::Pytree<double>);
static_assert(xpr::Pytree<Array>);
static_assert(xpr::Pytree<std::tuple<double, std::vector<float>, std::map<std::string, Array>>>);
static_assert(xpr::Pytree<std::pair<int, std::array<Array, 3>>>);
static_assert(xpr::Pytree<Params<double>>);
static_assert(xpr::Pytree<std::vector<Params<Array>>>);
static_assert(xpr::Pytree<std::tuple<const double&, Array&&>>);  // std::forward_as_tuple(args...)
static_assert(xpr::Pytree<const Mlp&>);
static_assert(!xpr::Pytree<std::string>);
static_assert(!xpr::Pytree<int*>);
static_assert(!xpr::Pytree<std::vector<std::string>>);
static_assert(!xpr::Pytree<std::map<int, double>>);
static_assert(xpr::CustomNode<Params<float>> && !xpr::CustomNode<std::string>);

static_assert(std::is_same_v<xpr::tree_of_arrays_t<double>, Array>);
static_assert(std::is_same_v<xpr::tree_of_arrays_t<Array>, Array>);
static_assert(std::is_same_v<xpr::tree_of_arrays_t<std::tuple<int, std::vector<float>>>,
                             std::tuple<Array, std::vector<Array>>>);
static_assert(std::is_same_v<xpr::tree_of_arrays_t<std::pair<bool, std::array<double, 2>>>,
                             std::pair<Array, std::array<Array, 2>>>);
static_assert(std::is_same_v<xpr::tree_of_arrays_t<std::map<std::string, double>>,
                             std::map<std::string, Array>>);
static_assert(std::is_same_v<xpr::tree_of_arrays_t<Params<double>>, Params<Array>>);
static_assert(
    std::is_same_v<xpr::tree_of_arrays_t<std::vector<Params<float>>>, std::vector<Params<Array>>>);
static_assert(std::is_same_v<xpr::tree_of_arrays_t<Mlp>, Mlp>);
static_assert(std::is_same_v<xpr::tree_of_arrays_t<std::tuple<const double&, const Mlp&>>,
                             std::tuple<Array, Mlp>>);
static_assert(std::is_same_v<xpr::tree_value_t<std::tuple<const double&, Array&&>>,
                             std::tuple<double, Array>>);

// ---- flatten
// ----------------------------------------------------------------------------------------

TEST(Pytree, NumbersFlattenToRank0WeakArrays) {
  auto [leaves, treedef] = xpr::tree_flatten(2.5);
  ASSERT_EQ(leaves.size(), 1u);
  EXPECT_EQ(leaves[0].aval(), (ShapedArray{Shape{}, DType::float64, true}));
  EXPECT_EQ(leaves[0].item<double>(), 2.5);
  EXPECT_EQ(treedef.str(), "PyTreeDef(*)");
  EXPECT_EQ(xpr::tree_leaves(1.5f)[0].aval(), (ShapedArray{Shape{}, DType::float32, true}));
  EXPECT_EQ(xpr::tree_leaves(3)[0].aval(), (ShapedArray{Shape{}, DType::int32, true}));
  EXPECT_EQ(xpr::tree_leaves(true)[0].aval(), (ShapedArray{Shape{}, DType::bool_, false}));
}

TEST(Pytree, ArrayLeavesShareTheirBuffer) {
  Array a = xpr::array({1.0, 2.0, 3.0});
  auto leaves = xpr::tree_leaves(std::vector<Array>{a, a});
  ASSERT_EQ(leaves.size(), 2u);
  EXPECT_EQ(leaves[1].impl(), a.impl());
}

TEST(Pytree, FlattenNestedContainersInOrder) {
  std::tuple<double, std::vector<float>, std::map<std::string, Array>> x{
      1.0, {2.f, 3.f}, {{"b", xpr::array({5.0})}, {"a", Array(4)}}};
  auto [leaves, treedef] = xpr::tree_flatten(x);
  // std::map orders its keys, as JAX sorts dict keys.
  EXPECT_EQ(treedef.str(), "PyTreeDef((*, [*, *], {'a': *, 'b': *}))");
  EXPECT_EQ(treedef.num_leaves(), 5u);
  EXPECT_EQ(treedef.num_nodes(), 8u);
  ASSERT_EQ(leaves.size(), 5u);
  EXPECT_EQ(leaves[0].item<double>(), 1.0);
  EXPECT_EQ(leaves[1].item<float>(), 2.f);
  EXPECT_EQ(leaves[2].item<float>(), 3.f);
  EXPECT_EQ(leaves[3].item<int>(), 4);
  EXPECT_EQ(leaves[4].to_vector<double>(), (std::vector<double>{5.0}));
  static_assert(std::is_same_v<decltype(treedef), xpr::TreeDef<decltype(x)>>);
}

TEST(Pytree, TreedefsPrintLikeJax) {
  EXPECT_EQ(xpr::tree_structure(std::make_tuple(1.0)).str(), "PyTreeDef((*,))");
  EXPECT_EQ(xpr::tree_structure(std::tuple<>{}).str(), "PyTreeDef(())");
  EXPECT_EQ(xpr::tree_structure(std::pair{1, 2.0}).str(), "PyTreeDef((*, *))");
  EXPECT_EQ(xpr::tree_structure(std::array<double, 3>{}).str(), "PyTreeDef((*, *, *))");
  EXPECT_EQ(xpr::tree_structure(std::vector<double>{}).str(), "PyTreeDef([])");
  EXPECT_EQ(xpr::tree_structure(std::map<std::string, double>{}).str(), "PyTreeDef({})");
  std::ostringstream os;
  os << xpr::tree_structure(std::vector<std::vector<int>>{{1}, {2, 3}});
  EXPECT_EQ(os.str(), "PyTreeDef([[*], [*, *]])");
}

TEST(Pytree, RegisteredStructs) {
  Params<double> p{1.5, -2.0};
  auto [leaves, treedef] = xpr::tree_flatten(p);
  EXPECT_EQ(treedef.str(), "PyTreeDef(CustomNode(Params[w, b], [*, *]))");
  ASSERT_EQ(leaves.size(), 2u);
  EXPECT_EQ(leaves[0].item<double>(), 1.5);
  EXPECT_EQ(leaves[1].item<double>(), -2.0);
  Params<double> q = xpr::tree_unflatten(treedef, leaves);
  EXPECT_EQ(q.w, 1.5);
  EXPECT_EQ(q.b, -2.0);

  Mlp m{{xpr::array({1.0, 2.0}), xpr::ones({2, 2})}, Array(0.5)};
  EXPECT_EQ(xpr::tree_structure(m).str(), "PyTreeDef(CustomNode(Mlp[layers, scale], [[*, *], *]))");
  // Fields are visited in the order fields<...> lists them, not the declaration order.
  Config c{0.25, 7};
  auto cl = xpr::tree_leaves(c);
  EXPECT_EQ(cl[0].item<int>(), 7);
  EXPECT_EQ(cl[1].item<double>(), 0.25);
  EXPECT_EQ(xpr::tree_structure(c).str(), "PyTreeDef(CustomNode(Config[steps, rate], [*, *]))");
  EXPECT_EQ(xpr::tree_structure(Named{}).str(), "PyTreeDef(CustomNode(MyName[x], [*]))");
}

// ---- unflatten
// --------------------------------------------------------------------------------------

TEST(Pytree, UnflattenRebuildsTheValue) {
  using T = std::tuple<std::pair<double, std::vector<Array>>,
                       std::map<std::string, std::array<float, 2>>, Params<int>, bool>;
  T x{{2.5, {xpr::array({1, 2}), Array(3.0)}}, {{"k", {1.f, 2.f}}}, {4, 5}, true};
  auto [leaves, treedef] = xpr::tree_flatten(x);
  EXPECT_EQ(treedef.num_leaves(), 8u);
  T y = xpr::tree_unflatten(treedef, leaves);
  EXPECT_EQ(std::get<0>(y).first, 2.5);
  ASSERT_EQ(std::get<0>(y).second.size(), 2u);
  EXPECT_EQ(std::get<0>(y).second[0].impl(), std::get<0>(x).second[0].impl());
  EXPECT_EQ(std::get<1>(y).at("k")[1], 2.f);
  EXPECT_EQ(std::get<2>(y).w, 4);
  EXPECT_EQ(std::get<2>(y).b, 5);
  EXPECT_TRUE(std::get<3>(y));
  // New leaves in the same structure.
  std::vector<Array> fresh;
  for (const Array& l : leaves) fresh.push_back(xpr::full_like(l, 9));
  T z = treedef.unflatten(fresh);
  EXPECT_EQ(std::get<0>(z).first, 9.0);
  EXPECT_EQ(std::get<2>(z).b, 9);
}

TEST(Pytree, UnflattenAsArraysKeepsArrayLeaves) {
  auto [leaves, treedef] = xpr::tree_flatten(std::make_tuple(1.0, Params<float>{2.f, 3.f}));
  std::vector<Array> batched{xpr::array({1.0, 2.0}), xpr::array({3.f}), xpr::array({4.f})};
  auto t = xpr::tree_unflatten_as_arrays(treedef, batched);
  static_assert(std::is_same_v<decltype(t), std::tuple<Array, Params<Array>>>);
  EXPECT_EQ(std::get<0>(t).shape(), (Shape{2}));
  EXPECT_EQ(std::get<1>(t).b.impl(), batched[2].impl());
}

TEST(Pytree, ArgumentTuplesFlattenAndRebuildAsArrays) {
  // What a transformation does with its arguments: flatten them all, rebuild as arrays.
  double x = 2.0;
  Params<double> p{3.0, 4.0};
  auto [leaves, treedef] = xpr::tree_flatten(std::forward_as_tuple(x, p));
  static_assert(
      std::is_same_v<decltype(treedef), xpr::TreeDef<std::tuple<double, Params<double>>>>);
  EXPECT_EQ(treedef.str(), "PyTreeDef((*, CustomNode(Params[w, b], [*, *])))");
  auto args = xpr::tree_unflatten_as_arrays(treedef, leaves);
  auto f = [](const Array& a, const Params<Array>& q) {
    return a.item<double>() * q.w.item<double>() + q.b.item<double>();
  };
  EXPECT_EQ(std::apply(f, args), 10.0);
}

TEST(Pytree, NumberLeavesOfTracersThrowConcretizationError) {
  Array t(std::make_shared<FakeTracer>(ShapedArray{Shape{}, DType::float64, false}));
  auto treedef = xpr::tree_structure(std::make_pair(1.0, 2.0));
  std::vector<Array> leaves{Array(1.0), t};
  EXPECT_THROW((void)xpr::tree_unflatten(treedef, leaves), xpr::concretization_error);
  auto as_arrays = xpr::tree_unflatten_as_arrays(treedef, leaves);
  EXPECT_TRUE(as_arrays.second.is_tracer());
}

TEST(Pytree, NumberLeavesNeedRank0Arrays) {
  auto treedef = xpr::tree_structure(std::vector<double>{1.0});
  try {
    (void)xpr::tree_unflatten(treedef, std::vector<Array>{xpr::array({1.0, 2.0})});
    FAIL() << "expected type_error";
  } catch (const xpr::type_error& e) {
    expect_message_has(e, {"rank-0", "f64[2]", "PyTreeDef([*])", "tree_unflatten_as_arrays"});
  }
}

TEST(Pytree, WrongNumberOfLeavesThrowsTypeError) {
  auto treedef = xpr::tree_structure(std::vector<double>{1.0, 2.0, 3.0});
  try {
    (void)xpr::tree_unflatten(treedef, std::vector<Array>{Array(1.0), Array(2.0)});
    FAIL() << "expected type_error";
  } catch (const xpr::type_error& e) {
    expect_message_has(e, {"expected 3 leaves", "PyTreeDef([*, *, *])", "found 2"});
  }
}

TEST(Pytree, UnflattenWithAnotherStructureThrowsTypeError) {
  auto vec = xpr::tree_structure(std::vector<double>{1.0, 2.0});
  std::vector<Array> leaves{Array(1.0), Array(2.0)};
  try {
    (void)xpr::tree_unflatten<std::tuple<double, double>>(vec, leaves);
    FAIL() << "expected type_error";
  } catch (const xpr::type_error& e) {
    expect_message_has(e, {"structure (*, *)", "found PyTreeDef([*, *])"});
  }
  // The same structure under another type is accepted: a pair is a tuple of 2.
  auto pair = xpr::tree_structure(std::make_pair(1, 2.0));
  auto t = xpr::tree_unflatten<std::tuple<double, double>>(pair, leaves);
  EXPECT_EQ(std::get<1>(t), 2.0);
  // A mismatch deep inside names the node where it is found.
  auto nested = xpr::tree_structure(std::make_tuple(1.0, std::vector<double>{2.0}));
  try {
    (void)xpr::tree_unflatten<std::tuple<double, std::map<std::string, double>>>(nested, leaves);
    FAIL() << "expected type_error";
  } catch (const xpr::type_error& e) {
    expect_message_has(e, {"structure (*, {str: *, ...})", "found PyTreeDef((*, [*]))",
                           "at its node [*]", "a dict"});
  }
  // Structs are told apart by name.
  auto params = xpr::tree_structure(Params<double>{});
  EXPECT_THROW((void)xpr::tree_unflatten<Config>(params, leaves), xpr::type_error);
}

// ---- equality
// ---------------------------------------------------------------------------------------

TEST(Pytree, TreedefEqualityIsStructural) {
  // Leaves do not matter, nor whether they are numbers or arrays.
  EXPECT_EQ(xpr::tree_structure(std::make_tuple(1.0, Array(2))),
            xpr::tree_structure(std::make_pair(Array(1.0f), 2)));
  EXPECT_EQ(xpr::tree_structure(Params<double>{}), xpr::tree_structure(Params<Array>{}));
  EXPECT_NE(xpr::tree_structure(std::vector<double>{1, 2}),
            xpr::tree_structure(std::vector<double>{1, 2, 3}));
  EXPECT_NE(xpr::tree_structure(std::map<std::string, double>{{"a", 1}}),
            xpr::tree_structure(std::map<std::string, double>{{"b", 1}}));
  EXPECT_NE(xpr::tree_structure(std::vector<double>{1, 2}),
            xpr::tree_structure(std::make_tuple(1.0, 2.0)));
  EXPECT_NE(xpr::tree_structure(Params<double>{}), xpr::tree_structure(Config{}));
}

// ---- tree_map
// ---------------------------------------------------------------------------------------

TEST(Pytree, TreeMapOverOneTree) {
  std::map<std::string, std::vector<double>> x{{"a", {1.0, 2.0}}, {"b", {3.0}}};
  auto y = xpr::tree_map([](const Array& l) { return Array(l.item<double>() * 10.0); }, x);
  static_assert(std::is_same_v<decltype(y), std::map<std::string, std::vector<Array>>>);
  EXPECT_EQ(y.at("a")[1].item<double>(), 20.0);
  EXPECT_EQ(y.at("b")[0].item<double>(), 30.0);
}

TEST(Pytree, TreeMapOverSeveralTrees) {
  Params<double> params{1.0, 2.0};
  Params<Array> grads{Array(0.5), Array(-1.0)};
  auto step = xpr::tree_map(
      [](const Array& p, const Array& g) { return p.item<double>() - 0.1 * g.item<double>(); },
      params, grads);
  static_assert(std::is_same_v<decltype(step), Params<Array>>);
  EXPECT_DOUBLE_EQ(step.w.item<double>(), 0.95);
  EXPECT_DOUBLE_EQ(step.b.item<double>(), 2.1);
  auto sum3 =
      xpr::tree_map([](const Array& a, const Array& b,
                       const Array& c) { return a.item<int>() + b.item<int>() + c.item<int>(); },
                    std::vector<int>{1, 2}, std::vector<int>{10, 20}, std::vector<int>{100, 200});
  EXPECT_EQ(sum3[1].item<int>(), 222);
}

TEST(Pytree, TreeMapOverMismatchedTreesThrowsTypeError) {
  auto id = [](const Array& a, const Array&) { return a; };
  try {
    (void)xpr::tree_map(id, std::vector<double>{1, 2}, std::vector<double>{1});
    FAIL() << "expected type_error";
  } catch (const xpr::type_error& e) {
    expect_message_has(e, {"PyTreeDef([*, *])", "found PyTreeDef([*])", "tree 2"});
  }
  try {
    (void)xpr::tree_map(id, std::map<std::string, double>{{"a", 1}},
                        std::map<std::string, double>{{"b", 1}});
    FAIL() << "expected type_error";
  } catch (const xpr::type_error& e) {
    expect_message_has(e, {"PyTreeDef({'a': *})", "found PyTreeDef({'b': *})"});
  }
  EXPECT_THROW((void)xpr::tree_map(id, Params<double>{}, std::make_pair(1.0, 2.0)),
               xpr::type_error);
}

}  // namespace test_rt_pytree
