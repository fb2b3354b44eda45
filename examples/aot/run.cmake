# ctest's driver of the example project: run the exporter (examples/aot.cpp), then configure,
# build and run the consumer against what it wrote; the consumer compares its results with the
# interpreter's, which the exporter wrote to expected.txt.
file(REMOVE_RECURSE ${WORK})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "command failed (${rc}): ${ARGN}\n${out}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()
run(${EXPORTER} ${WORK}/export)
run(${CMAKE_COMMAND} -S ${SOURCE} -B ${WORK}/build -G ${GENERATOR}
    -DCMAKE_CXX_COMPILER=${CXX} -DXPR_AOT_DIR=${WORK}/export)
run(${CMAKE_COMMAND} --build ${WORK}/build)
run(${WORK}/build/consumer ${WORK}/export/expected.txt)
if(NOT last_output MATCHES "n=5 d=3: matches the interpreter\nn=40 d=7: matches the interpreter")
  message(FATAL_ERROR "the consumer's output is not the expected one:\n${last_output}")
endif()
message(STATUS "${last_output}")
