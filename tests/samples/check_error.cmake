# Runs a sample that must fail: the exit status EXPECT_RC, nothing but one line on standard
# error, matching EXPECT. Variables: PROGRAM, FLAGS, EXPECT_RC, EXPECT, and ENVIRONMENT
# ("NAME=VALUE", set for the run) if given.
if(ENVIRONMENT MATCHES "^([^=]+)=(.*)$")
  set(ENV{${CMAKE_MATCH_1}} "${CMAKE_MATCH_2}")
endif()
separate_arguments(flags UNIX_COMMAND "${FLAGS}")
execute_process(COMMAND ${PROGRAM} ${flags} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "status ${rc}\n${out}${err}")
if(NOT rc EQUAL EXPECT_RC)
  message(FATAL_ERROR "status ${rc}, expected ${EXPECT_RC}")
endif()
if(NOT err MATCHES "^[^\n]*\n$" OR NOT err MATCHES "${EXPECT}")
  message(FATAL_ERROR "standard error is not one line matching '${EXPECT}'")
endif()
