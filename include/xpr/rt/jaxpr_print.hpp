// SPDX-License-Identifier: MIT
// Prints jaxprs in JAX's own text syntax, byte for byte: the same Wadler-Lindig layout at width 80
// (short jaxprs on one line, long ones broken), the same variable names, parameter and literal
// spellings, `_` for unused results and hoisted shared sub-jaxprs. docs/jaxpr.md has the grammar.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/core/dtype.hpp"
#include "xpr/core/float_repr.hpp"
#include "xpr/core/shape.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/jaxpr.hpp"
#include "xpr/rt/params.hpp"

namespace xpr::rt {

/// Python's `repr` of a float (`3.0`, `0.1`, `1e-05`), in the precision of its C++ type: the
/// printer both tiers share (core/float_repr.hpp).
using core::float_repr;

// ---------------------------------------------------------------------------------------------
// Parameter values, as Python's str() prints them
// ---------------------------------------------------------------------------------------------

namespace detail {

void print_tuple(std::ostream& os, const std::vector<std::int64_t>& xs);

void print_list(std::ostream& os, const std::vector<std::int64_t>& xs);

}  // namespace detail

std::ostream& operator<<(std::ostream& os, const Jaxpr& jaxpr);

/// Prints one parameter value the way JAX prints it in a jaxpr: tuples `(0,)` `(3, 4)` `()`,
/// dtypes `float32`, `True`/`False`, floats in Python's repr, `None`, dimension variables by name,
/// `dimension_numbers=(([1], [0]), ([], []))`, `padding_config=((1, 2, 0),)`. A sub-jaxpr printed
/// alone names its variables from `a`; inside a jaxpr the names continue the enclosing ones.
void print_param_value(std::ostream& os, const ParamValue& value);

inline std::ostream& operator<<(std::ostream& os, const ParamValue& value) {
  print_param_value(os, value);
  return os;
}

/// The text of a literal's value: Python's str of the scalar (`3.0`, `2`, `True`), floats with
/// the shortest digits of their own dtype, as JAX prints `np.float32(0.1)`: `0.1`, the same text
/// the compile-time tier prints.
std::string literal_value_str(const Array& value);

// ---------------------------------------------------------------------------------------------
// The layout engine: JAX's Wadler-Lindig pretty printer (jax/_src/pretty_printer.py)
// ---------------------------------------------------------------------------------------------
namespace detail::pp {

struct Node;
/// A document; null is the empty document.
using Doc = std::shared_ptr<const Node>;

struct Node {
  enum class Kind : std::uint8_t { text, concat, brk, group, nest } kind;
  std::string text;           // text, and what a break prints when its group is flat
  int indent = 0;             // nest
  std::vector<Doc> children;  // concat; group and nest have one
};

inline Doc text(std::string s) {
  return std::make_shared<const Node>(Node{Node::Kind::text, std::move(s), 0, {}});
}
inline Doc concat(std::vector<Doc> docs) {
  if (docs.size() == 1) return std::move(docs.front());
  return std::make_shared<const Node>(Node{Node::Kind::concat, {}, 0, std::move(docs)});
}
/// A break: `text` when its group fits on the line, else a newline and the current indentation.
inline Doc brk(std::string s = " ") {
  return std::make_shared<const Node>(Node{Node::Kind::brk, std::move(s), 0, {}});
}
inline Doc group(Doc d) {
  return std::make_shared<const Node>(Node{Node::Kind::group, {}, 0, {std::move(d)}});
}
inline Doc nest(int n, Doc d) {
  return std::make_shared<const Node>(Node{Node::Kind::nest, {}, n, {std::move(d)}});
}
Doc join(const Doc& sep, const std::vector<Doc>& docs);

/// Whether `doc`, printed flat, takes at most `width` columns.
bool fits(const Node* doc, std::ptrdiff_t width);

/// Lays `doc` out in `width` columns. Like JAX's (and unlike Lindig's), a group is printed flat
/// when the group itself fits in the rest of the line, whatever follows it.
std::string format(const Doc& doc, std::ptrdiff_t width = 80);

}  // namespace detail::pp

// ---------------------------------------------------------------------------------------------
// JaxprPrinter: builds the document of a jaxpr the way jax/_src/core.py does
// ---------------------------------------------------------------------------------------------
namespace detail {

/// Names variables `a` ... `z`, `ba`, `bb`, ... in the order the document mentions them, across
/// sub-jaxprs too (so every name in the printed text is unique), and builds the documents.
class JaxprPrinter {
 public:
  using Doc = pp::Doc;

