// SPDX-License-Identifier: MIT
// Printing arrays the way NumPy and JAX do: `std::cout << x` gives NumPy's `str(x)` (`[1. 2. 3.]`)
// and `repr(x)` gives JAX's `repr(x)` (`Array([1., 2., 3.], dtype=float32)`), so output can be
// compared with Python's character for character. Tracers print their abstract value.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/core/dtype.hpp"
#include "xpr/core/shape.hpp"
#include "xpr/rt/array.hpp"
#include "xpr/rt/aval.hpp"

namespace xpr::rt {

namespace detail {

// NumPy's default print options (np.get_printoptions()).
inline constexpr int print_precision = 8;
inline constexpr std::int64_t print_threshold = 1000;
inline constexpr std::int64_t print_edgeitems = 3;
inline constexpr std::size_t print_linewidth = 75;

template <class T>
std::string to_chars_string(T x, std::chars_format fmt) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, x, fmt);
  return std::string(buf, r.ptr);
}
template <class T>
std::string to_chars_string(T x, std::chars_format fmt, int precision) {
  // Fixed notation with 8 digits is only asked for |x| < 1e16, so 64 + 8 characters suffice.
  char buf[96];
  auto r = std::to_chars(buf, buf + sizeof buf, x, fmt, precision);
  return std::string(buf, r.ptr);
}

/// The shortest decimal digits that identify `x` among values of its type, and the decimal
/// exponent of the first digit (`0.0123` is {"123", -2}). The sign is left out.
struct ShortestDigits {
  std::string digits;
  int exponent = 0;
};
template <class T>
ShortestDigits shortest_digits(T x) {
  std::string s = to_chars_string(std::abs(x), std::chars_format::scientific);
  auto e = s.find('e');
  ShortestDigits d;
  for (std::size_t i = 0; i < e; ++i)
    if (s[i] != '.') d.digits += s[i];
  d.exponent = std::stoi(s.substr(e + 1));
  return d;
}

/// Dragon4's positional output in unique mode (what NumPy prints): the shortest digits, written
/// out in full with zeros as needed, with a decimal point and no trailing zeros after it.
template <class T>
std::string positional_shortest(T x) {
  ShortestDigits d = shortest_digits(x);
  std::string s = std::signbit(x) ? "-" : "";
  auto n = static_cast<int>(d.digits.size());
  if (d.exponent >= 0) {
    for (int i = 0; i <= d.exponent; ++i) s += i < n ? d.digits[static_cast<std::size_t>(i)] : '0';
    s += '.';
    if (d.exponent + 1 < n) s += d.digits.substr(static_cast<std::size_t>(d.exponent) + 1);
  } else {
    s += "0.";
    s.append(static_cast<std::size_t>(-d.exponent - 1), '0');
    s += d.digits;
  }
  return s;  // shortest digits never end in 0 (except "0" itself), so nothing to trim
}

/// NumPy's `maxprec` positional form: the shortest digits, but at most `precision` fractional
/// digits (the exact value rounded there, trailing zeros stripped, the point kept).
template <class T>
std::string positional_maxprec(T x, int precision) {
  std::string s = positional_shortest(x);
  if (s.size() - s.find('.') - 1 > static_cast<std::size_t>(precision)) {
    s = to_chars_string(x, std::chars_format::fixed, precision);
    while (s.back() == '0') s.pop_back();
  }
  return s;
}

/// A scientific form split as NumPy splits it: mantissa "d.ddd" (point always present) and the
/// exponent "-05" (sign and at least two digits).
struct Scientific {
  std::string mantissa, exponent;
};
Scientific split_scientific(const std::string& s);
/// NumPy's `maxprec` scientific form: shortest digits, at most `precision` after the point.
template <class T>
Scientific scientific_maxprec(T x, int precision) {
  Scientific s = split_scientific(to_chars_string(x, std::chars_format::scientific));
  if (s.mantissa.size() - s.mantissa.find('.') - 1 > static_cast<std::size_t>(precision)) {
    s = split_scientific(to_chars_string(x, std::chars_format::scientific, precision));
    while (s.mantissa.back() == '0') s.mantissa.pop_back();
  }
  return s;
}

