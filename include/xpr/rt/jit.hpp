// SPDX-License-Identifier: MIT
// `xpr::jit` and its primitive `pjit` (Autodidax Part 3's `xla_call`, today's JAX `pjit_p`): a
// jitted function is traced to a jaxpr once per input signature, and each call applies that jaxpr
// through one `pjit` equation, which every transformation sees whole and transforms as a jaxpr.
// Running it is the code generator's business (codegen/execute.hpp). See docs/jit.md.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <utility>
#include <vector>

#include "xpr/codegen/entry.hpp"
#if XPR_DEFINITIONS
// The code generator itself (lowering, the compiler driver, the caches): only the definitions
// below use it; the declarations need codegen/entry.hpp.
#include "xpr/codegen/execute.hpp"
#endif
#include "xpr/core/config.hpp"
#include "xpr/core/error.hpp"
#include "xpr/rt/api_transformations.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/detail/higher_order.hpp"
#include "xpr/rt/detail/sub_jaxpr.hpp"
#include "xpr/rt/interp/partial_eval.hpp"
#include "xpr/rt/interp/transpose.hpp"
#include "xpr/rt/jaxpr.hpp"
#include "xpr/rt/jaxpr_eval.hpp"
#include "xpr/rt/jit_options.hpp"
#include "xpr/rt/primitive.hpp"
#include "xpr/rt/pytree.hpp"
#include "xpr/rt/trace.hpp"
#include "xpr/rt/transformations.hpp"

namespace xpr::rt {

namespace detail {

/// The JitOptions a `pjit` equation's parameters carry: `name`, and `backend` and
/// `precise_math` when they are not the defaults (so the default prints as JAX prints it).
JitOptions jit_options_of(const Params& params);

/// `pjit`'s parameters for `jaxpr` under `options`. The name is kept as a `Dim`, the parameter
/// alternative that prints as a bare word (`name=f`), as JAX prints it.
Params pjit_params(JaxprParam jaxpr, const JitOptions& options);

/// `params` with `name` wrapped as JAX names transformed calls: `jvp(f)`, `transpose(jvp(f))`.
Params renamed(Params params, const char* transform);

}  // namespace detail

/// `pjit[name=f jaxpr={ lambda ; ... }]`: applies `jaxpr` (no constants: they are its leading
/// operands) to its operands, running it through the code generator. Its rules transform the
/// jaxpr and rebind `pjit` on the result, so a jitted function stays one compiled call under
/// every transformation (JAX's pjit rules): jvp binds the JVP jaxpr (`name=jvp(f)`), vmap the
/// batched one; partial evaluation splits it into a known `pjit` computing the known outputs and
/// the residuals and an unknown one taking them (JAX's `_pjit_partial_eval`); transpose binds the
/// transposed jaxpr (`name=transpose(f)`); dce prunes it.
class PjitP final : public Primitive, public PartialEvalRules {
 public:
  constexpr PjitP() : Primitive("pjit", true) {}

  Arrays impl(std::span<const Array> args, const Params& params) const override {
    return codegen::execute(detail::jaxpr_param(params, "jaxpr"), args,
                            detail::jit_options_of(params));
  }

  XPR_MEMBER Avals abstract_eval(std::span<const ShapedArray> args,
                                 const Params& params) const override;

  XPR_MEMBER std::pair<Arrays, Tangents> jvp_symbolic(std::span<const Array> primals,
                                                      std::span<const Tangent> tangents,
                                                      const Params& params) const override;

  XPR_MEMBER Cotangents transpose(std::span<const Cotangent> cts, std::span<const LinearArg> args,
                                  const Params& params) const override;

  XPR_MEMBER std::pair<Arrays, BatchDims> batch(std::span<const Array> args,
                                                std::span<const BatchDim> dims,
                                                std::int64_t axis_size,
                                                const Params& params) const override;

  // ---- partial evaluation ----

  XPR_MEMBER std::optional<Arrays> partial_eval(PartialEvalTrace& trace,
                                                std::span<const Array> tracers,
                                                const Params& params) const override;

  XPR_MEMBER std::optional<PartialEvalEqn> partial_eval_jaxpr(const std::vector<bool>& in_unknowns,
                                                              const Eqn& eqn) const override;

  XPR_MEMBER std::optional<DceEqn> dce(const std::vector<bool>& used_outputs,
                                       const Eqn& eqn) const override;

 private:
  /// The two halves partial evaluation splits the jaxpr into: `known` (known inputs -> known
  /// outputs, then the residuals; closure-converted) and `unknown` (residuals, then the unknown
  /// inputs -> the unknown outputs).
  struct Split {
    std::vector<bool> out_unknowns;
    detail::ConvertedJaxpr known;
    JaxprParam unknown;
    std::size_t num_res = 0;
  };

  using Transposed = detail::TransposedJaxpr;

  static void check_jaxpr(const JaxprParam& j) {
    if (!j) throw core::type_error("pjit: expected a jaxpr in parameter 'jaxpr', found None");
  }

  XPR_MEMBER static detail::JvpJaxpr memo_jvp(const JaxprParam& j,
                                              const std::vector<bool>& nonzero);

  XPR_MEMBER static std::shared_ptr<const Split> memo_split(const JaxprParam& j,
                                                            const std::vector<bool>& in_unknowns);

  XPR_MEMBER static std::shared_ptr<const Transposed> memo_transpose(
      const JaxprParam& j, const std::vector<bool>& flags, std::span<const LinearArg> args);

