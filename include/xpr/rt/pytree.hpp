// SPDX-License-Identifier: MIT
// Pytrees, as in jax.tree_util: nests of C++ containers (tuple, pair, std::array, vector,
// map<string, T>, registered structs) whose leaves are numbers and Arrays, flattened into a list
// of leaves plus a structure (TreeDef) and rebuilt from them. Transformations use them to accept
// and return arbitrary nests of values. See docs/pytrees.md.
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <ostream>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/core/error.hpp"
#include "xpr/rt/array.hpp"

namespace xpr {

/// Registers a user struct as a pytree node. Specialize it, deriving from `fields`, with one line:
///
///     template <> struct xpr::pytree_node<MyParams> : xpr::fields<&MyParams::w, &MyParams::b> {};
///
/// (a partial specialization works for class templates: `template <class T> struct
/// xpr::pytree_node<Params<T>> : xpr::fields<&Params<T>::w, &Params<T>::b> {};`). A member
/// `static constexpr std::string_view name` overrides the name treedefs print. It lives in
/// namespace `xpr` itself because users specialize it by that name. See examples/pytrees.cpp.
///
/// This primary template is deliberately empty: if you see an error mentioning it, it means a
/// type used as a pytree is neither a leaf, a standard container nor a registered struct.
template <class T>
struct pytree_node {};

/// The children of a registered struct: the listed data members, in this order. The struct must
/// be default-constructible and its members assignable (tree_unflatten fills them one by one).
template <auto... Members>
struct fields {
  static_assert(sizeof...(Members) > 0,
                "xpr::fields: list the struct's data members, as in fields<&S::w, &S::b>");
  static_assert((std::is_member_object_pointer_v<decltype(Members)> && ...),
                "xpr::fields: every argument must point to a data member, as in &S::w");
};

}  // namespace xpr

namespace xpr::rt {

// ---- PyTreeDef --------------------------------------------------------------------------------

/// The kinds of pytree nodes: tuples (std::tuple, std::pair, std::array), lists (std::vector),
/// dicts (std::map<std::string, T>) and registered structs; numbers and Arrays are leaves.
enum class NodeKind : std::uint8_t { leaf, tuple, list, dict, custom };

/// The structure of a pytree without its leaves (JAX's PyTreeDef): node kinds, vector lengths,
/// map keys and struct names, in pre-order. Two values have equal treedefs when they hold the
/// same nesting of the same kinds of containers, whatever their leaves are.
class PyTreeDef {
 public:
  struct Node {
    NodeKind kind = NodeKind::leaf;
    std::size_t arity = 0;          // number of children
    std::size_t num_leaves = 1;     // leaves in this subtree
    std::size_t num_nodes = 1;      // nodes in this subtree, itself included
    std::vector<std::string> keys;  // dict keys, in order
    std::string name;               // struct name and fields, `Params[w, b]`
    friend bool operator==(const Node&, const Node&) = default;
  };

  PyTreeDef() = default;
  explicit PyTreeDef(std::vector<Node> nodes) : nodes_(std::move(nodes)) {}

  std::size_t num_leaves() const noexcept { return nodes_.empty() ? 0 : nodes_[0].num_leaves; }
  std::size_t num_nodes() const noexcept { return nodes_.size(); }
  const std::vector<Node>& nodes() const noexcept { return nodes_; }

  /// `(*, [*, *], {'a': *})`: the structure of the subtree rooted at node `i`, as JAX prints it.
  XPR_MEMBER std::string node_str(std::size_t i = 0) const;
  /// `PyTreeDef((*, [*, *], {'a': *}))`.
  std::string str() const { return "PyTreeDef(" + node_str() + ")"; }

  friend bool operator==(const PyTreeDef&, const PyTreeDef&) = default;
  friend std::ostream& operator<<(std::ostream& os, const PyTreeDef& t) { return os << t.str(); }

 private:
  // Writes node i and returns the index of the node after its subtree.
  XPR_MEMBER std::size_t write(std::string& os, std::size_t i) const;

  std::vector<Node> nodes_;
};

/// The structure of a pytree of type `T`: a PyTreeDef that remembers the type it describes, so
/// that `tree_unflatten(treedef, leaves)` rebuilds a `T`.
template <class T>
class TreeDef : public PyTreeDef {
 public:
  using value_type = T;
  TreeDef() = default;
  /// Adopts a structure; `tree_unflatten` checks that it fits `T` node by node.
  explicit TreeDef(PyTreeDef def) : PyTreeDef(std::move(def)) {}

