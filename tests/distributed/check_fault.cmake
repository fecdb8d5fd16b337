# Runs fluxion_distributed_faults as 2 ranks in MODE and checks that the job ends on its own
# within LIMIT seconds with a non-zero status, its output matching EXPECT (a regex) if given.
# Variables: MPIEXEC, PROGRAM, MODE, LIMIT, EXPECT.
string(TIMESTAMP start "%s")
execute_process(
  COMMAND ${MPIEXEC} --oversubscribe -np 2 --mca btl self,vader,tcp --mca btl_tcp_if_include lo ${PROGRAM} ${MODE}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
string(TIMESTAMP end "%s")
math(EXPR elapsed "${end} - ${start}")
message(STATUS "mode ${MODE}: status ${rc} after ${elapsed} s\n${out}${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "the job of mode ${MODE} ended with status 0")
endif()
if(elapsed GREATER LIMIT)
  message(FATAL_ERROR "the job of mode ${MODE} took ${elapsed} s to end; at most ${LIMIT} s expected")
endif()
if(EXPECT AND NOT "${out}${err}" MATCHES "${EXPECT}")
  message(FATAL_ERROR "the output of mode ${MODE} does not match '${EXPECT}'")
endif()
