# cmake -DLAB_CHECK=<lab-check> -DSOURCE_DIR=<course> -DWORK_DIR=<folder> -P handout.cmake
#
# `lab-check handout` on the course, then the handout itself, host side: it holds nothing of the
# instructor's (no solutions/, answer keys, mutants, and no file that is a solution, spacing
# aside), it configures with the README's preset (ci, docs off), and it builds lab-check and
# lesson 01's starter exercise for sm_90 on 2 cores; its lab-check lists the lessons.
cmake_minimum_required(VERSION 3.25)
foreach(v LAB_CHECK SOURCE_DIR WORK_DIR)
  if(NOT ${v})
    message(FATAL_ERROR "usage: cmake -DLAB_CHECK=<lab-check> -DSOURCE_DIR=<course> -DWORK_DIR=<folder> "
                        "-P handout.cmake")
  endif()
endforeach()
set(tree "${WORK_DIR}/tree")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

function(run what)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY "${WORK_DIR}" RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}")
  endif()
  message(STATUS "${what}: ok")
endfunction()

run("lab-check handout" "${LAB_CHECK}" --source-dir "${SOURCE_DIR}" handout "${tree}")

# A second handout into the same folder is refused, in one sentence.
execute_process(COMMAND "${LAB_CHECK}" --source-dir "${SOURCE_DIR}" handout "${tree}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc EQUAL 0 OR NOT out MATCHES "exists and is not an empty folder")
  message(FATAL_ERROR "a handout into a folder that is not empty was not refused (${rc}): ${out}")
endif()

# Nothing of the instructor's, by name ...
file(GLOB_RECURSE leaks LIST_DIRECTORIES true RELATIVE "${tree}" "${tree}/*")
list(FILTER leaks INCLUDE REGEX "(^solutions$|^measurements/([^/]*-(ab|checks)|[^/]+/.*\\.(cu|patch))|^tests/CMakeLists\\.txt$|/mutants$|ANSWERS\\.md$|NOTES\\.md$|\\.patch$|expected\\.toml$|gpu-round\\.sh$)")
if(leaks)
  list(JOIN leaks "\n  " shown)
  message(FATAL_ERROR "the handout holds the instructor's files:\n  ${shown}")
endif()
# The instructor pages the texts link to are one-line stand-ins ...
foreach(page docs/grading-security.md docs/writing-a-lesson.md docs/history/grading-security-log.md)
  file(SIZE "${tree}/${page}" size)
  if(size GREATER 300)
    message(FATAL_ERROR "the handout's ${page} is ${size} bytes: the instructor's page, not its stand-in")
  endif()
endforeach()
# ... every link in the handout's texts leads somewhere ...
run("the handout's links" "${CMAKE_COMMAND}" "-DSOURCE_DIR=${tree}" -P "${CMAKE_CURRENT_LIST_DIR}/markdown_links.cmake")
# ... and nothing of the instructor's by content.
run("no solution in the handout" "${CMAKE_COMMAND}" "-DSOURCE_DIR=${tree}" "-DANSWERS_FROM=${SOURCE_DIR}"
    -P "${CMAKE_CURRENT_LIST_DIR}/student_tree.cmake")

# It builds as the README says (the ci preset; the docs left out, and only what a host can build).
set(deps "")
if(EXISTS "${SOURCE_DIR}/deps/include")
  set(deps "-DLAB_DEPS_DIR=${SOURCE_DIR}/deps")  # the offline bundle the course was built with
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" --preset ci -DLAB_BUILD_DOCS=OFF ${deps}
                WORKING_DIRECTORY "${tree}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the handout does not configure (${rc}):\n${out}")
endif()
run("handout build: lab-check and lesson 01's starter exercise"
    "${CMAKE_COMMAND}" --build "${tree}/build/ci" --parallel 2
    --target lab-check 01-timing-pitfalls-starter-exercise)
execute_process(COMMAND "${tree}/build/ci/checker/lab-check" list RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE out)
if(NOT rc EQUAL 0 OR NOT out MATCHES "01-timing-pitfalls")
  message(FATAL_ERROR "the handout's lab-check does not list its lessons (${rc}):\n${out}")
endif()
message(STATUS "handout: builds, lists its lessons, and holds no solution")
