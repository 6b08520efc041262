# lab_add_lesson(<NN-topic> [LIBRARIES <targets>...])
#
# Turns a lesson folder into programs that share one compiled harness:
#   lessons/NN-topic/main.cu            -> object library <NN-topic>-harness (compiled once)
#   lessons/NN-topic/exercise.cu        -> program <build>/lessons/NN-topic/starter
#   solutions/NN-topic/exercise.cu      -> program <build>/lessons/NN-topic/solution
#   lessons/NN-topic/mutants/<m>.cu     -> program <build>/lessons/NN-topic/mutant-<m>
#                                          (except mutants named compile_error*.cu)
#   ${LAB_SUBMISSION_DIR}/NN-topic/exercise.cu (when set and present)
#                                       -> program <build>/lessons/NN-topic/submission
# Only the exercise file differs between them, so a student's file is compiled against the
# pristine harness, and rebuilding a submission recompiles one translation unit.
# It also registers the GPU tests: starter and solution run at small sizes and must validate.
function(lab_add_lesson lesson)
  cmake_parse_arguments(ARG "" "" "LIBRARIES" ${ARGN})
  set(src "${PROJECT_SOURCE_DIR}/lessons/${lesson}")
  set(out "${PROJECT_BINARY_DIR}/lessons/${lesson}")

  add_library(${lesson}-harness OBJECT "${src}/main.cu")
  target_include_directories(${lesson}-harness PUBLIC "${src}")
  target_link_libraries(${lesson}-harness PUBLIC lab ${ARG_LIBRARIES})

  # lab_lesson_program(<kind> <exercise.cu>): one program = harness + one exercise file.
  function(lab_lesson_program kind exercise)
    set(target ${lesson}-${kind})
    add_executable(${target} "${exercise}")
    target_link_libraries(${target} PRIVATE ${lesson}-harness)
    set_target_properties(${target} PROPERTIES OUTPUT_NAME ${kind}
                          RUNTIME_OUTPUT_DIRECTORY "${out}")
    set_property(GLOBAL APPEND PROPERTY LAB_LESSON_PROGRAMS ${target})
  endfunction()

  lab_lesson_program(starter "${src}/exercise.cu")
  lab_lesson_program(solution "${PROJECT_SOURCE_DIR}/solutions/${lesson}/exercise.cu")

  file(GLOB mutants CONFIGURE_DEPENDS "${src}/mutants/*.cu")
  foreach(mutant IN LISTS mutants)
    get_filename_component(name "${mutant}" NAME_WE)
    if(NOT name MATCHES "^compile_error")
      lab_lesson_program(mutant-${name} "${mutant}")
    endif()
  endforeach()

  if(LAB_SUBMISSION_DIR)
    set(submitted "${LAB_SUBMISSION_DIR}/${lesson}/exercise.cu")
    if(EXISTS "${submitted}")
      lab_lesson_program(submission "${submitted}")
    endif()
  endif()

  if(LAB_BUILD_TESTS)
    foreach(kind starter solution)
      add_test(NAME ${lesson}.${kind}.validates
               COMMAND ${lesson}-${kind} --quick --json "${out}/${kind}.test.json")
      # Exit 1 means a variant was wrong; the starter must still be correct, so both must pass.
      set_tests_properties(${lesson}.${kind}.validates PROPERTIES
                           LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 300)
    endforeach()
  endif()
endfunction()