  XPR_MEMBER static std::pair<JaxprParam, std::vector<bool>> memo_dce(
      const JaxprParam& j, const std::vector<bool>& used_outputs);
};

inline constinit const PjitP pjit_p{};

// ---------------------------------------------------------------------------------------------
// xpr::jit
// ---------------------------------------------------------------------------------------------

namespace detail {

/// A type `jit` can trace: a number, an Array, or a container or registered struct of them.
template <class T>
concept JitTraceable = PytreeLeaf<T> || TupleNode<T> || ListNode<T> || DictNode<T> || CustomNode<T>;

/// At most this many number arguments can be made static (each adds a variant of the call that
/// the compiler instantiates, 2^n in all); later number arguments are always traced.
inline constexpr std::size_t max_static_numbers = 3;

/// Which arguments are static when bit k of `Mask` makes the k-th number argument static:
/// values `jit` cannot trace always are; Arrays and containers never are.
template <std::uint32_t Mask, class... A>
constexpr std::array<bool, sizeof...(A)> static_flags() {
  constexpr std::array<bool, sizeof...(A)> traceable{JitTraceable<std::remove_cvref_t<A>>...};
  constexpr std::array<bool, sizeof...(A)> number{NumberLeaf<std::remove_cvref_t<A>>...};
  std::array<bool, sizeof...(A)> out{};
  std::size_t k = 0;
  for (std::size_t i = 0; i < sizeof...(A); ++i) {
    if (!traceable[i]) {
      out[i] = true;
    } else if (number[i]) {
      out[i] = k < max_static_numbers && ((Mask >> k) & 1u);
      ++k;
    }
  }
  return out;
}

template <class... A>
constexpr std::size_t static_number_slots() {
  constexpr std::array<bool, sizeof...(A) + 1> number{NumberLeaf<std::remove_cvref_t<A>>..., false};
  std::size_t k = 0;
  for (bool b : number) k += b ? 1 : 0;
  return std::min(k, max_static_numbers);
}

/// The mask `static_argnums` selects, or a type_error saying why a position cannot be static.
template <class... A>
std::uint32_t static_mask(const std::vector<int>& nums) {
  constexpr std::array<bool, sizeof...(A) + 1> traceable{JitTraceable<std::remove_cvref_t<A>>...,
                                                         false};
  constexpr std::array<bool, sizeof...(A) + 1> number{NumberLeaf<std::remove_cvref_t<A>>..., false};
  std::uint32_t mask = 0;
  for (int p : nums) {
    const std::size_t n = sizeof...(A);
    // A negative position counts from the end, as in JAX (-1: the last argument).
    const long long q = p < 0 ? static_cast<long long>(n) + p : p;
    if (q < 0 || static_cast<std::size_t>(q) >= n)
      throw core::type_error("jit: expected static_argnums within the " + std::to_string(n) +
                             " positional arguments, found " + std::to_string(p));
    const auto i = static_cast<std::size_t>(q);
    if (!traceable[i]) continue;  // static anyway
    if (!number[i])
      throw core::type_error(
          "jit: static_argnums may name numbers and values jit cannot trace; "
          "argument " +
          std::to_string(p) + " is an Array or a container of them, which is always traced");
    std::size_t k = 0;
    for (std::size_t j = 0; j < i; ++j) k += number[j] ? 1 : 0;
    if (k >= max_static_numbers)
      throw core::type_error("jit: at most " + std::to_string(max_static_numbers) +
                             " number arguments can be static; argument " + std::to_string(p) +
                             " is number argument " + std::to_string(k + 1));
    mask |= 1u << k;
  }
  return mask;
}

/// The positions of the number arguments that `mask` makes static, as static_argnums would name
/// them ("1, 2").
template <class... A>
std::string mask_positions(std::uint32_t mask) {
  constexpr std::array<bool, sizeof...(A) + 1> number{NumberLeaf<std::remove_cvref_t<A>>..., false};
  std::string out;
  for (std::size_t i = 0, k = 0; i < sizeof...(A); ++i)
    if (number[i] && k++ < 32 && (mask >> (k - 1) & 1u))
      out += (out.empty() ? "" : ", ") + std::to_string(i);
  return out;
}

/// The static arguments' values, compared to tell cache entries apart.
class StaticKey {
 public:
  virtual ~StaticKey() = default;
  virtual bool equals(const StaticKey& other) const = 0;
};

template <class T>
class StaticKeyOf final : public StaticKey {
 public:
  explicit StaticKeyOf(T value) : value_(std::move(value)) {}
  bool equals(const StaticKey& other) const override {
    const auto* o = dynamic_cast<const StaticKeyOf*>(&other);
    return o && o->value_ == value_;
  }

 private:
  T value_;
};

/// What tracing a jitted function for one input signature gives: the jaxpr (its constants as
/// leading inputs), the constants, the outputs' structure, and the `pjit` parameters.
struct JitTrace {
  ConvertedJaxpr traced;
  PyTreeDef out_def;
  Params params;
  std::shared_ptr<const StaticKey> statics;

  /// The kernel that runs `traced` (null: it is interpreted), looked up once per trace rather
  /// than once per call (`codegen::kernel_for` hashes and compares the whole jaxpr).
  XPR_MEMBER const codegen::Kernel* kernel(const JitOptions& options) const;

  /// Runs the trace on concrete argument leaves: the kernel, or the interpreter where codegen
  /// gives none.
  XPR_MEMBER Arrays run(std::span<const Array> leaves, const JitOptions& options) const;

 private:
  mutable std::once_flag kernel_once_;
  mutable std::shared_ptr<const codegen::Kernel> kernel_;
};

/// One entry of a jitted function's fast cache: the trace (and through it the kernel) for calls
/// whose arguments are all leaves (Arrays and numbers, none static) of the types in `avals`, for
/// the argument types `tag` stands for.
struct JitFastEntry {
  std::uint64_t hash = 0;  // signature_hash of the call
  const void* tag = nullptr;
  Avals avals;
  std::shared_ptr<const JitTrace> trace;
};

/// The fast cache's key: the argument types' tag and every leaf's dtype, weak flag, rank and
/// sizes, hashed as numbers (no string is built on a repeat call).
std::uint64_t signature_hash(const void* tag, std::span<const Array> leaves);

/// A tag whose address tells the argument type lists `A...` apart.
template <class... A>
inline constexpr char type_tag = 0;

/// The state a jitted function's copies share: options and the trace cache. Lookups and traces
/// hold `mutex`, so concurrent first calls trace once; it is recursive because tracing `f` may
/// call the same jitted function (on other shapes).
struct JitState {
  JitOptions options;
  std::recursive_mutex mutex;
  std::unordered_map<std::string, std::vector<std::shared_ptr<const JitTrace>>> cache;
  /// The traces that hold for any sizes (see `names_no_size`), by the key with ranks for shapes.
  std::unordered_map<std::string, std::vector<std::shared_ptr<const JitTrace>>> any_size;
  std::size_t traces = 0;

  /// The fast cache of leaf-only calls (entries are never removed, so a found entry stays valid
  /// while this state lives). Readers share `fast_mutex`; an insertion holds it alone.
  std::shared_mutex fast_mutex;
  std::unordered_multimap<std::uint64_t, std::unique_ptr<const JitFastEntry>> fast;
  /// The entry found last: a function called again and again with one signature, the common
  /// case, finds it here without the lock and the hash table (a tenth of the call in `perf`).
  std::atomic<const JitFastEntry*> last_fast{nullptr};

