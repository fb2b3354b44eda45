// SPDX-License-Identifier: MIT
// How the runtime tier's non-template code reaches a translation unit: the two build modes
// (docs/compile-time-scaling.md#compiled-library-mode).
//
// * Header-only (the default): every definition is in the headers, `inline`, and every
//   translation unit that includes them parses and instantiates all of it.
// * Compiled library (`XPR_COMPILED_LIB`, the CMake target xpr::runtime, as fmt's and spdlog's
//   compiled modes): the headers declare the runtime tier's non-template functions and primitive
//   rules, and their definitions are compiled once, in src/runtime.cpp, which defines
//   `XPR_BUILDING_RUNTIME` as well. A translation unit then pays for the declarations and for the
//   templates it instantiates, not for the interpreters, rules, parser and code generator.
//
// A header keeps all of a primitive's rules in one file: the class declares them, and the
// definitions follow under `#if XPR_DEFINITIONS`, each marked `XPR_FUNC`. The library's copies
// are `inline` too (and kept, `used`, though nothing in src/runtime.cpp calls them), so header-only
// and compiled translation units may be linked into one program: each definition is one COMDAT
// symbol, its function-local statics (registries, caches) are one object, and the linker keeps
// one copy.
#pragma once

#if !defined(XPR_COMPILED_LIB) || defined(XPR_BUILDING_RUNTIME)
#define XPR_DEFINITIONS 1
#else
#define XPR_DEFINITIONS 0
#endif

// On the class's declaration of a member defined below: `inline` wherever the definition is seen.
// A virtual function declared without `inline` is its class's key function, and g++ then emits
// the vtable, and so every rule of the primitive, in every unit that sees the definition: 45 s
// instead of 9 s for an empty `main` with the umbrella header. With XPR_COMPILED_LIB a user's
// unit sees a plain declaration, and the vtable is the library's.
#if XPR_DEFINITIONS
#define XPR_MEMBER inline
#else
#define XPR_MEMBER
#endif

#ifdef XPR_BUILDING_RUNTIME
#define XPR_FUNC inline __attribute__((used))
#else
#define XPR_FUNC inline
#endif