  /// The document of a top-level jaxpr: unused equation results print as `_`, and sub-jaxprs
  /// that occur more than once, or that have more than 10 equations, are printed first as
  /// `let jaxpr = { ... } in` and referred to by name (JAX's pp_toplevel_jaxpr).
  XPR_MEMBER Doc toplevel(const Jaxpr& jaxpr);

  /// The document of one equation, naming what is not named yet.
  XPR_MEMBER Doc eqn(const Eqn& e);

  XPR_MEMBER Doc jaxpr_doc(const Jaxpr& j);

  XPR_MEMBER const std::string& name(const Var& v);

 private:
  // `a`..`z`, then `ba`, `bb`, ...: the digits of n in base 26 (JAX's _encode_digits_alphabetic).
  XPR_MEMBER static std::string encode(std::size_t n);

  Doc binder(const Var& v) { return pp::text(name(v) + ":" + v.aval().str()); }

  XPR_MEMBER Doc atom(const Atom& a);

  /// JAX's pp_vars: a group whose breaks each get their own group, indented by 2 when broken.
  static Doc vars(const std::vector<Doc>& docs, const std::string& sep) {
    Doc separator = pp::concat({pp::text(sep), pp::group(pp::brk())});
    return pp::nest(2, pp::group(pp::join(separator, docs)));
  }

  XPR_MEMBER Doc param_value(const ParamValue& v);

  /// `[k=v k=v]`, sorted by name as JAX's default equation printer sorts them, except that a
  /// call's `name` and `jaxpr` come first, as JAX's pjit printer puts them (`pjit[name=f
  /// jaxpr={ ... }]`).
  XPR_MEMBER Doc params(const Params& ps);

  /// `{ lambda consts ; ins . let eqns in (outs) }`. Names are given in JAX's order: constvars,
  /// invars, then each equation's results, sub-jaxprs and operands, then the outputs.
  XPR_MEMBER Doc skeleton(const Jaxpr& j);

  /// Results no later equation or output uses print as `_` (JAX's _dropvars).
  XPR_MEMBER void mark_dropvars(const Jaxpr& j);

  XPR_MEMBER static void for_each_subjaxpr(const Jaxpr& j, auto&& f);

  /// The sub-jaxprs to hoist, in breadth-first order, named `jaxpr`, `jaxpr1`, ...
  XPR_MEMBER std::vector<const Jaxpr*> find_shared(const Jaxpr& top);

