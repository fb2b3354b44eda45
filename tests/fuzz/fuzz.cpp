// The fuzz test of the runtime tier (issue 11): a seeded mutator over a corpus of printed jaxprs
// (every primitive, every higher-order primitive) and a list of hostile API calls. Each mutant is
// parsed and, when it parses, type-checked, evaluated on small inputs, printed and re-parsed,
// differentiated (jvp, vjp) and vmapped; only `xpr::error` (or std::bad_alloc) may come out.
// Built with ASan + UBSan whatever the build's sanitizer setting (tests/CMakeLists.txt): a report
// aborts the run. XPR_FUZZ_CASES (default 1500) and XPR_FUZZ_SEED set the number of cases and
// the seed. To cover a new primitive, add its printed jaxpr to `hand_written_corpus`. Every stage
// runs under an xpr::LoopIterationLimit, so a mutated `while` that never ends is a skipped case,
// not a hang.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <mutex>
#include <new>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"
#include "xpr/rt/checkpoint.hpp"
#include "xpr/rt/custom_derivatives.hpp"

// A request past the machine's memory returns null (so operator new throws std::bad_alloc, as
// without the sanitizer) instead of a report: the library answers such requests with bad_alloc.
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }

namespace test_fuzz {

using xpr::Array;

/// Printed jaxprs, one per primitive family. New primitives: add a text here (the test checks
/// that each entry parses).
const std::vector<std::string>& hand_written_corpus() {
  static const std::vector<std::string> texts{
      "{ lambda ; a:f32[3]. let b:f32[3] = sin a; c:f32[3] = cos b; d:f32[3] = tan c;\n"
      "    e:f32[3] = tanh d; f:f32[3] = exp e; g:f32[3] = log f; h:f32[3] = log1p g;\n"
      "    i:f32[3] = expm1 h; j:f32[3] = sqrt i; k:f32[3] = rsqrt j; l:f32[3] = abs k;\n"
      "    m:f32[3] = sign l; n:f32[3] = logistic m; o:f32[3] = neg n\n  in (o,) }",
      "{ lambda ; a:f64[2,3] b:f64[2,3]. let c:f64[2,3] = add a b; d:f64[2,3] = sub c a;\n"
      "    e:f64[2,3] = mul d b; f:f64[2,3] = div e 2.0:f64[]; g:f64[2,3] = max f a;\n"
      "    h:f64[2,3] = min g b; i:f64[2,3] = pow h 2.0:f64[]\n  in (i,) }",
      "{ lambda ; a:f32[3]. let b:f32[3] = square a; c:f32[3] = exp2 b; d:f32[3] = cbrt c;\n"
      "    e:f32[3] = erf d; f:f32[3] = floor e; g:f32[3] = ceil f;\n"
      "    h:f32[3] = round[rounding_method=1] g; i:f32[3] = round[rounding_method=0] h;\n"
      "    j:f32[3] = copy i; k:bool[3] = is_finite j; l:bool[3] = not k\n  in (j, l) }",
      "{ lambda ; a:i32[4] b:i64[4]. let c:i32[4] = not a; d:i64[4] = not b;\n"
      "    e:i32[4] = square c; f:i64[4] = copy d\n  in (e, f) }",
      "{ lambda ; a:i32[4] b:i32[4] c:f64[4]. let d:i32[4] = and a b; e:i32[4] = or d a;\n"
      "    f:i32[4] = xor e b; g:i32[4] = rem f a; h:bool[4] = lt a b; i:bool[4] = and h h;\n"
      "    j:bool[4] = or i h; k:bool[4] = xor j h; l:f64[4] = rem c 0.75:f64[]\n  in (g, k, l) }",
      "{ lambda ; a:f32[3,4]. let b:i32[4] = argmax[axes=(0,) index_dtype=int32] a;\n"
      "    c:i64[3] = argmin[axes=(1,) index_dtype=int64] a\n  in (b, c) }",
      "{ lambda ; a:f32[3,4] b:i32[5]. let c:f32[3,4] = cumsum[axis=1 reverse=False] a;\n"
      "    d:f32[3,4] = cumsum[axis=0 reverse=True] c; e:i32[5] = cumsum[axis=0 reverse=False] b;\n"
      "    f:f32[3,4] = cumprod[axis=1 reverse=True] d; g:f32[3,4] = cummax[axis=0 reverse=False] "
      "f;\n"
      "    h:i32[5] = cummin[axis=0 reverse=True] e; i:f32[3,4] = cumlogsumexp[axis=1 "
      "reverse=False] "
      "g\n"
      "  in (i, h) }",
      "{ lambda ; a:i32[4] b:i32[4]. let c:i32[4] = add a b; d:i32[4] = mul c b;\n"
      "    e:i32[4] = div d a; f:i32[4] = sub e 2147483647:i32[]; g:i32[4] = neg f;\n"
      "    h:i32[4] = integer_pow[y=3] g; i:i32[4] = abs h; j:i32[4] = sign i\n  in (j,) }",
      "{ lambda ; a:f64[3] b:f64[3]. let c:bool[3] = eq a b; d:bool[3] = ne a b;\n"
      "    e:bool[3] = lt a b; f:bool[3] = le a b; g:bool[3] = gt a b; h:bool[3] = ge a b;\n"
      "    i:f64[3] = select_n c a b; j:i32[3] = select_n d 1:i32[] 2:i32[]\n"
      "  in (i, j, e, f, g, h) }",
      "{ lambda ; a:f32[2,3]. let b:f32[3] = reduce_sum[axes=(0,)] a;\n"
      "    c:f32[2] = reduce_max[axes=(1,)] a; d:f32[] = reduce_min[axes=(0, 1)] a;\n"
      "    e:f32[2] = reduce_prod[axes=(1,)] a\n"
      "  in (b, c, d, e) }",
      "{ lambda ; a:f64[3]. let b:f64[2,3] = broadcast_in_dim[broadcast_dimensions=(1,) "
      "shape=(2, 3)] a;\n    c:f64[3,2] = transpose[permutation=(1, 0)] b;\n"
      "    d:f64[6] = reshape[dimensions=None new_sizes=(6,)] c;\n"
      "    e:f64[1,6] = expand_dims[dimensions=(0,)] d; f:f64[6] = squeeze[dimensions=(0,)] e;\n"
      "    g:f64[12] = concatenate[dimension=0] f d;\n"
      "    h:f64[4] = slice[limit_indices=(12,) start_indices=(1,) strides=(3,)] g;\n"
      "    i:f64[10] = pad[padding_config=((1, 2, 1),)] h 0.0:f64[]\n  in (i,) }",
      "{ lambda ; a:f32[3,4] b:i32[3,4]. let c:f32[3,4] d:i32[3,4] = sort[dimension=1 "
      "is_stable=True num_keys=1] a b;\n    e:i32[3,4] f:f32[3,4] = sort[dimension=0 "
      "is_stable=True "
      "num_keys=2] d c\n  in (c, d, e, f) }",
      "{ lambda ; a:f32[5] b:i32[]. let c:f32[2] = dynamic_slice[slice_sizes=(2,)] a b;\n"
      "    d:f32[5] = dynamic_update_slice a c b\n  in (d,) }",
      "{ lambda ; a:f64[2,3] b:f64[3,4]. let\n"
      "    c:f64[2,4] = dot_general[dimension_numbers=(([1], [0]), ([], []))] a b\n"
      "  in (c,) }",
      "{ lambda ; a:f64[2,3] b:f64[2,3,4]. let\n"
      "    c:f64[2,4] = dot_general[dimension_numbers=(([1], [1]), ([0], [0]))] a b\n"
      "  in (c,) }",
      "{ lambda ; a:f64[3]. let b:i32[2,3] = iota[dimension=1 dtype=int32 shape=(2, 3)] ;\n"
      "    c:f64[2,3] = convert_element_type[new_dtype=float64 weak_type=False] b;\n"
      "    d:i64[3] = convert_element_type[new_dtype=int64 weak_type=False] a;\n"
      "    e:bool[3] = convert_element_type[new_dtype=bool weak_type=False] a;\n"
      "    f:f64[3] = stop_gradient a; g:f64[3] = integer_pow[y=-2] f\n  in (c, d, e, g) }",
      "{ lambda ; a:f32[]. let b:f32[] = add a inf:f32[]; c:f32[] = mul b nan:f32[];\n"
      "    d:f32[] = max c -inf:f32[]; e:bool[] = lt d 0.0:f32[];\n"
      "    f:f32[] = select_n e d 1e-05:f32[]\n  in (f,) }",
      "{ lambda ; a:f64[4]. let\n"
      "    b:f64[4] = checkpoint[differentiated=False jaxpr={ lambda ; c:f64[4]. let\n"
      "        d:f64[4] = sin c; e:f64[4] = mul d c in (e,) } policy=None prevent_cse=True] a\n"
      "  in (b,) }",
      "let jaxpr = { lambda ; a:f64[]. let b:f64[] = sin a in (b,) } in\n"
      "{ lambda ; a:f64[]. let\n"
      "    b:f64[] = checkpoint[differentiated=False jaxpr=jaxpr policy=None prevent_cse=True] a\n"
      "    c:f64[] = checkpoint[differentiated=False jaxpr=jaxpr policy=None prevent_cse=True] b\n"
      "  in (c,) }",
  };
  return texts;
}

// Functions whose staged jaxprs join the corpus: the higher-order primitives, printed by xpr.
auto log1pexp = xpr::custom_jvp(
    [](auto x) { return xpr::log(1.0 + xpr::exp(x)); },
    [](auto primals, auto tangents) {
      auto [x] = primals;
      auto [t] = tangents;
      return std::pair{xpr::log(1.0 + xpr::exp(x)), t * (1.0 - 1.0 / (1.0 + xpr::exp(x)))};
    });
auto clip_gradient = xpr::custom_vjp([](auto x) { return xpr::sin(x); },
                                     [](auto x) {
                                       return std::pair{xpr::sin(x), x};
                                     },
                                     [](auto x, auto ct) { return std::tuple{ct * xpr::cos(x)}; });

/// The printed form of `j` with its constvars made leading invars (JAX's
/// `convert_constvars_jaxpr`): the corpus is read with `parse_jaxpr`, which has no values for
/// constvars (a jaxpr closing over an array, like an index array, has them).
std::string text_of(const xpr::ClosedJaxpr& j) {
  xpr::rt::Jaxpr open = j.jaxpr;
  open.invars.insert(open.invars.begin(), open.constvars.begin(), open.constvars.end());
  open.constvars.clear();
  return xpr::pretty_print(open);
}

const std::vector<std::string>& corpus() {
  static const std::vector<std::string> all = [] {
    std::vector<std::string> out = hand_written_corpus();
    Array x = xpr::array({0.5, -1.0, 2.0});
    out.push_back(text_of(xpr::make_jaxpr(log1pexp)(x)));
    out.push_back(text_of(xpr::make_jaxpr(clip_gradient)(x)));
    out.push_back(text_of(
        xpr::make_jaxpr(xpr::checkpoint([](auto v) { return xpr::sum(xpr::sin(v) * v); }))(x)));
    out.push_back(text_of(xpr::make_jaxpr(
        xpr::grad([](auto v) { return xpr::sum(log1pexp(v) * clip_gradient(v)); }))(x)));
    out.push_back(text_of(xpr::make_jaxpr([](auto v) {
      auto [y, lin] = xpr::linearize([](auto w) { return xpr::sin(w) * w; }, v);
      return lin(y);
    })(x)));
    out.push_back(text_of(xpr::make_jaxpr(
        xpr::vmap([](auto v) { return xpr::dot(v, v) + xpr::max(v); }))(xpr::ones({2, 3}))));
    // One small jaxpr per indexing and loop primitive: a mutant of a small text reaches
    // evaluation more often than one of the large ones below.
    Array ids = xpr::array({2, 0, 2});
    out.push_back(text_of(xpr::make_jaxpr([](Array v, Array i) { return v[i]; })(x, ids)));
    out.push_back(
        text_of(xpr::make_jaxpr([](Array v, Array i) { return v.at(i).add(v * 2.0); })(x, ids)));
    out.push_back(
        text_of(xpr::make_jaxpr([](Array v, Array i) { return v.at(i).set(v); })(x, ids)));
    out.push_back(text_of(
        xpr::make_jaxpr([](Array v) { return v(xpr::range(xpr::none, xpr::none, -1)); })(x)));
    out.push_back(text_of(xpr::make_jaxpr([](Array v, Array i) { return v[i]; })(x, Array(1))));
    out.push_back(text_of(xpr::make_jaxpr([](Array v) {
      return xpr::while_loop([](Array w) { return w < 10.0; }, [](Array w) { return w * 2.0; }, v);
    })(Array(0.5))));
    out.push_back(text_of(xpr::make_jaxpr([](Array v) {
      return xpr::scan([](Array c, Array e) { return std::pair{c + e, c * e}; }, 0.0, v);
    })(x)));
    out.push_back(text_of(xpr::make_jaxpr([](Array p, Array v) {
      return xpr::cond(
          p, [](Array w) { return w * 2.0; }, [](Array w) { return -w; }, v);
    })(Array(true), x)));
    // Indexing (gather, scatter, scatter-add/mul/min/max, dynamic_slice, dynamic_update_slice,
    // rev) and control flow (cond with two and three branches, while, scan, fori_loop, a bounded
    // while), staged, differentiated and batched.
    auto indexing = [ids](Array v) {
      Array s = v.at(ids).add(v * v) + v.at(ids).set(v) + xpr::segment_sum(v, ids, 3);
      return xpr::sum(s * v[ids] * v[1]) + v(xpr::range(xpr::none, xpr::none, -1))[0];
    };
    out.push_back(text_of(xpr::make_jaxpr(indexing)(x)));
    out.push_back(text_of(xpr::make_jaxpr(xpr::grad(indexing))(x)));
    out.push_back(text_of(xpr::make_jaxpr(xpr::vmap(indexing))(xpr::ones({2, 3}))));
    // A traced index: dynamic_slice and dynamic_update_slice; the other scatters.
    auto traced_index = [](Array v, Array i, Array js) {
      Array a = v.at(js).min(v * 0.5) + v.at(js).max(v * 2.0) + xpr::take(v, js);
      return a * v[i] + xpr::dynamic_update_slice(v, xpr::dynamic_slice(v, {i}, {2}), {i});
    };
    out.push_back(text_of(xpr::make_jaxpr(traced_index)(x, Array(1), ids)));
    out.push_back(text_of(xpr::make_jaxpr([ids](Array v) {
      return xpr::jvp([ids](Array w) { return w.at(ids).mul(2.0) * w; }, v, v * 0.0 + 1.0).second;
    })(x)));
    auto control = [](Array v) {
      Array c = xpr::cond(
          xpr::sum(v) > 0.0, [](Array w) { return xpr::sin(w) * w; },
          [](Array w) { return xpr::exp(w); }, v);
      auto [carry, ys] = xpr::scan(
          [](Array acc, Array e) {
            return std::pair{acc * e + 1.0, acc};
          },
          0.0, c);
      Array n =
          xpr::while_loop([](Array w) { return w < 10.0; }, [](Array w) { return w * 2.0; }, carry);
      return n + xpr::sum(ys);
    };
    out.push_back(text_of(xpr::make_jaxpr(control)(x)));
    out.push_back(text_of(xpr::make_jaxpr([control](Array v) {
      auto [y, t] = xpr::jvp(control, v, v * 0.0 + 1.0);
      return y + t;
    })(x)));
    out.push_back(
        text_of(xpr::make_jaxpr(xpr::vmap(control))(xpr::array({{1.0, 2.0}, {-3.0, 0.5}}))));
    // Reverse mode through scan, fori_loop, switch and a while bounded by max_trips.
    auto loops = [](Array v) {
      Array s = xpr::switch_(
          xpr::astype(xpr::sum(v), xpr::int32),
          std::tuple{[](Array w) { return w * w; }, [](Array w) { return xpr::cos(w); },
                     [](Array w) { return w - 1.0; }},
          v);
      Array f = xpr::fori_loop(
          0, 3, [](Array i, Array acc) { return acc * 0.5 + xpr::astype(i, xpr::float64); }, s);
      Array b = xpr::while_loop([](Array w) { return xpr::sum(w * w) < 50.0; },
                                [](Array w) { return w * 1.5 + 0.1; }, f, xpr::max_trips(8));
      return xpr::sum(b * v);
    };
    out.push_back(text_of(xpr::make_jaxpr(loops)(x)));
    out.push_back(text_of(xpr::make_jaxpr(xpr::grad(loops))(x)));
    return out;
  }();
  return all;
}

// ---- the mutator --------------------------------------------------------------------------------

struct Mutator {
  std::mt19937_64 rng;

