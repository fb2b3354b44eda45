// SPDX-License-Identifier: MIT
// The compile-time tier's jaxpr as constexpr data: primitives, equations, a hash-consed graph
// (common subexpressions computed once), the live `Jaxpr` the transformations rewrite, and the
// fixed-size frozen `Program` that becomes the evaluator's template argument.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include <boost/mp11/algorithm.hpp>
#include <boost/mp11/list.hpp>

#include "xpr/core/dtype.hpp"
#include "xpr/core/ops.hpp"

namespace xpr::ct {

// ---------------------------------------------------------------------------------------------
// Prim: the primitives, in one list. `arg` (an input) and `lit` (a literal) are not primitives
// in JAX's sense but equations of the graph all the same; every other entry names an `xpr::op`.
// ---------------------------------------------------------------------------------------------
namespace detail {
/// Every primitive of the tier: `arg` and `lit` (void), the elementwise primitives of the shared
/// list (core/ops.hpp, the program's own last), and those with rules of their own.
using prim_ops = boost::mp11::mp_append<
    boost::mp11::mp_list<void, void>,                                               // arg, lit
    builtin_elementwise, boost::mp11::mp_list<op::stop_gradient, op::integer_pow>,  // unary
    comparison_ops, boost::mp11::mp_list<op::select>, typename user_primitives<>::type>;

/// `Op`'s index in `prim_ops`, or 0xff when it is not a primitive of the tier.
template <class Op>
constexpr std::uint8_t index_of() {
  constexpr std::size_t i = boost::mp11::mp_find<prim_ops, Op>::value;
  static_assert(boost::mp11::mp_size<prim_ops>::value < 0xff,
                "xpr::ct: too many primitives for Prim's 8 bits");
  return i < boost::mp11::mp_size<prim_ops>::value ? static_cast<std::uint8_t>(i) : 0xff;
}

template <class T>
constexpr bool dependent_false = false;

/// Stops a constant evaluation with a message: the compiler prints the call, message included.
/// (A `throw` is the only way out of a constant evaluation that carries text.)
constexpr void fail(const char* message) {
  if (message) throw message;
}
}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Buffer<T>: a growable array for constant evaluation. Storage comes in blocks of 16 << k
// elements created by `new Block<T, N>{}`: GCC evaluates that zero-filled aggregate once, as a
// constant, where `new T[n]()` or a fill loop costs ~25 operations per element of the
// evaluator's budget (-fconstexpr-ops-limit), and every stage allocates thousands of elements.
// (std::vector works in constant evaluation too, but its layers cost several times more.)
// ---------------------------------------------------------------------------------------------
namespace detail {
template <class T, std::size_t N>
struct Block {
  T items[N];
};

inline constexpr int num_block_sizes = 21;  // 16 .. 16M elements
constexpr std::size_t block_capacity(int k) { return std::size_t{16} << k; }

// A pointer to a block of one of the sizes 16 << k for k <= K. A union, because a constant
// evaluation must delete an object through a pointer to its own type (not a void*).
template <class T, int K>
union BlockPtr {
  Block<T, block_capacity(K)>* block;
  BlockPtr<T, K - 1> smaller;
};
template <class T>
union BlockPtr<T, 0> {
  Block<T, block_capacity(0)>* block;
};

template <class T, int K>
constexpr T* allocate_block(BlockPtr<T, K>& p, int k) {
  if constexpr (K > 0) {
    if (k < K) {
      p.smaller = {};
      return allocate_block(p.smaller, k);
    }
  }
  p.block = new Block<T, block_capacity(K)>{};
  return p.block->items;
}
template <class T, int K>
constexpr void delete_block(BlockPtr<T, K>& p, int k) {
  if constexpr (K > 0) {
    if (k < K) return delete_block(p.smaller, k);
  }
  delete p.block;
}

/// A growable array of `T` (default-constructible, copyable) for constant evaluation. Elements
/// past `size()` up to `capacity()` are value-initialized.
template <class T>
class Buffer {
 public:
  constexpr Buffer() = default;
  constexpr explicit Buffer(std::size_t n) { resize(n); }
  constexpr Buffer(std::size_t n, const T& fill) { resize(n, fill); }
  constexpr Buffer(const Buffer& other) { *this = other; }
  constexpr Buffer(Buffer&& other) noexcept { steal(other); }
  constexpr Buffer& operator=(const Buffer& other) {
    if (this == &other) return *this;
    size_ = 0;
    reserve(other.size_);
    for (std::size_t i = 0; i < other.size_; ++i) data_[i] = other.data_[i];
    size_ = other.size_;
    return *this;
  }
  constexpr Buffer& operator=(Buffer&& other) noexcept {
    if (this == &other) return *this;
    release();
    steal(other);
    return *this;
  }
  constexpr ~Buffer() { release(); }

