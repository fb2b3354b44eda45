# Runs one compile-fail pair (see CMakeLists.txt): SOURCE must compile; SOURCE with
# -DXPR_SHOULD_FAIL must not, and its diagnostics must contain the text of the `// expect:` line.
file(STRINGS ${SOURCE} expect_line REGEX "^// expect: ")
if(NOT expect_line)
  message(FATAL_ERROR "${SOURCE}: no '// expect: <text>' line")
endif()
string(REGEX REPLACE "^// expect: " "" expected "${expect_line}")
string(REPLACE "|" ";" include_list "${INCLUDES}")
set(flags -std=c++20 -fsyntax-only -I${XPR_INCLUDE})
if(DEFINES)
  list(APPEND flags -D${DEFINES})
endif()
foreach(dir IN LISTS include_list)
  # The compiler's own system directories must stay last (#include_next relies on it).
  if(dir AND NOT dir MATCHES "^/usr(/local)?/include/?$")
    list(APPEND flags -isystem ${dir})
  endif()
endforeach()

execute_process(COMMAND ${CXX} ${flags} -Wall -Wextra -Werror ${SOURCE}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${SOURCE} must compile without XPR_SHOULD_FAIL, but:\n${out}")
endif()

execute_process(COMMAND ${CXX} ${flags} -DXPR_SHOULD_FAIL ${SOURCE}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc EQUAL 0)
  message(FATAL_ERROR "${SOURCE} must fail to compile with XPR_SHOULD_FAIL, but it compiled")
endif()
string(FIND "${out}" "${expected}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${SOURCE}: expected the diagnostic to contain\n  ${expected}\nbut got:\n${out}")
endif()
# With an `// expect-first` line, the text must be in the first error, not buried under others.
file(STRINGS ${SOURCE} first_line REGEX "^// expect-first")
if(first_line)
  string(REGEX MATCH "error: [^\n]*" first_error "${out}")
  string(FIND "${first_error}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${SOURCE}: expected the first error to contain\n  ${expected}\nbut it is:\n  ${first_error}")
  endif()
endif()
message(STATUS "${SOURCE}: fails as expected with \"${expected}\"")
