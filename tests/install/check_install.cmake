# Installs the built tree into a scratch prefix, then configures, builds and runs the consumer
# project against it: proves `find_package(fluxion)` and `fluxion::fluxion` work when installed.
# Variables: BUILD_DIR (the Fluxion build), CONSUMER_DIR (sources), WORK_DIR (scratch),
# EXPECT_DISTRIBUTED (the build has fluxion::distributed, which the consumer then links too).
file(REMOVE_RECURSE ${WORK_DIR})
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGV}")
  endif()
endfunction()
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/build -G Ninja -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix
    -DEXPECT_DISTRIBUTED=${EXPECT_DISTRIBUTED})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${WORK_DIR}/build/consumer)
if(EXPECT_DISTRIBUTED)
  run(${WORK_DIR}/build/consumer_distributed)
endif()