  XPR_MEMBER const JitFastEntry* find_fast(std::uint64_t h, const void* tag,
                                           std::span<const Array> leaves);

  XPR_MEMBER const JitFastEntry* add_fast(std::uint64_t h, const void* tag,
                                          std::span<const Array> leaves,
                                          std::shared_ptr<const JitTrace> trace);
};

template <std::size_t I, std::size_t N>
constexpr std::size_t count_before(const std::array<bool, N>& flags, bool value) {
  std::size_t k = 0;
  for (std::size_t j = 0; j < I; ++j) k += flags[j] == value ? 1 : 0;
  return k;
}

template <bool Keep, class T>
auto keep_if(const T& x) {
  if constexpr (Keep)
    return std::tuple<const T&>(x);
  else
    return std::tuple<>();
}

/// The ways of calling `f` with the static arguments `Mask` selects.
template <class F, std::uint32_t Mask, class... A>
struct JitCall {
  static constexpr std::array<bool, sizeof...(A)> stat = static_flags<Mask, A...>();

  template <std::size_t... I>
  static auto statics_of(std::index_sequence<I...>, const A&... args) {
    return std::tuple_cat(keep_if<stat[I]>(args)...);
  }
  template <std::size_t... I>
  static auto dynamics_of(std::index_sequence<I...>, const A&... args) {
    return std::tuple_cat(keep_if<!stat[I]>(args)...);
  }
  using Statics =
      decltype(statics_of(std::index_sequence_for<A...>{}, std::declval<const A&>()...));
  using Dynamics =
      decltype(dynamics_of(std::index_sequence_for<A...>{}, std::declval<const A&>()...));
  using DynArrays = tree_of_arrays_t<tree_value_t<Dynamics>>;

  template <std::size_t I>
  static decltype(auto) arg(const Statics& s, const DynArrays& d) {
    if constexpr (stat[I])
      return std::get<count_before<I>(stat, true)>(s);
    else
      return std::get<count_before<I>(stat, false)>(d);
  }

  template <class G, std::size_t... I>
  static auto invoke(G& f, const Statics& s, const DynArrays& d, std::index_sequence<I...>)
      -> decltype(f(arg<I>(s, d)...)) {
    return f(arg<I>(s, d)...);
  }

  static constexpr bool callable = requires(F & f, const Statics& s, const DynArrays& d) {
    invoke(f, s, d, std::index_sequence_for<A...>{});
  };
};

/// The jitted call's result type: what `f` returns, with Array leaves. A result that is not a
/// pytree stops here, with its own message first (then Array stands in, so no second error).
template <class F, std::uint32_t Mask, class... A>
struct jit_result {
  using raw = std::remove_cvref_t<decltype(JitCall<F, Mask, A...>::invoke(
      std::declval<F&>(), std::declval<const typename JitCall<F, Mask, A...>::Statics&>(),
      std::declval<const typename JitCall<F, Mask, A...>::DynArrays&>(),
      std::index_sequence_for<A...>{}))>;
  static_assert(Pytree<raw>,
                "xpr::jit: the jitted function must return an xpr::Array, a number, or a pytree "
                "of them (std::tuple, std::pair, std::array, std::vector, std::map<std::string, "
                "T>, a registered struct); it returns another type (void, a string, ...)");
  using type = tree_of_arrays_t<std::conditional_t<Pytree<raw>, raw, Array>>;
};
template <class F, std::uint32_t Mask, class... A>
using jit_result_t = typename jit_result<F, Mask, A...>::type;

/// The first mask whose call compiles; the result type of that call is the jitted function's.
template <class F, class... A, std::uint32_t... M>
constexpr std::uint32_t first_callable_mask(std::integer_sequence<std::uint32_t, M...>) {
  std::uint32_t out = 0;
  bool found = false;
  ((!found && JitCall<F, M, A...>::callable ? (out = M, found = true) : false), ...);
  return out;
}

template <class... A>
using mask_sequence =
    std::make_integer_sequence<std::uint32_t, (1u << static_number_slots<A...>())>;

/// A call's traced jaxpr, its flat operands (constants then argument leaves).
struct JitApplication {
  std::shared_ptr<const JitTrace> trace;
  Arrays leaves;
};

/// The cache key of everything but the static values: the argument types' identity, the mask,
/// the structure and the leaves' types (weak flags included: a weakly typed input is traced as
/// one, as JAX does).
std::string jit_key(const std::type_info& statics, std::uint32_t mask, const PyTreeDef& def,
                    std::span<const Array> leaves, bool ranks_only = false);

/// Whether a traced jaxpr holds for inputs of any sizes (of the same ranks), given that the
/// function read no size while it was traced: no equation has a parameter that may hold a size
/// (only those listed here, which name axes, dtypes and exponents, are known not to), no
/// sub-jaxpr, and no literal but scalars (and, checked by the caller, no constant but scalars).
/// Binding its equations on inputs of other sizes then gives the trace of the function at those
/// sizes; operands whose sizes no longer agree fail there, and the function is traced again.
bool names_no_size(const ClosedJaxpr& j);

/// Binds the equations of `j` on `values` (its constvars', then its invars'), whose sizes may
/// differ from those `j` was traced at (`eval_jaxpr` checks them): each primitive checks its
/// operands again.
Arrays rebind_jaxpr(const Jaxpr& j, std::span<const Array> values);

/// Counts the sizes read (rt/array.hpp's `size_reads`) while it lives; the count is added to an
/// enclosing counter, since what a nested trace read the enclosing one read too.
class SizeReadCounter {
 public:
  SizeReadCounter() : outer_(size_reads) { size_reads = &count_; }
  ~SizeReadCounter() {
    size_reads = outer_;
    if (outer_) *outer_ += count_;
  }
  SizeReadCounter(const SizeReadCounter&) = delete;
  SizeReadCounter& operator=(const SizeReadCounter&) = delete;
  std::size_t count() const noexcept { return count_; }

