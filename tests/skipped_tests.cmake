# cmake -DSOURCE_DIR=<repo> -DWORK_DIR=<scratch folder> [-DGENERATOR=<gen>] -P skipped_tests.cmake
#
# scripts/skipped-tests.sh (what .ci/run prints after the tests) on the JUnit file of a real
# CTest run: a miniature project whose tests pass, skip like a GPU test without a GPU (exit 77,
# its reason on stderr, with characters XML must escape), skip by regular expression, or are
# disabled. Each not-run test must be listed with its reason; the passed one must not.
cmake_minimum_required(VERSION 3.25)
foreach(var SOURCE_DIR WORK_DIR)
  if(NOT ${var})
    message(FATAL_ERROR "usage: cmake -DSOURCE_DIR=<repo> -DWORK_DIR=<dir> -P skipped_tests.cmake")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
file(WRITE "${WORK_DIR}/project/CMakeLists.txt" [=[
cmake_minimum_required(VERSION 3.25)
project(lab_skipped_probe LANGUAGES NONE)
enable_testing()
add_test(NAME gpu.timing COMMAND sh -c "echo 'doctest says hello'; echo '/x/y/test_timing: no usable CUDA device (no CUDA-capable device is detected <&>); skipping (exit 77)' >&2; exit 77")
set_tests_properties(gpu.timing PROPERTIES SKIP_RETURN_CODE 77)
add_test(NAME unit.ok COMMAND sh -c "echo fine")
add_test(NAME by.regex COMMAND sh -c "echo 'SKIP: ncu is not installed'")
set_tests_properties(by.regex PROPERTIES SKIP_REGULAR_EXPRESSION "SKIP:")
add_test(NAME turned.off COMMAND true)
set_tests_properties(turned.off PROPERTIES DISABLED ON)
]=])
set(generator "")
if(GENERATOR)
  set(generator -G "${GENERATOR}")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" -S "${WORK_DIR}/project" -B "${WORK_DIR}/build" ${generator}
                RESULT_VARIABLE code OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT code EQUAL 0)
  message(FATAL_ERROR "the probe project did not configure: ${err}")
endif()
get_filename_component(cmake_bin "${CMAKE_COMMAND}" DIRECTORY)
execute_process(COMMAND "${cmake_bin}/ctest" --output-junit junit.xml
                WORKING_DIRECTORY "${WORK_DIR}/build" OUTPUT_QUIET ERROR_QUIET)
execute_process(COMMAND bash "${SOURCE_DIR}/scripts/skipped-tests.sh" "${WORK_DIR}/build/junit.xml"
                RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(failures "")
if(NOT code EQUAL 0)
  string(APPEND failures "scripts/skipped-tests.sh failed (${code}): ${err}\n")
endif()
foreach(expected
    "gpu.timing +no usable CUDA device \\(no CUDA-capable device is detected <&>\\); skipping \\(exit 77\\)\n"
    "by.regex +SKIP: ncu is not installed\n"
    "turned.off +[A-Za-z]")
  if(NOT out MATCHES "${expected}")
    string(APPEND failures "no line matching '${expected}'\n")
  endif()
endforeach()
if(out MATCHES "unit.ok")
  string(APPEND failures "a test that ran is listed as skipped\n")
endif()
if(failures)
  message(FATAL_ERROR "${failures}output was:\n${out}")
endif()
message(STATUS "skipped tests listed with their reasons:\n${out}")