/// NumPy's FloatingFormat (floatmode 'maxprec', precision 8, sign '-'): chooses positional or
/// scientific notation for a whole array and pads every element to a common width.
template <class T>
class FloatingFormat {
 public:
  explicit FloatingFormat(const std::vector<T>& data) {
    std::vector<T> finite;
    bool neginf = false;
    for (T v : data) {
      if (std::isfinite(v))
        finite.push_back(v);
      else if (std::isinf(v) && v < 0)
        neginf = true;
    }
    bool any_nonzero = false;
    T max_val = 0, min_val = 0;
    for (T v : finite) {
      if (v == 0) continue;
      T a = std::abs(v);
      if (!any_nonzero || a > max_val) max_val = a;
      if (!any_nonzero || a < min_val) min_val = a;
      any_nonzero = true;
    }
    if (any_nonzero) {
      // NumPy >= 2.2 switches at 10**min(8, finfo(dtype).precision): 1e8 for f64, 1e6 for f32.
      // Comparisons happen in T, as NumPy 2 compares with Python floats.
      const T cutoff = std::is_same_v<T, float> ? T(1e6) : T(1e8);
      exp_format_ = max_val >= cutoff || min_val < T(0.0001) || max_val / min_val > T(1000);
    }
    if (finite.empty()) {
      pad_left_ = pad_right_ = 0;
    } else if (exp_format_) {
      std::size_t int_len = 0, frac_len = 0, exp_len = 0;
      for (T v : finite) {
        Scientific s = scientific_maxprec(v, print_precision);
        auto dot = s.mantissa.find('.');
        int_len = std::max(int_len, dot);
        frac_len = std::max(frac_len, s.mantissa.size() - dot - 1);
        exp_len = std::max(exp_len, s.exponent.size());
      }
      exp_digits_ = exp_len - 1;
      precision_ = static_cast<int>(frac_len);
      pad_left_ = int_len;
      pad_right_ = exp_digits_ + 2 + frac_len;
    } else {
      for (T v : finite) {
        std::string s = positional_maxprec(v, print_precision);
        auto dot = s.find('.');
        pad_left_ = std::max(pad_left_, dot);
        pad_right_ = std::max(pad_right_, s.size() - dot - 1);
      }
    }
    if (finite.size() != data.size()) {
      // "nan" and "inf" (with its sign) must fit left of the decimal point plus the right part.
      std::size_t offset = pad_right_ + 1, inf_len = 3 + (neginf ? 1 : 0);
      pad_left_ = std::max(
          {pad_left_, 3 > offset ? 3 - offset : 0, inf_len > offset ? inf_len - offset : 0});
    }
  }

  std::string operator()(T x) const {
    std::string s;
    if (!std::isfinite(x)) {
      s = std::isnan(x) ? "nan" : (x < 0 ? "-inf" : "inf");
      std::size_t width = pad_left_ + pad_right_ + 1;
      return std::string(width > s.size() ? width - s.size() : 0, ' ') + s;
    }
    if (exp_format_) {
      // Every element gets the same number of mantissa digits: its exact value rounded there.
      Scientific sci =
          split_scientific(to_chars_string(x, std::chars_format::scientific, precision_));
      std::string digits = sci.exponent.substr(1);
      if (digits.size() < exp_digits_) digits.insert(0, exp_digits_ - digits.size(), '0');
      s = sci.mantissa + 'e' + sci.exponent[0] + digits;
      auto dot = sci.mantissa.find('.');
      return std::string(pad_left_ > dot ? pad_left_ - dot : 0, ' ') + s;
    }
    s = positional_maxprec(x, print_precision);
    auto dot = s.find('.');
    std::size_t frac = s.size() - dot - 1;
    return std::string(pad_left_ > dot ? pad_left_ - dot : 0, ' ') + s +
           std::string(pad_right_ > frac ? pad_right_ - frac : 0, ' ');
  }

 private:
  bool exp_format_ = false;
  std::size_t pad_left_ = 0, pad_right_ = 0, exp_digits_ = 0;
  int precision_ = print_precision;
};

/// NumPy's IntegerFormat: right-aligned to the wider of the largest and the smallest value.
template <class T>
class IntegerFormat {
 public:
  explicit IntegerFormat(const std::vector<T>& data) {
    if (data.empty()) return;
    auto [lo, hi] = std::minmax_element(data.begin(), data.end());
    width_ = std::max(std::to_string(*lo).size(), std::to_string(*hi).size());
  }
  std::string operator()(T x) const {
    std::string s = std::to_string(x);
    return std::string(width_ > s.size() ? width_ - s.size() : 0, ' ') + s;
  }

 private:
  std::size_t width_ = 0;
};

/// NumPy's BoolFormat: " True" lines up with "False", except in a rank-0 array.
class BoolFormat {
 public:
  explicit BoolFormat(bool rank0) : true_(rank0 ? "True" : " True") {}
  std::string operator()(bool x) const { return x ? true_ : "False"; }

 private:
  std::string true_;
};