  /// `tree_unflatten(*this, leaves)`.
  T unflatten(std::span<const Array> leaves) const;
};

// ---- what is a pytree ---------------------------------------------------------------------------

namespace detail {

template <class T>
inline constexpr bool is_tuple_like_v = false;
template <class... Ts>
inline constexpr bool is_tuple_like_v<std::tuple<Ts...>> = true;
template <class A, class B>
inline constexpr bool is_tuple_like_v<std::pair<A, B>> = true;
template <class T, std::size_t N>
inline constexpr bool is_tuple_like_v<std::array<T, N>> = true;

template <class T>
inline constexpr bool is_vector_v = false;
template <class T, class A>
inline constexpr bool is_vector_v<std::vector<T, A>> = true;

template <class T>
inline constexpr bool is_string_map_v = false;
template <class T, class C, class A>
inline constexpr bool is_string_map_v<std::map<std::string, T, C, A>> = true;

// The fields<...> base of a pytree_node specialization (declared only; used in decltype).
template <auto... Ms>
xpr::fields<Ms...> as_fields(const xpr::fields<Ms...>&);

template <class C, class F>
C member_class(F C::*);
template <class C, class F>
F member_type(F C::*);
template <auto M>
using member_t = decltype(member_type(M));

}  // namespace detail

/// A number leaf: a C++ arithmetic type. It flattens to a rank-0 weakly typed Array (bool to a
/// strong one), like a Python scalar in JAX, and unflattens through `item`.
template <class T>
concept NumberLeaf = std::is_arithmetic_v<T>;

/// A leaf: a number or an Array.
template <class T>
concept PytreeLeaf = NumberLeaf<T> || std::same_as<T, Array>;

/// A tuple node: `std::tuple`, `std::pair` or `std::array` (fixed arity, known from the type).
template <class T>
concept TupleNode = detail::is_tuple_like_v<T>;

/// A list node: `std::vector` (its length is part of the treedef).
template <class T>
concept ListNode = detail::is_vector_v<T>;

/// A dict node: `std::map<std::string, T>` (its keys are part of the treedef).
template <class T>
concept DictNode = detail::is_string_map_v<T>;

/// A registered struct: `xpr::pytree_node<T>` derives from `xpr::fields<...>`.
template <class T>
concept CustomNode = requires {
  detail::as_fields(std::declval<const xpr::pytree_node<T>&>());
};

namespace detail {

template <class T>
using fields_t = decltype(as_fields(std::declval<const xpr::pytree_node<T>&>()));

template <class T, class F = fields_t<T>>
struct custom_fields;
template <class T, auto... Ms>
struct custom_fields<T, xpr::fields<Ms...>> {
  static_assert((std::is_base_of_v<decltype(member_class(Ms)), T> && ...),
                "xpr::pytree_node<T>: the fields<...> must point to data members of T");
  using types = std::tuple<std::remove_cvref_t<member_t<Ms>>...>;
  static constexpr std::size_t arity = sizeof...(Ms);
  template <class F>
  static void for_each(const T& x, F&& f) {
    (f(x.*Ms), ...);
  }
  template <class Make>
  static T build(Make&& make) {
    static_assert(std::is_default_constructible_v<T>,
                  "xpr::pytree_node<T>: tree_unflatten default-constructs T and assigns its "
                  "fields; give T a default constructor");
    T out{};
    ((out.*Ms = make(std::type_identity<std::remove_cvref_t<member_t<Ms>>>{})), ...);
    return out;
  }
  static std::vector<std::string_view> member_names();
};

// The value after `= ` in a __PRETTY_FUNCTION__ naming one template argument (GCC writes
// `[with T = X; ...]`, Clang `[T = X]`).
std::string_view template_argument(std::string_view pretty);

// `ns::Params<double>` -> `Params`: unqualified, without template arguments.
std::string_view unqualified_name(std::string_view name);

// Compilers spell the template argument of these in __PRETTY_FUNCTION__; C++20 has no other way
// to name a type or a data member.
template <class T>
std::string_view pretty_type() {
  return __PRETTY_FUNCTION__;
}
template <auto M>
std::string_view pretty_member() {
  return __PRETTY_FUNCTION__;
}

template <class T, auto... Ms>
std::vector<std::string_view> custom_fields<T, xpr::fields<Ms...>>::member_names() {
  return {unqualified_name(template_argument(pretty_member<Ms>()))...};
}

/// `Params[w, b]`: what a registered struct's node prints and compares by. The name is the
/// struct's unqualified name without template arguments (or `pytree_node<T>::name`), so
/// `Params<double>` and `Params<Array>` have the same structure.
template <class T>
const std::string& custom_label() {
  static const std::string label = [] {
    std::string s;
    if constexpr (requires { std::string_view(xpr::pytree_node<T>::name); })
      s = std::string(std::string_view(xpr::pytree_node<T>::name));
    else
      s = std::string(unqualified_name(template_argument(pretty_type<T>())));
    s += '[';
    bool first = true;
    for (std::string_view m : custom_fields<T>::member_names()) {
      if (!first) s += ", ";
      s += m;
      first = false;
    }
    return s + ']';
  }();
  return label;
}

// is_pytree_v: recursive over containers; tuple and pair elements may be references (a
// std::forward_as_tuple of arguments is a pytree).
template <class T>
inline constexpr bool is_pytree_v = [] {
  if constexpr (PytreeLeaf<T>) {
    return true;
  } else if constexpr (CustomNode<T>) {
    return []<class... Fs>(std::type_identity<std::tuple<Fs...>>) {
      return (is_pytree_v<Fs> && ...);
    }(std::type_identity<typename custom_fields<T>::types>{});
  } else {
    return false;
  }
}();
template <class... Ts>
inline constexpr bool is_pytree_v<std::tuple<Ts...>> = (is_pytree_v<std::remove_cvref_t<Ts>> &&
                                                        ...);
template <class A, class B>
inline constexpr bool is_pytree_v<std::pair<A, B>> =
    is_pytree_v<std::remove_cvref_t<A>>&& is_pytree_v<std::remove_cvref_t<B>>;
template <class T, std::size_t N>
inline constexpr bool is_pytree_v<std::array<T, N>> = is_pytree_v<T>;
template <class T, class A>
inline constexpr bool is_pytree_v<std::vector<T, A>> = is_pytree_v<T>;
template <class T, class C, class A>
inline constexpr bool is_pytree_v<std::map<std::string, T, C, A>> = is_pytree_v<T>;

}  // namespace detail

/// A pytree: a leaf, or a tuple, list, dict or registered struct of pytrees.
template <class T>
concept Pytree = detail::is_pytree_v<std::remove_cvref_t<T>>;

// ---- tree_value_t, tree_of_arrays_t -------------------------------------------------------------

namespace detail {
template <class T>
struct tree_value {
  using type = T;
};
template <class... Ts>
struct tree_value<std::tuple<Ts...>> {
  using type = std::tuple<typename tree_value<std::remove_cvref_t<Ts>>::type...>;
};
template <class A, class B>
struct tree_value<std::pair<A, B>> {
  using type = std::pair<typename tree_value<std::remove_cvref_t<A>>::type,
                         typename tree_value<std::remove_cvref_t<B>>::type>;
};
}  // namespace detail

/// The value type a pytree describes: `T` with references inside tuples and pairs removed, so
/// `tree_flatten(std::forward_as_tuple(args...))` gives a `TreeDef<std::tuple<Args...>>`.
template <class T>
using tree_value_t = typename detail::tree_value<std::remove_cvref_t<T>>::type;

namespace detail {

template <class T>
struct tree_of_arrays {
  static_assert(is_pytree_v<T>,
                "xpr::tree_of_arrays_t<T>: if you see this error, it means T is not a pytree "
                "(a number, Array, tuple, pair, std::array, vector, map<string, T> or a struct "
                "registered with xpr::pytree_node)");
  using type = T;
};

template <class T>
using of_arrays_t = typename tree_of_arrays<std::remove_cvref_t<T>>::type;

// A template argument mapped to arrays when it is a pytree, kept otherwise (lazily).
template <class A, bool = is_pytree_v<A>>
struct argument_of_arrays {
  using type = A;
};
template <class A>
struct argument_of_arrays<A, true> {
  using type = of_arrays_t<A>;
};

// `Params<double>` -> `Params<Array>` for a class template over its leaf types, else void.
template <class T>
struct rebind_to_arrays {
  using type = void;
};
template <template <class...> class Tm, class... As>
struct rebind_to_arrays<Tm<As...>> {
  using type = Tm<typename argument_of_arrays<As>::type...>;
};

template <class Fields>
struct fields_are_arrays;
template <class... Fs>
struct fields_are_arrays<std::tuple<Fs...>>
    : std::bool_constant<(std::is_same_v<of_arrays_t<Fs>, Fs> && ...)> {};

template <NumberLeaf T>
struct tree_of_arrays<T> {
  using type = Array;
};
template <class... Ts>
struct tree_of_arrays<std::tuple<Ts...>> {
  using type = std::tuple<of_arrays_t<Ts>...>;
};
template <class A, class B>
struct tree_of_arrays<std::pair<A, B>> {
  using type = std::pair<of_arrays_t<A>, of_arrays_t<B>>;
};
template <class T, std::size_t N>
struct tree_of_arrays<std::array<T, N>> {
  using type = std::array<of_arrays_t<T>, N>;
};
template <class T, class A>
struct tree_of_arrays<std::vector<T, A>> {
  using type = std::vector<of_arrays_t<T>>;
};
template <class T, class C, class A>
struct tree_of_arrays<std::map<std::string, T, C, A>> {
  using type = std::map<std::string, of_arrays_t<T>>;
};
template <CustomNode T>
struct tree_of_arrays<T> {
  static constexpr bool already = fields_are_arrays<typename custom_fields<T>::types>::value;
  using rebound = typename rebind_to_arrays<T>::type;
  static constexpr bool can_rebind = [] {
    if constexpr (std::is_void_v<rebound>)
      return false;
    else if constexpr (CustomNode<rebound>)
      return fields_are_arrays<typename custom_fields<rebound>::types>::value;
    else
      return false;
  }();
  static_assert(already || can_rebind,
                "xpr::tree_of_arrays_t<S>: if you see this error, it means the registered struct "
                "S has number fields and no Array counterpart. Write S as a class template over "
                "its leaf type (template <class T> struct S { T w; }) and register it for every "
                "T with a partial specialization of xpr::pytree_node, or give S Array fields");
  using type = std::conditional_t<already, T, rebound>;
};

}  // namespace detail

/// `T` with every number leaf replaced by `Array`: what a pytree of type `T` becomes when its
/// leaves may be tracers (`double` -> `Array`, `std::vector<float>` -> `std::vector<Array>`,
/// `Params<double>` -> `Params<Array>` for a registered class template). Transformations call
/// user functions with values of this type.
template <class T>
using tree_of_arrays_t = detail::of_arrays_t<tree_value_t<T>>;

// ---- flatten ------------------------------------------------------------------------------------

namespace detail {

template <bool WithStructure>
struct Flattener {
  std::vector<PyTreeDef::Node> nodes;
  std::vector<Array> leaves;

