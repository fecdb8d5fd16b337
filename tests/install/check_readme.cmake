# The README's quick start must be exactly samples/quickstart.cpp (less its first comment
# line), so the example a reader copies is one that compiles and runs in every build.
file(READ ${README} readme)
file(READ ${SAMPLE} sample)
string(FIND "${sample}" "\n" first_newline)
math(EXPR body_start "${first_newline} + 1")
string(SUBSTRING "${sample}" ${body_start} -1 body)
string(FIND "${readme}" "${body}```" at)
if(at EQUAL -1)
  message(FATAL_ERROR "README.md's quick start differs from ${SAMPLE}")
endif()
