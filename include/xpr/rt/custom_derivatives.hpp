// SPDX-License-Identifier: MIT
// Custom derivative rules for functions (JAX's custom_derivatives.py): `xpr::custom_jvp(f, rule)`
// with its primitive `custom_jvp_call`, and `xpr::custom_vjp(f, fwd, bwd)` with `custom_vjp_call`
// and the linear primitive `custom_lin` that carries `bwd` into the transposed program.
// See docs/custom-derivatives.md and examples/custom_derivatives.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/core/error.hpp"
#include "xpr/rt/api_transformations.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/detail/higher_order.hpp"
#include "xpr/rt/interp/transpose.hpp"
#include "xpr/rt/jaxpr.hpp"
#include "xpr/rt/jaxpr_eval.hpp"
#include "xpr/rt/numpy_reductions.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/prims/convert.hpp"
#include "xpr/rt/pytree.hpp"
#include "xpr/rt/trace.hpp"
#include "xpr/rt/transformations.hpp"
#include "xpr/rt/zeros.hpp"

namespace xpr::rt {

namespace detail {

/// The jvp rule of one `custom_jvp_call` equation, traced on first use (so a rule that calls its
/// own function traces that call as another `custom_jvp_call`, as in JAX): a jaxpr from
/// (primals..., tangents...) to (primal outputs..., tangent outputs...).
struct CustomJvpRule {
  Memo<ClosedJaxpr> jvp_jaxpr;
};

/// The rules of one `custom_vjp_call` equation: `fwd`, traced on first use into a jaxpr from the
/// arguments to (residuals..., outputs...), and `bwd` on flat lists: (residuals, output
/// cotangents) -> one cotangent per argument leaf.
struct CustomVjpFwd {
  ClosedJaxpr jaxpr;
  std::size_t num_res = 0;
  PyTreeDef res_def;
};
struct CustomVjpRule {
  Memo<CustomVjpFwd> fwd;
  std::function<Arrays(const PyTreeDef&, std::span<const Array>, std::span<const Array>)> bwd;
  Avals in_avals;  // the arguments' types, which bwd's results must have
};

/// What a `custom_lin` equation needs: the rules, and the types of its outputs.
struct CustomLinRule {
  std::shared_ptr<const CustomVjpRule> rule;
  Avals out_avals;
};

std::string avals_list(std::span<const ShapedArray> avals);

void check_operands(const char* name, std::span<const ShapedArray> args, const ClosedJaxpr& j);

inline std::size_t num_consts(const Params& params) {
  return static_cast<std::size_t>(params.get<std::int64_t>("num_consts"));
}

[[noreturn]] inline void throw_closed_over(const char* kind, const char* rules) {
  throw core::type_error(
      std::string("Detected differentiation of a ") + kind +
      " function with respect to a "
      "closed-over value. That isn't supported because the custom " +
      (kind[7] == 'j' ? "JVP" : "VJP") + " rule only specifies how to differentiate the " + kind +
      " function with respect to explicit input parameters. Try passing the closed-over value "
      "into the " +
      kind + " function as an argument, and adapting the " + kind + " " + rules + ".");
}

/// The structure check JAX applies to what a rule returns for the function's output.
void check_rule_output(const std::string& what, const PyTreeDef& expected_def,
                       std::span<const ShapedArray> expected, const PyTreeDef& found_def,
                       std::span<const Array> found);

template <class T>
inline constexpr bool is_pair_v = false;
template <class A, class B>
inline constexpr bool is_pair_v<std::pair<A, B>> = true;
template <class A, class B>
inline constexpr bool is_pair_v<std::tuple<A, B>> = true;

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// custom_jvp_call
// ---------------------------------------------------------------------------------------------

/// `custom_jvp_call[call_jaxpr=... jvp_jaxpr_fun=... num_consts=0 symbolic_zeros=False]`: applies
/// `call_jaxpr` to its operands (the first `num_consts` are values the function closes over), and
/// differentiates with the user's rule instead of `call_jaxpr`'s equations. vmap batches both the
/// function and the rule; a staged or linearized program contains the rule's equations.
class CustomJvpCallP final : public Primitive {
 public:
  constexpr CustomJvpCallP() : Primitive("custom_jvp_call", true) {}

  Arrays impl(std::span<const Array> args, const Params& params) const override {
    return eval_jaxpr(detail::jaxpr_param(params, "call_jaxpr"), args);
  }

  XPR_MEMBER Avals abstract_eval(std::span<const ShapedArray> args,
                                 const Params& params) const override;