  constexpr std::size_t size() const { return size_; }
  constexpr std::size_t capacity() const { return data_ ? block_capacity(class_) : 0; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr T& operator[](std::size_t i) { return data_[i]; }
  constexpr const T& operator[](std::size_t i) const { return data_[i]; }
  constexpr T& back() { return data_[size_ - 1]; }
  constexpr const T* begin() const { return data_; }
  constexpr const T* end() const { return data_ + size_; }

  constexpr void reserve(std::size_t n) {
    if (n <= capacity()) return;
    int k = 0;
    while (block_capacity(k) < n) ++k;
    if (k >= num_block_sizes) fail("xpr::ct: a jaxpr is too large (over 16M entries)");
    BlockPtr<T, num_block_sizes - 1> fresh{};
    T* items = allocate_block(fresh, k);
    for (std::size_t i = 0; i < size_; ++i) items[i] = static_cast<T&&>(data_[i]);
    if (data_) delete_block(block_, class_);
    block_ = fresh;
    data_ = items;
    class_ = k;
  }
  constexpr void push_back(const T& x) {
    if (size_ == capacity()) reserve(size_ + 1);
    data_[size_++] = x;
  }
  constexpr void pop_back() { --size_; }
  /// Grows to `n` value-initialized elements (shrinking is not supported).
  constexpr void resize(std::size_t n) {
    reserve(n);
    size_ = n;
  }
  constexpr void resize(std::size_t n, const T& fill) {
    reserve(n);
    for (std::size_t i = size_; i < n; ++i) data_[i] = fill;
    size_ = n;
  }
  constexpr void clear() { size_ = 0; }

 private:
  constexpr void release() {
    if (data_) delete_block(block_, class_);
    data_ = nullptr;
    size_ = 0;
  }
  constexpr void steal(Buffer& other) {
    block_ = other.block_;
    data_ = other.data_;
    size_ = other.size_;
    class_ = other.class_;
    other.data_ = nullptr;
    other.size_ = 0;
  }

  BlockPtr<T, num_block_sizes - 1> block_{};
  T* data_ = nullptr;
  std::size_t size_ = 0;
  int class_ = 0;
};
}  // namespace detail

/// The primitives of the compile-time tier: each one's index in `detail::prim_ops`. The names
/// are those the tier's own code refers to; a program's primitives (`user_primitives`) have an
/// index too, `prim_v<Op>`, without a name here.
enum class Prim : std::uint8_t {
  arg = 0,
  lit = 1,
  neg = detail::index_of<op::neg>(),
  sin = detail::index_of<op::sin>(),
  cos = detail::index_of<op::cos>(),
  tan = detail::index_of<op::tan>(),
  tanh = detail::index_of<op::tanh>(),
  exp = detail::index_of<op::exp>(),
  log = detail::index_of<op::log>(),
  log1p = detail::index_of<op::log1p>(),
  expm1 = detail::index_of<op::expm1>(),
  sqrt = detail::index_of<op::sqrt>(),
  rsqrt = detail::index_of<op::rsqrt>(),
  abs = detail::index_of<op::abs>(),
  sign = detail::index_of<op::sign>(),
  logistic = detail::index_of<op::logistic>(),
  square = detail::index_of<op::square>(),
  exp2 = detail::index_of<op::exp2>(),
  cbrt = detail::index_of<op::cbrt>(),
  erf = detail::index_of<op::erf>(),
  floor = detail::index_of<op::floor>(),
  ceil = detail::index_of<op::ceil>(),
  copy = detail::index_of<op::copy>(),
  stop_gradient = detail::index_of<op::stop_gradient>(),
  integer_pow = detail::index_of<op::integer_pow>(),
  add = detail::index_of<op::add>(),
  sub = detail::index_of<op::sub>(),
  mul = detail::index_of<op::mul>(),
  div = detail::index_of<op::div>(),
  max = detail::index_of<op::max>(),
  min = detail::index_of<op::min>(),
  pow = detail::index_of<op::pow>(),
  eq = detail::index_of<op::eq>(),
  ne = detail::index_of<op::ne>(),
  lt = detail::index_of<op::lt>(),
  le = detail::index_of<op::le>(),
  gt = detail::index_of<op::gt>(),
  ge = detail::index_of<op::ge>(),
  select = detail::index_of<op::select>(),
};
inline constexpr std::size_t num_prims = boost::mp11::mp_size<detail::prim_ops>::value;

/// The `xpr::op` tag of a primitive.
template <Prim P>
using op_t = boost::mp11::mp_at_c<detail::prim_ops, static_cast<std::size_t>(P)>;

/// The primitive of an `xpr::op` tag.
template <class Op>
inline constexpr Prim prim_v = static_cast<Prim>(detail::index_of<Op>());

namespace detail {
// Per-primitive facts as tables indexed by Prim: constant evaluation pays for every step, and
// these run for every equation a transformation visits.
template <class... Ops>
struct PrimTable {
  template <class Op>
  static constexpr int arity_of() {
    if constexpr (std::is_void_v<Op>)
      return 0;
    else
      return Op::arity;
  }
  template <class Op>
  static constexpr bool commutative_of() {
    if constexpr (std::is_void_v<Op>)
      return false;
    else
      return is_commutative_v<Op>;
  }
  static constexpr std::int8_t arity[] = {static_cast<std::int8_t>(arity_of<Ops>())...};
  static constexpr bool commutative[] = {commutative_of<Ops>()...};
};
using prim_table = boost::mp11::mp_apply<PrimTable, prim_ops>;
}  // namespace detail

/// Number of operands.
constexpr int arity(Prim p) { return detail::prim_table::arity[static_cast<std::size_t>(p)]; }
constexpr bool is_comparison(Prim p) { return p >= Prim::eq && p <= Prim::ge; }
/// Operand order does not matter; hash-consing sorts the operands of these.
constexpr bool is_commutative(Prim p) {
  return detail::prim_table::commutative[static_cast<std::size_t>(p)];
}

namespace detail {
// A binary search over the primitives: constant evaluation pays for every comparison, and this
// runs for every equation a transformation visits.
template <std::size_t Lo, std::size_t Hi, class F>
constexpr void visit_range(std::size_t p, F& f) {
  if constexpr (Hi - Lo == 1) {
    f(boost::mp11::mp_at_c<prim_ops, Lo>{});
  } else {
    constexpr std::size_t mid = (Lo + Hi) / 2;
    if (p < mid)
      visit_range<Lo, mid>(p, f);
    else
      visit_range<mid, Hi>(p, f);
  }
}
}  // namespace detail

/// Calls `f(op_tag{})` with the `xpr::op` tag of `p` (which must not be `arg` or `lit`).
template <class F>
constexpr void visit_prim(Prim p, F&& f) {
  detail::visit_range<2, num_prims>(static_cast<std::size_t>(p), f);
}

/// JAX's name of a primitive, as jaxprs print it.
constexpr std::string_view prim_name(Prim p) {
  if (p == Prim::arg) return "arg";
  if (p == Prim::lit) return "literal";
  if (p == Prim::select) return "select_n";  // JAX's select_n(pred, on_false, on_true)
  std::string_view name;
  visit_prim(p, [&](auto op) { name = decltype(op)::name; });
  return name;
}

// ---------------------------------------------------------------------------------------------
// Eqn: one equation `out = prim in...`; its index in the graph is its output variable.
// ---------------------------------------------------------------------------------------------
struct Eqn {
  Prim prim = Prim::lit;
  DType dtype = DType::float64;
  bool weak = false;  // JAX's weak type: only C++ numbers and what is computed from them alone
  int in[3] = {-1, -1, -1};
  /// lit: the value's bits (as a double); integer_pow: the exponent; arg: a serial number.
  std::uint64_t param = 0;

