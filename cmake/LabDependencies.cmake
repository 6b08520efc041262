# The four header-only libraries the course uses on the host side, each found in this order:
#   1. the system's package (find_package: Debian's libcli11-dev, nlohmann-json3-dev,
#      libtomlplusplus-dev, doctest-dev);
#   2. an offline bundle in LAB_DEPS_DIR (made by scripts/bundle-deps.sh; for GPU nodes without
#      network or packages);
#   3. a download of a pinned release, where the machine has network: one try with short time
#      limits (LAB_DEPS_DOWNLOAD_TIMEOUT), so that an offline machine fails within seconds with
#      one sentence naming the library and scripts/bundle-deps.sh (FetchContent would retry for
#      about 90 s and end in its generic "Each download failed!").
# Each ends up as one INTERFACE target: lab::cli11, lab::json, lab::toml, lab::doctest.
# To prove the offline path, configure with -DCMAKE_DISABLE_FIND_PACKAGE_<Pkg>=ON and
# -DFETCHCONTENT_FULLY_DISCONNECTED=ON (scripts/test-offline-build.sh does exactly that;
# tests/offline_deps.cmake checks the failure without a bundle).

set(LAB_DEPS_DIR "${PROJECT_SOURCE_DIR}/deps" CACHE PATH
    "Offline bundle of header-only dependencies (scripts/bundle-deps.sh writes it)")
set(LAB_DEPS_DOWNLOAD_TIMEOUT 120 CACHE STRING
    "Seconds a dependency download may take in all; one without progress for 15 s is given up")

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
    # The bundle holds all four libraries in one include/ folder. Only this one's folder is put
    # on the include path (copied into the build folder): with the whole bundle there, a target
    # that uses the bundle's toml++ would also see the bundle's nlohmann/json in front of the
    # system's, and two versions of one library in one program do not link (found on the GPU
    # machine, whose system has nlohmann/json but not toml++).
    string(REGEX MATCH "^[^/]+" top "${ARG_HEADER}")
    set(only "${CMAKE_BINARY_DIR}/_deps/lab-${alias}-bundle/include")
    file(REMOVE_RECURSE "${only}")
    file(COPY "${LAB_DEPS_DIR}/include/${top}" DESTINATION "${only}")
    target_include_directories(${lib} SYSTEM INTERFACE "${only}")
    message(STATUS "lab: ${ARG_PACKAGE} from the offline bundle ${LAB_DEPS_DIR}")
    return()
  endif()

  set(how "on a machine with network run scripts/bundle-deps.sh and copy its deps/ folder here (or pass -DLAB_DEPS_DIR=<bundle>)")
  if(FETCHCONTENT_FULLY_DISCONNECTED)
    message(FATAL_ERROR
      "lab: ${ARG_PACKAGE} is not installed, not in the offline bundle (${LAB_DEPS_DIR}/include/"
      "${ARG_HEADER}), and downloads are disabled: ${how}.")
  endif()

  # Only the headers are used, so the release is downloaded and unpacked here, once per build
  # folder, instead of through FetchContent: no sub-build, and no retry loop on an offline node.
  set(src "${CMAKE_BINARY_DIR}/_deps/lab-${alias}")
  if(NOT EXISTS "${src}/.complete")
    message(STATUS "lab: ${ARG_PACKAGE} is neither installed nor in ${LAB_DEPS_DIR}: downloading "
                   "${ARG_URL}")
    file(REMOVE_RECURSE "${src}")
    file(DOWNLOAD "${ARG_URL}" "${src}.tar.gz" STATUS status
         TIMEOUT ${LAB_DEPS_DOWNLOAD_TIMEOUT} INACTIVITY_TIMEOUT 15 TLS_VERIFY ON)
    list(GET status 0 code)
    if(NOT code EQUAL 0)
      list(GET status 1 why)
      file(REMOVE "${src}.tar.gz")
      message(FATAL_ERROR
        "lab: ${ARG_PACKAGE} is not installed, not in the offline bundle (${LAB_DEPS_DIR}), and "
        "could not be downloaded (${why}): ${how}.")
    endif()
    file(ARCHIVE_EXTRACT INPUT "${src}.tar.gz" DESTINATION "${src}")
    file(REMOVE "${src}.tar.gz")
    file(TOUCH "${src}/.complete")
  endif()
  # The tarball holds one top folder (CLI11-2.4.2/...).
  file(GLOB tops LIST_DIRECTORIES true "${src}/*")
  set(include_dir "")
  foreach(top IN LISTS tops)
    if(EXISTS "${top}/${ARG_INCLUDE_SUBDIR}/${ARG_HEADER}")
      set(include_dir "${top}/${ARG_INCLUDE_SUBDIR}")
      cmake_path(NORMAL_PATH include_dir)
    endif()
  endforeach()
  if(NOT include_dir)
    message(FATAL_ERROR "lab: the download of ${ARG_PACKAGE} (${ARG_URL}) has no "
                        "${ARG_INCLUDE_SUBDIR}/${ARG_HEADER}: delete ${src} and configure again, or ${how}.")
  endif()
  target_include_directories(${lib} SYSTEM INTERFACE "${include_dir}")
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