  /// The user's rule on the primals and the tangents (zeros instantiated, as JAX does when
  /// `symbolic_zeros=False`).
  XPR_MEMBER std::pair<Arrays, Tangents> jvp_symbolic(std::span<const Array> primals,
                                                      std::span<const Tangent> tangents,
                                                      const Params& params) const override;

  /// A custom_jvp function that is linear is transposed through its own equations (JAX's
  /// `_custom_jvp_call_transpose`): the rule has done its work by the time a program is linear.
  Cotangents transpose(std::span<const Cotangent> cts, std::span<const LinearArg> args,
                       const Params& params) const override {
    const ClosedJaxpr& j = detail::jaxpr_param(params, "call_jaxpr");
    return backward_pass(j.jaxpr, j.consts, args, cts);
  }

  /// Batches the function and, lazily, the rule (primals and tangents along the same axes).
  XPR_MEMBER std::pair<Arrays, BatchDims> batch(std::span<const Array> args,
                                                std::span<const BatchDim> dims,
                                                std::int64_t axis_size,
                                                const Params& params) const override;
};

inline constinit const CustomJvpCallP custom_jvp_call_p{};

// ---------------------------------------------------------------------------------------------
// custom_lin
// ---------------------------------------------------------------------------------------------

/// `custom_lin[bwd=... num_res=... symbolic_zeros=False]`: the tangent outputs of a custom_vjp
/// function as a linear function of its operands (residuals..., input tangents...), known only
/// through its transpose, which calls the user's `bwd` on the residuals and output cotangents
/// (JAX's `ad.custom_lin_p`). Evaluating or batching it means forward mode was applied to a
/// custom_vjp function, which JAX rejects.
class CustomLinP final : public Primitive {
 public:
  constexpr CustomLinP() : Primitive("custom_lin", true) {}

  Arrays impl(std::span<const Array> args, const Params& params) const override {
    (void)args, (void)params;
    throw_forward();
  }
  Avals abstract_eval(std::span<const ShapedArray> args, const Params& params) const override {
    (void)args;
    return lin_rule(params).out_avals;
  }
  std::pair<Arrays, Arrays> jvp(std::span<const Array> primals, std::span<const Array> tangents,
                                const Params& params) const override {
    (void)primals, (void)tangents, (void)params;
    throw_forward();
  }
  std::pair<Arrays, BatchDims> batch(std::span<const Array> args, std::span<const BatchDim> dims,
                                     std::int64_t axis_size, const Params& params) const override {
    (void)args, (void)dims, (void)axis_size, (void)params;
    throw_forward();
  }
  XPR_MEMBER Cotangents transpose(std::span<const Cotangent> cts, std::span<const LinearArg> args,
                                  const Params& params) const override;

 private:
  [[noreturn]] static void throw_forward() {
    throw core::type_error("can't apply forward-mode autodiff (jvp) to a custom_vjp function.");
  }
  XPR_MEMBER static const detail::CustomLinRule& lin_rule(const Params& params);
};

inline constinit const CustomLinP custom_lin_p{};

// ---------------------------------------------------------------------------------------------
// custom_vjp_call
// ---------------------------------------------------------------------------------------------

/// `custom_vjp_call[bwd=... call_jaxpr=... fwd_jaxpr_thunk=... num_consts=0
/// symbolic_zeros=False]`: applies `call_jaxpr`; differentiated, it runs `fwd` for the outputs
/// and residuals and emits a `custom_lin` for the tangents, so reverse mode calls `bwd` (JAX's
/// `custom_vjp_call_jaxpr` rules).
class CustomVjpCallP final : public Primitive {
 public:
  constexpr CustomVjpCallP() : Primitive("custom_vjp_call", true) {}

  Arrays impl(std::span<const Array> args, const Params& params) const override {
    return eval_jaxpr(detail::jaxpr_param(params, "call_jaxpr"), args);
  }

  XPR_MEMBER Avals abstract_eval(std::span<const ShapedArray> args,
                                 const Params& params) const override;

  XPR_MEMBER std::pair<Arrays, Tangents> jvp_symbolic(std::span<const Array> primals,
                                                      std::span<const Tangent> tangents,
                                                      const Params& params) const override;

  /// Batches the function, `fwd` (every output batched along axis 0) and `bwd` (vmap over the
  /// residuals and cotangents; an argument that is not batched gets the sum over the batch).
  XPR_MEMBER std::pair<Arrays, BatchDims> batch(std::span<const Array> args,
                                                std::span<const BatchDim> dims,
                                                std::int64_t axis_size,
                                                const Params& params) const override;

