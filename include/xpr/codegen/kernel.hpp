// SPDX-License-Identifier: MIT
// A compiled jaxpr (the "program" of tinygrad's split): the lowered plan, the loaded kernel and the
// host services handed to it (the eager dot_general's GEMM, compiled into the host rather than
// emitted or included in every kernel). `compile` caches kernels in memory by jaxpr structure and
// types.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <typeinfo>
#include <unordered_map>
#include <vector>

#include "xpr/codegen/cache.hpp"
#include "xpr/codegen/emit.hpp"
#include "xpr/codegen/workers.hpp"
#include "xpr/core/config.hpp"
#include "xpr/core/error.hpp"
#include "xpr/rt/jaxpr.hpp"
#include "xpr/rt/jaxpr_eval.hpp"
#include "xpr/rt/prims/dot_general.hpp"

namespace xpr::codegen {

namespace detail {

/// The services a kernel calls back into (layout mirrored by `struct XprHost` in emit.hpp).
struct Host {
  void (*gemm)(int dtype, long long batch, long long m, long long n, long long k, const void* a,
               int a_transposed, const void* b, int b_transposed, void* c);
  /// Runs `Lowered::host_calls[k]` of the plan `ctx` on the kernel's buffers `in` and `out`.
  void (*call)(const void* ctx, int k, void* const* in, void* const* out);
  const void* ctx;
  /// Runs a loop's range function over [0, count) in parts on several threads (workers.hpp);
  /// null when this process splits no loops (`XPR_NUM_THREADS=1`, one CPU).
  void (*parallel)(RangeFn body, void* const* b, const long long* n, const Host* h,
                   long long count);
};

void host_gemm(int dtype, long long batch, long long m, long long n, long long k, const void* a,
               int ta, const void* b, int tb, void* c);

/// The primitive's impl on copies of the operand buffers, its results checked against the
/// equation's types and copied into the result buffers. Exceptions propagate through the
/// kernel's frames (it is compiled with unwind tables, and holds no resources of its own).
void host_call(const void* ctx, int k, void* const* in, void* const* out);

inline const Host& host() {
  static const Host h{&host_gemm, &host_call, nullptr, jit_threads() > 1 ? &run_in_parts : nullptr};
  return h;
}

/// The calling thread's block for kernel temporaries (64-byte aligned, at least `bytes`), kept
/// from call to call: a small program's kernel runs in less time than an allocation takes, and a
/// reused block is already mapped and in cache. Blocks larger than `max_bytes` are not kept (a
/// thread would hold the memory forever), nor lent twice at once: `get` returns null then, and
/// the caller allocates.
class ScratchBlock {
 public:
  static constexpr std::size_t max_bytes = std::size_t{1} << 22;

  /// Borrows the block while it lives.
  class Lease {
   public:
    XPR_MEMBER explicit Lease(std::size_t bytes);
    XPR_MEMBER ~Lease();
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    std::byte* data() const noexcept { return data_; }

   private:
    std::byte* data_ = nullptr;
    std::unique_ptr<std::byte[], void (*)(std::byte*)> own_{nullptr, &release};
  };

 private:
  static void release(std::byte* p) noexcept { ::operator delete[](p, std::align_val_t{64}); }
  static std::byte* allocate(std::size_t bytes) {
    return new (std::align_val_t{64}) std::byte[bytes];
  }
  XPR_MEMBER static ScratchBlock& mine();

