// SPDX-License-Identifier: MIT
// The runtime tier's public API in one include: Array, creation functions, the primitives and
// their jax.numpy-style functions. Later layers (transformations, jit) are added here.
#pragma once

#include "xpr/rt/array.hpp"
#include "xpr/rt/creation.hpp"
#include "xpr/rt/jaxpr.hpp"
#include "xpr/rt/jaxpr_eval.hpp"
#include "xpr/rt/jaxpr_parse.hpp"
#include "xpr/rt/jaxpr_print.hpp"
#include "xpr/rt/numpy_elementwise.hpp"
#include "xpr/rt/print.hpp"
#include "xpr/rt/prims/binary.hpp"
#include "xpr/rt/prims/compare.hpp"
#include "xpr/rt/prims/convert.hpp"
#include "xpr/rt/prims/integer_pow.hpp"
#include "xpr/rt/prims/select.hpp"
#include "xpr/rt/prims/shape.hpp"
#include "xpr/rt/prims/stop_gradient.hpp"
#include "xpr/rt/prims/unary.hpp"
#include "xpr/rt/pytree.hpp"
#include "xpr/rt/trace.hpp"