/// The str of a NumPy float scalar (what `str` of a rank-0 array prints): Python's repr rules,
/// positional for 1e-4 <= |x| < 1e16 (or 0) with at least one fractional digit, else
/// scientific without trailing zeros.
template <class T>
std::string scalar_float_str(T x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
  // NumPy compares in long double, so float32(1e-4), just below 1e-4, prints as 1e-04.
  auto a = static_cast<long double>(std::abs(x));
  if (a == 0 || (a >= 1e-4L && a < 1e16L)) {
    std::string s = positional_shortest(x);
    if (s.back() == '.') s += '0';
    return s;
  }
  return to_chars_string(x, std::chars_format::scientific);
}

/// `str()` of one element, the way NumPy prints it when it is the only one.
template <class T>
std::string scalar_str(T x) {
  if constexpr (std::is_same_v<T, bool>)
    return x ? "True" : "False";
  else if constexpr (std::is_integral_v<T>)
    return std::to_string(x);
  else
    return scalar_float_str(x);
}

/// NumPy's array2string layout (`_formatArray`): nested brackets, `separator` between elements,
/// rows wrapped at `line_width`, blank lines between blocks, `...` where elements are summarized.
class ArrayLayout {
 public:
  ArrayLayout(const Shape& shape, const std::vector<std::string>& words, bool summarize,
              std::string separator)
      : shape_(shape), words_(words), summarize_(summarize), separator_(std::move(separator)) {
    sep_rstrip_ = separator_;
    while (!sep_rstrip_.empty() && sep_rstrip_.back() == ' ') sep_rstrip_.pop_back();
  }

  std::string format(std::size_t line_width, const std::string& next_line_prefix) {
    next_ = 0;
    return recurse(0, next_line_prefix, line_width);
  }

 private:
  XPR_MEMBER std::string recurse(std::size_t axis, const std::string& hanging_indent,
                                 std::size_t curr_width);

  const Shape& shape_;
  const std::vector<std::string>& words_;
  bool summarize_;
  std::string separator_, sep_rstrip_;
  std::size_t next_ = 0;
};

/// The elements NumPy looks at when printing: all of them, or for arrays of more than 1000
/// elements the first and last 3 along every axis longer than 6 (`_leading_trailing`), in
/// row-major order.
template <class E>
std::vector<E> visible_elements(const Array& x, bool summarize) {
  const Shape& shape = x.shape();
  const E* data = x.data<E>();
  std::vector<std::int64_t> strides = core::strides_of(shape);
  std::vector<E> out;
  auto walk = [&](auto& self, std::size_t axis, std::int64_t offset) -> void {
    if (axis == shape.rank()) {
      out.push_back(data[offset]);
      return;
    }
    std::int64_t n = shape[axis];
    bool cut = summarize && n > 2 * print_edgeitems;
    for (std::int64_t i = 0; i < n; ++i) {
      if (cut && i == print_edgeitems) i = n - print_edgeitems;
      self(self, axis + 1, offset + i * strides[axis]);
    }
  };
  walk(walk, 0, 0);
  return out;
}

/// NumPy's array2string with default options, `separator` between elements and `prefix_len`
/// characters of prefix (`array(`) that continuation lines line up under.
std::string array2string(const Array& x, const std::string& separator, std::size_t prefix_len,
                         std::size_t suffix_len);

/// `Traced<ShapedArray(f64[3])>`: what a tracer prints (JAX adds its trace; we have none yet).
std::string traced_str(const Array& x);

}  // namespace detail

/// Prints `x` as NumPy's `str(x)` (and so JAX's `print(x)`): `[1. 2. 3.]`, `[[1 2]\n [3 4]]`,
/// `[ True False]`; a rank-0 array prints as its number (`1.0`); arrays of more than 1000
/// elements are summarized with `...`. See examples/printing.cpp.
std::ostream& operator<<(std::ostream& os, const Array& x);

/// JAX's `repr(x)`: `Array([1., 2., 3.], dtype=float32)`, `Array(1., dtype=float64,
/// weak_type=True)`, `Array([], shape=(0,), dtype=float64)`.
std::string repr(const Array& x);

}  // namespace xpr::rt

namespace xpr {
using rt::repr;
}  // namespace xpr

#if XPR_DEFINITIONS

