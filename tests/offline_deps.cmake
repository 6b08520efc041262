# cmake -DSOURCE_DIR=<repo> -DWORK_DIR=<scratch folder> [-DGENERATOR=<gen>] -P offline_deps.cmake
#
# cmake/LabDependencies.cmake on a GPU node without network, without the system packages and
# without the offline bundle: the configure must fail within seconds, ending in one sentence that
# names the library and scripts/bundle-deps.sh, not in FetchContent's retries and its generic
# "Each download failed!". "No network" is made by a proxy nobody listens on (127.0.0.1:9), so
# every download is refused at once, whatever network this machine has. Also checked: the same
# with downloads disabled (-DFETCHCONTENT_FULLY_DISCONNECTED=ON).
cmake_minimum_required(VERSION 3.25)
foreach(var SOURCE_DIR WORK_DIR)
  if(NOT ${var})
    message(FATAL_ERROR "usage: cmake -DSOURCE_DIR=<repo> -DWORK_DIR=<dir> -P offline_deps.cmake")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}/project" "${WORK_DIR}/empty-bundle")
# A project of nothing but the dependencies: no compiler needed, seconds to configure.
file(WRITE "${WORK_DIR}/project/CMakeLists.txt"
  "cmake_minimum_required(VERSION 3.25)\n"
  "project(lab_offline_deps_probe LANGUAGES NONE)\n"
  "include(\"${SOURCE_DIR}/cmake/LabDependencies.cmake\")\n")
set(generator "")
if(GENERATOR)
  set(generator -G "${GENERATOR}")
endif()

set(failures "")
foreach(case download disconnected)
  set(extra "")
  if(case STREQUAL "disconnected")
    set(extra -DFETCHCONTENT_FULLY_DISCONNECTED=ON)
  endif()
  string(TIMESTAMP t0 "%s")
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -E env --unset=no_proxy --unset=NO_PROXY
            https_proxy=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9
            http_proxy=http://127.0.0.1:9 ALL_PROXY=http://127.0.0.1:9
            "${CMAKE_COMMAND}" -S "${WORK_DIR}/project" -B "${WORK_DIR}/build-${case}" ${generator}
            -DCMAKE_DISABLE_FIND_PACKAGE_CLI11=ON -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON
            -DCMAKE_DISABLE_FIND_PACKAGE_tomlplusplus=ON -DCMAKE_DISABLE_FIND_PACKAGE_doctest=ON
            "-DLAB_DEPS_DIR=${WORK_DIR}/empty-bundle" ${extra}
    RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE out TIMEOUT 60)
  string(TIMESTAMP t1 "%s")
  math(EXPR seconds "${t1} - ${t0}")
  string(REGEX REPLACE "[ \n]+" " " flat "${out}")  # CMake wraps long messages
  set(why "")
  if(code EQUAL 0)
    set(why "the configure succeeded")
  elseif(seconds GREATER 20)
    set(why "it took ${seconds} s")
  elseif(NOT flat MATCHES "lab: CLI11 is not installed, not in the offline bundle")
    set(why "the message does not name the library")
  elseif(NOT flat MATCHES "run scripts/bundle-deps.sh")
    set(why "the message does not say how to make the bundle")
  elseif(flat MATCHES "Each download failed|Retrying")
    set(why "FetchContent's retries are back")
  endif()
  if(why)
    string(APPEND failures "${case}: ${why} (exit ${code}):\n${out}\n")
  else()
    message(STATUS "${case}: failed in ${seconds} s with the sentence")
  endif()
endforeach()
# And a download that works (a file:// URL) is unpacked and used: a fake bundle provides the four
# real libraries (only their headers' existence is checked), a fake release the fifth.
file(MAKE_DIRECTORY "${WORK_DIR}/fake-release/fake-1.0/include/fake" "${WORK_DIR}/ok/project")
file(WRITE "${WORK_DIR}/fake-release/fake-1.0/include/fake/fake.hpp" "#pragma once\n")
execute_process(COMMAND "${CMAKE_COMMAND}" -E tar czf "${WORK_DIR}/fake-1.0.tar.gz" fake-1.0
                WORKING_DIRECTORY "${WORK_DIR}/fake-release")