 private:
  std::size_t count_ = 0;
  std::size_t* outer_;
};

}  // namespace detail

/// What `jit(f).lower(args...)` returns: the jaxpr traced for those arguments and the C++ source
/// the code generator compiles from it (JAX's `Lowered`, whose `as_text()` is the HLO).
class Lowered {
 public:
  Lowered(ClosedJaxpr jaxpr, JitOptions options)
      : jaxpr_(std::move(jaxpr)), options_(std::move(options)) {}
  /// The traced jaxpr: the function's closed-over constants are its constvars.
  const ClosedJaxpr& jaxpr() const noexcept { return jaxpr_; }
  /// The generated C++ source (`codegen::lower_to_source`).
  std::string as_text() const { return codegen::lower_to_source(jaxpr_, options_); }

 private:
  ClosedJaxpr jaxpr_;
  JitOptions options_;
};

namespace detail {

/// The function `jit(f, options)` returns. Copies share the trace cache.
template <class F>
class Jitted {
 public:
  Jitted(F f, JitOptions options) : f_(std::make_shared<F>(std::move(f))) {
    state_ = std::make_shared<JitState>();
    state_->options = std::move(options);
  }

  template <class... A>
  auto operator()(const A&... args) const {
    // The fast path: every argument a leaf (an Array or a number), none static, no transformation
    // active. A repeat call hashes the leaves' types, finds the trace and its kernel, and runs it.
    if constexpr ((PytreeLeaf<std::remove_cvref_t<A>> && ...) && JitCall<F, 0, A...>::callable) {
      if (state_->options.static_argnums.empty() && no_transformation_active()) {
        using Out = jit_result_t<F, 0, A...>;
        const std::array<Array, sizeof...(A)> leaves{Array(args)...};
        // Data only: a tracer here belongs to a transformation that has ended or to another
        // thread's (none is active on this one). Its primal is readable, but the kernel must not
        // run on it: `bind` below says `escaped_tracer_error`, as every other use does.
        if (all_concrete(leaves)) {
          const void* tag = &type_tag<std::remove_cvref_t<A>...>;
          const std::uint64_t h = signature_hash(tag, leaves);
          const JitFastEntry* e = state_->find_fast(h, tag, leaves);
          if (!e) {
            JitApplication app = apply<0, A...>(args...);
            if (!all_concrete(app.trace->traced.consts)) {
              // Closed over a tracer (cannot happen with no transformation active; kept
              // honest).
              Arrays outs = app.trace->run(app.leaves, state_->options);
              return tree_unflatten<Out>(app.trace->out_def, outs);
            }
            e = state_->add_fast(h, tag, leaves, std::move(app.trace));
          }
          Arrays outs = e->trace->run(leaves, state_->options);
          return tree_unflatten<Out>(e->trace->out_def, outs);
        }
      }
    }
    return dispatch<A...>(
        [&]<std::uint32_t M>() {
          using Out = jit_result_t<F, M, A...>;
          JitApplication app = apply<M, A...>(args...);
          const JitTrace& t = *app.trace;
          // As above: a tracer among the arguments is bound, never run on its primal.
          const bool concrete = no_transformation_active() && all_concrete(app.leaves);
          Arrays outs = concrete && all_concrete(t.traced.consts)
                            ? t.run(app.leaves, state_->options)
                            : rt::bind(pjit_p, concat(t.traced.consts, app.leaves), t.params);
          return tree_unflatten<Out>(t.out_def, outs);
        },
        args...);
  }

  /// The jaxpr and generated source for arguments like `args` (traced, or taken from the cache,
  /// but not run).
  template <class... A>
  Lowered lower(const A&... args) const {
    return dispatch<A...>(
        [&]<std::uint32_t M>() {
          JitApplication app = apply<M, A...>(args...);
          const ConvertedJaxpr& c = app.trace->traced;
          // Back from closure-converted: the constants' inputs become constvars again.
          Jaxpr j = c.jaxpr->jaxpr;
          const auto n = static_cast<std::ptrdiff_t>(c.consts.size());
          j.constvars.assign(j.invars.begin(), j.invars.begin() + n);
          j.invars.erase(j.invars.begin(), j.invars.begin() + n);
          return Lowered(ClosedJaxpr{std::move(j), c.consts}, state_->options);
        },
        args...);
  }

  /// How many times `f` has been traced (for tests and the docs: a cached call traces nothing).
  std::size_t trace_count() const {
    std::lock_guard lock(state_->mutex);
    return state_->traces;
  }

  const JitOptions& options() const noexcept { return state_->options; }

 private:
  /// Runs `body.template operator()<M>()` for the mask `static_argnums` selects.
  template <class... A, class Body>
  auto dispatch(Body&& body, const A&...) const {
    constexpr std::uint32_t first = first_callable_mask<F, A...>(mask_sequence<A...>{});
    if constexpr (!JitCall<F, first, A...>::callable) {
      // Not callable at all: the usual message about arity and argument types, first (the body's
      // result type is not formed, which would bury it under errors about the call).
      // (Evaluated as a constant, so its static_assert fires now, not at the end of the unit.)
      [[maybe_unused]] constexpr bool checked =
          check_callable<F, std::tuple<tree_of_arrays_t<std::remove_cvref_t<A>>...>>();
      // An Array result, as `call_result` gives: the caller's use of it (`f(x).item<double>()`)
      // then adds no errors of its own under the message.
      return (throw core::type_error("jit: the function cannot be called with these arguments"),
              Array());
    } else {
      using Result = decltype(body.template operator()<first>());
      const std::uint32_t mask = static_mask<A...>(state_->options.static_argnums);
      std::optional<Result> result;
      run_mask<A...>(mask, first, body, result, mask_sequence<A...>{});
      return std::move(*result);
    }
  }

  template <class... A, class Body, class Result, std::uint32_t... M>
  void run_mask(std::uint32_t mask, std::uint32_t callable, Body& body,
                std::optional<Result>& result, std::integer_sequence<std::uint32_t, M...>) const {
    (
        [&] {
          if (mask != M) return;
          if constexpr (JitCall<F, M, A...>::callable) {
            using R = decltype(body.template operator()<M>());
            static_assert(std::is_same_v<R, Result>,
                          "xpr::jit: the function returns different types when different "
                          "arguments are static; make it return the same type either way");
            result.emplace(body.template operator()<M>());
          } else {
            const std::string now = mask_positions<A...>(M);
            throw core::type_error(
                "jit: expected a function that can be called with " +
                (now.empty() ? std::string("every argument traced (as xpr::Array)")
                             : "arguments " + now +
                                   " static (as their C++ values) and the others "
                                   "traced (as xpr::Array)") +
                ", found one that takes a C++ value where an Array would be passed: it can be "
                "called with static_argnums = {" +
                mask_positions<A...>(callable) +
                "}. Pass that option (a static argument is keyed by its value: each new value "
                "traces again), or take the argument as xpr::Array or auto");
          }
        }(),
        ...);
  }

