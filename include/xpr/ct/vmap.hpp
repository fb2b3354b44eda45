// SPDX-License-Identifier: MIT
// xpr::ct::vmap: a compile-time-tier function mapped over contiguous arrays of points, as the
// SIMD loop a careful person writes by hand: the frozen program on xsimd batches, W points at a
// time, the remainder as one padded batch; each scalar leaf of the result is one output array.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <iterator>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include <Eigen/Core>
#include <xsimd/xsimd.hpp>

#include "xpr/core/error.hpp"
#include "xpr/core/shape.hpp"
#include "xpr/ct/api.hpp"
#include "xpr/interop/eigen.hpp"
#include "xpr/interop/xsimd.hpp"

namespace xpr {
/// `in_axes` entry of a per-point argument (core/shape.hpp); the runtime tier's vmap takes it too.
using core::not_mapped;
}  // namespace xpr

namespace xpr::ct {

namespace detail {

// ---------------------------------------------------------------------------------------------
// Columns: contiguous one-dimensional ranges of float or double (std::span, std::vector, dynamic
// Eigen vectors and Maps of them with unit inner stride). A column is mapped: point i reads
// element i. std::array and fixed-size Eigen vectors are per-point values instead.
// ---------------------------------------------------------------------------------------------
template <class T>
inline constexpr bool is_std_array_v = false;
template <class T, std::size_t N>
inline constexpr bool is_std_array_v<std::array<T, N>> = true;

template <class C>
constexpr bool is_contiguous_vector() {
  if constexpr (std::is_base_of_v<Eigen::EigenBase<C>, C>) {
    if constexpr (requires { C::InnerStrideAtCompileTime; })
      return C::IsVectorAtCompileTime && C::SizeAtCompileTime == Eigen::Dynamic &&
             C::InnerStrideAtCompileTime == 1;
    else
      return false;
  } else {
    return true;
  }
}

template <class C>
using column_element_t = std::remove_cvref_t<decltype(*std::data(std::declval<C&>()))>;

template <class C>
concept Column = !is_std_array_v<C> && requires(const C& c) {
  std::data(c);
  std::size(c);
}
&&(std::is_same_v<column_element_t<const C>, float> ||
   std::is_same_v<column_element_t<const C>, double>)&&is_contiguous_vector<C>();

/// An output column: a column whose elements can be written.
template <class C>
concept OutColumn = Column<std::remove_cvref_t<C>> && requires(C& c) {
  {*std::data(c) = column_element_t<C>{}};
};

/// Whether an argument holds a column anywhere (and so is mapped).
template <class A>
inline constexpr bool contains_column = Column<A>;
template <class A, std::size_t N>
inline constexpr bool contains_column<std::array<A, N>> = contains_column<std::remove_cvref_t<A>>;

/// What one evaluation reads for each leaf: a pointer into a column, or a broadcast value.
template <class T, std::size_t N>
struct Leaves {
  const T* ptr[N > 0 ? N : 1] = {};
  T value[N > 0 ? N : 1] = {};
  std::size_t length[N > 0 ? N : 1] = {};
};

// ---------------------------------------------------------------------------------------------
// MapTree<A>: an argument of vmap as a structure of leaves, each mapped (a column) or broadcast
// (a number), or a std::array of them (a structured per-point argument, structure of arrays).
// `point<T>` is what one evaluation receives; leaves flatten in Tree's order.
// If you see an error naming MapTree<A>, A is not an argument xpr::ct::vmap accepts.
// ---------------------------------------------------------------------------------------------
template <class A>
struct MapTree;

/// The element type of the first column in `Subs...` (void when none has one).
template <class... Subs>
struct first_element {
  using type = void;
};
template <class S, class... Rest>
struct first_element<S, Rest...> {
  using type =
      std::conditional_t<S::has_column, typename S::element, typename first_element<Rest...>::type>;
};

template <class A>
requires Column<A>
struct MapTree<A> {
  static constexpr std::size_t size = 1;
  static constexpr bool has_column = true;
  using element = column_element_t<const A>;
  template <class T>
  static constexpr bool columns_are = std::is_same_v<element, T>;
  template <class T>
  using point = T;
  static constexpr void mapped(bool* m) { m[0] = true; }
  template <class T, std::size_t N>
  static void collect(const A& a, Leaves<T, N>& l, std::size_t k) {
    l.ptr[k] = std::data(a);
    l.length[k] = static_cast<std::size_t>(std::size(a));
  }
};

template <class A>
requires(!contains_column<A> && NumericArg<A> &&
         std::is_arithmetic_v<typename Tree<A>::leaf>) struct MapTree<A> {
  static constexpr std::size_t size = Tree<A>::size;
  static constexpr bool has_column = false;
  using element = void;
  template <class T>
  static constexpr bool columns_are = true;
  template <class T>
  using point = typename Tree<A>::template rebind<T>;
  static constexpr void mapped(bool* m) {
    for (std::size_t i = 0; i < size; ++i) m[i] = false;
  }
  // Converted to the columns' type, as a weakly typed C++ number is in JAX.
  template <class T, std::size_t N>
  static void collect(const A& a, Leaves<T, N>& l, std::size_t k) {
    Tree<A>::flatten(a, l.value + k);
  }
};

template <class A, std::size_t N>
requires contains_column<std::array<A, N>>
struct MapTree<std::array<A, N>> {
  using Sub = MapTree<std::remove_cvref_t<A>>;
  static constexpr std::size_t size = N * Sub::size;
  static constexpr bool has_column = true;
  using element = typename Sub::element;
  template <class T>
  static constexpr bool columns_are = Sub::template columns_are<T>;
  template <class T>
  using point = std::array<typename Sub::template point<T>, N>;
  static constexpr void mapped(bool* m) {
    for (std::size_t i = 0; i < N; ++i) Sub::mapped(m + i * Sub::size);
  }
  template <class T, std::size_t M>
  static void collect(const std::array<A, N>& a, Leaves<T, M>& l, std::size_t k) {
    for (std::size_t i = 0; i < N; ++i) Sub::collect(a[i], l, k + i * Sub::size);
  }
};

template <class A>
concept VmapArg = requires {
  MapTree<A>::size;
};

// ---------------------------------------------------------------------------------------------
// Outputs of `into`: a column, or a std::tuple, std::pair or std::array of outputs, flattened in
// order (one column per scalar leaf of the result).
// ---------------------------------------------------------------------------------------------
template <class O>
constexpr std::size_t out_count() {
  using D = std::remove_cvref_t<O>;
  if constexpr (OutColumn<O&>) {
    return 1;
  } else if constexpr (is_std_array_v<D>) {
    return std::tuple_size_v<D> * out_count<typename D::value_type&>();
  } else if constexpr (requires { std::tuple_size<D>::value; }) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return (out_count<decltype(std::get<I>(std::declval<D&>()))>() + ... + 0);
    }
    (std::make_index_sequence<std::tuple_size_v<D>>{});
  } else {
    return static_cast<std::size_t>(-1);  // not an output structure
  }
}