  std::unordered_map<const void*, std::string> names_;
  std::unordered_map<const Jaxpr*, std::string> shared_;
  std::unordered_set<std::string> shared_names_;
  std::size_t next_ = 0;
};

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Public printing entry points
// ---------------------------------------------------------------------------------------------

/// The text of `jaxpr` in JAX's syntax, laid out in `width` columns (JAX's default is 80).
inline std::string pretty_print(const Jaxpr& jaxpr, std::ptrdiff_t width = 80) {
  detail::JaxprPrinter printer;
  return detail::pp::format(printer.toplevel(jaxpr), width);
}

/// Prints `jaxpr` as JAX does: `{ lambda ; a:f64[8] b:f64[8]. let ... in (f,) }`.
/// See examples/jaxpr_text.cpp.
inline std::ostream& operator<<(std::ostream& os, const Jaxpr& jaxpr) {
  return os << pretty_print(jaxpr);
}

/// A closed jaxpr prints as its jaxpr (the values of the constvars are not shown, as in JAX).
inline std::ostream& operator<<(std::ostream& os, const ClosedJaxpr& jaxpr) {
  return os << pretty_print(jaxpr.jaxpr);
}

/// One equation of `jaxpr`, with the names it has when the whole jaxpr is printed (for messages).
std::string pretty_print_eqn(const Jaxpr& jaxpr, std::size_t index, std::ptrdiff_t width = 80);

}  // namespace xpr::rt

namespace xpr {
using rt::float_repr;
using rt::pretty_print;
}  // namespace xpr

#if XPR_DEFINITIONS

namespace xpr::rt::detail {

XPR_FUNC void print_tuple(std::ostream& os, const std::vector<std::int64_t>& xs) {
  os << '(';
  for (std::size_t i = 0; i < xs.size(); ++i) os << (i ? ", " : "") << xs[i];
  if (xs.size() == 1) os << ',';
  os << ')';
}

XPR_FUNC void print_list(std::ostream& os, const std::vector<std::int64_t>& xs) {
  os << '[';
  for (std::size_t i = 0; i < xs.size(); ++i) os << (i ? ", " : "") << xs[i];
  os << ']';
}

}  // namespace xpr::rt::detail

namespace xpr::rt {

XPR_FUNC void print_param_value(std::ostream& os, const ParamValue& value) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) {
          os << (x ? "True" : "False");
        } else if constexpr (std::is_same_v<T, std::int64_t>) {
          os << x;
        } else if constexpr (std::is_same_v<T, double>) {
          os << float_repr(x);
        } else if constexpr (std::is_same_v<T, core::DType>) {
          os << core::name(x);
        } else if constexpr (std::is_same_v<T, core::Shape>) {
          detail::print_tuple(os, x.dims());
        } else if constexpr (std::is_same_v<T, Axes>) {
          detail::print_tuple(os, x);
        } else if constexpr (std::is_same_v<T, PaddingConfig>) {
          os << '(';
          for (std::size_t i = 0; i < x.dims.size(); ++i) {
            const auto& d = x.dims[i];
            os << (i ? ", " : "") << '(' << d[0] << ", " << d[1] << ", " << d[2] << ')';
          }
          if (x.dims.size() == 1) os << ',';
          os << ')';
        } else if constexpr (std::is_same_v<T, DotDimensionNumbers>) {
          os << "((";
          detail::print_list(os, x.lhs_contracting);
          os << ", ";
          detail::print_list(os, x.rhs_contracting);
          os << "), (";
          detail::print_list(os, x.lhs_batch);
          os << ", ";
          detail::print_list(os, x.rhs_batch);
          os << "))";
        } else if constexpr (std::is_same_v<T, JaxprParam>) {
          if (x)
            os << x->jaxpr;
          else
            os << "None";
        } else if constexpr (std::is_same_v<T, JaxprTuple>) {
          os << '(';
          for (std::size_t i = 0; i < x.size(); ++i) {
            os << (i ? " " : "");
            if (x[i])
              os << x[i]->jaxpr;
            else
              os << "None";
          }
          os << ')';
        } else if constexpr (std::is_same_v<T, Dim>) {
          os << x.name;
        } else if constexpr (std::is_same_v<T, None>) {
          os << "None";
        } else if constexpr (std::is_same_v<T, GatherDimensionNumbers>) {
          // Python's repr of the NamedTuple.
          os << "GatherDimensionNumbers(offset_dims=";
          detail::print_tuple(os, x.offset_dims);
          os << ", collapsed_slice_dims=";
          detail::print_tuple(os, x.collapsed_slice_dims);
          os << ", start_index_map=";
          detail::print_tuple(os, x.start_index_map);
          os << ", operand_batching_dims=";
          detail::print_tuple(os, x.operand_batching_dims);
          os << ", start_indices_batching_dims=";
          detail::print_tuple(os, x.start_indices_batching_dims);
          os << ')';
        } else if constexpr (std::is_same_v<T, ScatterDimensionNumbers>) {
          os << "ScatterDimensionNumbers(update_window_dims=";
          detail::print_tuple(os, x.update_window_dims);
          os << ", inserted_window_dims=";
          detail::print_tuple(os, x.inserted_window_dims);
          os << ", scatter_dims_to_operand_dims=";
          detail::print_tuple(os, x.scatter_dims_to_operand_dims);
          os << ", operand_batching_dims=";
          detail::print_tuple(os, x.operand_batching_dims);
          os << ", scatter_indices_batching_dims=";
          detail::print_tuple(os, x.scatter_indices_batching_dims);
          os << ')';
        } else if constexpr (std::is_same_v<T, GatherScatterMode>) {
          // str() of the Python enum member.
          os << (x == GatherScatterMode::clip           ? "GatherScatterMode.CLIP"
                 : x == GatherScatterMode::fill_or_drop ? "GatherScatterMode.FILL_OR_DROP"
                                                        : "GatherScatterMode.PROMISE_IN_BOUNDS");
        } else if constexpr (std::is_same_v<T, BoolTuple>) {
          os << '(';
          for (std::size_t i = 0; i < x.size(); ++i)
            os << (i ? ", " : "") << (x[i] ? "True" : "False");
          os << (x.size() == 1 ? ",)" : ")");
        } else {
          static_assert(sizeof(T) == 0, "print_param_value: a ParamValue alternative has no print");
        }
      },
      value);
}