  std::unique_ptr<std::byte[], void (*)(std::byte*)> block_{nullptr, &release};
  std::size_t bytes_ = 0;
  bool lent_ = false;
};

}  // namespace detail

/// A jaxpr compiled to native code for one set of argument and const types.
class Kernel {
 public:
  Kernel(Lowered plan, std::shared_ptr<const Library> lib, rt::Avals in_avals,
         rt::Avals const_avals)
      : plan_(std::move(plan)),
        lib_(std::move(lib)),
        in_avals_(std::move(in_avals)),
        const_avals_(std::move(const_avals)) {
    for (const rt::ShapedArray& t : plan_.temps) {
      // 64-byte aligned slots in one scratch block.
      std::size_t bytes = core::checked_nbytes(t.size(), core::itemsize(t.dtype));
      temp_offsets_.push_back(temp_bytes_);
      temp_bytes_ += (bytes + 63) / 64 * 64;
    }
    // Where each output buffer first appears among the results (an output may be listed twice).
    first_result_.assign(plan_.kernel_outputs.size(), 0);
    for (std::size_t p = plan_.outputs.size(); p-- > 0;)
      if (plan_.outputs[p].kind == OutputSpec::kernel_buffer)
        first_result_[plan_.outputs[p].index] = p;
  }

  /// The generated C++ source; empty when the kernel was loaded through the disk cache's index
  /// without lowering (`codegen::lower(jaxpr).source`, or `jit(f).lower(args...).as_text()`,
  /// gives it).
  const std::string& source() const noexcept { return plan_.source; }
  const Lowered& plan() const noexcept { return plan_; }

  /// Runs the kernel. Throws `type_error` when the arguments or consts do not have the types the
  /// kernel was compiled for.
  rt::Arrays run(std::span<const rt::Array> args, std::span<const rt::Array> consts = {}) const {
    return run(args, {}, consts);
  }

  /// `run` with the arguments `lead` followed by `args` (a closure's values, then the call's),
  /// without building the concatenation.
  XPR_MEMBER rt::Arrays run(std::span<const rt::Array> lead, std::span<const rt::Array> args,
                            std::span<const rt::Array> consts) const;

 private:
  XPR_MEMBER static void check(const char* what, const rt::Avals& want,
                               std::span<const rt::Array> got, std::size_t offset = 0);

  Lowered plan_;
  std::shared_ptr<const Library> lib_;
  rt::Avals in_avals_, const_avals_;
  std::vector<std::size_t> temp_offsets_;
  std::size_t temp_bytes_ = 0;
  std::vector<std::size_t> first_result_;
};

namespace detail {

/// The kernel index's text of `jaxpr` compiled with `options` (docs/codegen.md, "Caches"):
/// every type, literal bit, primitive and parameter, variables numbered by definition; empty
/// when the jaxpr holds what it does not spell (a sub-jaxpr, a traced literal, ...): such
/// programs are lowered on every first call, as before.
std::string index_program(const rt::Jaxpr& jaxpr, const JitOptions& options);

/// The index body for a kernel: its entry key and the plan without its source; empty when the
/// plan holds what the text does not spell (literal outputs, check_max_trips equations).
std::string index_body(const std::string& key, const Lowered& plan);

/// Reads `index_body`'s text back; false when it is not well formed.
bool parse_index_body(std::string_view body, std::string& key, Lowered& plan);

struct KernelKey {
  rt::Jaxpr jaxpr;  // holds its variables alive, so structural comparison stays valid
  bool precise = false;
  friend bool operator==(const KernelKey& a, const KernelKey& b) {
    return a.precise == b.precise && a.jaxpr == b.jaxpr;
  }
};
struct KernelKeyHash {
  std::size_t operator()(const KernelKey& k) const { return rt::hash_value(k.jaxpr) ^ k.precise; }
};

}  // namespace detail

/// Compiles `jaxpr` (for the types of its invars and constvars) into a Kernel, or returns the one
/// already compiled for an equal jaxpr. Kernels for jaxprs that differ only in sizes share one
/// compiled object (the source names sizes through the run-time array `n`). Throws
/// `not_implemented_error` for a primitive codegen does not cover, `compile_error` when the
/// compiler rejects the generated code, and `no_compiler_error` when there is no compiler.
std::shared_ptr<const Kernel> compile(const rt::Jaxpr& jaxpr, const JitOptions& options = {});

inline std::shared_ptr<const Kernel> compile(const rt::ClosedJaxpr& jaxpr,
                                             const JitOptions& options = {}) {
  return compile(jaxpr.jaxpr, options);
}

}  // namespace xpr::codegen