 private:
  XPR_MEMBER static std::shared_ptr<const detail::CustomVjpRule> rule_of(const Params& params);
};

inline constinit const CustomVjpCallP custom_vjp_call_p{};

// ---------------------------------------------------------------------------------------------
// custom_jvp, custom_vjp
// ---------------------------------------------------------------------------------------------

namespace detail {

/// The function `custom_jvp(f, rule)` returns.
template <class F, class Rule>
class CustomJvp {
 public:
  CustomJvp(F f, Rule rule)
      : f_(std::move(f)), rule_(std::make_shared<const Rule>(std::move(rule))) {}

  template <class... A>
  auto operator()(const A&... args) const {
    using Args = std::tuple<std::remove_cvref_t<A>...>;
    using In = tree_of_arrays_t<Args>;
    using Out = flat_result_t<F, Args>;
    using RuleOut = std::invoke_result_t<const Rule&, const In&, const In&>;
    static_assert(is_pair_v<std::remove_cvref_t<RuleOut>>,
                  "xpr::custom_jvp: the rule is called as rule(primals, tangents), two tuples "
                  "with one entry per argument, and must return a pair (primal_out, tangent_out)");
    auto [leaves, def] = tree_flatten(std::forward_as_tuple(args...));
    std::optional<PyTreeDef> out_def;
    F f = f_;
    FlatFunction flat = flat_function<F, Args>(f, def, out_def);
    if (no_transformation_active()) return tree_unflatten<Out>(*out_def, flat(leaves));
    Avals avals = avals_of_values(leaves);
    ConvertedJaxpr call = trace_to_converted_jaxpr(flat, avals);
    Avals out_avals = call.jaxpr->out_avals();
    auto rule = std::make_shared<const CustomJvpRule>(CustomJvpRule{Memo<ClosedJaxpr>(
        [rule = rule_, in_def = PyTreeDef(def), out_def = *out_def, avals, out_avals] {
          const std::size_t n = avals.size();
          FlatFunction rule_flat = [&](std::span<const Array> in) {
            auto primals = tree_unflatten<In>(in_def, in.first(n));
            auto tangents = tree_unflatten<In>(in_def, in.subspan(n));
            auto result = (*rule)(std::as_const(primals), std::as_const(tangents));
            auto [p_leaves, p_def] = tree_flatten(std::get<0>(result));
            auto [t_leaves, t_def] = tree_flatten(std::get<1>(result));
            const std::string what =
                "Custom JVP rule must produce a pair (primal_out, tangent_out) "
                "where the first element represents the primal output";
            check_rule_output(what, out_def, out_avals, p_def, p_leaves);
            if (static_cast<const PyTreeDef&>(t_def) != out_def)
              throw core::type_error(
                  "Custom JVP rule must produce primal and tangent outputs "
                  "with equal container (pytree) structures, but got " +
                  out_def.str() + " and " + t_def.str() + " respectively.");
            for (std::size_t i = 0; i < t_leaves.size(); ++i) {
              if (!detail::aval_of(t_leaves[i]).same_type(detail::aval_of(p_leaves[i]))) {
                if (t_leaves[i].weak_type() && t_leaves[i].shape() == p_leaves[i].shape()) {
                  t_leaves[i] = convert_element_type(t_leaves[i], p_leaves[i].dtype());
                  continue;
                }
                throw core::type_error(
                    "Custom JVP rule must produce primal and tangent outputs "
                    "with equal shapes and dtypes, but got " +
                    detail::aval_of(p_leaves[i]).str() + " and " +
                    detail::aval_of(t_leaves[i]).str() + " respectively.");
              }
            }
            return concat(p_leaves, t_leaves);
          };
          Avals in_avals = avals;
          in_avals.insert(in_avals.end(), avals.begin(), avals.end());
          return make_jaxpr_flat(rule_flat, in_avals);
        })});
    Params params{{"call_jaxpr", call.jaxpr},
                  {"jvp_jaxpr_fun", opaque_param(std::move(rule))},
                  {"num_consts", static_cast<std::int64_t>(call.consts.size())},
                  {"symbolic_zeros", false}};
    Arrays outs = rt::bind(custom_jvp_call_p, concat(call.consts, leaves), params);
    return tree_unflatten<Out>(*out_def, outs);
  }

 private:
  F f_;
  std::shared_ptr<const Rule> rule_;
};

/// The function `custom_vjp(f, fwd, bwd)` returns.
template <class F, class Fwd, class Bwd>
class CustomVjp {
 public:
  CustomVjp(F f, Fwd fwd, Bwd bwd)
      : f_(std::move(f)),
        fwd_(std::make_shared<const Fwd>(std::move(fwd))),
        bwd_(std::make_shared<const Bwd>(std::move(bwd))) {}