  template <class T>
  void add(const T& x) {
    using U = std::remove_cvref_t<T>;
    if constexpr (PytreeLeaf<U>) {
      if constexpr (WithStructure) nodes.emplace_back();
      leaves.emplace_back(x);  // a number becomes a rank-0 weakly typed Array
    } else {
      std::size_t index = open();
      std::size_t arity = 0;
      auto child = [&](const auto& c) {
        add(c);
        ++arity;
      };
      NodeKind kind = NodeKind::tuple;
      if constexpr (TupleNode<U>) {
        std::apply([&](const auto&... cs) { (child(cs), ...); }, x);
      } else if constexpr (ListNode<U>) {
        kind = NodeKind::list;
        for (const auto& c : x) child(c);
      } else if constexpr (DictNode<U>) {
        kind = NodeKind::dict;
        for (const auto& [k, c] : x) {
          if constexpr (WithStructure) nodes[index].keys.push_back(k);
          child(c);
        }
      } else {
        static_assert(CustomNode<U>, "xpr::tree_flatten: not a pytree node");
        kind = NodeKind::custom;
        if constexpr (WithStructure) nodes[index].name = custom_label<U>();
        custom_fields<U>::for_each(x, child);
      }
      close(index, kind, arity);
    }
  }

  std::size_t open() {
    if constexpr (WithStructure) {
      nodes.emplace_back();
      nodes.back().num_leaves = 0;
      return nodes.size() - 1;
    } else {
      return 0;
    }
  }
  void close(std::size_t index, NodeKind kind, std::size_t arity) {
    if constexpr (WithStructure) {
      PyTreeDef::Node& n = nodes[index];
      n.kind = kind;
      n.arity = arity;
      n.num_nodes = nodes.size() - index;
      n.num_leaves = 0;
      for (std::size_t i = index + 1; i < nodes.size(); i += nodes[i].num_nodes)
        n.num_leaves += nodes[i].num_leaves;
    } else {
      (void)index, (void)kind, (void)arity;
    }
  }
};

}  // namespace detail

/// `auto [leaves, treedef] = xpr::tree_flatten(x)`: the leaves of `x` in order (numbers become
/// rank-0 weakly typed Arrays) and its structure. See examples/pytrees.cpp.
template <Pytree T>
std::pair<std::vector<Array>, TreeDef<tree_value_t<T>>> tree_flatten(const T& x) {
  detail::Flattener<true> f;
  f.add(x);
  return {std::move(f.leaves), TreeDef<tree_value_t<T>>(PyTreeDef(std::move(f.nodes)))};
}

/// The leaves of `x`, in the order `tree_flatten` gives them.
template <Pytree T>
std::vector<Array> tree_leaves(const T& x) {
  detail::Flattener<false> f;
  f.add(x);
  return std::move(f.leaves);
}

/// The structure of `x`.
template <Pytree T>
TreeDef<tree_value_t<T>> tree_structure(const T& x) {
  return tree_flatten(x).second;
}

// ---- unflatten ----------------------------------------------------------------------------------

namespace detail {

/// `(*, [*, ...])`: the structures a type admits, for error messages (`...` where a vector's
/// length or a map's keys are known only at run time).
template <class U>
void write_pattern(std::ostream& os) {
  if constexpr (PytreeLeaf<U>) {
    os << '*';
  } else if constexpr (TupleNode<U>) {
    os << '(';
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((os << (I ? ", " : ""), write_pattern<std::remove_cvref_t<std::tuple_element_t<I, U>>>(os)),
       ...);
    }
    (std::make_index_sequence<std::tuple_size_v<U>>{});
    os << (std::tuple_size_v<U> == 1 ? ",)" : ")");
  } else if constexpr (ListNode<U>) {
    os << '[';
    write_pattern<typename U::value_type>(os);
    os << ", ...]";
  } else if constexpr (DictNode<U>) {
    os << "{str: ";
    write_pattern<typename U::mapped_type>(os);
    os << ", ...}";
  } else {
    os << "CustomNode(" << custom_label<U>() << ", [";
    [&]<class... Fs>(std::type_identity<std::tuple<Fs...>>) {
      std::size_t i = 0;
      ((os << (i++ ? ", " : ""), write_pattern<Fs>(os)), ...);
    }(std::type_identity<typename custom_fields<U>::types>{});
    os << "])";
  }
}
template <class U>
std::string pattern() {
  std::ostringstream os;
  write_pattern<U>(os);
  return os.str();
}

template <class Top>
class Unflattener {
 public:
  Unflattener(const char* fn, const PyTreeDef& def, std::span<const Array> leaves)
      : fn_(fn), def_(def), leaves_(leaves) {
    if (leaves.size() != def.num_leaves())
      throw core::type_error(std::string(fn) + ": expected " + std::to_string(def.num_leaves()) +
                             " leaves for " + def.str() + ", found " +
                             std::to_string(leaves.size()));
  }