#if XPR_DEFINITIONS

namespace xpr::codegen::detail {

/// Row-major `rows x cols` matrices, `batch` of them, transposed into `out` (cols x rows each).
template <class T>
const T* transposed(const T* data, long long batch, long long rows, long long cols,
                    std::vector<T>& out) {
  out.resize(static_cast<std::size_t>(batch * rows * cols));
  for (long long s = 0; s < batch; ++s) {
    const T* src = data + s * rows * cols;
    T* dst = out.data() + s * rows * cols;
    for (long long i = 0; i < rows; ++i)
      for (long long j = 0; j < cols; ++j) dst[j * rows + i] = src[i * cols + j];
  }
  return out.data();
}

/// The kernels' GEMM is the eager `dot_general`'s (`rt::detail::batched_gemm`: Eigen for floats,
/// a wrap-around loop for integers), fed row-major operands; a transposed operand is copied
/// (O(size), against the product's O(size · free size)). Sharing that one instantiation of
/// Eigen's GEMM per dtype is what keeps this header cheap to include: a second set (one per
/// combination of transposes) cost every includer about 3 s of compile time.
template <class T>
void gemm_typed(long long batch, long long m, long long n, long long k, const void* a, int ta,
                const void* b, int tb, void* c) {
  const T* A = static_cast<const T*>(a);
  const T* B = static_cast<const T*>(b);
  std::vector<T> abuf, bbuf;
  if (ta) A = transposed(A, batch, k, m, abuf);  // stored k x m
  if (tb) B = transposed(B, batch, n, k, bbuf);  // stored n x k
  rt::detail::DotLayout l;
  l.batch = batch;
  l.m = m;
  l.n = n;
  l.k = k;
  rt::detail::batched_gemm(A, B, static_cast<T*>(c), l);
}

XPR_FUNC void host_gemm(int dtype, long long batch, long long m, long long n, long long k,
                        const void* a, int ta, const void* b, int tb, void* c) {
  switch (static_cast<core::DType>(dtype)) {
    case core::DType::int32:
      return gemm_typed<std::int32_t>(batch, m, n, k, a, ta, b, tb, c);
    case core::DType::int64:
      return gemm_typed<std::int64_t>(batch, m, n, k, a, ta, b, tb, c);
    case core::DType::float32:
      return gemm_typed<float>(batch, m, n, k, a, ta, b, tb, c);
    case core::DType::float64:
      return gemm_typed<double>(batch, m, n, k, a, ta, b, tb, c);
    case core::DType::bool_:
      return;  // not lowered (emit.hpp)
  }
}

XPR_FUNC void host_call(const void* ctx, int k, void* const* in, void* const* out) {
  const Lowered& plan = *static_cast<const Lowered*>(ctx);
  const rt::Eqn& e = plan.host_calls.at(static_cast<std::size_t>(k));
  rt::Arrays args;
  args.reserve(e.inputs.size());
  for (std::size_t i = 0; i < e.inputs.size(); ++i) {
    if (const rt::Literal* l = std::get_if<rt::Literal>(&e.inputs[i])) {
      args.push_back(l->value);
      continue;
    }
    const rt::ShapedArray& a = rt::aval_of(e.inputs[i]);
    rt::ArrayBuilder copy(a);
    std::memcpy(copy.bytes(), in[i], a.size() * core::itemsize(a.dtype));
    args.push_back(std::move(copy).finish());
  }
  const rt::Arrays results = e.primitive->impl(args, e.params);
  const std::string name(e.primitive->name());
  if (results.size() != e.outputs.size())
    throw core::type_error("jit: the impl of '" + name + "' returned " +
                           std::to_string(results.size()) + " results; its equation has " +
                           std::to_string(e.outputs.size()));
  for (std::size_t j = 0; j < results.size(); ++j) {
    const rt::ShapedArray& want = e.outputs[j].aval();
    const rt::Array& r = results[j];
    if (!r.is_concrete() || r.shape() != want.shape || r.dtype() != want.dtype)
      throw core::type_error(
          "jit: result " + std::to_string(j) + " of '" + name + "'s impl is " +
          (r.is_concrete() ? rt::detail::aval_of(r).str() : std::string("not concrete")) +
          "; its abstract evaluation gave " + want.str());
    std::memcpy(out[j], r.concrete()->bytes(), want.size() * core::itemsize(want.dtype));
  }
}

XPR_FUNC ScratchBlock& ScratchBlock::mine() {
  thread_local ScratchBlock s;
  return s;
}

XPR_FUNC ScratchBlock::Lease::Lease(std::size_t bytes) {
  ScratchBlock& s = mine();
  if (bytes > max_bytes || s.lent_) {
    own_.reset(allocate(bytes));
    data_ = own_.get();
    return;
  }
  if (bytes > s.bytes_) {
    s.block_.reset();
    s.bytes_ = 0;
    s.block_.reset(allocate(bytes));
    s.bytes_ = bytes;
  }
  s.lent_ = true;
  data_ = s.block_.get();
}

XPR_FUNC ScratchBlock::Lease::~Lease() {
  if (!own_) mine().lent_ = false;
}
}  // namespace xpr::codegen::detail

