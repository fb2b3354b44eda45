// SPDX-License-Identifier: MIT
// The runtime tier's compiled library (CMake target xpr::runtime, option XPR_COMPILED_LIB; as
// fmt's compiled mode or spdlog's SPDLOG_COMPILED_LIB). A translation unit compiled with
// XPR_COMPILED_LIB defined sees `extern template` declarations for the primitives whose rules
// and kernels are class templates (the elementwise, comparison, reduction and scatter families:
// each instantiates its kernels for every dtype), so it neither instantiates nor emits them; they
// are instantiated here, once. Everything else stays inline in the headers.
//
// Mixing modes in one program works: a header-only translation unit emits its own copies of
// these instantiations as weak (COMDAT) symbols, identical to the ones here, and the linker keeps
// one. A translation unit compiled with XPR_COMPILED_LIB must link xpr::runtime (or this file),
// else the link fails with undefined references to "vtable for xpr::rt::Elementwise<...>".
#ifndef XPR_COMPILED_LIB
#error "src/runtime.cpp is the compiled library: build it with XPR_COMPILED_LIB defined"
#endif

#define XPR_BUILDING_RUNTIME  // the definitions below are the library's (xpr/core/config.hpp)
#include "xpr/xpr.hpp"

namespace xpr::rt {

// rt/prims/unary.hpp
template class Elementwise<op::neg>;
template class Elementwise<op::sin>;
template class Elementwise<op::cos>;
template class Elementwise<op::tan>;
template class Elementwise<op::tanh>;
template class Elementwise<op::exp>;
template class Elementwise<op::log>;
template class Elementwise<op::log1p>;
template class Elementwise<op::expm1>;
template class Elementwise<op::sqrt>;
template class Elementwise<op::rsqrt>;
template class Elementwise<op::abs>;
template class Elementwise<op::sign>;
template class Elementwise<op::logistic>;
template class Elementwise<op::square>;
template class Elementwise<op::exp2>;
template class Elementwise<op::cbrt>;
template class Elementwise<op::erf>;
template class Elementwise<op::floor>;
template class Elementwise<op::ceil>;
template class Elementwise<op::copy>;
template class Elementwise<op::round>;
template class Elementwise<op::not_>;
// rt/prims/binary.hpp
template class Elementwise<op::add>;
template class Elementwise<op::sub>;
template class Elementwise<op::mul>;
template class Elementwise<op::div>;
template class Elementwise<op::max>;
template class Elementwise<op::min>;
template class Elementwise<op::pow>;
template class Elementwise<op::rem>;
template class Elementwise<op::and_>;
template class Elementwise<op::or_>;
template class Elementwise<op::xor_>;
// rt/prims/integer_pow.hpp
template class Elementwise<op::integer_pow>;
// rt/prims/compare.hpp
template class Comparison<op::eq>;
template class Comparison<op::ne>;
template class Comparison<op::lt>;
template class Comparison<op::le>;
template class Comparison<op::gt>;
template class Comparison<op::ge>;
template class Predicate<op::is_finite>;
// rt/prims/reduce.hpp
template class ReduceBase<detail::SumMonoid>;
template class ReduceBase<detail::MaxMonoid>;
template class ReduceBase<detail::MinMonoid>;
template class ReduceBase<detail::ProdMonoid>;
// rt/prims/gather.hpp
template class Scatter<ScatterKind::set>;
template class Scatter<ScatterKind::add>;
template class Scatter<ScatterKind::mul>;
template class Scatter<ScatterKind::min>;
template class Scatter<ScatterKind::max>;

}  // namespace xpr::rt
