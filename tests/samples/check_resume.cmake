# A training sample stopped after its first epoch and resumed (--stop-after 1, then --resume)
# must end with the same bytes as the run that was not interrupted: the final --save file, the
# last epoch checkpoint and the best one. Resuming with another --seed (another data order) must
# fail with a one-line error. Variables: PROGRAM, FLAGS (the run's flags, 2 epochs), NAME (a
# prefix for the files written in the working directory).
separate_arguments(flags UNIX_COMMAND "${FLAGS}")
function(run expect_rc expect_regex)
  execute_process(COMMAND ${PROGRAM} ${flags} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "${PROGRAM} ${ARGN}: status ${rc}\n${out}${err}")
  if(NOT rc EQUAL expect_rc)
    message(FATAL_ERROR "status ${rc}, expected ${expect_rc}")
  endif()
  if(NOT "${out}${err}" MATCHES "${expect_regex}")
    message(FATAL_ERROR "the output does not match '${expect_regex}'")
  endif()
  set(out "${out}" PARENT_SCOPE)
  set(err "${err}" PARENT_SCOPE)
endfunction()
function(same a b)
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${a} ${b} RESULT_VARIABLE differ)
  if(differ)
    message(FATAL_ERROR "${a} and ${b} differ: the resumed run is not the uninterrupted one")
  endif()
endfunction()

file(GLOB previous ${NAME}_*)
if(previous)
  file(REMOVE ${previous})
endif()
run(0 "final " --checkpoint ${NAME}_full.safetensors --save ${NAME}_full_final.safetensors --csv ${NAME}_full.csv
    --svg ${NAME}_full.svg)
run(0 "stopped after epoch 1 of 2: continue with --resume ${NAME}_part.safetensors" --stop-after 1
    --checkpoint ${NAME}_part.safetensors --csv ${NAME}_part.csv --svg ${NAME}_part.svg)
file(COPY_FILE ${NAME}_part.safetensors ${NAME}_epoch1.safetensors)
run(0 "resumed ${NAME}_part.safetensors after epoch 1" --resume ${NAME}_part.safetensors
    --checkpoint ${NAME}_part.safetensors --save ${NAME}_part_final.safetensors --csv ${NAME}_part.csv
    --svg ${NAME}_part.svg)
if(out MATCHES "epoch 1/2")
  message(FATAL_ERROR "the resumed run trained epoch 1 again")
endif()
same(${NAME}_full_final.safetensors ${NAME}_part_final.safetensors)
same(${NAME}_full.safetensors ${NAME}_part.safetensors)
same(${NAME}_full_best.safetensors ${NAME}_part_best.safetensors)
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${NAME}_epoch1.safetensors ${NAME}_part_final.safetensors
                RESULT_VARIABLE differ)
if(NOT differ)
  message(FATAL_ERROR "the second epoch changed nothing: the comparison proves nothing")
endif()
file(STRINGS ${NAME}_part.csv rows)
list(LENGTH rows n)
if(NOT n EQUAL 3)
  message(FATAL_ERROR "${NAME}_part.csv has ${n} lines, expected the header and 2 epochs")
endif()
run(1 "^[a-z_]+: error: --resume ${NAME}_epoch1.safetensors: written by a run with seed 0, this run has 1[^\n]*\n$"
    --resume ${NAME}_epoch1.safetensors --seed 1 --checkpoint none)