template <class T, class O>
void collect_outs(O& o, T** ptr, std::size_t* length, std::size_t& k) {
  using D = std::remove_cvref_t<O>;
  if constexpr (OutColumn<O&>) {
    static_assert(std::is_same_v<column_element_t<O&>, T>,
                  "xpr::ct::vmap(g).into: each output must have the element type of the inputs "
                  "(float outputs for float inputs, double for double)");
    ptr[k] = std::data(o);
    length[k] = static_cast<std::size_t>(std::size(o));
    ++k;
  } else if constexpr (is_std_array_v<D>) {
    for (auto& e : o) collect_outs<T>(e, ptr, length, k);
  } else {
    std::apply([&](auto&... e) { (collect_outs<T>(e, ptr, length, k), ...); }, o);
  }
}

// ---------------------------------------------------------------------------------------------
// The loop. One instantiation of the program on batches: the body over whole batches, and the
// tail copied into a padded batch that runs through the same function (lanes past the end repeat
// the last point, so they compute nothing unusual and are dropped).
// ---------------------------------------------------------------------------------------------
template <class C, class T, std::size_t NI, std::size_t NO, std::array<bool, NI> Mapped>
struct VmapLoop {
  using B = xsimd::batch<T>;
  static constexpr std::size_t width = B::size;

  /// Reads and writes one batch of points for `Compiled::run_io`, which loads every input first
  /// and stores each output as soon as it is computed, straight from and to the arrays. Loads are
  /// unaligned: with AVX the unaligned forms cost nothing extra on aligned data and fold into
  /// arithmetic instructions.
  struct Io {
    const T* const* p;
    const B* b;
    T* const* o;
    std::size_t i;
    [[gnu::always_inline]] B load(std::size_t k) const {
      return Mapped[k] ? B::load_unaligned(p[k] + i) : b[k];
    }
    [[gnu::always_inline]] void store(std::size_t k, const B& y) const {
      y.store_unaligned(o[k] + i);
    }
  };