  template <class U>
  U build() {
    const auto& nodes = def_.nodes();
    if (node_ >= nodes.size()) mismatch<U>("a node", node_);
    const PyTreeDef::Node& n = nodes[node_];
    std::size_t here = node_++;
    if constexpr (PytreeLeaf<U>) {
      if (n.kind != NodeKind::leaf) mismatch<U>("a leaf", here);
      if (leaf_ >= leaves_.size()) mismatch<U>("a leaf", here);
      const Array& leaf = leaves_[leaf_++];
      if constexpr (std::is_same_v<U, Array>) {
        return leaf;
      } else {
        if (leaf.ndim() != 0)
          throw core::type_error(std::string(fn_) +
                                 ": expected a rank-0 array for a number leaf "
                                 "of " +
                                 def_.str() + ", found " + detail::aval_of(leaf).str() +
                                 "; use tree_unflatten_as_arrays to keep array leaves");
        return leaf.item<U>();  // throws concretization_error for a tracer
      }
    } else if constexpr (TupleNode<U>) {
      if (n.kind != NodeKind::tuple || n.arity != std::tuple_size_v<U>)
        mismatch<U>("a tuple of " + std::to_string(std::tuple_size_v<U>) + " children", here);
      return [&]<std::size_t... I>(std::index_sequence<I...>) {
        // Braced initialization evaluates the children left to right, in leaf order.
        return U{build<std::remove_cvref_t<std::tuple_element_t<I, U>>>()...};
      }
      (std::make_index_sequence<std::tuple_size_v<U>>{});
    } else if constexpr (ListNode<U>) {
      if (n.kind != NodeKind::list) mismatch<U>("a list", here);
      U out;
      out.reserve(n.arity);
      for (std::size_t i = 0; i < n.arity; ++i) out.push_back(build<typename U::value_type>());
      return out;
    } else if constexpr (DictNode<U>) {
      if (n.kind != NodeKind::dict) mismatch<U>("a dict", here);
      U out;
      for (std::size_t i = 0; i < n.arity; ++i) {
        auto value = build<typename U::mapped_type>();
        out.emplace(n.keys[i], std::move(value));
      }
      return out;
    } else {
      static_assert(CustomNode<U>, "xpr::tree_unflatten: not a pytree node");
      if (n.kind != NodeKind::custom || n.name != custom_label<U>() ||
          n.arity != custom_fields<U>::arity)
        mismatch<U>("a struct", here);
      return custom_fields<U>::build(
          [&]<class F>(std::type_identity<F>) -> F { return build<F>(); });
    }
  }