XPR_FUNC std::string literal_value_str(const Array& value) {
  if (value.ndim() != 0 || !value.is_concrete()) return "[...]";
  switch (value.dtype()) {
    case DType::bool_:
      return value.item<bool>() ? "True" : "False";
    case DType::int32:
    case DType::int64:
      return std::to_string(value.item<std::int64_t>());
    case DType::float32:
      return float_repr(static_cast<float>(value.item<double>()));  // exact: an f32 widened
    case DType::float64:
      return float_repr(value.item<double>());
  }
  return "?";
}

}  // namespace xpr::rt

namespace xpr::rt::detail::pp {

XPR_FUNC Doc join(const Doc& sep, const std::vector<Doc>& docs) {
  if (docs.empty()) return nullptr;
  std::vector<Doc> xs{docs[0]};
  for (std::size_t i = 1; i < docs.size(); ++i) {
    xs.push_back(sep);
    xs.push_back(docs[i]);
  }
  return concat(std::move(xs));
}

XPR_FUNC bool fits(const Node* doc, std::ptrdiff_t width) {
  std::vector<const Node*> agenda{doc};
  while (width >= 0 && !agenda.empty()) {
    const Node* d = agenda.back();
    agenda.pop_back();
    if (!d) continue;
    switch (d->kind) {
      case Node::Kind::text:
      case Node::Kind::brk:
        width -= static_cast<std::ptrdiff_t>(d->text.size());
        break;
      case Node::Kind::concat:
        for (auto it = d->children.rbegin(); it != d->children.rend(); ++it)
          agenda.push_back(it->get());
        break;
      case Node::Kind::group:
      case Node::Kind::nest:
        agenda.push_back(d->children[0].get());
        break;
    }
  }
  return width >= 0;
}

XPR_FUNC std::string format(const Doc& doc, std::ptrdiff_t width) {
  struct Item {
    std::ptrdiff_t indent;
    bool flat;
    const Node* doc;
  };
  std::string out;
  std::ptrdiff_t column = 0;
  std::vector<Item> agenda{{0, false, doc.get()}};
  while (!agenda.empty()) {
    Item item = agenda.back();
    agenda.pop_back();
    const Node* d = item.doc;
    if (!d) continue;
    switch (d->kind) {
      case Node::Kind::text:
        out += d->text;
        column += static_cast<std::ptrdiff_t>(d->text.size());
        break;
      case Node::Kind::concat:
        for (auto it = d->children.rbegin(); it != d->children.rend(); ++it)
          agenda.push_back({item.indent, item.flat, it->get()});
        break;
      case Node::Kind::brk:
        if (item.flat) {
          out += d->text;
          column += static_cast<std::ptrdiff_t>(d->text.size());
        } else {
          out += '\n';
          out.append(static_cast<std::size_t>(item.indent), ' ');
          column = item.indent;
        }
        break;
      case Node::Kind::nest:
        agenda.push_back({item.indent + d->indent, item.flat, d->children[0].get()});
        break;
      case Node::Kind::group:
        agenda.push_back(
            {item.indent, fits(d->children[0].get(), width - column), d->children[0].get()});
        break;
    }
  }
  return out;
}

}  // namespace xpr::rt::detail::pp