foreach(header CLI/CLI.hpp nlohmann/json.hpp toml++/toml.h doctest/doctest.h)
  file(WRITE "${WORK_DIR}/fake-bundle/include/${header}" "")
endforeach()
file(WRITE "${WORK_DIR}/ok/project/CMakeLists.txt"
  "cmake_minimum_required(VERSION 3.25)\n"
  "project(lab_download_probe LANGUAGES NONE)\n"
  "include(\"${SOURCE_DIR}/cmake/LabDependencies.cmake\")\n"
  "lab_dependency(fake PACKAGE LabFakeLibrary TARGET lab_fake::fake HEADER fake/fake.hpp\n"
  "  URL \"file://${WORK_DIR}/fake-1.0.tar.gz\" INCLUDE_SUBDIR include)\n"
  "get_target_property(dirs lab_dep_fake INTERFACE_INCLUDE_DIRECTORIES)\n"
  "message(STATUS \"probe: include \${dirs}\")\n")
execute_process(
  COMMAND "${CMAKE_COMMAND}" -S "${WORK_DIR}/ok/project" -B "${WORK_DIR}/ok/build" ${generator}
          -DCMAKE_DISABLE_FIND_PACKAGE_CLI11=ON -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON
          -DCMAKE_DISABLE_FIND_PACKAGE_tomlplusplus=ON -DCMAKE_DISABLE_FIND_PACKAGE_doctest=ON
          "-DLAB_DEPS_DIR=${WORK_DIR}/fake-bundle"
  RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE out TIMEOUT 60)
if(NOT code EQUAL 0 OR NOT out MATCHES "probe: include ${WORK_DIR}/ok/build/_deps/lab-fake/fake-1.0/include")
  string(APPEND failures "a working download was not unpacked and used (exit ${code}):\n${out}\n")
else()
  message(STATUS "download: unpacked and used")
endif()

# A library taken from the bundle puts only its own folder on the include path: where the system
# has nlohmann/json and the bundle toml++, a target using both must not see the bundle's json.
file(MAKE_DIRECTORY "${WORK_DIR}/one/project")
file(WRITE "${WORK_DIR}/one/project/CMakeLists.txt"
  "cmake_minimum_required(VERSION 3.25)\n"
  "project(lab_bundle_probe LANGUAGES NONE)\n"
  "include(\"${SOURCE_DIR}/cmake/LabDependencies.cmake\")\n"
  "get_target_property(dirs lab_dep_toml INTERFACE_INCLUDE_DIRECTORIES)\n"
  "message(STATUS \"probe: include \${dirs}\")\n")
execute_process(
  COMMAND "${CMAKE_COMMAND}" -S "${WORK_DIR}/one/project" -B "${WORK_DIR}/one/build" ${generator}
          -DCMAKE_DISABLE_FIND_PACKAGE_CLI11=ON -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON
          -DCMAKE_DISABLE_FIND_PACKAGE_tomlplusplus=ON -DCMAKE_DISABLE_FIND_PACKAGE_doctest=ON
          "-DLAB_DEPS_DIR=${WORK_DIR}/fake-bundle"
  RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE out TIMEOUT 60)
string(REGEX MATCH "probe: include ([^\n]*)" line "${out}")
set(dir "${CMAKE_MATCH_1}")
if(NOT code EQUAL 0 OR NOT EXISTS "${dir}/toml++/toml.h")
  string(APPEND failures "toml++ from the bundle is not on its include path (exit ${code}):\n${out}\n")
elseif(EXISTS "${dir}/nlohmann" OR EXISTS "${dir}/CLI" OR EXISTS "${dir}/doctest")
  string(APPEND failures "toml++'s include path from the bundle also holds the other libraries: ${dir}\n")
else()
  message(STATUS "bundle: one library per include path")
endif()

if(failures)
  message(FATAL_ERROR "${failures}")
endif()
