# Writes OUT, a header defining FLUXION_CODEGEN_HASH: a hash of every source file that decides
# what native code a program compiles to. It keys the on-disk code cache, so a rebuilt library
# never loads code that an older code generator wrote.
string(REPLACE "|" ";" SOURCES "${SOURCES}")
set(text "")
foreach(f ${SOURCES})
  file(SHA256 ${f} h)
  string(APPEND text "${h}")
endforeach()
string(SHA256 all "${text}")
string(SUBSTRING "${all}" 0 16 short)
file(WRITE ${OUT}.tmp "#pragma once\n#define FLUXION_CODEGEN_HASH \"${short}\"\n")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
