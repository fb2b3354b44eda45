# Drives one consumer build. find_package: configure xpr alone, install it to a prefix, then build
# the consumer against the prefix. add_subdirectory: the consumer adds xpr's source tree.
file(REMOVE_RECURSE ${WORK})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "command failed (${rc}): ${ARGN}\n${out}")
  endif()
endfunction()
set(consumer ${SOURCE}/tests/install/consumer)
if(NOT DEFINED COMPILED)
  set(COMPILED OFF)
endif()
if(MODE STREQUAL "find_package")
  run(${CMAKE_COMMAND} -S ${SOURCE} -B ${WORK}/xpr -G ${GENERATOR} -DXPR_BUILD_TESTS=OFF
      -DXPR_BUILD_EXAMPLES=OFF -DXPR_INSTALL=ON -DCMAKE_INSTALL_PREFIX=${WORK}/prefix
      -DXPR_COMPILED_LIB=${COMPILED} -DXPR_BUILD_TOOLS=${COMPILED})
  # xpr::runtime and the xprc tool when COMPILED (xprc, a header-only build of the whole runtime
  # tier, is installed and checked once); nothing otherwise.
  run(${CMAKE_COMMAND} --build ${WORK}/xpr)
  run(${CMAKE_COMMAND} --install ${WORK}/xpr)
  if(COMPILED)
    execute_process(COMMAND ${WORK}/prefix/bin/xprc
      RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
    if(NOT rc EQUAL 2 OR NOT out MATCHES "usage")
      message(FATAL_ERROR "installed xprc without arguments: want exit 2 and its usage, got ${rc}:\n${out}")
    endif()
  endif()
  run(${CMAKE_COMMAND} -S ${consumer} -B ${WORK}/consumer -G ${GENERATOR}
      -DCMAKE_PREFIX_PATH=${WORK}/prefix -DXPR_CONSUMER_MODE=find_package
      -DXPR_CONSUMER_COMPILED=${COMPILED})
else()
  run(${CMAKE_COMMAND} -S ${consumer} -B ${WORK}/consumer -G ${GENERATOR}
      -DXPR_SOURCE_DIR=${SOURCE} -DXPR_CONSUMER_MODE=add_subdirectory
      -DXPR_COMPILED_LIB=${COMPILED} -DXPR_CONSUMER_COMPILED=${COMPILED})
endif()
run(${CMAKE_COMMAND} --build ${WORK}/consumer)
execute_process(COMMAND ${WORK}/consumer/consumer OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT out MATCHES "consumer ok")
  message(FATAL_ERROR "consumer failed (${rc}): ${out}")
endif()
message(STATUS "${MODE}: ${out}")
