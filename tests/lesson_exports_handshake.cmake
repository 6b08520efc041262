# Every lesson program exports lab_trace_register (lab/trace_tag.hpp): without it the checker's
# tracer, loaded by the driver, cannot find the program's library, and no time can be
# corroborated. Run by CTest: cmake -DPROGRAMS=a|b|... -DNM=<nm> -P lesson_exports_handshake.cmake
string(REPLACE "|" ";" programs "${PROGRAMS}")
set(missing "")
foreach(program IN LISTS programs)
  execute_process(COMMAND "${NM}" -D --defined-only "${program}"
                  OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT symbols MATCHES "[ \t]T[ \t]+lab_trace_register\n")
    list(APPEND missing "${program}")
  endif()
endforeach()
list(LENGTH programs count)
if(missing)
  message(FATAL_ERROR "these lesson programs do not export lab_trace_register (the tracer's "
                      "handshake): ${missing}")
endif()
message(STATUS "all ${count} lesson programs export lab_trace_register")
