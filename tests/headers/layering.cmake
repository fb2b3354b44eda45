# The layering check (docs/design.md, "Layering"): the headers' `#include "xpr/..."` graph has no
# cycle, and no header includes another after its code begins (a bottom-of-file include is how a
# cycle hides: `#pragma once` lets it compile in one include order and not in another).
# Run as `cmake -DROOT=<source dir> -P layering.cmake`.
cmake_minimum_required(VERSION 3.25)

# Known exceptions, to be removed when they are fixed: the elementwise primitives and the
# jax.numpy-level functions their jvp rules are written with include each other in both tiers
# (issue 13, deliverables 1 and 3: they become one layer when each primitive has one home).
set(allowed_cycle_members
  xpr/ct/prims/binary.hpp xpr/ct/prims/compare.hpp xpr/ct/prims/integer_pow.hpp
  xpr/ct/prims/select.hpp xpr/ct/prims/stop_gradient.hpp xpr/ct/prims/unary.hpp
  xpr/ct/tracer.hpp
  xpr/rt/numpy_elementwise.hpp xpr/rt/prims/binary.hpp xpr/rt/prims/integer_pow.hpp
  xpr/rt/prims/unary.hpp)
set(allowed_late_includes xpr/ct/tracer.hpp xpr/rt/prims/binary.hpp xpr/rt/prims/integer_pow.hpp)

set(include_dir ${ROOT}/include)
file(GLOB_RECURSE headers RELATIVE ${include_dir} ${include_dir}/xpr/*.hpp)
set(errors)
foreach(h IN LISTS headers)
  string(MAKE_C_IDENTIFIER ${h} id)
  file(STRINGS ${include_dir}/${h} lines)
  set(deps_${id})
  set(in_code FALSE)
  foreach(line IN LISTS lines)
    if(line MATCHES "^[ \t]*#[ \t]*include[ \t]+\"(xpr/[^\"]+)\"")
      list(APPEND deps_${id} ${CMAKE_MATCH_1})
      if(in_code AND NOT h IN_LIST allowed_late_includes)
        list(APPEND errors "${h}: includes ${CMAKE_MATCH_1} after its code begins: include it at "
          "the top, or, if that makes a cycle, change the layering (docs/design.md)\n")
      endif()
    elseif(line MATCHES "^(namespace|template|inline|class|struct|using) ")
      set(in_code TRUE)
    endif()
  endforeach()
endforeach()

# Kahn's algorithm, both ways: drop headers that include nothing left (then headers nothing left
# includes); what remains lies on an include cycle (or between two).
set(left ${headers})
foreach(direction IN ITEMS down up)
  set(progress TRUE)
  while(progress)
    set(progress FALSE)
    set(next)
    foreach(h IN LISTS left)
      set(keep FALSE)
      if(direction STREQUAL "down")
        string(MAKE_C_IDENTIFIER ${h} id)
        foreach(d IN LISTS deps_${id})
          if(d IN_LIST left)
            set(keep TRUE)
            break()
          endif()
        endforeach()
      else()
        foreach(u IN LISTS left)
          string(MAKE_C_IDENTIFIER ${u} uid)
          if(h IN_LIST deps_${uid})
            set(keep TRUE)
            break()
          endif()
        endforeach()
      endif()
      if(keep)
        list(APPEND next ${h})
      else()
        set(progress TRUE)
      endif()
    endforeach()
    set(left ${next})
  endwhile()
endforeach()
list(JOIN left " " cycle_text)
foreach(h IN LISTS left)
  if(NOT h IN_LIST allowed_cycle_members)
    list(APPEND errors "${h}: on an include cycle (with: ${cycle_text}): a rule may bind only primitives "
      "of its own file or of headers below it (docs/design.md, \"Layering\")\n")
  endif()
endforeach()
foreach(h IN LISTS allowed_cycle_members)
  if(NOT h IN_LIST left)
    message(STATUS "${h} is no longer on an include cycle: remove it from allowed_cycle_members")
  endif()
endforeach()
if(errors)
  list(JOIN errors "" text)
  message(FATAL_ERROR "${text}")
endif()
list(LENGTH headers n)
message(STATUS "${n} headers: no include cycle and no late include outside the known exceptions")