  std::size_t pick(std::size_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
  }

  static bool is_word(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '-';
  }
  /// [begin, end) of the tokens of `s` (runs of word characters, single punctuation).
  static std::vector<std::pair<std::size_t, std::size_t>> tokens(const std::string& s) {
    std::vector<std::pair<std::size_t, std::size_t>> out;
    for (std::size_t i = 0; i < s.size();) {
      if (s[i] == ' ' || s[i] == '\n') {
        ++i;
        continue;
      }
      std::size_t j = i + 1;
      if (is_word(s[i]))
        while (j < s.size() && is_word(s[j])) ++j;
      out.emplace_back(i, j);
      i = j;
    }
    return out;
  }

  std::string extreme() {
    static const char* xs[] = {"0",
                               "-1",
                               "1",
                               "2147483648",
                               "2147483647",
                               "-2147483649",
                               "4611686018427387904",
                               "9223372036854775807",
                               "-9223372036854775808",
                               "99999999999999999999",
                               "nan",
                               "inf",
                               "-inf",
                               "1e308",
                               "-0.0",
                               "1e-320",
                               "3",
                               "200",
                               "65536"};
    return xs[pick(std::size(xs))];
  }

  void flip_byte(std::string& s) {
    if (s.empty()) return;
    static const char chars[] = "{}()[];.,:= \nabcfi0123456789-_";
    s[pick(s.size())] =
        pick(4) == 0 ? static_cast<char>(pick(256)) : chars[pick(sizeof(chars) - 1)];
  }
  void swap_tokens(std::string& s) {
    auto ts = tokens(s);
    if (ts.size() < 2) return;
    auto a = ts[pick(ts.size())], b = ts[pick(ts.size())];
    if (a.first > b.first) std::swap(a, b);
    if (a.second > b.first) return;
    std::string ta = s.substr(a.first, a.second - a.first),
                tb = s.substr(b.first, b.second - b.first);
    s = s.substr(0, a.first) + tb + s.substr(a.second, b.first - a.second) + ta +
        s.substr(b.second);
  }
  void replace_number(std::string& s) {
    auto ts = tokens(s);
    std::vector<std::pair<std::size_t, std::size_t>> nums;
    for (auto t : ts)
      if ((s[t.first] >= '0' && s[t.first] <= '9') || s[t.first] == '-') nums.push_back(t);
    if (nums.empty()) return;
    auto t = nums[pick(nums.size())];
    s = s.substr(0, t.first) + extreme() + s.substr(t.second);
  }
  std::vector<std::string> lines(const std::string& s) {
    std::vector<std::string> out;
    std::istringstream is(s);
    for (std::string l; std::getline(is, l);) out.push_back(l);
    return out;
  }
  static std::string join(const std::vector<std::string>& ls) {
    std::string out;
    for (const auto& l : ls) out += l + "\n";
    return out;
  }
  void delete_or_duplicate_line(std::string& s) {
    auto ls = lines(s);
    if (ls.empty()) return;
    std::size_t i = pick(ls.size());
    if (pick(2) == 0)
      ls.erase(ls.begin() + static_cast<std::ptrdiff_t>(i));
    else
      ls.insert(ls.begin() + static_cast<std::ptrdiff_t>(i), ls[pick(ls.size())]);
    s = join(ls);
  }
  /// A `{ ... }` of `from` (a sub-jaxpr or a whole jaxpr) in place of one of `s`: nesting and
  /// jaxprs of other types where a sub-jaxpr was.
  void splice_jaxpr(std::string& s, const std::string& from) {
    auto braces = [&](const std::string& t) {
      std::vector<std::pair<std::size_t, std::size_t>> out;
      std::vector<std::size_t> open;
      for (std::size_t i = 0; i < t.size(); ++i) {
        if (t[i] == '{') open.push_back(i);
        if (t[i] == '}' && !open.empty()) {
          out.emplace_back(open.back(), i + 1);
          open.pop_back();
        }
      }
      return out;
    };
    auto in_s = braces(s), in_from = braces(from);
    if (in_s.empty() || in_from.empty()) return;
    auto a = in_s[pick(in_s.size())], b = in_from[pick(in_from.size())];
    s = s.substr(0, a.first) + from.substr(b.first, b.second - b.first) + s.substr(a.second);
  }
  /// The whole text as the body of a checkpoint, `depth` times (if it has one f64[] input).
  void wrap_in_checkpoints(std::string& s) {
    std::size_t depth = 1 + pick(pick(8) == 0 ? 300 : 4);
    std::string body = "{ lambda ; a:f64[]. let b:f64[] = sin a in (b,) }";
    for (std::size_t i = 0; i < depth; ++i)
      body = "{ lambda ; a:f64[]. let b:f64[] = checkpoint[differentiated=False jaxpr=" + body +
             " policy=None prevent_cse=True] a in (b,) }";
    s = body;
  }

