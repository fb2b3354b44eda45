// SPDX-License-Identifier: MIT
// The peer AD libraries of the compile-time tier benchmarks, each included only when CMake found
// it: Ceres `Jet` (forward mode, derivatives in a fixed-size array), ADOL-C (tapeless forward
// vector mode, and a tape replayed per point), Boost.Math autodiff (nested forward mode).
#pragma once

#if XPR_BENCH_CERES
#include <ceres/jet.h>
#endif
#if XPR_BENCH_ADOLC
#include <adolc/adolc.h>
#include <adolc/adtl.h>
#endif
#if XPR_BENCH_BOOST_AUTODIFF
#include <boost/math/differentiation/autodiff.hpp>
#endif
