# Runs the leak probe with no sanitizer variables in the environment, so only the options
# compiled into the executable apply: MODE clean must exit 0 with no report after using every
# backend; MODE leak must fail with LeakSanitizer's report naming Fluxion's code.
if(MODE STREQUAL "leak")
  set(probe_args --leak)
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=ASAN_OPTIONS --unset=LSAN_OPTIONS --unset=UBSAN_OPTIONS
                        ${PROBE} ${probe_args}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(log "exit code ${rc}\n${out}${err}")
if(MODE STREQUAL "clean")
  if(NOT rc EQUAL 0 OR log MATCHES "Sanitizer")
    message(FATAL_ERROR "the probe should exit cleanly after using every backend:\n${log}")
  endif()
elseif(MODE STREQUAL "leak")
  string(FIND "${log}" "ERROR: LeakSanitizer: detected memory leaks" report)
  string(FIND "${log}" " in fluxion::" fluxion_frame)
  if(rc EQUAL 0 OR report EQUAL -1 OR fluxion_frame EQUAL -1)
    message(FATAL_ERROR "the probe's deliberate leak in Fluxion's code should be reported:\n${log}")
  endif()
else()
  message(FATAL_ERROR "MODE must be clean or leak")
endif()
