// SPDX-License-Identifier: MIT
// The runtime tier's public API in one include: Array, creation functions, the primitives and
// their jax.numpy-style functions. Later layers (transformations, jit) are added here.
#pragma once

#include "xpr/rt/array.hpp"
#include "xpr/rt/prims/convert.hpp"
#include "xpr/rt/prims/unary.hpp"
#include "xpr/rt/trace.hpp"