  /// Points [begin, end), a multiple of `width` apart.
  static void batches(const T* const* in, const B* broadcast, T* const* out, std::size_t begin,
                      std::size_t end) {
    // Local copies: the pointers stay in registers instead of being reloaded around stores.
    const T* p[NI > 0 ? NI : 1];
    B b[NI > 0 ? NI : 1];
    T* o[NO > 0 ? NO : 1];
    for (std::size_t k = 0; k < NI; ++k) {
      p[k] = in[k];
      b[k] = broadcast[k];
    }
    for (std::size_t k = 0; k < NO; ++k) o[k] = out[k];
    for (std::size_t i = begin; i < end; i += width) C::run_io(Io{p, b, o, i}, B{});
  }

  /// Points [begin, end) with fewer than `width` of them, through a padded batch.
  static void tail(const T* const* in, const B* broadcast, T* const* out, std::size_t begin,
                   std::size_t end) {
    const std::size_t r = end - begin;
    if (r == 0) return;
    alignas(B) T tin[NI > 0 ? NI : 1][width];
    alignas(B) T tout[NO > 0 ? NO : 1][width];
    const T* p[NI > 0 ? NI : 1];
    T* o[NO > 0 ? NO : 1];
    for (std::size_t k = 0; k < NI; ++k) {
      p[k] = tin[k];
      if (Mapped[k]) {
        std::copy(in[k] + begin, in[k] + end, tin[k]);
        std::fill(tin[k] + r, tin[k] + width, in[k][end - 1]);
      }
    }
    for (std::size_t k = 0; k < NO; ++k) o[k] = tout[k];
    batches(p, broadcast, o, 0, width);
    for (std::size_t k = 0; k < NO; ++k) std::copy(tout[k], tout[k] + r, out[k] + begin);
  }

  static void run(const Leaves<T, NI>& l, T* const* out, std::size_t n, bool parallel) {
    B broadcast[NI > 0 ? NI : 1];
    for (std::size_t k = 0; k < NI; ++k) broadcast[k] = B(l.value[k]);
    const std::size_t whole = n - n % width;
#ifdef _OPENMP
    if (parallel) {
      // Blocks of whole batches, so threads never share a batch; 4096 points amortize the
      // scheduling and keep each thread's writes apart.
      constexpr std::size_t block = (4096 / width > 0 ? 4096 / width : 1) * width;
      const auto blocks = static_cast<std::ptrdiff_t>((whole + block - 1) / block);
#pragma omp parallel for schedule(static)
      for (std::ptrdiff_t j = 0; j < blocks; ++j) {
        const std::size_t begin = static_cast<std::size_t>(j) * block;
        batches(l.ptr, broadcast, out, begin, std::min(whole, begin + block));
      }
    } else {
      batches(l.ptr, broadcast, out, 0, whole);
    }
#else
    (void)parallel;
    batches(l.ptr, broadcast, out, 0, whole);
#endif
    tail(l.ptr, broadcast, out, whole, n);
  }
};

/// Everything about one vmapped call that types decide: the per-point argument types, the
/// program, the leaves and which of them are mapped.
template <class G, class... Args>
struct VmapPlan {
  using T = typename first_element<MapTree<Args>...>::type;
  template <class E>
  using points = std::tuple<typename MapTree<Args>::template point<E>...>;
  static constexpr std::size_t num_ins = (MapTree<Args>::size + ... + 0);
  static constexpr std::array<std::size_t, sizeof...(Args) + 1> offsets = [] {
    std::array<std::size_t, sizeof...(Args) + 1> o{};
    std::size_t sizes[] = {MapTree<Args>::size..., 0};
    for (std::size_t i = 0; i < sizeof...(Args); ++i) o[i + 1] = o[i] + sizes[i];
    return o;
  }();
  static constexpr std::array<bool, num_ins> mapped = [] {
    std::array<bool, num_ins> m{};
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (MapTree<Args>::mapped(m.data() + offsets[I]), ...);
    }
    (std::index_sequence_for<Args...>{});
    return m;
  }();
};

