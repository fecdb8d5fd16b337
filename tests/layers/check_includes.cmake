# Every #include "..." of the library points down the layers of docs/architecture.md (or within
# its own layer): a header-only reach into a layer above, which no link would notice, fails here.
# Each rule: a folder (or file) of the source tree | the prefixes its files may include.
set(rules
  "dsl/include/fluxion/|fluxion/"
  "dsl/src/error.cpp|fluxion/"
  "dsl/src/dtype.cpp|fluxion/"
  "dsl/src/array.cpp|fluxion/"
  "support/|fluxion/,support/"
  "jit/ir/|fluxion/,jit/ir/"
  "runtime/|fluxion/,support/,jit/ir/,runtime/"
  "jit/|fluxion/,support/,runtime/,jit/"
  "backends/|fluxion/,support/,runtime/,jit/,backends/,codegen_version.h"
  "driver/|fluxion/,support/,runtime/,jit/,backends/backend.h,driver/"
  "dsl/src/|fluxion/,support/,runtime/,jit/,driver/,dsl/src/"
  "distributed/|fluxion/,support/,distributed/")
file(GLOB_RECURSE files RELATIVE ${ROOT} ${ROOT}/dsl/*.h ${ROOT}/dsl/*.cpp ${ROOT}/support/*
     ${ROOT}/runtime/* ${ROOT}/jit/* ${ROOT}/backends/* ${ROOT}/driver/* ${ROOT}/distributed/*)
set(violations "")
foreach(file ${files})
  # The first rule whose folder holds the file applies (most specific first above).
  set(allowed "")
  foreach(rule ${rules})
    string(REPLACE "|" ";" parts "${rule}")
    string(REPLACE "," ";" parts "${parts}")
    list(GET parts 0 folder)
    string(FIND "${file}" "${folder}" at)
    if(at EQUAL 0)
      list(SUBLIST parts 1 -1 allowed)
      break()
    endif()
  endforeach()
  if(NOT allowed)
    continue()
  endif()
  file(STRINGS ${ROOT}/${file} includes REGEX "^#include \"")
  foreach(line ${includes})
    string(REGEX REPLACE "^#include \"([^\"]*)\".*" "\\1" target "${line}")
    set(ok FALSE)
    foreach(prefix ${allowed})
      string(FIND "${target}" "${prefix}" at)
      if(at EQUAL 0)
        set(ok TRUE)
      endif()
    endforeach()
    if(NOT ok)
      string(APPEND violations "  ${file} includes \"${target}\" (may include: ${allowed})\n")
    endif()
  endforeach()
endforeach()
if(violations)
  message(FATAL_ERROR "includes that point up the layers (docs/architecture.md):\n${violations}")
endif()