namespace xpr::codegen {

XPR_FUNC rt::Arrays Kernel::run(std::span<const rt::Array> lead, std::span<const rt::Array> args,
                                std::span<const rt::Array> consts) const {
  if (lead.size() + args.size() != in_avals_.size())
    throw core::type_error("jit kernel: expected " + std::to_string(in_avals_.size()) +
                           " arguments, found " + std::to_string(lead.size() + args.size()));
  if (consts.size() != const_avals_.size())
    throw core::type_error("jit kernel: expected " + std::to_string(const_avals_.size()) +
                           " consts, found " + std::to_string(consts.size()));
  check("arguments", in_avals_, lead);
  check("arguments", in_avals_, args, lead.size());
  check("consts", const_avals_, consts);
  auto arg = [&](std::size_t i) -> const rt::Array& {
    return i < lead.size() ? lead[i] : args[i - lead.size()];
  };
  const std::size_t nargs = lead.size() + args.size();
  const std::size_t nin = nargs + consts.size();
  const std::size_t nbuf = nin + plan_.kernel_outputs.size() + plan_.temps.size();
  void* small[16];
  std::vector<void*> big;
  void** b = small;
  if (nbuf > 16) {
    big.resize(nbuf);
    b = big.data();
  }
  auto data = [](const rt::Array& a) {
    return const_cast<void*>(static_cast<const void*>(a.concrete()->bytes()));
  };
  for (std::size_t i = 0; i < nargs; ++i) b[i] = data(arg(i));
  for (std::size_t i = 0; i < consts.size(); ++i) b[nargs + i] = data(consts[i]);
  // The results are made before the call: an output buffer's array is written by the kernel
  // before anyone else can see it, and one vector is the only allocation besides the buffers.
  rt::Arrays result;
  result.reserve(plan_.outputs.size());
  for (std::size_t p = 0; p < plan_.outputs.size(); ++p) {
    const OutputSpec& o = plan_.outputs[p];
    switch (o.kind) {
      case OutputSpec::kernel_buffer:
        if (first_result_[o.index] == p) {
          rt::ArrayBuilder out(plan_.kernel_outputs[o.index]);
          b[nin + o.index] = out.bytes();
          result.push_back(std::move(out).finish());
        } else {
          result.push_back(result[first_result_[o.index]]);
        }
        break;
      case OutputSpec::argument:
        result.push_back(arg(o.index));
        break;
      case OutputSpec::constant:
        result.push_back(consts[o.index]);
        break;
      case OutputSpec::literal:
        result.push_back(o.value);
        break;
    }
  }
  LoopControl loops;  // loops and check_max_trips report through it (emit.hpp)
  {
    std::optional<detail::ScratchBlock::Lease> scratch;
    if (temp_bytes_) {
      scratch.emplace(temp_bytes_);
      for (std::size_t i = 0; i < plan_.temps.size(); ++i)
        b[nin + plan_.kernel_outputs.size() + i] = scratch->data() + temp_offsets_[i];
    }
    if (plan_.control >= 0) b[plan_.control] = loops.begin();
    if (plan_.host_calls.empty()) {
      lib_->fn(b, plan_.dims.data(), &detail::host());
    } else {
      detail::Host h = detail::host();
      h.ctx = &plan_;
      lib_->fn(b, plan_.dims.data(), &h);
    }
  }
  loops.end(plan_);  // may throw: after the scratch block is given back
  return result;
}

XPR_FUNC void Kernel::check(const char* what, const rt::Avals& want, std::span<const rt::Array> got,
                            std::size_t offset) {
  // `got` are `want`'s entries from `offset` on; the caller checked the count.
  for (std::size_t j = 0; j < got.size(); ++j) {
    const std::size_t i = offset + j;
    if (!want[i].same_type(rt::detail::aval_of(got[j])))
      throw core::type_error(std::string("jit kernel: expected ") + what + " " + std::to_string(i) +
                             " of type " + want[i].str() + ", found " +
                             rt::detail::aval_of(got[j]).str());
    if (!got[j].is_concrete())
      throw core::type_error(std::string("jit kernel: expected concrete ") + what +
                             ", found a traced value");
  }
}

}  // namespace xpr::codegen