template <class G, class P>
struct program_of;
template <class G, class... P>
struct program_of<G, std::tuple<P...>> {
  using type = compiled_t<G, P...>;
};

/// The static checks of a vmapped call, each a static_assert that says what to do.
template <class G, class... P>
constexpr bool check_vmap_function(std::tuple<P...>*) {
  if constexpr (!check_function<G>() || !check_args<P...>()) {
    return false;
  } else if constexpr (is_transformed<G>) {
    return G::transform::template check<typename G::base, traced_t<P>...>();
  } else {
    return check_callable<G, traced_t<P>...>();
  }
}

template <class A>
constexpr bool is_not_mapped_v = std::is_same_v<std::remove_cvref_t<A>, core::NotMapped>;

template <class Axis>
constexpr bool is_axis_leaf_v = std::is_integral_v<Axis> || is_not_mapped_v<Axis>;

/// Checks one in_axes entry against its argument: `not_mapped` only for per-point values, an
/// integer (which must be 0 or -1, arrays being one-dimensional) only for arguments holding
/// arrays.
template <class Axis, class A>
void check_axis(const Axis& axis, std::size_t argnum) {
  if constexpr (is_not_mapped_v<Axis>) {
    static_assert(!contains_column<A>,
                  "xpr::ct::vmap: an argument marked xpr::not_mapped holds arrays; a not-mapped "
                  "argument is one per-point value shared by every point (a number, a "
                  "std::array, an Eigen fixed-size vector)");
  } else {
    static_assert(std::is_integral_v<Axis>,
                  "xpr::ct::vmap: an in_axes entry is 0 or xpr::not_mapped");
    static_assert(!std::is_integral_v<Axis> || contains_column<A>,
                  "xpr::ct::vmap: an argument mapped over axis 0 holds no array; pass a "
                  "std::span, std::vector or dynamic Eigen vector, or mark it xpr::not_mapped");
    // -1 is the last axis, which for one-dimensional arrays is axis 0 (as JAX counts it).
    if (axis != 0 && axis != -1)
      throw core::value_error("xpr::ct::vmap: in_axes for argument " + std::to_string(argnum) +
                              " is " + std::to_string(axis) +
                              ", but the arrays are one-dimensional: expected 0 (or -1) or "
                              "xpr::not_mapped");
  }
}

template <std::size_t, class A>
using always_t = A;

/// `in_axes` not given: each argument's type says whether it is mapped.
struct InferAxes {};

}  // namespace detail

/// The function `vmap(g)` returns: `g` evaluated at every point of its array arguments by a SIMD
/// loop. See `xpr::ct::vmap` and examples/ct_w1.cpp.
template <class G, class InAxes = detail::InferAxes>
class VmapFn {
 public:
  constexpr VmapFn() = default;
  constexpr explicit VmapFn(InAxes in_axes) : in_axes_(in_axes) {}

  /// The same function with the loop split across OpenMP threads for inputs of at least
  /// `min_points` points (when compiled with OpenMP; otherwise the same single-threaded loop).
  constexpr VmapFn parallel(std::size_t min_points = 1 << 16) const {
    VmapFn r = *this;
    r.parallel_ = true;
    r.parallel_min_ = min_points;
    return r;
  }

  /// g at every point: an `Eigen::Array<T, Dynamic, 1>` for a result with one scalar leaf, a
  /// `std::tuple` of them (one per leaf, in the result's flattening order) otherwise.
  template <class... Args>
  auto operator()(const Args&... args) const {
    if constexpr (!check<std::remove_cvref_t<Args>...>()) {
      return;
    } else {
      using Plan = detail::VmapPlan<G, std::remove_cvref_t<Args>...>;
      using T = typename Plan::T;
      using C = typename detail::program_of<G, typename Plan::template points<T>>::type;
      constexpr std::size_t no = C::num_outs;
      const std::size_t n = length<Plan>(args...);
      using A = Eigen::Array<T, Eigen::Dynamic, 1>;
      return [&]<std::size_t... K>(std::index_sequence<K...>) {
        std::array<A, no> r;
        for (A& a : r) a.resize(static_cast<Eigen::Index>(n));
        T* out[no > 0 ? no : 1] = {r[K].data()...};
        run<Plan, C>(out, n, args...);
        if constexpr (no == 1)
          return std::move(r[0]);
        else
          return std::tuple<detail::always_t<K, A>...>{std::move(r[K])...};
      }
      (std::make_index_sequence<no>{});
    }
  }

