# cmake -DSOURCE_DIR=<repo> [-DFILES=<file;file...>] -P markdown_links.cmake
#
# Keeps the course's texts from pointing at files a reader does not have. It scans README.md,
# checker/README.md, lessons/*/README.md, slides/*.md, docs/*.md and solutions/*/ANSWERS.md and NOTES.md
# (or the FILES given) and fails, naming file and line, on
#
#   - a Markdown link or image [text](target), a reference definition [id]: target, or an HTML
#     href="target" / src="target" whose target is relative and either resolves outside the
#     repository or names a file or folder that does not exist;
#   - a file name ending in .md written as inline code (`docs/measurement.md`) that exists
#     neither relative to the text nor relative to the repository root (placeholders such as
#     `lessons/NN-topic/README.md`, `mutants/<name>.cu` or `*.md` are left alone);
#   - in docs/ (the pages Doxygen renders), a heading with inline code: Doxygen's navigation
#     shows it as a literal <tt> tag.
#
# Absolute URLs (https:, mailto:, ...) and links to an anchor of the same page (#section) are fine.
# Fenced code blocks are skipped, and so is inline code when looking for links.
cmake_minimum_required(VERSION 3.25)
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "usage: cmake -DSOURCE_DIR=<repo> -P markdown_links.cmake")
endif()
get_filename_component(root "${SOURCE_DIR}" REALPATH)

if(NOT FILES)
  file(GLOB FILES
       "${root}/README.md" "${root}/checker/README.md" "${root}/lessons/*/README.md"
       "${root}/slides/*.md" "${root}/docs/*.md" "${root}/solutions/*/ANSWERS.md"
       "${root}/solutions/*/NOTES.md")
endif()

# CMake lists split at ';' and do not split inside [...]: stand-ins keep each line one element.
string(ASCII 2 LB)
string(ASCII 3 RB)
string(ASCII 4 SC)
string(ASCII 5 BS)

set(errors "")
set(checked 0)

# Appends an error to <errors> (in the caller's scope) when <target>, written in <file> at <line>,
# is a relative link to a missing file or to a place outside the repository.
function(check_target file line target kind)
  if(target MATCHES "^[A-Za-z][A-Za-z0-9+.-]*:" OR target MATCHES "^#" OR target STREQUAL "")
    return()  # https:, mailto:, ...; an anchor on the same page
  endif()
  string(REGEX REPLACE "[#?].*$" "" path "${target}")
  if(path STREQUAL "")
    return()
  endif()
  file(RELATIVE_PATH shown "${root}" "${file}")
  get_filename_component(dir "${file}" DIRECTORY)
  if(path MATCHES "^/")
    string(APPEND errors "\n  ${shown}:${line}: ${kind} '${target}' is an absolute path: "
                         "write it relative to the file")
    set(errors "${errors}" PARENT_SCOPE)
    return()
  endif()
  get_filename_component(resolved "${dir}/${path}" ABSOLUTE)
  string(LENGTH "${root}/" root_length)
  string(LENGTH "${resolved}" resolved_length)
  set(inside FALSE)
  if(resolved STREQUAL root)
    set(inside TRUE)
  elseif(resolved_length GREATER root_length)
    string(SUBSTRING "${resolved}" 0 ${root_length} head)
    if(head STREQUAL "${root}/")
      set(inside TRUE)
    endif()
  endif()
  if(NOT inside)
    set(errors "${errors}\n  ${shown}:${line}: ${kind} '${target}' leads outside the repository"
        PARENT_SCOPE)
  elseif(NOT EXISTS "${resolved}")
    file(RELATIVE_PATH missing "${root}" "${resolved}")
    set(errors "${errors}\n  ${shown}:${line}: ${kind} '${target}': ${missing} does not exist"
        PARENT_SCOPE)
  endif()
endfunction()

