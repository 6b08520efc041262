# cmake -DSOURCE_DIR=<course> [-DBUILD_DIR=<build>] [-DANSWERS_FROM=<course>] -P student_tree.cmake
#
# Nothing a student receives is a correct solution of a graded lesson (the instructor's side is
# solutions/: the solutions, the answer keys and the mutants, as patches):
#   1. under lessons/ the only C++/CUDA sources are each lesson's main.cu and exercise.cu (and the
#      interface, exercise.cuh): no mutant, taught path or alternative solution lies there;
#   2. no starter lessons/NN-topic/exercise.cu is its solution, even with its spacing changed;
#   3. no file under lessons/, common/, checker/ or docs/ is a solution, or a mutant made from one
#      (<BUILD_DIR>/lessons/*/mutants/*.cu, where that build made them), spacing aside.
# On a handout (tests/handout.cmake): ANSWERS_FROM names the course it was made from, whose
# solutions, answer keys and made mutants no file of the handout may be (check 3 over every file).
cmake_minimum_required(VERSION 3.25)
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "usage: cmake -DSOURCE_DIR=<course> [-DBUILD_DIR=<build>] "
                      "[-DANSWERS_FROM=<course>] -P student_tree.cmake")
endif()
file(REAL_PATH "${SOURCE_DIR}" SOURCE_DIR)
set(checked_trees lessons common checker docs)
if(ANSWERS_FROM)
  file(REAL_PATH "${ANSWERS_FROM}" ANSWERS_FROM)
  set(checked_trees "")  # a handout: every file
else()
  set(ANSWERS_FROM "${SOURCE_DIR}")
endif()
set(problems "")

# 1.
file(GLOB_RECURSE lesson_files LIST_DIRECTORIES false RELATIVE "${SOURCE_DIR}" "${SOURCE_DIR}/lessons/*")
foreach(f IN LISTS lesson_files)
  get_filename_component(name "${f}" NAME)
  if(name MATCHES "\\.(cu|cuh|c|cc|cpp|cxx|h|hh|hpp|hxx|inl|ipp)$" AND
     NOT name MATCHES "^(main\\.cu|exercise\\.cu|exercise\\.cuh)$")
    list(APPEND problems "${f}: C++/CUDA source under lessons/ (a mutant belongs in solutions/NN-topic/mutants/, as a patch)")
  endif()
endforeach()

# The text of a file with its spacing taken out, as a hash.
function(spaceless_hash file out)
  file(READ "${file}" text)
  string(REGEX REPLACE "[ \t\r\n]+" "" text "${text}")
  string(SHA256 hash "${text}")
  set(${out} "${hash}" PARENT_SCOPE)
endfunction()

# 2.
file(GLOB solutions LIST_DIRECTORIES false "${ANSWERS_FROM}/solutions/*/exercise.cu"
     "${ANSWERS_FROM}/solutions/*/ANSWERS.md")
set(answer_hashes "")
set(answer_names "")
foreach(solution IN LISTS solutions)
  get_filename_component(dir "${solution}" DIRECTORY)
  get_filename_component(lesson "${dir}" NAME)
  get_filename_component(name "${solution}" NAME)
  spaceless_hash("${solution}" hash)
  list(APPEND answer_hashes "${hash}")
  list(APPEND answer_names "solutions/${lesson}/${name}")
  if(name STREQUAL "ANSWERS.md")
    continue()
  endif()
  set(starter "${SOURCE_DIR}/lessons/${lesson}/exercise.cu")
  if(EXISTS "${starter}")
    spaceless_hash("${starter}" starter_hash)
    if(starter_hash STREQUAL hash)
      list(APPEND problems "lessons/${lesson}/exercise.cu: the starter is its solution")
    endif()
  endif()
endforeach()

# 3.
if(BUILD_DIR)
  file(GLOB made LIST_DIRECTORIES false "${BUILD_DIR}/lessons/*/mutants/*.cu")
  foreach(mutant IN LISTS made)
    spaceless_hash("${mutant}" hash)
    list(APPEND answer_hashes "${hash}")
    file(RELATIVE_PATH shown "${BUILD_DIR}" "${mutant}")
    list(APPEND answer_names "${shown} (made from its patch)")
  endforeach()
endif()
if(answer_hashes)
  set(globs "${SOURCE_DIR}/*")
  if(checked_trees)
    list(TRANSFORM checked_trees PREPEND "${SOURCE_DIR}/" OUTPUT_VARIABLE globs)
    list(TRANSFORM globs APPEND "/*")
  endif()
  file(GLOB_RECURSE student_files LIST_DIRECTORIES false RELATIVE "${SOURCE_DIR}" ${globs})
  foreach(f IN LISTS student_files)
    spaceless_hash("${SOURCE_DIR}/${f}" hash)
    list(FIND answer_hashes "${hash}" at)
    if(NOT at EQUAL -1)
      list(GET answer_names ${at} answer)
      list(APPEND problems "${f}: is ${answer}")
    endif()
  endforeach()
endif()

if(problems)
  list(JOIN problems "\n  " shown)
  message(FATAL_ERROR "the student's side of the course holds solutions:\n  ${shown}")
endif()
list(LENGTH lesson_files n_lesson)
list(LENGTH answer_hashes n_answers)
message(STATUS "student tree: ${n_lesson} files under lessons/, none a solution (compared with "
               "${n_answers} solutions and mutants)")
