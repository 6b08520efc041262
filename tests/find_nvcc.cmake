# cmake -DSOURCE_DIR=<repo> -DWORK_DIR=<scratch folder> -P find_nvcc.cmake
#
# cmake/LabCudaCompiler.cmake, as a user without nvcc on PATH meets it:
#   1. nvcc on PATH: left to CMake (CMAKE_CUDA_COMPILER stays unset);
#   2. nvcc only in the fallback folder (/usr/local/cuda/bin in real life): CMAKE_CUDA_COMPILER
#      is set to it;
#   3. nvcc nowhere: one sentence saying what to install or pass, not CMake's
#      "No CMAKE_CUDA_COMPILER could be found";
#   4. if this machine has /usr/local/cuda/bin/nvcc: a real project(... CUDA) configures with
#      PATH=/usr/bin:/bin (no CUDA on it).
# Fake nvcc files are empty executable scripts: the module only looks for them.
cmake_minimum_required(VERSION 3.25)
foreach(var SOURCE_DIR WORK_DIR)
  if(NOT ${var})
    message(FATAL_ERROR "usage: cmake -DSOURCE_DIR=<repo> -DWORK_DIR=<dir> -P find_nvcc.cmake")
  endif()
endforeach()
set(module "${SOURCE_DIR}/cmake/LabCudaCompiler.cmake")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}/on-path" "${WORK_DIR}/fallback" "${WORK_DIR}/empty")
foreach(dir on-path fallback)
  file(WRITE "${WORK_DIR}/${dir}/nvcc" "#!/bin/sh\nexit 1\n")
  file(CHMOD "${WORK_DIR}/${dir}/nvcc" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
endforeach()
file(WRITE "${WORK_DIR}/probe.cmake"
  "include(\"${module}\")\nmessage(\"probe: CMAKE_CUDA_COMPILER=[\${CMAKE_CUDA_COMPILER}]\")\n")

set(failures "")
# probe(<name> PATH <dirs> FALLBACK <dirs> RESULT <code var> OUTPUT <text var>)
function(probe path fallback code_var out_var)
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -E env --unset=CUDACXX "PATH=${path}"
            "${CMAKE_COMMAND}" "-DLAB_CUDA_FALLBACK_DIRS=${fallback}" -P "${WORK_DIR}/probe.cmake"
    RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE out)
  set(${code_var} "${code}" PARENT_SCOPE)
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

probe("${WORK_DIR}/on-path:/usr/bin:/bin" "${WORK_DIR}/fallback" code out)
if(NOT code EQUAL 0 OR NOT out MATCHES "CMAKE_CUDA_COMPILER=\\[\\]")
  string(APPEND failures "nvcc on PATH: expected CMake to be left to find it, got (${code}):\n${out}\n")
endif()

probe("${WORK_DIR}/empty:/usr/bin:/bin" "${WORK_DIR}/fallback" code out)
if(NOT code EQUAL 0 OR NOT out MATCHES "CMAKE_CUDA_COMPILER=\\[${WORK_DIR}/fallback/nvcc\\]"
   OR NOT out MATCHES "nvcc is not on PATH; using")
  string(APPEND failures "nvcc only in the fallback folder: expected it to be used, got (${code}):\n${out}\n")
endif()

probe("${WORK_DIR}/empty:/usr/bin:/bin" "${WORK_DIR}/none" code out)
string(REGEX REPLACE "[ \n]+" " " flat "${out}")  # CMake wraps long messages
if(code EQUAL 0 OR NOT flat MATCHES "nvcc \\(the CUDA compiler\\) is neither on PATH nor in"
   OR NOT flat MATCHES "-DCMAKE_CUDA_COMPILER=" OR flat MATCHES "No CMAKE_CUDA_COMPILER")
  string(APPEND failures "no nvcc anywhere: expected one clear sentence and a failure, got (${code}):\n${out}\n")
endif()

if(EXISTS /usr/local/cuda/bin/nvcc)
  file(WRITE "${WORK_DIR}/project/CMakeLists.txt"
    "cmake_minimum_required(VERSION 3.25)\n"
    "include(\"${module}\")\n"
    "project(lab_find_nvcc_probe LANGUAGES CUDA)\n"
    "message(STATUS \"probe: CUDA compiler \${CMAKE_CUDA_COMPILER}\")\n")
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -E env --unset=CUDACXX "PATH=/usr/bin:/bin"
            "${CMAKE_COMMAND}" -S "${WORK_DIR}/project" -B "${WORK_DIR}/project/build"
            -DCMAKE_CUDA_ARCHITECTURES=90
    RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT code EQUAL 0 OR NOT out MATCHES "probe: CUDA compiler /usr/local/cuda/bin/nvcc")
    string(APPEND failures "a real configure without nvcc on PATH failed (${code}):\n${out}\n")
  endif()
else()
  message(STATUS "no /usr/local/cuda/bin/nvcc here: the real configure is not tried")
endif()

if(failures)
  message(FATAL_ERROR "${failures}")
endif()
message(STATUS "find_nvcc: all cases hold")