  std::string mutate(const std::vector<std::string>& texts) {
    std::string s = texts[pick(texts.size())];
    // A quarter of the mutants change numbers only: they keep the text's structure, so more of
    // them reach evaluation and the transformations with extreme sizes, indices, bounds and loop
    // counts (a `while` whose predicate never turns false, a `scan` of length 2^62).
    if (pick(4) == 0) {
      for (std::size_t k = 0, n = 1 + pick(2) * pick(3); k < n; ++k)
        replace_number(s);  // mostly one
      return s;
    }
    std::size_t n = 1 + pick(4);
    for (std::size_t k = 0; k < n; ++k) {
      switch (pick(12)) {
        case 0:
        case 1:
          flip_byte(s);
          break;
        case 2:
        case 3:
          swap_tokens(s);
          break;
        case 4:
        case 5:
        case 6:
          replace_number(s);
          break;
        case 7:
        case 8:
          delete_or_duplicate_line(s);
          break;
        case 9:
        case 10:
          splice_jaxpr(s, texts[pick(texts.size())]);
          break;
        default:
          wrap_in_checkpoints(s);
          break;
      }
    }
    return s;
  }
};

// ---- running one mutant
// ---------------------------------------------------------------------------

/// Whether every value of `j` (sub-jaxprs included) is small enough to compute.
bool small_enough(const xpr::rt::Jaxpr& j, std::size_t depth = 0) {
  constexpr std::int64_t budget = 4096;
  if (depth > 50) return false;
  for (const auto& v : j.invars)
    if (v.aval().size() > budget) return false;
  for (const auto& e : j.eqns) {
    for (const auto& v : e.outputs)
      if (v.aval().size() > budget) return false;
    for (const auto& a : e.inputs)
      if (xpr::rt::aval_of(a).size() > budget) return false;
    for (const auto& [k, v] : e.params) {
      if (const auto* p = std::get_if<xpr::rt::JaxprParam>(&v))
        if (*p && !small_enough((*p)->jaxpr, depth + 1)) return false;
      if (const auto* ps = std::get_if<xpr::rt::JaxprTuple>(&v))
        for (const auto& q : *ps)
          if (q && !small_enough(q->jaxpr, depth + 1)) return false;
      // An integer_pow exponent or an iota size is not an aval: bounded by the outputs above.
    }
  }
  return true;
}

/// A small array of type `aval` with varied values (and the same shape times `batch` in front).
Array sample(const xpr::ShapedArray& aval, std::int64_t batch, std::size_t seed) {
  std::vector<std::int64_t> dims;
  if (batch > 0) dims.push_back(batch);
  for (std::int64_t d : aval.shape) dims.push_back(d);
  xpr::Shape shape(dims);
  static const double values[] = {0.5, -1.25, 2.0, 0.0, 3.5, -0.75, 1.0, 7.0};
  std::vector<double> xs(static_cast<std::size_t>(shape.size()));
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = values[(i + seed) % std::size(values)];
  return xpr::astype(xpr::array(xs, shape), aval.dtype);
}

struct Stats {
  std::size_t parsed = 0, evaluated = 0, differentiated = 0, vmapped = 0;
};

/// The loop iterations (`while` and `scan`, nested ones included) each stage of a mutant may
/// run: a mutant's `while` may never end (`mul w 2.0` made `mul w 0.0` or `mul w -1`), and a
/// `scan` may get a length of 2^62. Past it the stage throws `value_error`,
/// a skipped case like any other error. The corpus's loops run a few iterations; 2000 lets a
/// doubling to 1e308 finish.
constexpr std::int64_t loop_iterations = 2000;

void run_mutant(const std::string& text, Stats& stats, std::vector<std::string>& failures) {
  xpr::ClosedJaxpr j;
  try {
    j = xpr::parse_jaxpr(text);
  } catch (const xpr::error&) {
    return;
  }
  ++stats.parsed;
  try {
    xpr::typecheck_jaxpr(j);
  } catch (const xpr::error&) {
    failures.push_back("a parsed jaxpr does not typecheck:\n" + text);
    return;
  }
  // Printed jaxprs parse back, to the same text.
  std::string printed;
  try {
    printed = xpr::pretty_print(j.jaxpr);
    std::string again = xpr::pretty_print(xpr::parse_jaxpr(printed).jaxpr);
    if (again != printed)
      failures.push_back("print -> parse -> print differs:\n" + printed + "\nprinted again:\n" +
                         again + "\nfrom the mutant:\n" + text);
  } catch (const xpr::error& e) {
    failures.push_back(std::string("a printed jaxpr does not parse back: ") + e.what() + "\n" +
                       printed);
  }
  if (!small_enough(j.jaxpr)) return;
  std::vector<Array> args, floats;
  std::vector<std::size_t> float_at;
  for (std::size_t i = 0; i < j.jaxpr.invars.size(); ++i) {
    args.push_back(sample(j.jaxpr.invars[i].aval(), 0, i));
    if (xpr::core::is_floating(args.back().dtype())) {
      float_at.push_back(i);
      floats.push_back(args.back());
    }
  }
  try {
    xpr::LoopIterationLimit limit(loop_iterations);
    (void)xpr::eval_jaxpr(j, args);
    ++stats.evaluated;
  } catch (const xpr::error&) {
    return;
  } catch (const std::bad_alloc&) {
    return;
  }
  // The float inputs are the differentiated ones; the others stay fixed.
  auto f = [&](const std::vector<Array>& fs) {
    std::vector<Array> all = args;
    for (std::size_t k = 0; k < fs.size(); ++k) all[float_at[k]] = fs[k];
    return xpr::eval_jaxpr(j, all);
  };
  try {
    xpr::LoopIterationLimit limit(loop_iterations);
    std::vector<Array> tangents;
    for (const Array& x : floats) tangents.push_back(xpr::ones_like(x));
    (void)xpr::jvp(f, std::tuple{floats}, std::tuple{tangents});
    auto [out, f_vjp] = xpr::vjp(f, floats);
    std::vector<Array> cts;
    for (const Array& o : out) cts.push_back(xpr::ones_like(o));
    (void)f_vjp(cts);
    ++stats.differentiated;
  } catch (const xpr::error&) {
  } catch (const std::bad_alloc&) {
  }
  try {
    xpr::LoopIterationLimit limit(loop_iterations);
    std::vector<Array> batched;
    for (std::size_t i = 0; i < args.size(); ++i)
      batched.push_back(sample(j.jaxpr.invars[i].aval(), 2, i + 1));
    (void)xpr::vmap([&](const std::vector<Array>& xs) { return xpr::eval_jaxpr(j, xs); })(batched);
    ++stats.vmapped;
  } catch (const xpr::error&) {
  } catch (const std::bad_alloc&) {
  }
}

std::size_t env_number(const char* name, std::size_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? static_cast<std::size_t>(std::strtoull(v, nullptr, 10)) : fallback;
}

TEST(Fuzz, CorpusParses) {
  for (const std::string& t : corpus()) {
    xpr::ClosedJaxpr j = xpr::parse_jaxpr(t);
    EXPECT_EQ(xpr::pretty_print(xpr::parse_jaxpr(xpr::pretty_print(j.jaxpr)).jaxpr),
              xpr::pretty_print(j.jaxpr));
  }
}

TEST(Fuzz, CorpusHasEveryPrimitive) {
  // Every primitive the parser knows (rt/primitive_table.hpp) is an equation of some corpus
  // text, so the mutants exercise all of their rules. Except `custom_lin`: its `bwd` parameter is
  // the user's C++ function, which text cannot carry, so no jaxpr holding one parses
  // (custom_lin's abstract_eval throws not_implemented_error); and `pjit`, whose impl runs the
  // C++ compiler (tests/jit and tests/rt/jit.cpp cover it; a compiler per mutant is too slow).
  std::vector<std::string> names;
  for (const xpr::rt::Primitive* prim : xpr::rt::library_primitives())
    if (prim->name() != "custom_lin" && prim->name() != "pjit")
      names.push_back(std::string(std::string_view(prim->name())));
  EXPECT_GT(names.size(), 50u);
  for (const std::string& name : names) {
    bool found = false;
    for (const std::string& t : corpus())
      for (const char* after : {"[", " ", "\n"})
        found = found || t.find("= " + name + after) != std::string::npos;
    EXPECT_TRUE(found) << "no corpus text has a `" << name << "` equation";
  }
}

TEST(Fuzz, MutatedJaxprs) {
  const std::size_t cases = env_number("XPR_FUZZ_CASES", 1500);
  Mutator m{std::mt19937_64(env_number("XPR_FUZZ_SEED", 20261125))};
  Stats stats;
  std::vector<std::string> failures;
  for (std::size_t i = 0; i < cases; ++i) run_mutant(m.mutate(corpus()), stats, failures);
  for (const std::string& f : failures) ADD_FAILURE() << f;
  // The mutants reach every stage (a mutator that breaks every text would test only the lexer).
  EXPECT_GT(stats.parsed, cases / 20);
  EXPECT_GT(stats.evaluated, 0u);
  EXPECT_GT(stats.differentiated, 0u);
  EXPECT_GT(stats.vmapped, 0u);
  std::cout << "fuzz: " << cases << " mutants, " << stats.parsed << " parsed, " << stats.evaluated
            << " evaluated, " << stats.differentiated << " differentiated, " << stats.vmapped
            << " vmapped\n";
}

TEST(Fuzz, DeepestNestingUnderTheSanitizers) {
  // The nesting limit is meant to keep every recursive walk inside the default stack: check the
  // deepest allowed nesting under every transformation, where sanitizers make frames largest.
  std::string open, close;
  for (std::size_t i = 0; i + 1 < xpr::rt::max_jaxpr_nesting; ++i) {
    open += "{ lambda ; a:f64[]. let b:f64[] = checkpoint[differentiated=False jaxpr=";
    close += " policy=None prevent_cse=True] a in (b,) }";
  }
  xpr::ClosedJaxpr j =
      xpr::parse_jaxpr(open + "{ lambda ; a:f64[]. let b:f64[] = sin a in (b,) }" + close);
  xpr::typecheck_jaxpr(j);
  auto f = [&](auto x) { return xpr::eval_jaxpr(j, {x})[0]; };
  EXPECT_DOUBLE_EQ(f(Array(0.5)).item<double>(), std::sin(0.5));
  EXPECT_DOUBLE_EQ(xpr::grad(f)(0.5).item<double>(), std::cos(0.5));
  EXPECT_DOUBLE_EQ(xpr::jvp(f, Array(0.5), Array(1.0)).second.item<double>(), std::cos(0.5));
  EXPECT_EQ(xpr::vmap(f)(xpr::array({0.5, 1.0})).to_vector<double>(),
            (std::vector<double>{std::sin(0.5), std::sin(1.0)}));
  EXPECT_DOUBLE_EQ(xpr::grad(xpr::grad(f))(0.5).item<double>(), -std::sin(0.5));
  std::string printed = xpr::pretty_print(j.jaxpr);
  EXPECT_EQ(xpr::pretty_print(xpr::parse_jaxpr(printed).jaxpr), printed);
}

// ---- hostile API calls --------------------------------------------------------------------------

TEST(Fuzz, HostileApiCalls) {
  const std::int64_t huge = std::int64_t{1} << 62,
                     i64min = std::numeric_limits<std::int64_t>::min();
  Array x = xpr::array({1.0, 2.0, 3.0}), m = xpr::ones({2, 3}), empty = xpr::zeros({0});
  std::vector<std::function<void()>> calls{
      [&] { (void)xpr::zeros({huge}); },
      [&] {
        (void)xpr::zeros({huge, huge});
      },
      [&] { (void)xpr::zeros({-1}); },
      [&] { (void)xpr::ones({(std::int64_t{1} << 61) + 1}, xpr::int32); },
      [&] { (void)xpr::full({huge}, 1.0f); },
      [&] { (void)xpr::arange(i64min, std::numeric_limits<std::int64_t>::max()); },
      [&] { (void)xpr::arange(0, 10, 0); },
      [&] { (void)xpr::arange(0.0, 1e300, 1e-300); },
      [&] { (void)xpr::arange(0.0, std::nan(""), 1.0); },
      [&] { (void)xpr::linspace(0.0, 1.0, -5); },
      [&] { (void)xpr::linspace(0.0, 1.0, huge); },
      [&] { (void)xpr::eye(-3); },
      [&] { (void)xpr::eye(huge, huge); },
      [&] { (void)xpr::iota(xpr::int32, -1); },
      [&] { (void)xpr::iota(xpr::float64, huge); },
      [&] {
        (void)xpr::broadcasted_iota(xpr::int32, {2, 3}, 7);
      },
      [&] {
        (void)xpr::reshape(x, {huge, 4, -1});
      },
      [&] {
        (void)xpr::reshape(x, {-1, -1});
      },
      [&] {
        (void)xpr::reshape(empty, {0, -1});
      },
      [&] {
        (void)xpr::transpose(m, {0, 0});
      },
      [&] {
        (void)xpr::transpose(m, {5, -9});
      },
      [&] { (void)xpr::sum(m, 100); },
      [&] { (void)xpr::max(empty); },
      [&] { (void)xpr::min(empty, 0); },
      [&] { (void)xpr::mean(empty); },
      [&] { (void)xpr::sum(empty); },
      [&] { (void)xpr::squeeze(m, 0); },
      [&] { (void)xpr::expand_dims(m, {i64min}); },
      [&] { (void)xpr::concatenate({}); },
      [&] {
        (void)xpr::concatenate({x, m});
      },
      [&] { (void)xpr::stack({}); },
      [&] { (void)xpr::slice(x, {0}, {5}); },
      [&] { (void)xpr::slice(x, {0}, {3}, {huge}); },
      [&] { (void)xpr::slice(x, {0}, {3}, {0}); },
      [&] { (void)xpr::slice(x, {0}, {3}, {-1}); },
      [&] {
        (void)xpr::pad(x, {{i64min, 0, 0}}, 0.0);
      },
      [&] {
        (void)xpr::pad(x, {{0, std::numeric_limits<std::int64_t>::max(), 1}}, 0.0);
      },
      [&] {
        (void)xpr::pad(x, {{0, 0, -1}}, 0.0);
      },
      [&] {
        (void)xpr::pad(x, {{-2, -2, 0}}, 0.0);
      },
      [&] { (void)xpr::dynamic_slice(x, {Array(i64min)}, {2}); },
      [&] { (void)xpr::dynamic_slice(x, {Array(std::int64_t{5})}, {huge}); },
      [&] { (void)xpr::dynamic_update_slice(x, m, {Array(0)}); },
      [&] { (void)xpr::dynamic_update_slice(x, xpr::array({9.0}), {Array(i64min)}); },
      [&] { (void)xpr::dot(m, m); },
      [&] { (void)xpr::matmul(empty, empty); },
      [&] { (void)xpr::integer_pow(x, std::numeric_limits<int>::min()); },
      [&] {
        (void)xpr::integer_pow(xpr::array({2, 3}), -1);
      },
      [&] {
        (void)xpr::integer_pow(xpr::array({2, 3}), std::numeric_limits<int>::max());
      },
      [&] {
        (void)xpr::astype(xpr::array({std::nan(""), 1e300, -1e300}), xpr::int32);
      },
      [&] {
        (void)xpr::astype(xpr::array({std::nan(""), 1e300, -1e300}), xpr::int64);
      },
      [&] { (void)Array(std::nan("")).item<int>(); },
      [&] { (void)Array(1e300).item<std::int64_t>(); },
      [&] { (void)x.item<double>(); },
      [&] { (void)x[huge]; },
      [&] { (void)x[i64min]; },
      [&] { (void)Array(1.0)[0]; },
      [&] { (void)static_cast<bool>(x); },
      [&] { (void)m.data<float>(); },
      [&] { (void)(x + m); },
      [&] { (void)xpr::where(m, x, x); },
      [&] { (void)(xpr::array({std::int32_t{-2147483647 - 1}}) / xpr::array({std::int32_t{-1}})); },
      [&] { (void)(xpr::array({std::int64_t{1}}) / xpr::array({std::int64_t{0}})); },
      [&] { (void)xpr::grad([](auto v) { return v; })(x); },
      [&] { (void)xpr::grad([](auto v) { return v; })(Array(1)); },
      [&] { (void)xpr::vmap([](auto v) { return v; })(Array(1.0)); },
      [&] { (void)xpr::vmap([](auto v) { return v; }, 7)(x); },
      [&] { (void)xpr::jvp([](auto v) { return v; }, x, m); },
      [&] { (void)xpr::parse_jaxpr(std::string(100000, '{')); },
      [&] { (void)xpr::parse_jaxpr(std::string(100000, '(')); },
      [&] { (void)xpr::parse_jaxpr(""); },
      [&] { (void)xpr::parse_jaxpr("{ lambda ; a:f32[99999999999999999999]. let  in (a,) }"); },
  };
  std::size_t errors = 0;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    try {
      calls[i]();
    } catch (const xpr::error&) {
      ++errors;
    } catch (const std::bad_alloc&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, calls.size() / 2);
}

}  // namespace test_fuzz