  /// The trace for these arguments under mask `M`, from the cache or made now.
  template <std::uint32_t M, class... A>
  JitApplication apply(const A&... args) const {
    using Call = JitCall<F, M, A...>;
    auto statics = Call::statics_of(std::index_sequence_for<A...>{}, args...);
    auto dynamics = Call::dynamics_of(std::index_sequence_for<A...>{}, args...);
    auto [leaves, def] = tree_flatten(dynamics);
    const std::string key = jit_key(typeid(std::tuple<std::remove_cvref_t<A>...>), M, def, leaves);

    using StaticCopy = decltype(std::apply(
        [](const auto&... s) { return std::tuple<std::remove_cvref_t<decltype(s)>...>(s...); },
        statics));
    static_assert(std::equality_comparable<StaticCopy>,
                  "xpr::jit: static arguments are compared to find the cached trace, so their "
                  "types must have operator==");
    auto key_value = std::make_shared<const StaticKeyOf<StaticCopy>>(
        std::apply([](const auto&... s) { return StaticCopy(s...); }, statics));

    std::lock_guard lock(state_->mutex);
    auto& entries = state_->cache[key];
    for (const auto& e : entries)
      if (e->statics->equals(*key_value)) return {e, std::move(leaves)};

    // A trace that holds for any sizes is rebound on these (its equations re-bound, `f` not run).
    const std::string any_key =
        jit_key(typeid(std::tuple<std::remove_cvref_t<A>...>), M, def, leaves, true);
    for (const auto& g : state_->any_size[any_key]) {
      if (!g->statics->equals(*key_value)) continue;
      const ClosedJaxpr& gj = *g->traced.jaxpr;
      FlatFunction rebind = [&](std::span<const Array> in) -> Arrays {
        return rebind_jaxpr(gj.jaxpr, concat(concat(gj.consts, g->traced.consts), in));
      };
      auto t = std::make_shared<JitTrace>();
      try {
        t->traced = trace_to_converted_jaxpr(rebind, avals_of_values(leaves));
      } catch (const core::error&) {
        break;  // a constant of fixed shape does not fit these sizes: trace `f` (it says why)
      }
      t->out_def = g->out_def;
      t->params = pjit_params(t->traced.jaxpr, state_->options);
      t->statics = key_value;
      entries.push_back(t);
      return {std::move(t), std::move(leaves)};
    }

    // Trace `f` on the leaves' types (Autodidax's cached `xla_call_impl`), counting the sizes it
    // reads.
    std::optional<PyTreeDef> out_def;
    F& f = *f_;
    const PyTreeDef& in_def = def;
    std::size_t reads = 0;
    FlatFunction flat = [&](std::span<const Array> in) -> Arrays {
      auto d = tree_unflatten<typename Call::DynArrays>(in_def, in);
      auto out = [&] {
        SizeReadCounter counter;
        auto r = Call::invoke(f, statics, d, std::index_sequence_for<A...>{});
        reads += counter.count();
        return r;
      }();
      auto [out_leaves, odef] = tree_flatten(out);
      out_def = std::move(odef);
      return out_leaves;
    };
    ++state_->traces;
    auto t = std::make_shared<JitTrace>();
    t->traced = trace_to_converted_jaxpr(flat, avals_of_values(leaves));
    t->out_def = std::move(*out_def);
    t->params = pjit_params(t->traced.jaxpr, state_->options);
    t->statics = key_value;
    // A trace closing over tracers of an enclosing transformation is good for this call only.
    if (all_concrete(t->traced.consts)) {
      entries.push_back(t);
      // An array constant has a size of its own (f may have made it from a size it read through
      // aval(): zeros of the input's shape), so a trace holding one is for this size only.
      const bool scalar_consts = std::all_of(t->traced.consts.begin(), t->traced.consts.end(),
                                             [](const Array& c) { return c.ndim() == 0; });
      if (reads == 0 && scalar_consts && names_no_size(*t->traced.jaxpr))
        state_->any_size[any_key].push_back(t);
    }
    return {std::move(t), std::move(leaves)};
  }

  std::shared_ptr<F> f_;
  std::shared_ptr<JitState> state_;
};

}  // namespace detail

/// `jit(f, options)`: `f` traced to a jaxpr once per input signature (the shapes, dtypes and weak
/// types of its array leaves, the structure of its pytree arguments, and the values of its
/// static arguments) and run as one compiled call. Under a transformation a call stages one
/// `pjit` equation, which the transformation rewrites as a whole, so `jit` composes with `grad`,
/// `vmap`, `jvp`, `linearize`, `vjp` and itself in any order. Eager calls with a signature seen
/// before trace nothing: side effects of `f` (a print) happen only while it is traced.
///
/// Arguments of types `jit` cannot trace (a `std::string`, an enum, a user type that is not a
/// registered pytree) are static: passed to `f` as they are and part of the cache key. Number
/// arguments are traced (as rank-0 Arrays) unless `options.static_argnums` lists them. See
/// examples/jit.cpp and docs/jit.md.
template <class F>
auto jit(F f, JitOptions options = {}) {
  return detail::Jitted<F>(std::move(f), std::move(options));
}

}  // namespace xpr::rt

namespace xpr {
using rt::jit;
using rt::Lowered;
}  // namespace xpr

#if XPR_DEFINITIONS

namespace xpr::rt::detail {

XPR_FUNC JitOptions jit_options_of(const Params& params) {
  JitOptions o;
  if (const ParamValue* n = params.find("name"))
    if (const Dim* d = std::get_if<Dim>(n)) o.name = d->name;
  if (const ParamValue* b = params.find("backend"))
    if (const Dim* d = std::get_if<Dim>(b)) {
      if (d->name == "interpreter") o.backend = JitBackend::interpreter;
      if (d->name == "compiled") o.backend = JitBackend::compiled;
    }
  if (const ParamValue* p = params.find("precise_math"))
    if (const bool* v = std::get_if<bool>(p)) o.precise_math = *v;
  return o;
}

XPR_FUNC Params pjit_params(JaxprParam jaxpr, const JitOptions& options) {
  Params p{{"name", Dim{options.name}}, {"jaxpr", std::move(jaxpr)}};
  if (options.backend != JitBackend::automatic)
    p.set("backend", Dim{backend_name(options.backend)});
  if (options.precise_math) p.set("precise_math", true);
  return p;
}

XPR_FUNC Params renamed(Params params, const char* transform) {
  std::string name = jit_options_of(params).name;
  params.set("name", Dim{std::string(transform) + "(" + name + ")"});
  return params;
}

}  // namespace xpr::rt::detail

