# cmake -DMODE=find_package|add_subdirectory -DSRC=<memplan> -DWORK=<dir> -DGENERATOR=... -DCXX=... -P consumer_test.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "command failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
endfunction()
if(MODE STREQUAL "find_package")
  # Install memplan alone (no tests/examples), then build the consumer against the install tree.
  run(${CMAKE_COMMAND} -S ${SRC} -B ${WORK}/memplan-build -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX}
      -DMEMPLAN_BUILD_TESTS=OFF -DMEMPLAN_BUILD_EXAMPLES=OFF -DMEMPLAN_BUILD_BENCH=OFF -DMEMPLAN_BUILD_APPS=OFF
      -DCMAKE_INSTALL_PREFIX=${WORK}/prefix)
  run(${CMAKE_COMMAND} --install ${WORK}/memplan-build)
  run(${CMAKE_COMMAND} -S ${SRC}/tests/install/consumer -B ${WORK}/consumer-build -G ${GENERATOR}
      -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_PREFIX_PATH=${WORK}/prefix -DCONSUMER_MODE=find_package)
else()
  run(${CMAKE_COMMAND} -S ${SRC}/tests/install/consumer -B ${WORK}/consumer-build -G ${GENERATOR}
      -DCMAKE_CXX_COMPILER=${CXX} -DCONSUMER_MODE=add_subdirectory -DMEMPLAN_SRC=${SRC})
endif()
run(${CMAKE_COMMAND} --build ${WORK}/consumer-build)
run(${WORK}/consumer-build/consumer)
message(STATUS "consumer (${MODE}) built and ran")
