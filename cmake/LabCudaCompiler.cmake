# Finds nvcc before project() enables CUDA, so that a toolkit installed in /usr/local/cuda/bin
# but not on PATH (the toolkit's installer does not touch PATH) works, and a missing one is named
# in one sentence instead of CMake's "No CMAKE_CUDA_COMPILER could be found".
#
# Order: -DCMAKE_CUDA_COMPILER or $CUDACXX (CMake's own ways, left alone), then nvcc on PATH
# (CMake finds it itself), then each folder of LAB_CUDA_FALLBACK_DIRS (default /usr/local/cuda/bin;
# tests/find_nvcc.cmake points it elsewhere).
# Include it before project(); it works in script mode (cmake -P) too, for that test.
include_guard(GLOBAL)

if(NOT DEFINED LAB_CUDA_FALLBACK_DIRS)
  set(LAB_CUDA_FALLBACK_DIRS /usr/local/cuda/bin)
endif()

if(NOT CMAKE_CUDA_COMPILER AND "$ENV{CUDACXX}" STREQUAL "")
  find_program(_lab_nvcc_on_path nvcc NO_CACHE NO_CMAKE_PATH NO_CMAKE_ENVIRONMENT_PATH
               NO_CMAKE_SYSTEM_PATH NO_CMAKE_INSTALL_PREFIX)
  if(NOT _lab_nvcc_on_path)
    find_program(_lab_nvcc_fallback nvcc NO_CACHE NO_DEFAULT_PATH PATHS ${LAB_CUDA_FALLBACK_DIRS})
    if(_lab_nvcc_fallback)
      message(STATUS "lab: nvcc is not on PATH; using ${_lab_nvcc_fallback}")
      set(CMAKE_CUDA_COMPILER "${_lab_nvcc_fallback}" CACHE FILEPATH "The CUDA compiler (nvcc)")
    else()
      string(REPLACE ";" ", " _lab_dirs "${LAB_CUDA_FALLBACK_DIRS}")
      message(FATAL_ERROR
        "nvcc (the CUDA compiler) is neither on PATH nor in ${_lab_dirs}: install the CUDA "
        "Toolkit 13.0 (https://developer.nvidia.com/cuda-downloads), or pass "
        "-DCMAKE_CUDA_COMPILER=/path/to/bin/nvcc if it is installed elsewhere.")
    endif()
  endif()
endif()