namespace xpr::codegen::detail {

XPR_FUNC std::string index_program(const rt::Jaxpr& jaxpr, const JitOptions& options) {
  std::string t = options.precise_math ? "P" : "F";
  std::unordered_map<const void*, std::size_t> numbers;
  auto word = [&t](std::string_view w) {  // length-prefixed: no text can run into the next
    t += std::to_string(w.size());
    t += ':';
    t += w;
  };
  auto aval = [&t](const rt::ShapedArray& a) {
    t += a.str();
    t += a.weak_type ? 'w' : 's';
  };
  auto define = [&](const rt::Var& v) {
    numbers.emplace(v.id(), numbers.size());
    t += 'd';
    aval(v.aval());
  };
  auto atom = [&](const rt::Atom& a) {
    if (const rt::Var* v = std::get_if<rt::Var>(&a)) {
      auto it = numbers.find(v->id());
      if (it == numbers.end()) return false;
      t += 'v' + std::to_string(it->second);
      return true;
    }
    const rt::Array& x = std::get<rt::Literal>(a).value;
    if (!x.is_concrete()) return false;
    t += 'l';
    aval(rt::detail::aval_of(x));
    for (unsigned char c : rt::detail::array_bytes(x)) {
      t += "0123456789abcdef"[c >> 4];
      t += "0123456789abcdef"[c & 15];
    }
    return true;
  };
  auto ints = [&t](const auto& v) {
    t += '[';
    for (const auto& i : v) t += std::to_string(static_cast<long long>(i)) + ',';
    t += ']';
  };
  t += "|c";
  for (const rt::Var& v : jaxpr.constvars) define(v);
  t += "|i";
  for (const rt::Var& v : jaxpr.invars) define(v);
  for (const rt::Eqn& e : jaxpr.eqns) {
    if (!e.primitive) return {};
    t += "|e";
    word(e.primitive->name());
    word(typeid(*e.primitive).name());
    for (const rt::Atom& a : e.inputs)
      if (!atom(a)) return {};
    for (const auto& [name, value] : e.params) {
      t += 'p';
      word(name);
      if (const bool* b = std::get_if<bool>(&value)) {
        t += *b ? "b1" : "b0";
      } else if (const std::int64_t* i = std::get_if<std::int64_t>(&value)) {
        t += 'i' + std::to_string(*i);
      } else if (const double* d = std::get_if<double>(&value)) {
        std::uint64_t bits;
        std::memcpy(&bits, d, 8);
        t += 'f' + hex16(bits);
      } else if (const core::DType* dt = std::get_if<core::DType>(&value)) {
        t += 't';
        t += core::short_name(*dt);
      } else if (const core::Shape* sh = std::get_if<core::Shape>(&value)) {
        t += 's';
        ints(sh->dims());
      } else if (const rt::Axes* ax = std::get_if<rt::Axes>(&value)) {
        t += 'a';
        ints(*ax);
      } else if (const rt::BoolTuple* bt = std::get_if<rt::BoolTuple>(&value)) {
        t += 'B';
        ints(*bt);
      } else if (std::holds_alternative<rt::None>(value)) {
        t += 'n';
      } else {
        return {};  // sub-jaxprs, dimension numbers, ...: not spelled here
      }
    }
    t += 'o';
    for (const rt::Var& v : e.outputs) define(v);
  }
  t += "|o";
  for (const rt::Atom& a : jaxpr.outvars)
    if (!atom(a)) return {};
  return t;
}

#if defined(__GLIBCXX__) && defined(__x86_64__)
// A tripwire: a field added to Lowered must be written by index_body and read back by
// parse_index_body (or make index_body return empty for plans that use it), else a kernel loaded
// through the index runs with that field defaulted.
static_assert(sizeof(Lowered) == 200, "Lowered changed: update the kernel index's plan text");
#endif

XPR_FUNC std::string index_body(const std::string& key, const Lowered& plan) {
  if (!plan.checks.empty() || !plan.host_calls.empty()) return {};
  std::string b = key + "\n";
  auto num = [&b](long long v) {
    b += std::to_string(v);
    b += ' ';
  };
  auto aval = [&](const rt::ShapedArray& a) {
    num(static_cast<int>(a.dtype));
    num(a.weak_type);
    num(static_cast<long long>(a.shape.rank()));
    for (std::size_t i = 0; i < a.shape.rank(); ++i) num(a.shape[i]);
  };
  num(static_cast<long long>(plan.num_args));
  num(static_cast<long long>(plan.num_consts));
  num(plan.control);
  num(static_cast<long long>(plan.kernel_outputs.size()));
  for (const rt::ShapedArray& a : plan.kernel_outputs) aval(a);
  num(static_cast<long long>(plan.temps.size()));
  for (const rt::ShapedArray& a : plan.temps) aval(a);
  num(static_cast<long long>(plan.outputs.size()));
  for (const OutputSpec& o : plan.outputs) {
    if (o.kind == OutputSpec::literal) return {};
    num(static_cast<int>(o.kind));
    num(static_cast<long long>(o.index));
    aval(o.aval);
  }
  num(static_cast<long long>(plan.dims.size()));
  for (long long d : plan.dims) num(d);
  b += "\n";
  return b;
}

XPR_FUNC bool parse_index_body(std::string_view body, std::string& key, Lowered& plan) {
  const std::size_t nl = body.find('\n');
  if (nl == std::string_view::npos) return false;
  key = std::string(body.substr(0, nl));
  const char* p = body.data() + nl + 1;
  const char* end = body.data() + body.size();
  bool ok = true;
  auto num = [&](long long lo, long long hi) -> long long {
    long long v = 0;
    auto r = std::from_chars(p, end, v);
    if (r.ec != std::errc() || r.ptr == end || *r.ptr != ' ' || v < lo || v > hi) {
      ok = false;
      return lo;
    }
    p = r.ptr + 1;
    return v;
  };
  constexpr long long big = std::numeric_limits<long long>::max();
  auto aval = [&]() -> rt::ShapedArray {
    rt::ShapedArray a;
    a.dtype = static_cast<core::DType>(num(0, core::num_dtypes - 1));
    a.weak_type = num(0, 1) != 0;
    const long long rank = num(0, 64);
    std::vector<std::int64_t> dims;
    for (long long i = 0; ok && i < rank; ++i) dims.push_back(num(0, big));
    if (ok) a.shape = core::Shape(std::move(dims));  // checks the product for overflow
    return a;
  };
  auto count = [&] { return static_cast<std::size_t>(num(0, 1 << 20)); };
  plan = Lowered{};
  plan.num_args = count();
  plan.num_consts = count();
  plan.control = static_cast<int>(num(-1, 1 << 20));
  for (std::size_t i = 0, n = count(); ok && i < n; ++i) plan.kernel_outputs.push_back(aval());
  for (std::size_t i = 0, n = count(); ok && i < n; ++i) plan.temps.push_back(aval());
  for (std::size_t i = 0, n = count(); ok && i < n; ++i) {
    OutputSpec o;
    o.kind = static_cast<OutputSpec::Kind>(num(OutputSpec::kernel_buffer, OutputSpec::constant));
    o.index = static_cast<std::size_t>(num(0, 1 << 20));
    o.aval = aval();
    plan.outputs.push_back(std::move(o));
  }
  for (std::size_t i = 0, n = count(); ok && i < n; ++i)
    plan.dims.push_back(num(std::numeric_limits<long long>::min(), big));
  return ok && p + 1 == end && *p == '\n';
}

}  // namespace xpr::codegen::detail