  /// g at every point, written into `outs`: a `std::span<T>` (or any contiguous range of T) for a
  /// result with one scalar leaf, a `std::tuple` (or `std::array`) of them otherwise, one per
  /// leaf in the result's flattening order, each as long as the inputs. Allocates nothing.
  template <class Outs, class... Args>
  void into(Outs&& outs, const Args&... args) const {
    if constexpr (check<std::remove_cvref_t<Args>...>()) {
      using Plan = detail::VmapPlan<G, std::remove_cvref_t<Args>...>;
      using T = typename Plan::T;
      using C = typename detail::program_of<G, typename Plan::template points<T>>::type;
      constexpr std::size_t no = C::num_outs;
      constexpr std::size_t given = detail::out_count<Outs&>();
      static_assert(given != static_cast<std::size_t>(-1),
                    "xpr::ct::vmap(g).into: outputs are a std::span<T> (or a std::vector<T>&, "
                    "a dynamic Eigen vector), or a std::tuple / std::array of them");
      static_assert(given == no || given == static_cast<std::size_t>(-1),
                    "xpr::ct::vmap(g).into: give one output array per scalar leaf of g's result, "
                    "in the order the result flattens (value_and_grad<0, 1, 2>: value, d/dx, "
                    "d/dy, d/dz)");
      if constexpr (given == no) {
        T* out[no > 0 ? no : 1] = {};
        std::size_t out_length[no > 0 ? no : 1] = {};
        std::size_t k = 0;
        detail::collect_outs<T>(outs, out, out_length, k);
        const std::size_t n = length<Plan>(args...);
        for (std::size_t j = 0; j < no; ++j)
          if (out_length[j] != n)
            throw core::shape_error("xpr::ct::vmap(g).into: output " + std::to_string(j) +
                                    " has length " + std::to_string(out_length[j]) +
                                    ", expected the inputs' length " + std::to_string(n));
        run<Plan, C>(out, n, args...);
      }
    }
  }

 private:
  template <class... Args>
  static constexpr bool check() {
    static_assert(sizeof...(Args) > 0, "xpr::ct::vmap: call the mapped function with arguments");
    if constexpr (sizeof...(Args) == 0) {
      return false;
    } else {
      constexpr bool accepted = (detail::VmapArg<Args> && ...);
      static_assert(accepted,
                    "xpr::ct::vmap: unsupported argument type. Mapped arguments are contiguous "
                    "arrays of float or double (std::span, std::vector, Eigen::ArrayXd, "
                    "Eigen::VectorXd, Eigen::Map of them), or a std::array of them; "
                    "other arguments are per-point values shared by every point (float, double, "
                    "std::array, Eigen fixed-size vectors)");
      if constexpr (!accepted) {
        return false;
      } else {
        using Plan = detail::VmapPlan<G, Args...>;
        using T = typename Plan::T;
        static_assert(!std::is_void_v<T>,
                      "xpr::ct::vmap: no argument holds an array to map over; pass at least one "
                      "std::span, std::vector or dynamic Eigen vector");
        if constexpr (std::is_void_v<T>) {
          return false;
        } else {
          constexpr bool same = (detail::MapTree<Args>::template columns_are<T> && ...);
          static_assert(same,
                        "xpr::ct::vmap: all mapped arrays must have the same element type (all "
                        "float or all double)");
          if constexpr (!same)
            return false;
          else
            return detail::check_vmap_function<G>(
                static_cast<typename Plan::template points<T>*>(nullptr));
        }
      }
    }
  }

  /// The number of points; throws shape_error unless every mapped leaf has it.
  template <class Plan, class... Args>
  std::size_t length(const Args&... args) const {
    check_axes(args...);
    detail::Leaves<typename Plan::T, Plan::num_ins> l;
    collect<Plan>(l, args...);
    return common_length<Plan>(l);
  }

  template <class... Args>
  void check_axes(const Args&...) const {
    if constexpr (!std::is_same_v<InAxes, detail::InferAxes>) {
      if constexpr (detail::is_axis_leaf_v<InAxes>) {
        std::size_t argnum = 0;
        (detail::check_axis<InAxes, std::remove_cvref_t<Args>>(in_axes_, argnum++), ...);
      } else {
        static_assert(std::tuple_size_v<InAxes> == sizeof...(Args),
                      "xpr::ct::vmap: in_axes must have one entry per argument");
        if constexpr (std::tuple_size_v<InAxes> == sizeof...(Args)) {
          [&]<std::size_t... I>(std::index_sequence<I...>) {
            (detail::check_axis<std::remove_cvref_t<std::tuple_element_t<I, InAxes>>,
                                std::remove_cvref_t<Args>>(std::get<I>(in_axes_), I),
             ...);
          }
          (std::index_sequence_for<Args...>{});
        }
      }
    }
  }

