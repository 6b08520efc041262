# lab_add_doctest(<name> SOURCES <files>... [LIBRARIES <targets>...] [GPU] [TIMEOUT <seconds>])
#
# One doctest executable = one CTest test of the same name (no doctest_discover_tests: it runs the
# binary at build time, and the offline bundle ships no doctest.cmake).
#
#   unit (default): main() from tests/support/doctest_main.cpp; LABELS unit. Must not need a GPU.
#   GPU:            main() from tests/support/doctest_gpu_main.cpp, which exits 77 where no CUDA
#                   device can be used (unless doctest is only listing or printing help), so CTest
#                   reports the test as Skipped; LABELS gpu, SKIP_RETURN_CODE 77.
#                   Set LAB_REQUIRE_GPU=1 in the environment to turn that skip into a failure.
#
# Pass options to doctest when running by hand, e.g. build/ci/common/tests/foo -tc="*median*".
# Include this file after LabDependencies (lab::doctest) and find_package(CUDAToolkit); it creates
# nothing until lab_add_doctest is first called, so it can come before add_subdirectory(common).
include_guard(GLOBAL)

set(LAB_TESTING_SUPPORT_DIR "${CMAKE_CURRENT_LIST_DIR}/../tests/support")
cmake_path(NORMAL_PATH LAB_TESTING_SUPPORT_DIR)

# The two main()s are compiled once each, as object libraries shared by every test executable.
function(_lab_doctest_main_target out gpu)
  if(gpu)
    set(target lab_doctest_gpu_main)
    set(source "${LAB_TESTING_SUPPORT_DIR}/doctest_gpu_main.cpp")
  else()
    set(target lab_doctest_main)
    set(source "${LAB_TESTING_SUPPORT_DIR}/doctest_main.cpp")
  endif()
  if(NOT TARGET ${target})
    add_library(${target} OBJECT "${source}")
    target_link_libraries(${target} PUBLIC lab::doctest)
    if(gpu)
      # Only the runtime, never libcuda or NVML: the binary must start on a machine without a
      # driver so that it can say "skipped". Use the same cudart flavour nvcc links by default.
      string(TOUPPER "${CMAKE_CUDA_RUNTIME_LIBRARY}" runtime)
      if(runtime STREQUAL "SHARED")
        target_link_libraries(${target} PUBLIC CUDA::cudart)
      else()
        target_link_libraries(${target} PUBLIC CUDA::cudart_static)
      endif()
    endif()
  endif()
  set(${out} ${target} PARENT_SCOPE)
endfunction()

function(lab_add_doctest name)
  cmake_parse_arguments(ARG "GPU" "TIMEOUT" "SOURCES;LIBRARIES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "lab_add_doctest(${name}): SOURCES is required")
  endif()
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "lab_add_doctest(${name}): unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  _lab_doctest_main_target(main_target "${ARG_GPU}")

  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${main_target} lab::doctest ${ARG_LIBRARIES})
  add_test(NAME ${name} COMMAND ${name})
  if(ARG_GPU)
    set_tests_properties(${name} PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)
  else()
    set_tests_properties(${name} PROPERTIES LABELS unit)
    set_property(GLOBAL APPEND PROPERTY LAB_UNIT_TEST_TARGETS ${name})
  endif()
  if(ARG_TIMEOUT)
    set_tests_properties(${name} PROPERTIES TIMEOUT ${ARG_TIMEOUT})
  endif()
endfunction()