namespace xpr::rt::detail {

XPR_FUNC Scientific split_scientific(const std::string& s) {
  auto e = s.find('e');
  Scientific out{s.substr(0, e), s.substr(e + 1)};
  if (out.mantissa.find('.') == std::string::npos) out.mantissa += '.';
  return out;
}

XPR_FUNC std::string ArrayLayout::recurse(std::size_t axis, const std::string& hanging_indent,
                                          std::size_t curr_width) {
  if (axis == shape_.rank()) return words_[next_++];
  const std::size_t axes_left = shape_.rank() - axis;
  const std::string next_hanging_indent = hanging_indent + ' ';
  const std::size_t next_width = curr_width - 1;  // room for the ']'
  const std::int64_t n = shape_[axis];
  const bool show_summary = summarize_ && 2 * print_edgeitems < n;
  const std::int64_t leading = show_summary ? print_edgeitems : 0;
  const std::int64_t trailing = show_summary ? print_edgeitems : n;
  std::string s;
  if (axes_left == 1) {
    const std::size_t elem_width = curr_width - std::max<std::size_t>(sep_rstrip_.size(), 1);
    std::string line = hanging_indent;
    auto extend = [&](const std::string& word) {
      // Wrap unless the line holds nothing but the indent (wrapping would not help).
      if (line.size() + word.size() > elem_width && line.size() > hanging_indent.size()) {
        std::string stripped = line;
        while (!stripped.empty() && stripped.back() == ' ') stripped.pop_back();
        s += stripped + '\n';
        line = hanging_indent;
      }
      line += word;
    };
    for (std::int64_t i = 0; i < leading; ++i) {
      extend(recurse(axis + 1, next_hanging_indent, next_width));
      line += separator_;
    }
    if (show_summary) {
      extend("...");
      line += separator_;
    }
    for (std::int64_t i = trailing; i > 1; --i) {
      extend(recurse(axis + 1, next_hanging_indent, next_width));
      line += separator_;
    }
    extend(recurse(axis + 1, next_hanging_indent, next_width));
    s += line;
  } else {
    const std::string line_sep = sep_rstrip_ + std::string(axes_left - 1, '\n');
    for (std::int64_t i = 0; i < leading; ++i)
      s += hanging_indent + recurse(axis + 1, next_hanging_indent, next_width) + line_sep;
    if (show_summary) s += hanging_indent + "..." + line_sep;
    for (std::int64_t i = trailing; i > 1; --i)
      s += hanging_indent + recurse(axis + 1, next_hanging_indent, next_width) + line_sep;
    s += hanging_indent + recurse(axis + 1, next_hanging_indent, next_width);
  }
  return '[' + s.substr(hanging_indent.size()) + ']';
}

XPR_FUNC std::string array2string(const Array& x, const std::string& separator,
                                  std::size_t prefix_len, std::size_t suffix_len) {
  if (x.size() == 0) return "[]";
  const bool summarize = x.size() > print_threshold;
  std::vector<std::string> words;
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using E = decltype(tag);
    std::vector<E> values = visible_elements<E>(x, summarize);
    words.reserve(values.size());
    if constexpr (std::is_same_v<E, bool>) {
      BoolFormat f(x.ndim() == 0);
      for (bool v : values) words.push_back(f(v));
    } else if constexpr (std::is_integral_v<E>) {
      IntegerFormat<E> f(values);
      for (E v : values) words.push_back(f(v));
    } else {
      FloatingFormat<E> f(values);
      for (E v : values) words.push_back(f(v));
    }
  });
  ArrayLayout layout(x.shape(), words, summarize, separator);
  return layout.format(print_linewidth - suffix_len, std::string(1 + prefix_len, ' '));
}

XPR_FUNC std::string traced_str(const Array& x) {
  std::string s = "Traced<ShapedArray(" + detail::aval_of(x).str();
  if (x.weak_type()) s += ", weak_type=True";
  return s + ")>";
}

}  // namespace xpr::rt::detail

namespace xpr::rt {

XPR_FUNC std::ostream& operator<<(std::ostream& os, const Array& x) {
  if (!x.is_concrete()) return os << detail::traced_str(x);
  if (x.ndim() == 0) {
    dispatch_dtype(x.dtype(), [&](auto tag) {
      using E = decltype(tag);
      os << detail::scalar_str(x.data<E>()[0]);
    });
    return os;
  }
  return os << detail::array2string(x, " ", 0, 0);
}

XPR_FUNC std::string repr(const Array& x) {
  if (!x.is_concrete()) return detail::traced_str(x);
  const std::string prefix = "Array(";
  std::string dtype_str = "dtype=" + std::string(core::name(x.dtype()));
  dtype_str += x.weak_type() ? ", weak_type=True)" : ")";
  std::string s = x.size() == 0 ? "[], shape=" + x.shape().str()
                                : detail::array2string(x, ", ", prefix.size(), 1);
  // JAX's rule, verbatim: when the dtype would overflow the last line, pad instead of ' '.
  auto nl = s.rfind('\n');
  std::size_t last_line_len = nl == std::string::npos ? s.size() + 2 : s.size() - nl + 1;
  std::string sep = last_line_len + dtype_str.size() + 1 > detail::print_linewidth
                        ? std::string(prefix.size(), ' ')
                        : " ";
  return prefix + s + "," + sep + dtype_str;
}

}  // namespace xpr::rt
#endif  // XPR_DEFINITIONS
