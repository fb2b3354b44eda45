// SPDX-License-Identifier: MIT
// The library's version; tests/core/version.cpp checks it against the CMake project version.
#pragma once

#define XPR_VERSION_MAJOR 0
#define XPR_VERSION_MINOR 1
#define XPR_VERSION_PATCH 0
#define XPR_VERSION_STRING "0.1.0"
