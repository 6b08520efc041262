# cmake -DSOURCE_DIR=<repo> -DCOMPILE_COMMANDS=<build>/compile_commands.json -P every_cu_compiled.cmake
#
# Every .cu file under common/, lessons/, solutions/ and checker/ must be compiled by the build,
# except files of a separate CMake project inside the tree (a folder whose CMakeLists.txt calls
# project(), such as the checker's test fixture course), which that project's own tests build.
# So must every mutant (solutions/NN-topic/mutants/<m>.patch, made into
# <build>/lessons/NN-topic/mutants/<m>.cu), except those that exist to fail compilation
# (compile_error*.patch, which `lab-check selftest` compiles as a student's file).
cmake_minimum_required(VERSION 3.25)
if(NOT SOURCE_DIR OR NOT COMPILE_COMMANDS)
  message(FATAL_ERROR "usage: cmake -DSOURCE_DIR=<repo> -DCOMPILE_COMMANDS=<file> "
                      "-P every_cu_compiled.cmake")
endif()
if(NOT EXISTS "${COMPILE_COMMANDS}")
  message(FATAL_ERROR "${COMPILE_COMMANDS} does not exist: configure with a Ninja or Makefile "
                      "generator and CMAKE_EXPORT_COMPILE_COMMANDS=ON (the presets do)")
endif()
file(REAL_PATH "${SOURCE_DIR}" SOURCE_DIR)

file(GLOB_RECURSE sources LIST_DIRECTORIES false RELATIVE "${SOURCE_DIR}"
     "${SOURCE_DIR}/common/*.cu" "${SOURCE_DIR}/lessons/*.cu"
     "${SOURCE_DIR}/solutions/*.cu" "${SOURCE_DIR}/checker/*.cu")
file(GLOB patches LIST_DIRECTORIES false RELATIVE "${SOURCE_DIR}" "${SOURCE_DIR}/solutions/*/mutants/*.patch")
list(FILTER patches EXCLUDE REGEX "/compile_error[^/]*\\.patch$")

# Sets <out> to the folder of the nearest separate CMake project holding <source>, or "".
function(own_project source out)
  get_filename_component(dir "${source}" DIRECTORY)
  while(dir)
    if(EXISTS "${SOURCE_DIR}/${dir}/CMakeLists.txt")
      file(STRINGS "${SOURCE_DIR}/${dir}/CMakeLists.txt" calls REGEX "^[ \t]*project[ \t]*\\(")
      if(calls)
        set(${out} "${dir}" PARENT_SCOPE)
        return()
      endif()
    endif()
    get_filename_component(dir "${dir}" DIRECTORY)
  endwhile()
  set(${out} "" PARENT_SCOPE)
endfunction()

set(own "")
foreach(source IN LISTS sources)
  own_project("${source}" project_dir)
  if(project_dir)
    list(APPEND own "${source}")
  endif()
endforeach()
if(own)
  list(REMOVE_ITEM sources ${own})
  list(LENGTH own n_own)
  message(STATUS "not counted: ${n_own} .cu files of separate CMake projects in the tree")
endif()

file(READ "${COMPILE_COMMANDS}" database)
string(JSON count LENGTH "${database}")
set(compiled "")
if(count GREATER 0)
  math(EXPR last "${count} - 1")
  foreach(i RANGE ${last})
    string(JSON file GET "${database}" ${i} file)
    string(JSON dir GET "${database}" ${i} directory)
    cmake_path(ABSOLUTE_PATH file BASE_DIRECTORY "${dir}" NORMALIZE)
    if(EXISTS "${file}")
      file(REAL_PATH "${file}" file)
    endif()
    list(APPEND compiled "${file}")
  endforeach()
endif()

set(missing "")
foreach(source IN LISTS sources)
  if(NOT "${SOURCE_DIR}/${source}" IN_LIST compiled)
    list(APPEND missing "${source}")
  endif()
endforeach()
# A mutant counts where the build compiled the file made from it (<build>/lessons/NN/mutants/<m>.cu,
# the build being the folder of compile_commands.json).
get_filename_component(build_dir "${COMPILE_COMMANDS}" DIRECTORY)
file(REAL_PATH "${build_dir}" build_dir)
foreach(patch IN LISTS patches)
  string(REGEX REPLACE "^solutions/([^/]+)/mutants/([^/]+)\\.patch$" "${build_dir}/lessons/\\1/mutants/\\2.cu"
         made "${patch}")
  if(NOT "${made}" IN_LIST compiled)
    list(APPEND missing "${patch}")
  endif()
endforeach()
list(LENGTH sources total)
list(LENGTH patches total_patches)
if(missing)
  list(JOIN missing "\n  " shown)
  message(FATAL_ERROR "these .cu files (or mutants' patches) are compiled by no target of this "
                      "build (add them to a lesson, a test or the library, or delete them):\n  ${shown}")
endif()
message(STATUS "all ${total} .cu files under common/ lessons/ solutions/ checker/ and the "
               "${total_patches} mutants that must compile are compiled")
