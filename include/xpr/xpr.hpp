// SPDX-License-Identifier: MIT
// The umbrella header: everything xpr offers.
#pragma once

#include "xpr/aot.hpp"
#include "xpr/core/dtype.hpp"
#include "xpr/core/error.hpp"
#include "xpr/core/ops.hpp"
#include "xpr/core/shape.hpp"
#include "xpr/ct/ct.hpp"
#include "xpr/rt/api.hpp"
#include "xpr/version.hpp"