  template <class... A>
  auto operator()(const A&... args) const {
    using Args = std::tuple<std::remove_cvref_t<A>...>;
    using In = tree_of_arrays_t<Args>;
    using Out = flat_result_t<F, Args>;
    using FwdOut =
        std::remove_cvref_t<decltype(std::apply(std::declval<const Fwd&>(), std::declval<In>()))>;
    static_assert(is_pair_v<FwdOut>,
                  "xpr::custom_vjp: fwd is called with the function's arguments and must return "
                  "a pair (output, residuals)");
    using Res = tree_of_arrays_t<std::remove_cvref_t<std::tuple_element_t<1, FwdOut>>>;
    auto [leaves, def] = tree_flatten(std::forward_as_tuple(args...));
    std::optional<PyTreeDef> out_def;
    F f = f_;
    FlatFunction flat = flat_function<F, Args>(f, def, out_def);
    if (no_transformation_active()) return tree_unflatten<Out>(*out_def, flat(leaves));
    Avals avals = avals_of_values(leaves);
    ConvertedJaxpr call = trace_to_converted_jaxpr(flat, avals);
    Avals out_avals = call.jaxpr->out_avals();
    const PyTreeDef in_def = def;
    auto rule = std::make_shared<CustomVjpRule>(CustomVjpRule{
        Memo<CustomVjpFwd>([fwd = fwd_, in_def, out_def = *out_def, avals, out_avals] {
          std::optional<PyTreeDef> res_def;
          std::size_t num_res = 0;
          FlatFunction fwd_flat = [&](std::span<const Array> in) {
            auto result = std::apply(*fwd, tree_unflatten<In>(in_def, in));
            auto [o_leaves, o_def] = tree_flatten(std::get<0>(result));
            auto [r_leaves, r_def] = tree_flatten(std::get<1>(result));
            check_rule_output(
                "Custom VJP fwd rule must produce a pair (output, residuals) "
                "where the first element represents the primal output",
                out_def, out_avals, o_def, o_leaves);
            res_def = r_def;
            num_res = r_leaves.size();
            return concat(r_leaves, o_leaves);
          };
          ClosedJaxpr j = make_jaxpr_flat(fwd_flat, avals);
          return CustomVjpFwd{std::move(j), num_res, std::move(*res_def)};
        }),
        [bwd = bwd_, in_def, out_def = *out_def](
            const PyTreeDef& res_def, std::span<const Array> res, std::span<const Array> cts) {
          auto cts_in =
              (*bwd)(tree_unflatten<Res>(res_def, res), tree_unflatten<Out>(out_def, cts));
          auto [c_leaves, c_def] = tree_flatten(cts_in);
          if (static_cast<const PyTreeDef&>(c_def) != in_def)
            throw core::type_error(
                "Custom VJP bwd rule must produce an output with the same container (pytree) "
                "structure as the args tuple of the primal function, and in particular must "
                "produce a tuple of length equal to the number of arguments to the primal "
                "function, but got bwd output structure " +
                c_def.str() + " for primal input structure " + in_def.str() + ".");
          return Arrays(c_leaves.begin(), c_leaves.end());
        },
        avals});
    // bwd's results are checked against the arguments' types, and weakly typed numbers converted.
    auto checked = rule->bwd;
    rule->bwd = [checked, avals](const PyTreeDef& res_def, std::span<const Array> res,
                                 std::span<const Array> cts) {
      Arrays out = checked(res_def, res, cts);
      for (std::size_t i = 0; i < out.size(); ++i) {
        if (detail::aval_of(out[i]).same_type(avals[i])) continue;
        if (out[i].weak_type() && out[i].shape() == avals[i].shape) {
          out[i] = convert_element_type(out[i], avals[i].dtype);
          continue;
        }
        throw core::type_error(
            "Custom VJP bwd rule must produce an output with the same "
            "shape/dtypes as the args tuple of the primal function, but at "
            "output leaf " +
            std::to_string(i) +
            " the bwd rule produced an "
            "output of shape/dtype " +
            detail::aval_of(out[i]).str() + " corresponding to an input of shape/dtype " +
            avals[i].str());
      }
      return out;
    };
    std::shared_ptr<const CustomVjpRule> shared = std::move(rule);
    Params params{{"call_jaxpr", call.jaxpr},
                  {"fwd_jaxpr_thunk", opaque_param(shared)},
                  {"bwd", opaque_param(shared)},
                  {"num_consts", static_cast<std::int64_t>(call.consts.size())},
                  {"symbolic_zeros", false}};
    Arrays outs = rt::bind(custom_vjp_call_p, concat(call.consts, leaves), params);
    return tree_unflatten<Out>(*out_def, outs);
  }