 private:
  template <class U>
  [[noreturn]] void mismatch(const std::string& what, std::size_t at) const {
    throw core::type_error(std::string(fn_) + ": expected a treedef of the structure " +
                           pattern<Top>() + ", found " + def_.str() + " (at its node " +
                           def_.node_str(at) + ", expected " + what + " like " + pattern<U>() +
                           ")");
  }

  const char* fn_;
  const PyTreeDef& def_;
  std::span<const Array> leaves_;
  std::size_t node_ = 0, leaf_ = 0;
};

template <class U>
U unflatten(const char* fn, const PyTreeDef& def, std::span<const Array> leaves) {
  Unflattener<U> u(fn, def, leaves);
  return u.template build<U>();
}

}  // namespace detail

/// Rebuilds the value `treedef` describes from `leaves` (as many as `treedef.num_leaves()`, else
/// `type_error`). Number leaves come back as numbers through `item`, which throws
/// `concretization_error` for a tracer; use `tree_unflatten_as_arrays` when leaves may be
/// tracers or non-scalars.
template <Pytree T>
T tree_unflatten(const TreeDef<T>& treedef, std::span<const Array> leaves) {
  return detail::unflatten<T>("tree_unflatten", treedef, leaves);
}

/// Rebuilds a value of type `U` from any treedef (a `TreeDef` of another type, or an untyped
/// PyTreeDef), checking that the structure fits `U`: `type_error` naming both structures if not.
template <Pytree U>
U tree_unflatten(const PyTreeDef& treedef, std::span<const Array> leaves) {
  return detail::unflatten<U>("tree_unflatten", treedef, leaves);
}