namespace xpr::rt {

XPR_FUNC Avals PjitP::abstract_eval(std::span<const ShapedArray> args, const Params& params) const {
  const ClosedJaxpr& j = detail::jaxpr_param(params, "jaxpr");
  if (args.size() != j.jaxpr.invars.size())
    throw core::type_error("pjit: expected " + std::to_string(j.jaxpr.invars.size()) +
                           " operands, found " + std::to_string(args.size()));
  for (std::size_t i = 0; i < args.size(); ++i)
    if (!args[i].same_type(j.jaxpr.invars[i].aval()))
      throw core::type_error("pjit: expected operand " + std::to_string(i) + " of type " +
                             j.jaxpr.invars[i].aval().str() + ", found " + args[i].str());
  return j.out_avals();
}

XPR_FUNC std::pair<Arrays, Tangents> PjitP::jvp_symbolic(std::span<const Array> primals,
                                                         std::span<const Tangent> tangents,
                                                         const Params& params) const {
  const ClosedJaxpr& j = detail::jaxpr_param(params, "jaxpr");
  std::vector<bool> nonzero;
  for (const Tangent& t : tangents) nonzero.push_back(t.has_value());
  detail::JvpJaxpr jj = memo_jvp(params.get<JaxprParam>("jaxpr"), nonzero);
  Arrays operands = jj.converted.consts;
  operands.insert(operands.end(), primals.begin(), primals.end());
  for (const Tangent& t : tangents)
    if (t) operands.push_back(*t);
  Arrays outs =
      rt::bind(*this, operands,
               detail::with_param(detail::renamed(params, "jvp"), "jaxpr", jj.converted.jaxpr));
  const std::size_t n_out = j.jaxpr.outvars.size();
  Arrays primals_out(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(n_out));
  Tangents tangents_out;
  for (std::size_t i = 0, k = n_out; i < n_out; ++i)
    tangents_out.push_back(jj.out_nonzero[i] ? Tangent(outs[k++]) : std::nullopt);
  return {std::move(primals_out), std::move(tangents_out)};
}

XPR_FUNC Cotangents PjitP::transpose(std::span<const Cotangent> cts,
                                     std::span<const LinearArg> args, const Params& params) const {
  // The backward pass of the jaxpr, itself traced to a jaxpr (once per sub-jaxpr, pattern of
  // known operands and of zero cotangents) and bound as a pjit: the backward pass of a jitted
  // function is compiled too (JAX's `_pjit_transpose`).
  std::vector<bool> flags;
  for (const LinearArg& a : args) flags.push_back(is_undefined_primal(a));
  for (const Cotangent& c : cts) flags.push_back(c.has_value());
  const std::shared_ptr<const Transposed> t =
      memo_transpose(params.get<JaxprParam>("jaxpr"), flags, args);
  Arrays operands = t->jaxpr.consts;
  for (const LinearArg& a : args)
    if (!is_undefined_primal(a)) operands.push_back(std::get<Array>(a));
  for (const Cotangent& c : cts)
    if (c) operands.push_back(*c);
  Cotangents out(args.size());
  if (t->jaxpr.jaxpr->jaxpr.outvars.empty()) return out;
  Arrays results =
      rt::bind(*this, operands,
               detail::with_param(detail::renamed(params, "transpose"), "jaxpr", t->jaxpr.jaxpr));
  for (std::size_t i = 0, k = 0; i < args.size(); ++i)
    if (t->out_nonzero[i]) out[i] = results[k++];
  return out;
}

XPR_FUNC std::pair<Arrays, BatchDims> PjitP::batch(std::span<const Array> args,
                                                   std::span<const BatchDim> dims,
                                                   std::int64_t axis_size,
                                                   const Params& params) const {
  (void)axis_size;
  if (!detail::any_batched(dims)) return {rt::bind(*this, args, params), BatchDims(args.size())};
  auto [moved, at_front] = detail::batch_at_front(args, dims);
  detail::ConvertedJaxpr batched = detail::convert_constvars(detail::batch_jaxpr(
      detail::jaxpr_param(params, "jaxpr"), at_front, detail::avals_of_values(moved)));
  Arrays operands = detail::concat(batched.consts, moved);
  Arrays outs = rt::bind(*this, operands, detail::with_param(params, "jaxpr", batched.jaxpr));
  return {std::move(outs), BatchDims(outs.size(), BatchDim(0))};
}

XPR_FUNC std::optional<Arrays> PjitP::partial_eval(PartialEvalTrace& trace,
                                                   std::span<const Array> tracers,
                                                   const Params& params) const {
  std::vector<bool> in_unknowns;
  Arrays known_in, unknown_in;
  for (const Array& t : tracers) {
    const PartialVal& pv = detail::as_pe_tracer(t).pval();
    in_unknowns.push_back(pv.is_unknown());
    if (pv.is_known())
      known_in.push_back(*pv.value);
    else
      unknown_in.push_back(t);
  }
  const std::shared_ptr<const Split> held =
      memo_split(params.get<JaxprParam>("jaxpr"), in_unknowns);
  const Split& s = *held;
  const std::size_t n_out = s.out_unknowns.size();
  std::size_t n_known = 0;
  for (bool u : s.out_unknowns) n_known += u ? 0 : 1;
  // The known half runs now, as a pjit of its own (still compiled), giving the known outputs
  // and the residuals; the unknown half is staged, reading the residuals.
  Arrays known_out;
  if (n_known + s.num_res > 0)
    known_out = rt::bind(*this, detail::concat(s.known.consts, known_in),
                         detail::with_param(params, "jaxpr", s.known.jaxpr));
  Arrays unknown_out;
  if (n_known < n_out) {
    Arrays staged_in;
    for (std::size_t r = 0; r < s.num_res; ++r)
      staged_in.push_back(trace.pure(known_out[n_known + r]));
    staged_in.insert(staged_in.end(), unknown_in.begin(), unknown_in.end());
    unknown_out = trace.stage(*this, staged_in, detail::with_param(params, "jaxpr", s.unknown),
                              s.unknown->out_avals());
  }
  Arrays out;
  for (std::size_t i = 0, k = 0, u = 0; i < n_out; ++i)
    out.push_back(s.out_unknowns[i] ? unknown_out[u++] : trace.pure(known_out[k++]));
  return out;
}

XPR_FUNC std::optional<PartialEvalEqn> PjitP::partial_eval_jaxpr(
    const std::vector<bool>& in_unknowns, const Eqn& eqn) const {
  if (std::find(in_unknowns.begin(), in_unknowns.end(), true) == in_unknowns.end())
    return std::nullopt;  // all known: the default rule keeps the equation whole
  const std::shared_ptr<const Split> held =
      memo_split(eqn.params.get<JaxprParam>("jaxpr"), in_unknowns);
  const Split& s = *held;
  if (!s.known.consts.empty()) return std::nullopt;  // consts of a tracer: stage it whole
  PartialEvalEqn result;
  result.out_unknowns = s.out_unknowns;
  std::vector<Var> res;
  for (std::size_t r = 0; r < s.num_res; ++r) res.emplace_back(s.unknown->jaxpr.invars[r].aval());
  Eqn known{eqn.primitive, {}, detail::with_param(eqn.params, "jaxpr", s.known.jaxpr), {}};
  Eqn unknown{eqn.primitive, {}, detail::with_param(eqn.params, "jaxpr", s.unknown), {}};
  unknown.inputs.assign(res.begin(), res.end());
  for (std::size_t i = 0; i < eqn.inputs.size(); ++i)
    (in_unknowns[i] ? unknown : known).inputs.push_back(eqn.inputs[i]);
  for (std::size_t k = 0; k < eqn.outputs.size(); ++k)
    (s.out_unknowns[k] ? unknown : known).outputs.push_back(eqn.outputs[k]);
  known.outputs.insert(known.outputs.end(), res.begin(), res.end());
  if (!known.outputs.empty()) result.known = std::move(known);
  if (!unknown.outputs.empty()) {
    result.unknown = std::move(unknown);
    result.residuals = res;
  }
  return result;
}

XPR_FUNC std::optional<DceEqn> PjitP::dce(const std::vector<bool>& used_outputs,
                                          const Eqn& eqn) const {
  auto [dj, used] = memo_dce(eqn.params.get<JaxprParam>("jaxpr"), used_outputs);
  Eqn e{eqn.primitive, {}, detail::with_param(eqn.params, "jaxpr", dj), {}};
  for (std::size_t i = 0; i < eqn.inputs.size(); ++i)
    if (used[i]) e.inputs.push_back(eqn.inputs[i]);
  for (std::size_t k = 0; k < eqn.outputs.size(); ++k)
    if (used_outputs[k]) e.outputs.push_back(eqn.outputs[k]);
  return DceEqn{used, std::move(e)};
}

XPR_FUNC detail::JvpJaxpr PjitP::memo_jvp(const JaxprParam& j, const std::vector<bool>& nonzero) {
  thread_local detail::SubJaxprMemo<detail::JvpJaxpr> memo;
  check_jaxpr(j);
  return memo.get(
      j, nonzero, [&] { return detail::jvp_jaxpr(*j, nonzero); },
      [](const detail::JvpJaxpr& r) { return detail::all_concrete(r.converted.consts); });
}

XPR_FUNC std::shared_ptr<const PjitP::Split> PjitP::memo_split(
    const JaxprParam& j, const std::vector<bool>& in_unknowns) {
  thread_local detail::SubJaxprMemo<std::shared_ptr<const Split>> memo;
  check_jaxpr(j);
  return memo.get(
      j, in_unknowns,
      [&] {
        PartialEvalJaxpr split = rt::partial_eval_jaxpr(*j, in_unknowns);
        auto s = std::make_shared<Split>();
        s->out_unknowns = split.out_unknowns;
        s->num_res = split.num_res;
        s->known = detail::convert_constvars(std::move(split.known));
        s->unknown = std::make_shared<const ClosedJaxpr>(std::move(split.unknown));
        return std::shared_ptr<const Split>(std::move(s));
      },
      [](const std::shared_ptr<const Split>& r) {
        return detail::all_concrete(r->known.consts) && detail::all_concrete(r->unknown->consts);
      });
}

XPR_FUNC std::shared_ptr<const PjitP::Transposed> PjitP::memo_transpose(
    const JaxprParam& j, const std::vector<bool>& flags, std::span<const LinearArg> args) {
  thread_local detail::SubJaxprMemo<std::shared_ptr<const Transposed>> memo;
  check_jaxpr(j);
  return memo.get(
      j, flags, [&] { return detail::transpose_sub_jaxpr(*j, flags, args); },
      [](const std::shared_ptr<const Transposed>& r) {
        return detail::all_concrete(r->jaxpr.consts);
      });
}

XPR_FUNC std::pair<JaxprParam, std::vector<bool>> PjitP::memo_dce(
    const JaxprParam& j, const std::vector<bool>& used_outputs) {
  thread_local detail::SubJaxprMemo<std::pair<JaxprParam, std::vector<bool>>> memo;
  check_jaxpr(j);
  return memo.get(
      j, used_outputs,
      [&] {
        auto [dj, used] = dce_jaxpr(*j, used_outputs, false);
        return std::pair{JaxprParam(std::make_shared<const ClosedJaxpr>(std::move(dj))),
                         std::move(used)};
      },
      [](const auto& r) { return detail::all_concrete(r.first->consts); });
}

}  // namespace xpr::rt

