# cmake -DSOURCE_DIR=<repo> [-DREADME=<file>] -P readme_commands.cmake
#
# Keeps the README from drifting away from what CI runs. README.md marks its two commands:
#
#   <!-- lab:main-command -->
#   ```sh
#   cmake --workflow --preset lab
#   ```
#
# and the same with <!-- lab:test-command -->. Each marked block must hold exactly one command of
# the form `cmake --workflow --preset <name>`, <name> must be a workflow preset in
# CMakePresets.json, the test command must appear verbatim on a line of .ci/run, and the test
# workflow must not configure with CMAKE_CUDA_ARCHITECTURES=native (it has to run without a GPU).
cmake_minimum_required(VERSION 3.25)
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "usage: cmake -DSOURCE_DIR=<repo> -P readme_commands.cmake")
endif()
if(NOT README)
  set(README "${SOURCE_DIR}/README.md")
endif()
set(ci_script "${SOURCE_DIR}/.ci/run")
set(presets_file "${SOURCE_DIR}/CMakePresets.json")
foreach(file IN ITEMS "${README}" "${ci_script}" "${presets_file}")
  if(NOT EXISTS "${file}")
    message(FATAL_ERROR "${file} does not exist")
  endif()
endforeach()
file(READ "${README}" readme)
file(READ "${presets_file}" presets)
file(STRINGS "${ci_script}" ci_lines)

# Sets <out> to the single command in the first fenced block after <!-- lab:<marker> -->.
function(marked_command marker out)
  set(tag "<!-- lab:${marker} -->")
  string(FIND "${readme}" "${tag}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "README.md has no '${tag}' line before its fenced ${marker} block")
  endif()
  string(SUBSTRING "${readme}" ${at} -1 rest)
  string(FIND "${rest}" "${tag}" again REVERSE)
  if(NOT again EQUAL 0)
    message(FATAL_ERROR "README.md has '${tag}' more than once")
  endif()
  string(REGEX MATCH "^${tag}[ \t]*\n[ \t]*```[A-Za-z]*[ \t]*\n" head "${rest}")
  if(head STREQUAL "")
    message(FATAL_ERROR "README.md: '${tag}' must be followed directly by a fenced code block")
  endif()
  string(LENGTH "${head}" skip)
  string(SUBSTRING "${rest}" ${skip} -1 body)
  string(FIND "${body}" "```" end)
  if(end EQUAL -1)
    message(FATAL_ERROR "README.md: the ${marker} block is not closed")
  endif()
  string(SUBSTRING "${body}" 0 ${end} body)
  string(REGEX MATCHALL "[^\n]+" lines "${body}")
  set(commands "")
  foreach(line IN LISTS lines)
    string(STRIP "${line}" line)
    string(REGEX REPLACE "^\\$[ \t]*" "" line "${line}")   # allow a "$ " prompt
    if(NOT line STREQUAL "" AND NOT line MATCHES "^#")
      list(APPEND commands "${line}")
    endif()
  endforeach()
  list(LENGTH commands n)
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "README.md: the ${marker} block must hold exactly one command, has ${n}: "
                        "${commands}")
  endif()
  set(${out} "${commands}" PARENT_SCOPE)
endfunction()

# Sets <out> to the workflow preset named by `cmake --workflow --preset <name>`.
function(workflow_of command out)
  if(NOT command MATCHES "^cmake --workflow --preset ([A-Za-z0-9_.-]+)$")
    message(FATAL_ERROR "README.md: '${command}' is not of the form "
                        "'cmake --workflow --preset <name>'")
  endif()
  set(name "${CMAKE_MATCH_1}")
  string(JSON count LENGTH "${presets}" workflowPresets)
  math(EXPR last "${count} - 1")
  foreach(i RANGE ${last})
    string(JSON candidate GET "${presets}" workflowPresets ${i} name)
    if(candidate STREQUAL name)
      string(JSON configure GET "${presets}" workflowPresets ${i} steps 0 name)
      set(${out} "${name}" PARENT_SCOPE)
      set(${out}_CONFIGURE "${configure}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  message(FATAL_ERROR "README.md names workflow preset '${name}', which CMakePresets.json lacks")
endfunction()

# Sets <out> to a configure preset's CMAKE_CUDA_ARCHITECTURES, following "inherits".
function(cuda_architectures_of preset out)
  string(JSON count LENGTH "${presets}" configurePresets)
  math(EXPR last "${count} - 1")
  foreach(i RANGE ${last})
    string(JSON name GET "${presets}" configurePresets ${i} name)
    if(name STREQUAL preset)
      string(JSON value ERROR_VARIABLE missing
             GET "${presets}" configurePresets ${i} cacheVariables CMAKE_CUDA_ARCHITECTURES)
      if(NOT missing)
        set(${out} "${value}" PARENT_SCOPE)
        return()
      endif()
      string(JSON parents ERROR_VARIABLE none GET "${presets}" configurePresets ${i} inherits)
      if(none)
        set(${out} "" PARENT_SCOPE)
        return()
      endif()
      string(JSON type TYPE "${presets}" configurePresets ${i} inherits)
      if(type STREQUAL "ARRAY")
        string(JSON parents GET "${presets}" configurePresets ${i} inherits 0)
      endif()
      cuda_architectures_of("${parents}" value)
      set(${out} "${value}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  message(FATAL_ERROR "CMakePresets.json has no configure preset '${preset}'")
endfunction()

marked_command(main-command main_command)
marked_command(test-command test_command)
workflow_of("${main_command}" main_workflow)
workflow_of("${test_command}" test_workflow)
if(main_workflow STREQUAL test_workflow)
  message(FATAL_ERROR "README.md: the main and the test command are the same workflow")
endif()

set(found FALSE)
foreach(line IN LISTS ci_lines)
  string(STRIP "${line}" line)
  if(line STREQUAL test_command)
    set(found TRUE)
  endif()
endforeach()
if(NOT found)
  message(FATAL_ERROR ".ci/run does not run the README's test command '${test_command}' "
                      "(it must appear on a line by itself)")
endif()

cuda_architectures_of("${test_workflow_CONFIGURE}" test_arch)
if(test_arch STREQUAL "native")
  message(FATAL_ERROR "workflow '${test_workflow}' configures with CMAKE_CUDA_ARCHITECTURES=native, "
                      "so the README's test command would fail on machines without a GPU")
endif()

message(STATUS "README main command: ${main_command} (configure preset ${main_workflow_CONFIGURE})")
message(STATUS "README test command: ${test_command} (configure preset ${test_workflow_CONFIGURE}, "
               "CUDA architectures ${test_arch}), run by .ci/run")