  constexpr double value() const { return std::bit_cast<double>(param); }
  // Operands first: they differ most often, and constant evaluation pays for every comparison.
  friend constexpr bool operator==(const Eqn& a, const Eqn& b) {
    return a.in[0] == b.in[0] && a.in[1] == b.in[1] && a.param == b.param && a.prim == b.prim &&
           a.in[2] == b.in[2] && a.dtype == b.dtype && a.weak == b.weak;
  }
};

// ---------------------------------------------------------------------------------------------
// Graph: equations in SSA order, hash-consed. An equation's operands always come before it, so
// the order is topological. Literals are keyed on their bit pattern, so `x*2.0` and `x*3.0`
// never merge.
// ---------------------------------------------------------------------------------------------
class Graph {
 public:
  constexpr std::size_t size() const { return eqns_.size(); }
  constexpr const Eqn& operator[](std::size_t i) const { return eqns_[i]; }

  /// The variable computing `e`: an existing equation when one is identical, else a new one.
  constexpr int emit(const Eqn& e) {
    if (2 * (eqns_.size() + 1) > table_.size()) rehash(2 * (eqns_.size() + 1));
    const std::size_t mask = table_.size() - 1;
    for (std::size_t h = hash(e) & mask;; h = (h + 1) & mask) {
      const int slot = table_[h];
      if (slot == 0) {
        const int id = static_cast<int>(eqns_.size());
        table_[h] = id + 1;
        eqns_.push_back(e);
        return id;
      }
      if (eqns_[static_cast<std::size_t>(slot - 1)] == e) return slot - 1;
    }
  }
  /// The variable computing `e` if there is one, else -1.
  constexpr int find(const Eqn& e) const {
    if (table_.empty()) return -1;
    const std::size_t mask = table_.size() - 1;
    for (std::size_t h = hash(e) & mask;; h = (h + 1) & mask) {
      const int slot = table_[h];
      if (slot == 0) return -1;
      if (eqns_[static_cast<std::size_t>(slot - 1)] == e) return slot - 1;
    }
  }
  /// Appends `e`, known to differ from every equation already here (a frozen program's), without
  /// looking for an equal one.
  constexpr int append_unique(const Eqn& e) {
    if (2 * (eqns_.size() + 1) > table_.size()) rehash(2 * (eqns_.size() + 1));
    const int id = static_cast<int>(eqns_.size());
    insert(e, id);
    eqns_.push_back(e);
    if (e.prim == Prim::arg) ++num_args_;
    return id;
  }
  /// Makes room for `n` equations in all, so that adding them rehashes nothing.
  constexpr void reserve(std::size_t n) {
    eqns_.reserve(n);
    if (2 * n > table_.size()) rehash(2 * n);
  }
  /// A fresh input variable; never merged with another.
  constexpr int new_arg(DType dtype, bool weak = false) {
    Eqn e{Prim::arg, dtype, weak, {-1, -1, -1}, num_args_++};
    return emit(e);
  }
  /// The literal `value` of type `dtype`.
  constexpr int literal(double value, DType dtype, bool weak = false) {
    Eqn e{Prim::lit, dtype, weak, {-1, -1, -1}, std::bit_cast<std::uint64_t>(value)};
    return emit(e);
  }

