# The four header-only libraries the course uses on the host side, each found in this order:
#   1. the system's package (find_package: Debian's libcli11-dev, nlohmann-json3-dev,
#      libtomlplusplus-dev, doctest-dev);
#   2. an offline bundle in LAB_DEPS_DIR (made by scripts/bundle-deps.sh; for GPU nodes without
#      network or packages);
#   3. a download of a pinned release (FetchContent), where the machine has network.
# Each ends up as one INTERFACE target: lab::cli11, lab::json, lab::toml, lab::doctest.
# To prove the offline path, configure with -DCMAKE_DISABLE_FIND_PACKAGE_<Pkg>=ON and
# -DFETCHCONTENT_FULLY_DISCONNECTED=ON (scripts/test-offline-build.sh does exactly that).
include(FetchContent)

set(LAB_DEPS_DIR "${PROJECT_SOURCE_DIR}/deps" CACHE PATH
    "Offline bundle of header-only dependencies (scripts/bundle-deps.sh writes it)")

# lab_dependency(<alias> PACKAGE <find_package name> TARGET <imported target>
#                HEADER <path under include/> URL <release tarball> INCLUDE_SUBDIR <dir in tarball>)
function(lab_dependency alias)
  cmake_parse_arguments(ARG "" "PACKAGE;TARGET;HEADER;URL;INCLUDE_SUBDIR" "" ${ARGN})
  set(lib "lab_dep_${alias}")
  add_library(${lib} INTERFACE)
  add_library(lab::${alias} ALIAS ${lib})

  find_package(${ARG_PACKAGE} CONFIG QUIET)
  if(TARGET ${ARG_TARGET})
    target_link_libraries(${lib} INTERFACE ${ARG_TARGET})
    message(STATUS "lab: ${ARG_PACKAGE} from the system (${${ARG_PACKAGE}_DIR})")
    return()
  endif()

  if(EXISTS "${LAB_DEPS_DIR}/include/${ARG_HEADER}")
    target_include_directories(${lib} SYSTEM INTERFACE "${LAB_DEPS_DIR}/include")
    message(STATUS "lab: ${ARG_PACKAGE} from the offline bundle ${LAB_DEPS_DIR}")
    return()
  endif()

  if(FETCHCONTENT_FULLY_DISCONNECTED)
    message(FATAL_ERROR
      "lab: ${ARG_PACKAGE} is not installed, not in the offline bundle (${LAB_DEPS_DIR}/include/"
      "${ARG_HEADER}), and downloads are disabled. On a machine with network run "
      "scripts/bundle-deps.sh and copy the deps/ folder here.")
  endif()
  message(STATUS "lab: ${ARG_PACKAGE} is neither installed nor in ${LAB_DEPS_DIR}: downloading "
                 "${ARG_URL} (offline? run scripts/bundle-deps.sh where there is network)")
  # SOURCE_SUBDIR points at a folder without a CMakeLists.txt: we want the headers, not the
  # project's own build (some of whose CMakeLists no longer configure with CMake 4).
  FetchContent_Declare(lab_src_${alias} URL "${ARG_URL}" SOURCE_SUBDIR lab-headers-only)
  FetchContent_MakeAvailable(lab_src_${alias})
  target_include_directories(${lib} SYSTEM INTERFACE
                             "${lab_src_${alias}_SOURCE_DIR}/${ARG_INCLUDE_SUBDIR}")
  message(STATUS "lab: ${ARG_PACKAGE} downloaded from ${ARG_URL}")
endfunction()

# Pinned releases; scripts/bundle-deps.sh downloads the same ones.
lab_dependency(cli11 PACKAGE CLI11 TARGET CLI11::CLI11 HEADER CLI/CLI.hpp
  URL https://github.com/CLIUtils/CLI11/archive/refs/tags/v2.4.2.tar.gz INCLUDE_SUBDIR include)
lab_dependency(json PACKAGE nlohmann_json TARGET nlohmann_json::nlohmann_json HEADER nlohmann/json.hpp
  URL https://github.com/nlohmann/json/archive/refs/tags/v3.11.3.tar.gz INCLUDE_SUBDIR include)
lab_dependency(toml PACKAGE tomlplusplus TARGET tomlplusplus::tomlplusplus HEADER toml++/toml.h
  URL https://github.com/marzer/tomlplusplus/archive/refs/tags/v3.4.0.tar.gz INCLUDE_SUBDIR include)
lab_dependency(doctest PACKAGE doctest TARGET doctest::doctest HEADER doctest/doctest.h
  URL https://github.com/doctest/doctest/archive/refs/tags/v2.4.12.tar.gz INCLUDE_SUBDIR .)
# Without the system package (which brings its compiled library and says so itself), toml++ is
# used header-only, so a bundle needs no compiled library. Include it as <toml++/toml.h>: the
# only name Debian's 3.3 has.
if(NOT TARGET tomlplusplus::tomlplusplus)
  target_compile_definitions(lab_dep_toml INTERFACE TOML_HEADER_ONLY=1)
endif()
