# A lesson's check.toml `args` are accepted by its program: every run the checker makes passes
# them, so a misspelt variant in --skip-variant would fail every student's grade. Run by CTest:
# cmake -DTOML=<check.toml> -DPROGRAM=<lesson program> -P lesson_args.cmake
file(READ "${TOML}" toml)
set(args "")
if(toml MATCHES "\nargs = \\[([^]\n]*)\\]")
  string(REGEX MATCHALL "\"[^\"]*\"" quoted "${CMAKE_MATCH_1}")
  foreach(item IN LISTS quoted)
    string(REGEX REPLACE "^\"(.*)\"$" "\\1" item "${item}")
    list(APPEND args "${item}")
  endforeach()
elseif(toml MATCHES "\nargs = ")
  message(FATAL_ERROR "${TOML}: write args on one line (args = [\"...\", ...]), as this test reads it")
endif()
execute_process(COMMAND "${PROGRAM}" ${args} --list RESULT_VARIABLE rc OUTPUT_QUIET
                ERROR_VARIABLE error)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} refuses the args of ${TOML} (${args}): ${error}")
endif()
message(STATUS "${PROGRAM} accepts ${args}")