  /// Past `cap` equations (0: no cap; one more is recorded, so that past it means over it)
  /// tracing stops recording and only counts what it would have recorded, so that a function
  /// too large for the compile-time tier is measured cheaply and reported (see `trace`) instead
  /// of exhausting the compiler's operation budget.
  constexpr void set_cap(std::size_t cap) { cap_ = cap; }
  constexpr bool over_cap() const { return cap_ != 0 && eqns_.size() > cap_; }
  constexpr void count_past_cap() { ++past_cap_; }
  /// The equations recorded, plus those counted past the cap.
  constexpr std::size_t counted() const { return eqns_.size() + past_cap_; }

 private:
  // Few operations on small numbers: every distinct integer a constant evaluation computes is
  // interned by the compiler for the rest of the translation unit, so a cheap hash keeps
  // compile time and memory down.
  static constexpr std::size_t hash(const Eqn& e) {
    auto lo = static_cast<std::uint32_t>(e.param), hi = static_cast<std::uint32_t>(e.param >> 32);
    std::uint32_t h =
        static_cast<std::uint32_t>(e.in[0]) * 0x9e3779b1u ^
        static_cast<std::uint32_t>(e.in[1]) * 0x85ebca77u ^
        static_cast<std::uint32_t>(e.in[2]) * 0xc2b2ae3du ^ (lo ^ hi ^ (hi >> 13)) ^
        (static_cast<std::uint32_t>(e.prim) << 24 | static_cast<std::uint32_t>(e.dtype) << 16);
    return h ^ (h >> 15);
  }
  // The table holds id + 1, so that a zero-filled block is an empty table: growing it costs
  // only the re-insertions. Its size is a power of two at least `n`, at most half full.
  constexpr void rehash(std::size_t n) {
    std::size_t size = 1024;
    while (size < n) size *= 2;
    table_ = detail::Buffer<int>(size);
    for (std::size_t i = 0; i < eqns_.size(); ++i) insert(eqns_[i], static_cast<int>(i));
  }
  constexpr void insert(const Eqn& e, int id) {
    const std::size_t mask = table_.size() - 1;
    std::size_t h = hash(e) & mask;
    while (table_[h] != 0) h = (h + 1) & mask;
    table_[h] = id + 1;
  }