/// Rebuilds `tree_of_arrays_t<T>`: the structure of `T` with Array leaves, so no leaf has to be
/// concrete or rank 0. This is how transformations hand tracers to user functions.
template <Pytree T>
tree_of_arrays_t<T> tree_unflatten_as_arrays(const TreeDef<T>& treedef,
                                             std::span<const Array> leaves) {
  return detail::unflatten<tree_of_arrays_t<T>>("tree_unflatten_as_arrays", treedef, leaves);
}

template <class T>
T TreeDef<T>::unflatten(std::span<const Array> leaves) const {
  return tree_unflatten(*this, leaves);
}

// ---- tree_map -----------------------------------------------------------------------------------

/// `tree_map(f, tree, rest...)`: `f` applied to corresponding leaves, in a tree of `tree`'s
/// structure with Array leaves (`tree_of_arrays_t`). Every tree in `rest` must have `tree`'s
/// structure (else `type_error` naming both). See examples/pytrees.cpp.
template <class F, Pytree T, Pytree... Rest>
requires std::convertible_to<
    std::invoke_result_t<F&, const Array&, std::conditional_t<true, const Array&, Rest>...>, Array>
    tree_of_arrays_t<T> tree_map(F&& f, const T& tree, const Rest&... rest) {
  auto flat = tree_flatten(tree);
  const std::vector<Array>& leaves = flat.first;
  const auto& treedef = flat.second;
  std::array<std::vector<Array>, sizeof...(Rest)> rest_leaves;
  std::size_t k = 0;
  auto check = [&](const auto& other) {
    auto other_flat = tree_flatten(other);
    const PyTreeDef& other_def = other_flat.second;
    if (other_def != static_cast<const PyTreeDef&>(treedef))
      throw core::type_error("tree_map: expected every tree to have the structure of the first, " +
                             treedef.str() + ", found " + other_def.str() + " for tree " +
                             std::to_string(k + 2));
    rest_leaves[k++] = std::move(other_flat.first);
  };
  (check(rest), ...);
  (void)check;  // unused when there is a single tree
  std::vector<Array> out;
  out.reserve(leaves.size());
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    out.push_back([&]<std::size_t... I>(std::index_sequence<I...>) {
      return Array(std::invoke(f, std::as_const(leaves[i]), std::as_const(rest_leaves[I][i])...));
    }(std::index_sequence_for<Rest...>{}));
  }
  return tree_unflatten_as_arrays(treedef, out);
}

}  // namespace xpr::rt

