# lab_add_lesson(<NN-topic> [LIBRARIES <targets>...])
#
# Turns a lesson folder into programs that share one compiled harness:
#   lessons/NN-topic/main.cu            -> object library <NN-topic>-harness (compiled once)
#   lessons/NN-topic/exercise.cu        -> program <build>/lessons/NN-topic/starter
#   solutions/NN-topic/exercise.cu      -> program <build>/lessons/NN-topic/solution
#   solutions/NN-topic/mutants/<m>.patch -> <build>/lessons/NN-topic/mutants/<m>.cu (made by
#                                          lab-mutant at build time) -> program mutant-<m>
#                                          (except mutants named compile_error*), built only
#                                          by the target `mutants`
#   ${LAB_SUBMISSION_DIR}/NN-topic/exercise.cu (when set and present)
#                                       -> program <build>/lessons/NN-topic/submission
# Only the exercise file differs between them, so a student's file is compiled against the
# pristine harness, and rebuilding a submission recompiles one translation unit.
# It also registers the GPU tests: starter and solution run at small sizes and must validate.
# A grading build (LAB_GRADING_BUILD=ON, configured by `lab-check grade`) has neither solution
# nor mutant programs, so nothing in it refers to solutions/ and the checker can hide that folder
# from every build of a student's code. A student's tree (`lab-check handout`) has no solutions/:
# there the starters alone are built.
option(LAB_GRADING_BUILD "A build for lab-check grade: starters and submissions only" OFF)

# ARCHITECTURES <arch>: the lesson's device code is built for this architecture alone (lesson 13:
# 90a, whose wgmma and setmaxnreg exist on no other GPU) instead of the preset's; the lab library
# keeps the preset's.
function(lab_add_lesson lesson)
  cmake_parse_arguments(ARG "" "ARCHITECTURES" "LIBRARIES" ${ARGN})
  set(src "${PROJECT_SOURCE_DIR}/lessons/${lesson}")
  set(out "${PROJECT_BINARY_DIR}/lessons/${lesson}")

  add_library(${lesson}-harness OBJECT "${src}/main.cu")
  target_include_directories(${lesson}-harness PUBLIC "${src}")
  target_link_libraries(${lesson}-harness PUBLIC lab ${ARG_LIBRARIES})
  if(ARG_ARCHITECTURES)
    set_target_properties(${lesson}-harness PROPERTIES CUDA_ARCHITECTURES "${ARG_ARCHITECTURES}")
  endif()

  # lab_lesson_program(<kind> <exercise.cu>): one program = harness + one exercise file.
  # The exercise is compiled on its own, so the checker can inspect its object file before
  # running it (checker/src/inspect.cpp); <program>.objects names the files it reads.
  # Link order: the pristine objects (harness, lab library) come before the exercise, so where
  # both emit the same inline function or template instance the linker keeps the pristine copy.
  function(lab_lesson_program kind exercise)
    set(target ${lesson}-${kind})
    add_library(${target}-exercise OBJECT "${exercise}")
    target_link_libraries(${target}-exercise PRIVATE ${lesson}-harness)
    if(ARG_ARCHITECTURES)
      set_target_properties(${target}-exercise PROPERTIES CUDA_ARCHITECTURES "${ARG_ARCHITECTURES}")
    endif()
    set(pristine $<TARGET_OBJECTS:${lesson}-harness> $<TARGET_OBJECTS:lab>
                 $<TARGET_OBJECTS:lab_host> $<TARGET_OBJECTS:lab_result>
                 $<TARGET_OBJECTS:lab_syscall_filter>)
    add_executable(${target} ${pristine} $<TARGET_OBJECTS:${target}-exercise>)
    target_link_libraries(${target} PRIVATE lab ${ARG_LIBRARIES})
    # Full RELRO: every library function is bound at load and the table of their addresses is
    # then read-only, so an exercise cannot point the harness's calls elsewhere by writing it
    # (it could make std::random_device, the harness's fresh draws, return what it likes).
    # The checker refuses to run a program linked without it.
    target_link_options(${target} PRIVATE "LINKER:-z,relro" "LINKER:-z,now")
    set_target_properties(${target} PROPERTIES OUTPUT_NAME ${kind} LINKER_LANGUAGE CUDA
                          RUNTIME_OUTPUT_DIRECTORY "${out}")
    file(GENERATE OUTPUT "${out}/${kind}.objects" CONTENT
         "exercise=$<TARGET_OBJECTS:${target}-exercise>\ninterface=$<TARGET_OBJECTS:${lesson}-starter-exercise>\nharness=$<TARGET_OBJECTS:${lesson}-harness>\nlibrary=$<TARGET_OBJECTS:lab>;$<TARGET_OBJECTS:lab_host>;$<TARGET_OBJECTS:lab_result>;$<TARGET_OBJECTS:lab_syscall_filter>\nsource=${exercise}\n")
    if(kind MATCHES "^mutant-")
      # The instructor's: built by the target `mutants` (the ci preset, lab-check selftest), not
      # by the main command, which they would more than double.
      set_target_properties(${target} ${target}-exercise PROPERTIES EXCLUDE_FROM_ALL ON)
      set_property(GLOBAL APPEND PROPERTY LAB_MUTANT_PROGRAMS ${target})
    else()
      set_property(GLOBAL APPEND PROPERTY LAB_LESSON_PROGRAMS ${target})
    endif()
  endfunction()

  lab_lesson_program(starter "${src}/exercise.cu")
  set(solved "${PROJECT_SOURCE_DIR}/solutions/${lesson}")
  if(NOT LAB_GRADING_BUILD AND EXISTS "${solved}/exercise.cu")
    lab_lesson_program(solution "${solved}/exercise.cu")

    # The mutants are patches of the solution or the starter, kept with the solutions; each is
    # made into a source file in the build folder (rewritten only when its text changes), then
    # built like any exercise. A patch that no longer fits its base stops the build, naming it.
    file(GLOB patches CONFIGURE_DEPENDS "${solved}/mutants/*.patch")
    foreach(patch IN LISTS patches)
      get_filename_component(name "${patch}" NAME_WE)
      if(name MATCHES "^compile_error")
        continue()
      endif()
      set(made "${out}/mutants/${name}.cu")
      add_custom_command(OUTPUT "${made}"
        COMMAND lab-mutant "${PROJECT_SOURCE_DIR}" "${lesson}" "${name}" "${made}"
        DEPENDS lab-mutant "${patch}" "${solved}/exercise.cu" "${src}/exercise.cu"
        COMMENT "Making mutant ${lesson}/${name} from its patch" VERBATIM)
      lab_lesson_program(mutant-${name} "${made}")
    endforeach()
  endif()

  if(LAB_SUBMISSION_DIR)
    set(submitted "${LAB_SUBMISSION_DIR}/${lesson}/exercise.cu")
    if(EXISTS "${submitted}")
      lab_lesson_program(submission "${submitted}")
    endif()
  endif()

  if(LAB_BUILD_TESTS AND NOT LAB_GRADING_BUILD)
    foreach(kind starter solution)
      if(NOT TARGET ${lesson}-${kind})
        continue()  # a student's tree: no solution
      endif()
      add_test(NAME ${lesson}.${kind}.validates
               COMMAND ${lesson}-${kind} --quick --json "${out}/${kind}.test.json")
      # Exit 1 means a variant was wrong; the starter must still be correct, so both must pass.
      set_tests_properties(${lesson}.${kind}.validates PROPERTIES
                           LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 300)
    endforeach()
  endif()
endfunction()
