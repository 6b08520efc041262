# Each lesson's check.toml args are accepted by its program: every run the checker makes passes
# them, so a misspelt variant in --skip-variant would fail every student's grade. The args are
# read by the checker itself (lab-check list), not by a second TOML reader. Run by CTest:
# cmake -DLAB_CHECK=<lab-check> -DSOURCE_DIR=<repo> -DLESSONS_DIR=<build>/lessons -P lesson_args.cmake
execute_process(COMMAND "${LAB_CHECK}" --source-dir "${SOURCE_DIR}" --format json list
                OUTPUT_VARIABLE listing RESULT_VARIABLE rc ERROR_VARIABLE error)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "lab-check list failed: ${error}")
endif()
string(JSON count LENGTH "${listing}")
math(EXPR last "${count} - 1")
set(checked 0)
foreach(i RANGE ${last})
  string(JSON lesson GET "${listing}" ${i} lesson)
  set(program "${LESSONS_DIR}/${lesson}/solution")
  if(NOT EXISTS "${program}")
    continue()  # not built in this configuration
  endif()
  string(JSON nargs LENGTH "${listing}" ${i} args)
  set(args "")
  if(nargs GREATER 0)
    math(EXPR alast "${nargs} - 1")
    foreach(k RANGE ${alast})
      string(JSON arg GET "${listing}" ${i} args ${k})
      list(APPEND args "${arg}")
    endforeach()
  endif()
  execute_process(COMMAND "${program}" ${args} --list RESULT_VARIABLE rc OUTPUT_QUIET
                  ERROR_VARIABLE error)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${program} refuses the args of lessons/${lesson}/check.toml (${args}): ${error}")
  endif()
  math(EXPR checked "${checked} + 1")
endforeach()
message(STATUS "${checked} lesson programs accept their check.toml args")
