# Installs the built tree into a scratch prefix, then configures, builds and runs three consumer
# projects against it (the full library, the runtime alone, the distributed library), and checks
# what each needs: the installed headers include no dependency's header, the package's configure
# prints no warning and (shared libraries) finds no dependency's package, the runtime-only program
# loads neither LLVM nor glslang nor SPIRV-Tools nor MPI, and only the distributed one loads MPI.
# Variables: BUILD_DIR (the Fluxion build), CONSUMER_DIR (sources), WORK_DIR (scratch),
# EXPECT_DISTRIBUTED (the build has fluxion::distributed), SHARED (FLUXION_SHARED),
# CONSUMER_FLAGS (compile and link flags of the consumers: a sanitizer's).
cmake_minimum_required(VERSION 3.25)
file(REMOVE_RECURSE ${WORK_DIR})
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGV}\n${out}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)

file(GLOB_RECURSE headers ${WORK_DIR}/prefix/include/fluxion/*.h)
foreach(header ${headers})
  file(STRINGS ${header} foreign REGEX "#include <(vulkan|llvm|glslang|spirv|spirv-tools|mpi|zlib)[/.]")
  if(foreign)
    message(FATAL_ERROR "${header} includes a dependency's header: ${foreign}")
  endif()
endforeach()

# With shared libraries a consumer needs none of the packages the library uses internally: each
# is made unfindable, so a find_dependency left in the package's config fails the configure.
set(unfindable "")
if(SHARED)
  foreach(package LLVM Vulkan glslang SPIRV-Tools SPIRV-Tools-opt ZLIB MPI LibEdit CURL)
    list(APPEND unfindable -DCMAKE_DISABLE_FIND_PACKAGE_${package}=ON)
  endforeach()
endif()
run(${CMAKE_COMMAND} --no-warn-unused-cli -S ${CONSUMER_DIR} -B ${WORK_DIR}/build -G Ninja -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix
    -DEXPECT_DISTRIBUTED=${EXPECT_DISTRIBUTED} "-DCMAKE_CXX_FLAGS=${CONSUMER_FLAGS}"
    "-DCMAKE_EXE_LINKER_FLAGS=${CONSUMER_FLAGS}" ${unfindable})
if(run_output MATCHES "(CMake Warning|Could NOT find|CMake Deprecation)[^\n]*")
  message(FATAL_ERROR "the consumer's configure printed '${CMAKE_MATCH_0}':\n${run_output}")
endif()
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)

set(artifact ${WORK_DIR}/sum_of_squares.fxa)
run(${WORK_DIR}/build/consumer ${artifact})
run(${WORK_DIR}/build/consumer_runtime ${artifact})
set(programs consumer consumer_runtime)
if(EXPECT_DISTRIBUTED)
  run(${WORK_DIR}/build/consumer_distributed)
  list(APPEND programs consumer_distributed)
endif()

# What each program loads (ldd: every library, however deep).
set(compiler_libraries "libLLVM|libglslang|libSPIRV")
foreach(program ${programs})
  run(ldd ${WORK_DIR}/build/${program})
  set(loads_${program} "${run_output}")
  if(run_output MATCHES "not found")
    message(FATAL_ERROR "${program} has a library the loader cannot find:\n${run_output}")
  endif()
endforeach()
if(loads_consumer_runtime MATCHES "(${compiler_libraries}|libmpi)[^ ]*")
  message(FATAL_ERROR "the runtime-only program loads ${CMAKE_MATCH_0}:\n${loads_consumer_runtime}")
endif()
if(loads_consumer MATCHES "libmpi[^ ]*")
  message(FATAL_ERROR "a program that does not use fluxion::distributed loads ${CMAKE_MATCH_0}")
endif()
if(SHARED)
  foreach(program_library consumer=libfluxion.so consumer_runtime=libfluxion_runtime.so
          consumer_distributed=libfluxion_distributed.so)
    string(REPLACE "=" ";" pair ${program_library})
    list(GET pair 0 program)
    list(GET pair 1 library)
    if(program IN_LIST programs AND NOT loads_${program} MATCHES "${library}")
      message(FATAL_ERROR "${program} does not load ${library}:\n${loads_${program}}")
    endif()
  endforeach()
  if(NOT loads_consumer MATCHES "libLLVM")
    message(FATAL_ERROR "the full library does not load LLVM: the check above cannot tell anything")
  endif()
endif()