 private:
  F f_;
  std::shared_ptr<const Fwd> fwd_;
  std::shared_ptr<const Bwd> bwd_;
};

}  // namespace detail

namespace detail {

/// What `custom_jvp(f)` returns before its rule is given (JAX's two-step spelling).
template <class F>
struct CustomJvpWithoutRule {
  F f;
  /// `custom_jvp(f).defjvp(rule)` = `custom_jvp(f, rule)`.
  template <class Rule>
  auto defjvp(Rule rule) const {
    return CustomJvp<F, Rule>(f, std::move(rule));
  }
  template <class... A>
  void operator()(const A&...) const {
    static_assert(sizeof...(A) < 0,
                  "xpr::custom_jvp(f): no JVP rule defined; write custom_jvp(f).defjvp(rule) or "
                  "custom_jvp(f, rule)");
  }
};

/// What `custom_vjp(f)` returns before its rules are given.
template <class F>
struct CustomVjpWithoutRules {
  F f;
  /// `custom_vjp(f).defvjp(fwd, bwd)` = `custom_vjp(f, fwd, bwd)`.
  template <class Fwd, class Bwd>
  auto defvjp(Fwd fwd, Bwd bwd) const {
    return CustomVjp<F, Fwd, Bwd>(f, std::move(fwd), std::move(bwd));
  }
  template <class... A>
  void operator()(const A&...) const {
    static_assert(sizeof...(A) < 0,
                  "xpr::custom_vjp(f): no VJP rules defined; write custom_vjp(f).defvjp(fwd, bwd) "
                  "or custom_vjp(f, fwd, bwd)");
  }
};

}  // namespace detail

/// `custom_jvp(f, rule)`: `f` with a custom JVP rule, honoured by every transformation. The rule
/// is called as `rule(primals, tangents)` with two std::tuples holding one entry per argument
/// (the arguments' structures with Array leaves) and returns a pair `{primal_out, tangent_out}`
/// of `f`'s output structure; it must be linear in the tangents, and is itself differentiated
/// for higher derivatives. Eagerly the call just runs `f`; under any transformation it stages one
/// `custom_jvp_call` equation. See examples/custom_derivatives.cpp.
template <class F, class Rule>
auto custom_jvp(F f, Rule rule) {
  return detail::CustomJvp<F, Rule>(std::move(f), std::move(rule));
}

/// `custom_vjp(f, fwd, bwd)`: `f` with a custom VJP rule, honoured by reverse mode (vjp, grad,
/// value_and_grad, jacrev) and vmap. `fwd(args...)` returns `{output, residuals}` (any pytree);
/// `bwd(residuals, cotangent)` returns a std::tuple with one cotangent per argument. Forward mode
/// (jvp, jacfwd) throws `type_error`, as in JAX. See examples/custom_derivatives.cpp.
template <class F, class Fwd, class Bwd>
auto custom_vjp(F f, Fwd fwd, Bwd bwd) {
  return detail::CustomVjp<F, Fwd, Bwd>(std::move(f), std::move(fwd), std::move(bwd));
}

/// `custom_jvp(f).defjvp(rule)`: JAX's two-step spelling of `custom_jvp(f, rule)`; `defjvp`
/// returns the new function (C++ cannot change the type of `f`'s object afterwards).
template <class F>
auto custom_jvp(F f) {
  return detail::CustomJvpWithoutRule<F>{std::move(f)};
}

/// `custom_vjp(f).defvjp(fwd, bwd)`: JAX's two-step spelling of `custom_vjp(f, fwd, bwd)`.
template <class F>
auto custom_vjp(F f) {
  return detail::CustomVjpWithoutRules<F>{std::move(f)};
}

}  // namespace xpr::rt

namespace xpr {
using rt::custom_jvp;
using rt::custom_vjp;
}  // namespace xpr

#if XPR_DEFINITIONS

namespace xpr::rt::detail {

XPR_FUNC std::string avals_list(std::span<const ShapedArray> avals) {
  std::string s;
  for (std::size_t i = 0; i < avals.size(); ++i) s += (i ? ", " : "") + avals[i].str();
  return s;
}

XPR_FUNC void check_operands(const char* name, std::span<const ShapedArray> args,
                             const ClosedJaxpr& j) {
  if (args.size() != j.jaxpr.invars.size())
    throw core::type_error(std::string(name) + ": expected " +
                           std::to_string(j.jaxpr.invars.size()) + " operands, found " +
                           std::to_string(args.size()));
  for (std::size_t i = 0; i < args.size(); ++i)
    if (!args[i].same_type(j.jaxpr.invars[i].aval()))
      throw core::type_error(std::string(name) + ": expected operand " + std::to_string(i) +
                             " of type " + j.jaxpr.invars[i].aval().str() + ", found " +
                             args[i].str());
}

XPR_FUNC void check_rule_output(const std::string& what, const PyTreeDef& expected_def,
                                std::span<const ShapedArray> expected, const PyTreeDef& found_def,
                                std::span<const Array> found) {
  if (found_def != expected_def)
    throw core::type_error(what +
                           " (equal to the output of the function, and in particular of "
                           "the same container/pytree structure), but instead it had structure " +
                           found_def.str() + " while the function had output structure " +
                           expected_def.str());
  for (std::size_t i = 0; i < found.size(); ++i)
    if (!detail::aval_of(found[i]).same_type(expected[i]))
      throw core::type_error(what +
                             " (equal to the output of the function, and in particular "
                             "with leaves of the same shape/dtype), but instead it had "
                             "shapes/dtypes of (" +
                             avals_list(avals_of_values(found)) +
                             ") while the "
                             "function had output shapes/dtypes of (" +
                             avals_list(expected) + ")");
}

}  // namespace xpr::rt::detail

namespace xpr::rt {

XPR_FUNC Avals CustomJvpCallP::abstract_eval(std::span<const ShapedArray> args,
                                             const Params& params) const {
  const ClosedJaxpr& j = detail::jaxpr_param(params, "call_jaxpr");
  detail::check_operands("custom_jvp_call", args, j);
  return j.out_avals();
}

XPR_FUNC std::pair<Arrays, Tangents> CustomJvpCallP::jvp_symbolic(std::span<const Array> primals,
                                                                  std::span<const Tangent> tangents,
                                                                  const Params& params) const {
  const std::size_t nc = detail::num_consts(params);
  for (std::size_t i = 0; i < nc; ++i)
    if (tangents[i]) detail::throw_closed_over("custom_jvp", "rule");
  const auto* rule = detail::opaque_value<detail::CustomJvpRule>(params, "jvp_jaxpr_fun");
  if (!rule)
    throw core::not_implemented_error(
        "custom_jvp_call: this equation has no jvp rule (a jaxpr "
        "read from text keeps only call_jaxpr), so it cannot be "
        "differentiated");
  const ClosedJaxpr& jvp = rule->jvp_jaxpr.get();
  Arrays ins(primals.begin() + static_cast<std::ptrdiff_t>(nc), primals.end());
  for (std::size_t i = nc; i < tangents.size(); ++i)
    ins.push_back(tangents[i] ? *tangents[i] : zeros_like_aval(detail::aval_of(primals[i])));
  Arrays outs = eval_jaxpr(jvp, ins);
  const std::size_t n_out = outs.size() / 2;
  Arrays primals_out(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(n_out));
  Tangents tangents_out(outs.begin() + static_cast<std::ptrdiff_t>(n_out), outs.end());
  return {std::move(primals_out), std::move(tangents_out)};
}

namespace detail {

/// `rule()` for a batched custom rule whose function closes over values an enclosing vmap
/// batches (`closure_batched`): xpr batches a rule over its arguments, not over what the user's
/// rule captured, so differentiating such a call from outside the vmap (jvp or grad of a vmap
/// whose body calls it) is refused in words the user wrote, where it failed inside (an internal
/// vmap without mapped arguments, or the vmap's tracer used after it ended). JAX batches the
/// closure too.
template <class R>
auto closure_checked(const char* which, bool closure_batched, bool args_batched, R rule) {
  const std::string why =
      std::string(which) +
      ": its function closes over a value that an enclosing vmap batches, and it is "
      "differentiated from outside that vmap (jvp or grad of a vmap whose body calls it); "
      "xpr batches a custom rule over its arguments only: pass the value as an argument (with "
      "its in_axes), or differentiate inside the vmap";
  if (closure_batched && !args_batched) throw core::not_implemented_error(why);
  try {
    return rule();
  } catch (const core::escaped_tracer_error&) {
    if (closure_batched) throw core::not_implemented_error(why);
    throw;
  }
}

}  // namespace detail

XPR_FUNC std::pair<Arrays, BatchDims> CustomJvpCallP::batch(std::span<const Array> args,
                                                            std::span<const BatchDim> dims,
                                                            std::int64_t axis_size,
                                                            const Params& params) const {
  (void)axis_size;
  if (!detail::any_batched(dims)) return {rt::bind(*this, args, params), BatchDims(args.size())};
  const std::size_t nc = detail::num_consts(params);
  auto [moved, at_front] = detail::batch_at_front(args, dims);
  Avals avals = detail::avals_of_values(moved);
  detail::ConvertedJaxpr call = detail::convert_constvars(
      detail::batch_jaxpr(detail::jaxpr_param(params, "call_jaxpr"), at_front, avals));
  Params p = detail::with_param(params, "call_jaxpr", call.jaxpr);
  p.set("num_consts", static_cast<std::int64_t>(call.consts.size() + nc));
  if (auto rule = detail::opaque_shared<detail::CustomJvpRule>(params, "jvp_jaxpr_fun")) {
    // The new rule batches the old one when it is first needed, primals and tangents alike.
    BatchDims rule_dims(at_front.begin() + static_cast<std::ptrdiff_t>(nc), at_front.end());
    Avals rule_avals(avals.begin() + static_cast<std::ptrdiff_t>(nc), avals.end());
    const bool closure_batched = detail::any_batched(std::span<const BatchDim>(at_front).first(nc));
    const bool args_batched = detail::any_batched(rule_dims);
    const std::size_t n = rule_dims.size();
    for (std::size_t i = 0; i < n; ++i) {
      rule_dims.push_back(rule_dims[i]);
      rule_avals.push_back(rule_avals[i]);
    }
    auto batched = std::make_shared<const detail::CustomJvpRule>(detail::CustomJvpRule{
        detail::Memo<ClosedJaxpr>([rule, rule_dims, rule_avals, closure_batched, args_batched] {
          return detail::closure_checked("custom_jvp", closure_batched, args_batched, [&] {
            return detail::batch_jaxpr(rule->jvp_jaxpr.get(), rule_dims, rule_avals);
          });
        })});
    p.set("jvp_jaxpr_fun", detail::opaque_param(std::move(batched)));
  }
  Arrays outs = rt::bind(*this, detail::concat(call.consts, moved), p);
  return {std::move(outs), BatchDims(outs.size(), BatchDim(0))};
}

XPR_FUNC Cotangents CustomLinP::transpose(std::span<const Cotangent> cts,
                                          std::span<const LinearArg> args,
                                          const Params& params) const {
  const detail::CustomLinRule& lin = lin_rule(params);
  const auto num_res = static_cast<std::size_t>(params.get<std::int64_t>("num_res"));
  Arrays res;
  for (std::size_t i = 0; i < num_res; ++i) {
    const Array* r = std::get_if<Array>(&args[i]);
    if (!r)
      throw core::type_error(
          "custom_lin: expected known residuals when transposing, found an "
          "undefined primal of type " +
          aval_of(args[i]).str());
    res.push_back(*r);
  }
  Arrays cts_out;
  for (std::size_t k = 0; k < cts.size(); ++k)
    cts_out.push_back(instantiate_zeros(cts[k], lin.out_avals[k]));
  Arrays cts_in = lin.rule->bwd(lin.rule->fwd.get().res_def, res, cts_out);
  Cotangents result(num_res);
  result.insert(result.end(), cts_in.begin(), cts_in.end());
  return result;
}

XPR_FUNC const detail::CustomLinRule& CustomLinP::lin_rule(const Params& params) {
  const auto* lin = detail::opaque_value<detail::CustomLinRule>(params, "bwd");
  if (!lin)
    throw core::not_implemented_error(
        "custom_lin: this equation has no bwd rule (a jaxpr read "
        "from text keeps none)");
  return *lin;
}

XPR_FUNC Avals CustomVjpCallP::abstract_eval(std::span<const ShapedArray> args,
                                             const Params& params) const {
  const ClosedJaxpr& j = detail::jaxpr_param(params, "call_jaxpr");
  detail::check_operands("custom_vjp_call", args, j);
  return j.out_avals();
}

XPR_FUNC std::pair<Arrays, Tangents> CustomVjpCallP::jvp_symbolic(std::span<const Array> primals,
                                                                  std::span<const Tangent> tangents,
                                                                  const Params& params) const {
  const std::size_t nc = detail::num_consts(params);
  for (std::size_t i = 0; i < nc; ++i)
    if (tangents[i]) detail::throw_closed_over("custom_vjp", "fwd and bwd rules");
  std::shared_ptr<const detail::CustomVjpRule> rule = rule_of(params);
  const detail::CustomVjpFwd& fwd = rule->fwd.get();
  Arrays args(primals.begin() + static_cast<std::ptrdiff_t>(nc), primals.end());
  Arrays res_out = eval_jaxpr(fwd.jaxpr, args);
  const auto res_end = res_out.begin() + static_cast<std::ptrdiff_t>(fwd.num_res);
  Arrays lin_args(res_out.begin(), res_end);
  Arrays primals_out(res_end, res_out.end());
  for (std::size_t i = nc; i < tangents.size(); ++i)
    lin_args.push_back(tangents[i] ? *tangents[i] : zeros_like_aval(detail::aval_of(primals[i])));
  auto lin = std::make_shared<const detail::CustomLinRule>(
      detail::CustomLinRule{rule, detail::avals_of_values(primals_out)});
  Params p{{"num_res", static_cast<std::int64_t>(fwd.num_res)},
           {"bwd", detail::opaque_param(std::move(lin))},
           {"symbolic_zeros", false}};
  Arrays tangents_out = rt::bind(custom_lin_p, lin_args, p);
  return {std::move(primals_out), Tangents(tangents_out.begin(), tangents_out.end())};
}

XPR_FUNC std::pair<Arrays, BatchDims> CustomVjpCallP::batch(std::span<const Array> args,
                                                            std::span<const BatchDim> dims,
                                                            std::int64_t axis_size,
                                                            const Params& params) const {
  (void)axis_size;
  if (!detail::any_batched(dims)) return {rt::bind(*this, args, params), BatchDims(args.size())};
  const std::size_t nc = detail::num_consts(params);
  auto [moved, at_front] = detail::batch_at_front(args, dims);
  Avals avals = detail::avals_of_values(moved);
  detail::ConvertedJaxpr call = detail::convert_constvars(
      detail::batch_jaxpr(detail::jaxpr_param(params, "call_jaxpr"), at_front, avals));
  std::shared_ptr<const detail::CustomVjpRule> rule = rule_of(params);
  BatchDims arg_dims(at_front.begin() + static_cast<std::ptrdiff_t>(nc), at_front.end());
  Avals arg_avals(avals.begin() + static_cast<std::ptrdiff_t>(nc), avals.end());
  const bool closure_batched = detail::any_batched(std::span<const BatchDim>(at_front).first(nc));
  const bool args_batched = detail::any_batched(arg_dims);
  auto batched = std::make_shared<detail::CustomVjpRule>(detail::CustomVjpRule{
      detail::Memo<detail::CustomVjpFwd>(
          [rule, arg_dims, arg_avals, closure_batched, args_batched] {
            return detail::closure_checked("custom_vjp", closure_batched, args_batched, [&] {
              const detail::CustomVjpFwd& fwd = rule->fwd.get();
              return detail::CustomVjpFwd{detail::batch_jaxpr(fwd.jaxpr, arg_dims, arg_avals),
                                          fwd.num_res, fwd.res_def};
            });
          }),
      [rule, arg_dims](const PyTreeDef& res_def, std::span<const Array> res,
                       std::span<const Array> cts) {
        const std::size_t nres = res.size();
        FlatFunction bwd = [&](std::span<const Array> x) {
          return rule->bwd(res_def, x.first(nres), x.subspan(nres));
        };
        Arrays ins = detail::concat(res, cts);
        Arrays cts_in = vmap_flat(bwd, ins, BatchDims(ins.size(), BatchDim(0)), {BatchDim(0)});
        for (std::size_t i = 0; i < cts_in.size(); ++i)
          if (!arg_dims[i]) cts_in[i] = bind1(reduce_sum_p, {cts_in[i]}, {{"axes", Axes{0}}});
        return cts_in;
      },
      arg_avals});
  Params p = detail::with_param(params, "call_jaxpr", call.jaxpr);
  p.set("num_consts", static_cast<std::int64_t>(call.consts.size() + nc));
  // Two stubs owning one rule: a shared stub would print hoisted as a named sub-jaxpr.
  p.set("fwd_jaxpr_thunk", detail::opaque_param<detail::CustomVjpRule>(batched));
  p.set("bwd", detail::opaque_param<detail::CustomVjpRule>(std::move(batched)));
  Arrays outs = rt::bind(*this, detail::concat(call.consts, moved), p);
  return {std::move(outs), BatchDims(outs.size(), BatchDim(0))};
}

XPR_FUNC std::shared_ptr<const detail::CustomVjpRule> CustomVjpCallP::rule_of(
    const Params& params) {
  auto rule = detail::opaque_shared<detail::CustomVjpRule>(params, "fwd_jaxpr_thunk");
  if (!rule)
    throw core::not_implemented_error(
        "custom_vjp_call: this equation has no fwd and bwd rules "
        "(a jaxpr read from text keeps only call_jaxpr), so it "
        "cannot be differentiated");
  return rule;
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