namespace xpr::rt::detail {

XPR_FUNC JaxprPrinter::Doc JaxprPrinter::toplevel(const Jaxpr& jaxpr) {
  mark_dropvars(jaxpr);
  std::vector<Doc> docs;
  for (const Jaxpr* shared : find_shared(jaxpr)) {
    Doc body = skeleton(*shared);
    docs.push_back(pp::concat({pp::text("let "), pp::text(shared_.at(shared)), pp::text(" = "),
                               body, pp::text(" in"), pp::brk()}));
  }
  docs.push_back(jaxpr_doc(jaxpr));
  return pp::concat(std::move(docs));
}

XPR_FUNC JaxprPrinter::Doc JaxprPrinter::eqn(const Eqn& e) {
  std::vector<Doc> outs;
  for (const Var& v : e.outputs) outs.push_back(binder(v));
  Doc lhs = vars(outs, "");
  std::vector<Doc> rhs{pp::text(e.primitive ? e.primitive->name() : "<null primitive>")};
  rhs.push_back(params(e.params));
  std::vector<Doc> ins;
  for (const Atom& a : e.inputs) ins.push_back(atom(a));
  rhs.push_back(pp::concat({pp::text(" "), vars(ins, "")}));
  if (e.outputs.empty()) return pp::concat(std::move(rhs));
  std::vector<Doc> all{lhs, pp::text(" = ")};
  all.insert(all.end(), rhs.begin(), rhs.end());
  return pp::concat(std::move(all));
}

XPR_FUNC JaxprPrinter::Doc JaxprPrinter::jaxpr_doc(const Jaxpr& j) {
  auto it = shared_.find(&j);
  if (it != shared_.end()) return pp::text(it->second);
  return skeleton(j);
}

XPR_FUNC const std::string& JaxprPrinter::name(const Var& v) {
  auto it = names_.find(v.id());
  if (it != names_.end()) return it->second;
  std::string n = encode(next_++);
  while (shared_names_.count(n)) n = encode(next_++);  // as JAX: `jaxpr` names a jaxpr
  return names_.emplace(v.id(), std::move(n)).first->second;
}

XPR_FUNC std::string JaxprPrinter::encode(std::size_t n) {
  std::string s;
  do {
    s.insert(s.begin(), static_cast<char>('a' + n % 26));
    n /= 26;
  } while (n);
  return s;
}

XPR_FUNC JaxprPrinter::Doc JaxprPrinter::atom(const Atom& a) {
  if (const Var* v = std::get_if<Var>(&a)) return pp::text(name(*v));
  const Literal& l = std::get<Literal>(a);
  return pp::text(literal_value_str(l.value) + ":" + l.aval().str());
}

XPR_FUNC JaxprPrinter::Doc JaxprPrinter::param_value(const ParamValue& v) {
  if (const JaxprParam* j = std::get_if<JaxprParam>(&v)) {
    if (*j) return jaxpr_doc((*j)->jaxpr);
  } else if (const JaxprTuple* js = std::get_if<JaxprTuple>(&v)) {
    std::vector<Doc> docs;
    for (const JaxprParam& p : *js) docs.push_back(p ? jaxpr_doc(p->jaxpr) : pp::text("None"));
    return pp::group(pp::concat(
        {pp::nest(2, pp::concat({pp::text("("), pp::brk(""), pp::join(pp::brk(), docs)})),
         pp::brk(""), pp::text(")")}));
  }
  std::ostringstream os;
  print_param_value(os, v);
  return pp::text(os.str());
}

XPR_FUNC JaxprPrinter::Doc JaxprPrinter::params(const Params& ps) {
  if (ps.empty()) return nullptr;
  std::vector<Doc> pairs;
  std::vector<const Params::value_type*> items = sorted_params(ps);
  if (ps.contains("name")) {
    std::stable_partition(items.begin(), items.end(),
                          [](const auto* item) { return item->first == "jaxpr"; });
    std::stable_partition(items.begin(), items.end(),
                          [](const auto* item) { return item->first == "name"; });
  }
  for (const auto* item : items)
    pairs.push_back(pp::concat({pp::text(item->first + "="), param_value(item->second)}));
  return pp::group(
      pp::concat({pp::nest(2, pp::concat({pp::text("["), pp::brk(""), pp::join(pp::brk(), pairs)})),
                  pp::brk(""), pp::text("]")}));
}

XPR_FUNC JaxprPrinter::Doc JaxprPrinter::skeleton(const Jaxpr& j) {
  NestingGuard<struct PrintTag> nest("pretty_print");
  std::vector<Doc> cs, is, es, os;
  for (const Var& v : j.constvars) cs.push_back(binder(v));
  Doc constvars = vars(cs, "");
  for (const Var& v : j.invars) is.push_back(binder(v));
  Doc invars = vars(is, "");
  for (const Eqn& e : j.eqns) es.push_back(eqn(e));
  Doc eqns = pp::join(pp::brk("; "), es);
  for (const Atom& a : j.outvars) os.push_back(atom(a));
  Doc outvars =
      pp::concat({pp::text("("), vars(os, ","), pp::text(j.outvars.size() == 1 ? ",)" : ")")});
  return pp::concat(
      {pp::group(pp::nest(2, pp::concat({pp::text("{ "), pp::text("lambda "), constvars,
                                         pp::text("; "), invars, pp::text(". "), pp::text("let"),
                                         pp::nest(2, pp::concat({pp::brk(), eqns})), pp::brk(),
                                         pp::text("in "), outvars}))),
       pp::text(" }")});
}

XPR_FUNC void JaxprPrinter::mark_dropvars(const Jaxpr& j) {
  std::unordered_set<const void*> used;
  for (const Atom& a : j.outvars)
    if (const Var* v = std::get_if<Var>(&a)) used.insert(v->id());
  for (auto e = j.eqns.rbegin(); e != j.eqns.rend(); ++e) {
    for (const Var& v : e->outputs)
      if (!used.count(v.id())) names_.emplace(v.id(), "_");
    for (const Atom& a : e->inputs)
      if (const Var* v = std::get_if<Var>(&a)) used.insert(v->id());
  }
}

XPR_FUNC void JaxprPrinter::for_each_subjaxpr(const Jaxpr& j, auto&& f) {
  for (const Eqn& e : j.eqns)
    for (const auto& [k, v] : e.params) {
      if (const JaxprParam* p = std::get_if<JaxprParam>(&v)) {
        if (*p) f((*p)->jaxpr);
      } else if (const JaxprTuple* ps = std::get_if<JaxprTuple>(&v)) {
        for (const JaxprParam& q : *ps)
          if (q) f(q->jaxpr);
      }
    }
}

XPR_FUNC std::vector<const Jaxpr*> JaxprPrinter::find_shared(const Jaxpr& top) {
  // JAX counts the paths to each sub-jaxpr with a breadth-first walk of the tree of
  // references, which takes exponential time on a DAG whose shared jaxprs refer to each other
  // twice per level. Same counts (saturated at 2: only "more than once" matters) in linear
  // time: the distinct jaxprs in first-visit order, then path counts pushed along the
  // references in topological order.
  std::vector<const Jaxpr*> order{&top};
  std::unordered_map<const Jaxpr*, std::vector<const Jaxpr*>> children;
  std::unordered_map<const Jaxpr*, std::size_t> indegree{{&top, 0}}, counts{{&top, 1}};
  for (std::size_t q = 0; q < order.size(); ++q) {
    std::vector<const Jaxpr*>& kids = children[order[q]];
    for_each_subjaxpr(*order[q], [&](const Jaxpr& s) {
      kids.push_back(&s);
      if (indegree[&s]++ == 0 && &s != &top) order.push_back(&s);
    });
  }
  std::vector<const Jaxpr*> ready{&top};
  while (!ready.empty()) {
    const Jaxpr* j = ready.back();
    ready.pop_back();
    for (const Jaxpr* k : children[j]) {
      counts[k] = std::min<std::size_t>(2, counts[k] + counts[j]);
      if (--indegree[k] == 0) ready.push_back(k);
    }
  }
  for (const Jaxpr* j : order)
    if (j != &top && j->eqns.size() > 10 && counts[j] > 0) counts[j] = 2;
  std::vector<const Jaxpr*> shared;
  std::size_t n = 0;
  for (const Jaxpr* j : order) {
    if (counts[j] == 1) continue;
    std::string name = n == 0 ? "jaxpr" : "jaxpr" + std::to_string(n);
    shared_names_.insert(name);
    shared_.emplace(j, std::move(name));
    ++n;
    shared.push_back(j);
  }
  return shared;
}

}  // namespace xpr::rt::detail

namespace xpr::rt {

XPR_FUNC std::string pretty_print_eqn(const Jaxpr& jaxpr, std::size_t index, std::ptrdiff_t width) {
  detail::JaxprPrinter printer;
  (void)printer.toplevel(jaxpr);
  return detail::pp::format(printer.eqn(jaxpr.eqns.at(index)), width);
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