namespace xpr::rt::detail {

XPR_FUNC const codegen::Kernel* JitTrace::kernel(const JitOptions& options) const {
  std::call_once(kernel_once_, [&] {
    // The closure's constants are constvars again, as `lower` shows them: the generator lowers
    // first what depends only on them (a `take`'s wrapped indices), so the loops that read them
    // are the ones `as_text()` prints.
    Jaxpr j = traced.jaxpr->jaxpr;
    const auto n = static_cast<std::ptrdiff_t>(traced.consts.size());
    j.constvars.insert(j.constvars.begin(), j.invars.begin(), j.invars.begin() + n);
    j.invars.erase(j.invars.begin(), j.invars.begin() + n);
    kernel_ = codegen::kernel_for(j, options);
  });
  return kernel_.get();
}

XPR_FUNC Arrays JitTrace::run(std::span<const Array> leaves, const JitOptions& options) const {
  const codegen::Kernel* k = kernel(options);
  const ClosedJaxpr& j = *traced.jaxpr;
  if (k) {
    // The kernel's constvars: the closure's constants, then the jaxpr's own (usually none, so
    // no concatenation per call).
    if (j.consts.empty()) return k->run(leaves, traced.consts);
    if (traced.consts.empty()) return k->run(leaves, j.consts);
    return k->run(leaves, concat(traced.consts, j.consts));
  }
  if (traced.consts.empty()) return eval_jaxpr(j.jaxpr, j.consts, leaves);
  return eval_jaxpr(j.jaxpr, j.consts, concat(traced.consts, leaves));
}

XPR_FUNC std::uint64_t signature_hash(const void* tag, std::span<const Array> leaves) {
  auto mix = [](std::uint64_t h, std::uint64_t v) {
    return h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
  };
  std::uint64_t h = reinterpret_cast<std::uintptr_t>(tag);
  for (const Array& x : leaves) {
    const ShapedArray& a = detail::aval_of(x);
    h = mix(
        h, (static_cast<std::uint64_t>(a.dtype) << 9) | (a.weak_type ? 256u : 0u) | a.shape.rank());
    for (std::size_t i = 0; i < a.shape.rank(); ++i)
      h = mix(h, static_cast<std::uint64_t>(a.shape[i]));
  }
  return h;
}

XPR_FUNC const JitFastEntry* JitState::find_fast(std::uint64_t h, const void* tag,
                                                 std::span<const Array> leaves) {
  auto matches = [&](const JitFastEntry& e) {
    if (e.hash != h || e.tag != tag || e.avals.size() != leaves.size()) return false;
    for (std::size_t i = 0; i < leaves.size(); ++i)
      if (!(e.avals[i] == detail::aval_of(leaves[i]))) return false;
    return true;
  };
  // Entries are never removed while the state lives, so the last one found stays valid.
  if (const JitFastEntry* e = last_fast.load(std::memory_order_acquire); e && matches(*e)) return e;
  std::shared_lock lock(fast_mutex);
  auto [lo, hi] = fast.equal_range(h);
  for (auto it = lo; it != hi; ++it)
    if (matches(*it->second)) {
      last_fast.store(it->second.get(), std::memory_order_release);
      return it->second.get();
    }
  return nullptr;
}

XPR_FUNC const JitFastEntry* JitState::add_fast(std::uint64_t h, const void* tag,
                                                std::span<const Array> leaves,
                                                std::shared_ptr<const JitTrace> trace) {
  auto e = std::make_unique<JitFastEntry>();
  e->hash = h;
  e->tag = tag;
  e->avals = avals_of_values(leaves);
  e->trace = std::move(trace);
  std::unique_lock lock(fast_mutex);
  auto [lo, hi] = fast.equal_range(h);
  for (auto it = lo; it != hi; ++it)
    if (it->second->tag == tag && it->second->avals == e->avals) return it->second.get();
  return fast.emplace(h, std::move(e))->second.get();
}

XPR_FUNC std::string jit_key(const std::type_info& statics, std::uint32_t mask,
                             const PyTreeDef& def, std::span<const Array> leaves, bool ranks_only) {
  std::string key = statics.name();
  key += '|';
  key += std::to_string(mask);
  key += def.str();
  for (const Array& x : leaves) {
    const ShapedArray& a = detail::aval_of(x);
    key += ranks_only
               ? std::string(core::short_name(a.dtype)) + "/" + std::to_string(a.shape.rank())
               : a.str();
    if (a.weak_type) key += 'w';
  }
  return key;
}

XPR_FUNC bool names_no_size(const ClosedJaxpr& j) {
  static constexpr std::string_view size_free[] = {"axes", "axis",        "new_dtype", "weak_type",
                                                   "y",    "index_dtype", "reverse",   "accuracy"};
  auto scalar = [](const Atom& a) {
    const Literal* l = std::get_if<Literal>(&a);
    return !l || l->value.ndim() == 0;
  };
  for (const Eqn& e : j.jaxpr.eqns) {
    if (!e.primitive) return false;
    for (const auto& [name, value] : e.params) {
      if (std::find(std::begin(size_free), std::end(size_free), name) == std::end(size_free))
        return false;
      if (!std::holds_alternative<bool>(value) && !std::holds_alternative<core::DType>(value) &&
          !std::holds_alternative<Axes>(value) && !std::holds_alternative<std::int64_t>(value) &&
          !std::holds_alternative<None>(value))
        return false;
    }
    for (const Atom& a : e.inputs)
      if (!scalar(a)) return false;
  }
  for (const Atom& a : j.jaxpr.outvars)
    if (!scalar(a)) return false;
  return true;
}

XPR_FUNC Arrays rebind_jaxpr(const Jaxpr& j, std::span<const Array> values) {
  if (values.size() != j.constvars.size() + j.invars.size())
    throw core::type_error("jit: expected " + std::to_string(j.constvars.size() + j.invars.size()) +
                           " values to rebind a jaxpr on, found " + std::to_string(values.size()));
  std::unordered_map<const void*, Array> env;
  std::size_t k = 0;
  for (const Var& v : j.constvars) env.insert_or_assign(v.id(), values[k++]);
  for (const Var& v : j.invars) env.insert_or_assign(v.id(), values[k++]);
  auto read = [&](const Atom& a) -> const Array& {
    if (const Literal* l = std::get_if<Literal>(&a)) return l->value;
    return env.at(std::get<Var>(a).id());
  };
  Arrays ins;
  for (const Eqn& e : j.eqns) {
    ins.clear();
    for (const Atom& a : e.inputs) ins.push_back(read(a));
    Arrays outs = rt::bind(*e.primitive, std::span<const Array>(ins), e.params);
    if (outs.size() != e.outputs.size())
      throw core::type_error("jit: expected " + std::to_string(e.outputs.size()) +
                             " results from " + e.primitive->name() + ", found " +
                             std::to_string(outs.size()));
    for (std::size_t i = 0; i < outs.size(); ++i)
      env.insert_or_assign(e.outputs[i].id(), std::move(outs[i]));
  }
  Arrays result;
  for (const Atom& a : j.outvars) result.push_back(read(a));
  return result;
}

}  // namespace xpr::rt::detail
#endif  // XPR_DEFINITIONS
