// SPDX-License-Identifier: MIT
// Every primitive's compile-time rules: the tracer (ct/tracer.hpp) and the rule tables of
// ct/prims/*.hpp, which specialize `Rules<Op>` for the library's primitives. The headers that bind
// primitives or run their rules (tracing, jvp, transpose, staging) include this one.
#pragma once

#include "xpr/ct/prims/binary.hpp"
#include "xpr/ct/prims/compare.hpp"
#include "xpr/ct/prims/integer_pow.hpp"
#include "xpr/ct/prims/select.hpp"
#include "xpr/ct/prims/stop_gradient.hpp"
#include "xpr/ct/prims/unary.hpp"
#include "xpr/ct/tracer.hpp"