foreach(file IN LISTS FILES)
  if(NOT EXISTS "${file}")
    message(FATAL_ERROR "${file} does not exist")
  endif()
  math(EXPR checked "${checked} + 1")
  file(READ "${file}" text)
  string(REPLACE "[" "${LB}" text "${text}")
  string(REPLACE "]" "${RB}" text "${text}")
  string(REPLACE ";" "${SC}" text "${text}")
  string(REPLACE "\\" "${BS}" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(number 0)
  set(in_fence FALSE)
  set(previous_blank TRUE)
  foreach(line IN LISTS lines)
    math(EXPR number "${number} + 1")
    if(line MATCHES "^[ \t]*(```|~~~)")
      set(previous_blank TRUE)   # a definition may follow a code block
      if(in_fence)
        set(in_fence FALSE)
      else()
        set(in_fence TRUE)
      endif()
      continue()
    endif()
    if(in_fence)
      continue()
    endif()
    if(file MATCHES "/docs/[^/]+\\.md$" AND line MATCHES "^#+ .*`")
      file(RELATIVE_PATH shown "${root}" "${file}")
      string(APPEND errors "\n  ${shown}:${number}: a heading with inline code, which Doxygen's "
                           "navigation shows as a literal <tt> tag: write it without backticks")
    endif()

    # `something.md` as inline code: a file the text refers to by name.
    string(REGEX MATCHALL "`[^` ]+\\.md(#[^` ]*)?`" mentions "${line}")
    foreach(mention IN LISTS mentions)
      string(REGEX REPLACE "^`([^`#]+)(#[^`]*)?`$" "\\1" name "${mention}")
      if(name MATCHES "NN|<|>|\\*")
        continue()
      endif()
      get_filename_component(dir "${file}" DIRECTORY)
      get_filename_component(near "${dir}/${name}" ABSOLUTE)
      get_filename_component(from_root "${root}/${name}" ABSOLUTE)
      set(found FALSE)
      foreach(candidate IN ITEMS "${near}" "${from_root}")
        string(FIND "${candidate}" "${root}/" at)
        if(at EQUAL 0 AND EXISTS "${candidate}")
          set(found TRUE)
        endif()
      endforeach()
      if(NOT found)
        file(RELATIVE_PATH shown "${root}" "${file}")
        string(APPEND errors "\n  ${shown}:${number}: refers to ${name}, which is not in the "
                             "repository (neither beside this file nor from its root)")
      endif()
    endforeach()

    string(REGEX REPLACE "`[^`]*`" "" prose "${line}")
    # [text](target "title") and ![alt](target)
    string(REGEX MATCHALL "${RB}\\([^)]*\\)" links "${prose}")
    foreach(link IN LISTS links)
      string(REGEX REPLACE "^${RB}\\([ \t]*<?([^ \t>)]*)>?.*\\)$" "\\1" target "${link}")
      check_target("${file}" ${number} "${target}" "link")
    endforeach()
    # [id]: target (a definition cannot interrupt a paragraph)
    if(previous_blank AND prose MATCHES "^[ ]*${LB}[^${RB}]+${RB}:[ \t]+<?([^ \t>]+)")
      check_target("${file}" ${number} "${CMAKE_MATCH_1}" "link definition")
    endif()
    if(line MATCHES "^[ \t]*$")
      set(previous_blank TRUE)
    else()
      set(previous_blank FALSE)
    endif()
    # <a href="..."> and <img src="...">
    string(REGEX MATCHALL "(href|src)=\"[^\"]*\"" attributes "${prose}")
    foreach(attribute IN LISTS attributes)
      string(REGEX REPLACE "^(href|src)=\"([^\"]*)\"$" "\\2" target "${attribute}")
      check_target("${file}" ${number} "${target}" "HTML link")
    endforeach()
  endforeach()
endforeach()

if(NOT errors STREQUAL "")
  string(REPLACE "${LB}" "[" errors "${errors}")
  string(REPLACE "${RB}" "]" errors "${errors}")
  string(REPLACE "${SC}" ";" errors "${errors}")
  string(REPLACE "${BS}" "\\" errors "${errors}")
  message(FATAL_ERROR "links to files that are not in this repository, or headings Doxygen "
                      "cannot show:${errors}")
endif()
message(STATUS "markdown links: ${checked} files checked, every relative link resolves inside "
               "the repository")
