// SPDX-License-Identifier: MIT
// `bind`: apply a primitive to arguments. Eagerly (no transformation active) this runs the
// primitive's impl rule; the interpreter stack of the transformations hooks in here.
#pragma once

#include <initializer_list>
#include <span>

#include "xpr/rt/array.hpp"
#include "xpr/rt/params.hpp"
#include "xpr/rt/primitive.hpp"

namespace xpr::rt {

/// Applies `prim` to `args` under the current interpreter and returns its outputs.
inline Arrays bind(const Primitive& prim, std::span<const Array> args, const Params& params = {}) {
  return prim.impl(args, params);
}

/// `bind` for single-result primitives.
inline Array bind1(const Primitive& prim, std::initializer_list<Array> args,
                   const Params& params = {}) {
  Arrays out = bind(prim, std::span<const Array>(args.begin(), args.size()), params);
  return std::move(out.front());
}

}  // namespace xpr::rt
