# cmake -DPROGRAMS=<prog>|<prog>... -DWORK_DIR=<scratch folder> -P lesson_json_unwritable.cmake
#
# Every lesson program given --json PATH it cannot write says so in one sentence and exits 2
# (usage) before measuring anything: no abort ("terminate called", exit 134), no GPU needed.
# Cases: the folder does not exist; PATH is a folder; the folder is read-only (not as root, who
# may write anywhere).
cmake_minimum_required(VERSION 3.25)
if(NOT PROGRAMS OR NOT WORK_DIR)
  message(FATAL_ERROR "usage: cmake -DPROGRAMS=a|b -DWORK_DIR=<dir> -P lesson_json_unwritable.cmake")
endif()
string(REPLACE "|" ";" programs "${PROGRAMS}")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}/folder.json" "${WORK_DIR}/read-only")
file(CHMOD "${WORK_DIR}/read-only" DIRECTORY_PERMISSIONS OWNER_READ OWNER_EXECUTE)
execute_process(COMMAND id -u OUTPUT_VARIABLE uid OUTPUT_STRIP_TRAILING_WHITESPACE)

set(cases "${WORK_DIR}/no-such-folder/r.json|its folder does not exist"
          "${WORK_DIR}/folder.json|it is a folder")
if(NOT uid STREQUAL "0")
  list(APPEND cases "${WORK_DIR}/read-only/r.json|Permission denied")
endif()

set(failures "")
set(checked 0)
foreach(program IN LISTS programs)
  foreach(case IN LISTS cases)
    string(REPLACE "|" ";" case "${case}")
    list(GET case 0 path)
    list(GET case 1 reason)
    execute_process(COMMAND "${program}" --quick --json "${path}"
                    RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 30)
    string(REGEX REPLACE "\n$" "" err "${err}")
    if(NOT code EQUAL 2 OR NOT err MATCHES ": cannot write the result file ${path}: ${reason}$"
       OR err MATCHES "terminate called")
      string(APPEND failures "${program} --json ${path}: exit ${code}, said:\n${err}\n")
    endif()
    math(EXPR checked "${checked} + 1")
  endforeach()
endforeach()
file(CHMOD "${WORK_DIR}/read-only" DIRECTORY_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
if(failures)
  message(FATAL_ERROR "${failures}")
endif()
list(LENGTH programs n)
message(STATUS "${n} lesson programs, ${checked} runs: each said why and exited 2")