  detail::Buffer<Eqn> eqns_;
  detail::Buffer<int> table_;
  std::uint64_t num_args_ = 0;
  std::size_t cap_ = 0;
  std::size_t past_cap_ = 0;
};

/// A jaxpr under construction: a graph, its input variables (`arg` equations, in order) and its
/// output variables.
struct Jaxpr {
  Graph graph;
  detail::Buffer<int> ins;
  detail::Buffer<int> outs;
  /// Nonzero when tracing stopped at the cap: the equations counted. The jaxpr is then a stub
  /// (outputs are zeros), and the stage that built it stops the compilation with a message.
  std::size_t too_large = 0;
};

// ---------------------------------------------------------------------------------------------
// Program<NE, NI, NO>: a frozen jaxpr, a structural value. Equations 0..NI-1 are the inputs in
// order, then the live equations in SSA order; `outs` names the output equations.
// ---------------------------------------------------------------------------------------------
template <std::size_t NE, std::size_t NI, std::size_t NO>
struct Program {
  static constexpr std::size_t num_eqns = NE;
  static constexpr std::size_t num_ins = NI;
  static constexpr std::size_t num_outs = NO;
  Eqn eqns[NE > 0 ? NE : 1];
  int outs[NO > 0 ? NO : 1];
};

/// The sizes of a frozen jaxpr, found by a first pass.
struct Sizes {
  std::size_t eqns = 0, ins = 0, outs = 0;
  std::size_t too_large = 0;  // the jaxpr's `too_large`
};

namespace detail {
// Marks the equations the outputs need, and gives each its index in the frozen program (-1 when
// dead). Inputs come first, in the order of `ins`, whether the outputs use them or not.
constexpr Buffer<int> frozen_index(const Jaxpr& j) {
  const Graph& g = j.graph;
  Buffer<int> index(g.size(), -1);
  Buffer<bool> live(g.size());
  for (int o : j.outs) live[static_cast<std::size_t>(o)] = true;
  for (std::size_t i = g.size(); i-- > 0;)
    if (live[i])
      for (int k = 0; k < arity(g[i].prim); ++k) live[static_cast<std::size_t>(g[i].in[k])] = true;
  int next = 0;
  for (int a : j.ins) {
    if (index[static_cast<std::size_t>(a)] >= 0) fail("xpr::ct: a jaxpr input is listed twice");
    index[static_cast<std::size_t>(a)] = next++;
  }
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (!live[i] || index[i] >= 0) continue;
    if (g[i].prim == Prim::arg) fail("xpr::ct internal error: a live input is not a jaxpr input");
    index[i] = next++;
  }
  return index;
}
}  // namespace detail

/// Sizes of `j` once dead equations are removed.
constexpr Sizes frozen_sizes(const Jaxpr& j) {
  detail::Buffer<int> index = detail::frozen_index(j);
  Sizes s{0, j.ins.size(), j.outs.size(), j.too_large};
  for (int i : index) s.eqns += i >= 0;
  return s;
}

/// `j` without dead equations, as a fixed-size value; `S` must be `frozen_sizes(j)`.
template <Sizes S>
constexpr Program<S.eqns, S.ins, S.outs> freeze(const Jaxpr& j) {
  Program<S.eqns, S.ins, S.outs> p{};
  detail::Buffer<int> index = detail::frozen_index(j);
  for (std::size_t i = 0; i < j.graph.size(); ++i) {
    if (index[i] < 0) continue;
    Eqn e = j.graph[i];
    for (int k = 0; k < arity(e.prim); ++k) e.in[k] = index[static_cast<std::size_t>(e.in[k])];
    if (e.prim == Prim::arg) e.param = 0;
    p.eqns[index[i]] = e;
  }
  for (std::size_t k = 0; k < S.outs; ++k) p.outs[k] = index[static_cast<std::size_t>(j.outs[k])];
  return p;
}

/// A frozen jaxpr in room for up to `E` equations and `O` outputs, `sizes` saying how many are
/// used; `fits` is false when it did not fit. One constant evaluation builds a stage and drafts
/// it, where `frozen_sizes` then `freeze` build it twice; `from_draft` then copies it to size.
template <std::size_t E, std::size_t O>
struct Draft {
  Sizes sizes;
  bool fits = false;
  Eqn eqns[E > 0 ? E : 1];
  int outs[O > 0 ? O : 1];
};

/// `j` without dead equations, into a draft of room `E` equations and `O` outputs.
template <std::size_t E, std::size_t O>
constexpr Draft<E, O> freeze_draft(const Jaxpr& j) {
  Draft<E, O> d{};
  detail::Buffer<int> index = detail::frozen_index(j);
  std::size_t n = 0;
  for (int i : index) n += i >= 0;
  d.sizes = {n, j.ins.size(), j.outs.size()};
  if (n > E || j.outs.size() > O) return d;
  for (std::size_t i = 0; i < j.graph.size(); ++i) {
    if (index[i] < 0) continue;
    Eqn e = j.graph[i];
    for (int k = 0; k < arity(e.prim); ++k) e.in[k] = index[static_cast<std::size_t>(e.in[k])];
    if (e.prim == Prim::arg) e.param = 0;
    d.eqns[index[i]] = e;
  }
  for (std::size_t k = 0; k < j.outs.size(); ++k)
    d.outs[k] = index[static_cast<std::size_t>(j.outs[k])];
  d.fits = true;
  return d;
}

/// The program a draft holds, at its exact size `S` (`d.sizes`).
template <Sizes S, std::size_t E, std::size_t O>
constexpr Program<S.eqns, S.ins, S.outs> from_draft(const Draft<E, O>& d) {
  Program<S.eqns, S.ins, S.outs> p{};
  for (std::size_t i = 0; i < S.eqns; ++i) p.eqns[i] = d.eqns[i];
  for (std::size_t k = 0; k < S.outs; ++k) p.outs[k] = d.outs[k];
  return p;
}

/// A frozen program back as a live jaxpr, ready for another transformation.
template <class P>
constexpr Jaxpr thaw(const P& p) {
  Jaxpr j;
  j.graph.reserve(2 * P::num_eqns);  // room for the stage's new equations, too
  for (std::size_t i = 0; i < P::num_eqns; ++i) {
    Eqn e = p.eqns[i];
    if (e.prim == Prim::arg) {
      e.param = i;  // inputs are numbered apart, so they stay distinct
      j.ins.push_back(static_cast<int>(i));
    }
    j.graph.append_unique(e);
  }
  for (std::size_t k = 0; k < P::num_outs; ++k) j.outs.push_back(p.outs[k]);
  return j;
}

}  // namespace xpr::ct