namespace xpr {
using rt::CustomNode;
using rt::DictNode;
using rt::ListNode;
using rt::NodeKind;
using rt::NumberLeaf;
using rt::Pytree;
using rt::PyTreeDef;
using rt::PytreeLeaf;
using rt::tree_flatten;
using rt::tree_leaves;
using rt::tree_map;
using rt::tree_of_arrays_t;
using rt::tree_structure;
using rt::tree_unflatten;
using rt::tree_unflatten_as_arrays;
using rt::tree_value_t;
using rt::TreeDef;
using rt::TupleNode;
}  // namespace xpr

#if XPR_DEFINITIONS

namespace xpr::rt {

XPR_FUNC std::string PyTreeDef::node_str(std::size_t i) const {
  if (i >= nodes_.size()) return "<nothing>";
  std::string s;
  write(s, i);
  return s;
}

// Into a string, not a stream: jit keys its trace cache on this text, and stream code run for
// the first time in a process costs page faults on every first call.
XPR_FUNC std::size_t PyTreeDef::write(std::string& os, std::size_t i) const {
  if (nodes_.empty()) return 0;
  const Node& n = nodes_[i];
  std::size_t next = i + 1;
  auto children = [&](const char* sep) {
    for (std::size_t c = 0; c < n.arity; ++c) {
      if (c) os += sep;
      if (n.kind == NodeKind::dict) os += '\'' + n.keys[c] + "': ";
      next = write(os, next);
    }
  };
  switch (n.kind) {
    case NodeKind::leaf:
      os += '*';
      break;
    case NodeKind::tuple:
      os += '(';
      children(", ");
      os += n.arity == 1 ? ",)" : ")";
      break;
    case NodeKind::list:
      os += '[';
      children(", ");
      os += ']';
      break;
    case NodeKind::dict:
      os += '{';
      children(", ");
      os += '}';
      break;
    case NodeKind::custom:
      os += "CustomNode(" + n.name + ", [";
      children(", ");
      os += "])";
      break;
  }
  return next;
}

}  // namespace xpr::rt

namespace xpr::rt::detail {

XPR_FUNC std::string_view template_argument(std::string_view pretty) {
  auto start = pretty.find("= ");
  if (start == std::string_view::npos) return pretty;
  start += 2;
  int depth = 0;
  std::size_t end = start;
  for (; end < pretty.size(); ++end) {
    char c = pretty[end];
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') --depth;
    if (depth == 0 && c == ';') break;
  }
  if (end == pretty.size()) end = pretty.rfind(']');
  return pretty.substr(start, end - start);
}

XPR_FUNC std::string_view unqualified_name(std::string_view name) {
  if (!name.empty() && name.back() == '>') {
    int depth = 0;
    for (std::size_t i = name.size(); i-- > 0;) {
      if (name[i] == '>') ++depth;
      if (name[i] == '<' && --depth == 0) {
        name = name.substr(0, i);
        break;
      }
    }
  }
  auto colons = name.rfind("::");
  return colons == std::string_view::npos ? name : name.substr(colons + 2);
}

}  // namespace xpr::rt::detail
#endif  // XPR_DEFINITIONS
