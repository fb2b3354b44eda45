# Helpers for xpr's own executables: warnings (errors with XPR_WERROR), sanitizers, arch flags.
set(XPR_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Woverloaded-virtual
  -Wold-style-cast -Wnull-dereference)

function(xpr_project_options target)
  # With XPR_COMPILED_LIB, xpr's own tests and examples are built as a user of the compiled library
  # would build them (the ci-compiled preset runs the runtime tier's tests that way).
  if(XPR_COMPILED_LIB)
    target_link_libraries(${target} PRIVATE xpr::runtime)
  else()
    target_link_libraries(${target} PRIVATE xpr::xpr)
  endif()
  target_include_directories(${target} PRIVATE ${PROJECT_BINARY_DIR}/generated ${PROJECT_SOURCE_DIR})
  target_compile_options(${target} PRIVATE ${XPR_WARNINGS} ${XPR_ARCH_FLAGS})
  if(XPR_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(XPR_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer
      -fno-sanitize-recover=undefined)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()