namespace xpr::codegen {

XPR_FUNC std::shared_ptr<const Kernel> compile(const rt::Jaxpr& jaxpr, const JitOptions& options) {
  struct Slot {
    std::once_flag once;
    std::shared_ptr<const Kernel> kernel;
    std::string unsupported;  // why lowering failed (remembered: later calls do not retry)
  };
  static std::mutex mu;
  static std::unordered_map<detail::KernelKey, std::shared_ptr<Slot>, detail::KernelKeyHash> cache;
  detail::KernelKey key{jaxpr, options.precise_math};
  std::shared_ptr<Slot> slot;
  bool fresh = false;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it == cache.end()) {
      // Bounded (entry.hpp): emptied when full. A thread compiling a dropped slot keeps it (and
      // its caller gets its kernel); a later caller of that program makes a new slot.
      if (cache.size() >= max_kernels_in_memory) cache.clear();
      it = cache.emplace(std::move(key), std::make_shared<Slot>()).first;
      fresh = true;
      detail::counters().kernels_in_memory = cache.size();
    }
    slot = it->second;
  }
  std::call_once(slot->once, [&] {
    rt::Avals consts;
    for (const rt::Var& v : jaxpr.constvars) consts.push_back(v.aval());
    // A program compiled before, by this build, with this compiler, on this CPU: its index names
    // the entry and the plan, and neither lowering nor the compiler memo runs.
    const std::string program =
        detail::index_identity().empty() ? std::string() : detail::index_program(jaxpr, options);
    if (!program.empty()) {
      Lowered plan;
      std::string entry;
      if (const std::string body = detail::read_index(program);
          !body.empty() && detail::parse_index_body(body, entry, plan)) {
        if (auto lib = detail::load_entry(entry)) {
          slot->kernel = std::make_shared<const Kernel>(std::move(plan), std::move(lib),
                                                        jaxpr.in_avals(), std::move(consts));
          return;
        }
      }
    }
    Lowered plan;
    try {
      plan = lower(jaxpr, options);
    } catch (const core::not_implemented_error& e) {
      slot->unsupported = e.what();
      return;
    }
    auto lib = detail::load_library(plan.source);
    if (!program.empty())
      if (const std::string body = detail::index_body(lib->key, plan); !body.empty())
        detail::write_index(program, body);
    slot->kernel = std::make_shared<const Kernel>(std::move(plan), std::move(lib), jaxpr.in_avals(),
                                                  std::move(consts));
  });
  if (!slot->unsupported.empty()) throw core::not_implemented_error(slot->unsupported);
  if (!fresh) detail::counters().memory_hits++;
  return slot->kernel;
}

}  // namespace xpr::codegen
#endif  // XPR_DEFINITIONS
