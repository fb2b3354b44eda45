// SPDX-License-Identifier: MIT
// The compile-time tier (`xpr::ct`): generic lambdas traced at compile time into jaxprs,
// transformed by constexpr code (grad, jvp, vjp, linearize, jacobians, hessian) and evaluated
// as straight-line code on float, double, xsimd batches and Eigen arrays. See
// docs/compile-time.md.
#pragma once

#include "xpr/ct/api.hpp"
#include "xpr/ct/eval.hpp"
#include "xpr/ct/graph.hpp"
#include "xpr/ct/print.hpp"
#include "xpr/ct/rules.hpp"
#include "xpr/ct/trace.hpp"
#include "xpr/ct/transforms.hpp"
#include "xpr/ct/vmap.hpp"
#include "xpr/interop/eigen.hpp"
#include "xpr/interop/xsimd.hpp"