  template <class Plan, class... Args>
  static void collect(detail::Leaves<typename Plan::T, Plan::num_ins>& l, const Args&... args) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (detail::MapTree<std::remove_cvref_t<Args>>::collect(args, l, Plan::offsets[I]), ...);
    }
    (std::index_sequence_for<Args...>{});
  }

  template <class Plan>
  static std::size_t common_length(const detail::Leaves<typename Plan::T, Plan::num_ins>& l) {
    std::size_t first = Plan::num_ins;
    for (std::size_t k = 0; k < Plan::num_ins; ++k) {
      if (!Plan::mapped[k]) continue;
      if (first == Plan::num_ins) {
        first = k;
      } else if (l.length[k] != l.length[first]) {
        throw core::shape_error("xpr::ct::vmap: mapped arrays must have equal lengths, but " +
                                where<Plan>(first) + " has length " +
                                std::to_string(l.length[first]) + " and " + where<Plan>(k) +
                                " has length " + std::to_string(l.length[k]));
      }
    }
    return l.length[first];
  }

  /// "argument 2" or "argument 1 (leaf 3)", for messages.
  template <class Plan>
  static std::string where(std::size_t leaf) {
    std::size_t a = 0;
    while (Plan::offsets[a + 1] <= leaf) ++a;
    std::string s = "argument " + std::to_string(a);
    if (Plan::offsets[a + 1] - Plan::offsets[a] > 1)
      s += " (leaf " + std::to_string(leaf - Plan::offsets[a]) + ")";
    return s;
  }

  template <class Plan, class C, class... Args>
  void run(typename Plan::T* const* out, std::size_t n, const Args&... args) const {
    using T = typename Plan::T;
    static_assert(C::num_ins == Plan::num_ins);
    detail::Leaves<T, Plan::num_ins> l;
    collect<Plan>(l, args...);
    detail::VmapLoop<C, T, Plan::num_ins, C::num_outs, Plan::mapped>::run(
        l, out, n, parallel_ && n >= parallel_min_);
  }

  [[no_unique_address]] InAxes in_axes_{};
  bool parallel_ = false;
  std::size_t parallel_min_ = 0;
};

/// `vmap(g)`: `g` (a captureless generic lambda or a transformation of one, such as
/// `value_and_grad<0, 1, 2>(f)`) mapped over its array arguments by a SIMD loop.
///
/// `vmap(g)(xs, ys, ...)` evaluates `g` at every point i, reading element i of each array
/// argument (`std::span`, `std::vector`, `Eigen::ArrayXd`/`VectorXd`/`Map`, f32 or f64, or
/// a `std::array` of them for a structured per-point argument) and passing other
/// arguments (numbers, `std::array`, fixed-size Eigen vectors) unchanged to every point. It
/// returns one `Eigen::Array<T, Dynamic, 1>` per scalar leaf of g's result, in the result's
/// depth-first order: a single array, or a `std::tuple` of them (`value_and_grad<0, 1, 2>`
/// gives value, d/dx, d/dy, d/dz). `vmap(g).into(outs, xs, ys, ...)` writes the same into the
/// caller's arrays and allocates nothing; outputs may be the inputs (a point's inputs are read
/// before its outputs are written). Arrays of different lengths throw `xpr::shape_error`.
/// See examples/ct_w1.cpp.
template <class G>
constexpr VmapFn<G> vmap(G) {
  return VmapFn<G>{};
}

/// `vmap(g, in_axes)`: as `vmap(g)`, with JAX's `in_axes` stated: `0` for an argument holding
/// arrays, `xpr::not_mapped` for a per-point value shared by every point; one entry for all
/// arguments or a `std::tuple` with one per argument. Checked against the arguments.
template <class G, class InAxes>
constexpr VmapFn<G, InAxes> vmap(G, InAxes in_axes) {
  return VmapFn<G, InAxes>{in_axes};
}

}  // namespace xpr::ct
