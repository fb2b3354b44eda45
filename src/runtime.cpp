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
// else the link fails with undefined references to "vtable for xpr::rt::UnaryElementwise<...>".
#ifndef XPR_COMPILED_LIB
#error "src/runtime.cpp is the compiled library: build it with XPR_COMPILED_LIB defined"
#endif

#include "xpr/xpr.hpp"

namespace xpr::rt {

// rt/prims/unary.hpp
template class UnaryElementwise<op::neg>;
template class UnaryElementwise<op::sin>;
template class UnaryElementwise<op::cos>;
template class UnaryElementwise<op::tan>;
template class UnaryElementwise<op::tanh>;
template class UnaryElementwise<op::exp>;
template class UnaryElementwise<op::log>;
template class UnaryElementwise<op::log1p>;
template class UnaryElementwise<op::expm1>;
template class UnaryElementwise<op::sqrt>;
template class UnaryElementwise<op::rsqrt>;
template class UnaryElementwise<op::abs>;
template class UnaryElementwise<op::sign>;
template class UnaryElementwise<op::logistic>;
// rt/prims/binary.hpp
template class BinaryElementwise<op::add, detail::Accepts::numeric>;
template class BinaryElementwise<op::sub, detail::Accepts::numeric>;
template class BinaryElementwise<op::mul, detail::Accepts::numeric>;
template class BinaryElementwise<op::div, detail::Accepts::numeric>;
template class BinaryElementwise<op::max, detail::Accepts::any>;
template class BinaryElementwise<op::min, detail::Accepts::any>;
template class BinaryElementwise<op::pow, detail::Accepts::floating>;
// rt/prims/compare.hpp
template class Comparison<op::eq>;
template class Comparison<op::ne>;
template class Comparison<op::lt>;
template class Comparison<op::le>;
template class Comparison<op::gt>;
template class Comparison<op::ge>;
// rt/prims/reduce.hpp
template class Reduce<detail::SumMonoid>;
template class Reduce<detail::MaxMonoid>;
template class Reduce<detail::MinMonoid>;
// rt/prims/gather.hpp
template class Scatter<ScatterKind::set>;
template class Scatter<ScatterKind::add>;
template class Scatter<ScatterKind::mul>;
template class Scatter<ScatterKind::min>;
template class Scatter<ScatterKind::max>;

}  // namespace xpr::rt
