# Warnings for every target of the project.
set(FR_WARN_FLAGS -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter)
if(FR_WERROR)
  list(APPEND FR_WARN_FLAGS -Werror)
endif()
add_compile_options(${FR_WARN_FLAGS})
# POSIX.1-2008 everywhere (clock_gettime, mkdtemp, fileno ...) on top of strict C11.
add_compile_definitions(_POSIX_C_SOURCE=200809L)
if(FR_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g)
  add_link_options(-fsanitize=address,undefined)
endif()
if(FR_COVERAGE)
  # gcov line and branch counts (docs/reliability.md). -fprofile-update=atomic: the kernels' OpenMP threads update
  # the same counters (with single updates, lost increments made gcov derive negative counts). FR_COVERAGE_BUILD:
  # src/core/coverage.h's fr_coverage_flush writes a forked child's counts before its _exit.
  add_compile_options(--coverage -fprofile-update=atomic)
  add_compile_definitions(FR_COVERAGE_BUILD)
  add_link_options(--coverage)
endif()

# Allocation-failure injection (make asan; src/core/alloc_hook.h): the library's sources see every allocating call
# renamed to a fr_hook_* function of src/core/alloc_hook.c, so each one goes through one counter without any call
# site naming it. Object-like macros, so a function pointer such as cJSON's free_fn = free is renamed too.
set(FR_ALLOC_HOOK_DEFS "")
set(FR_ALLOC_HOOK_OPTS "")
if(FR_ALLOC_HOOK)
  set(FR_ALLOC_HOOK_DEFS FR_ALLOC_HOOK=1)
  foreach(fn malloc calloc realloc free aligned_alloc posix_memalign strdup strndup getline getdelim realpath fopen
             fdopen opendir fdopendir fwrite fputs fputc fprintf fflush fclose fsync)
    list(APPEND FR_ALLOC_HOOK_DEFS ${fn}=fr_hook_${fn})
  endforeach()
  # write and pwrite: function-like renames, forced in (alloc_hook_io.h says why).
  set(FR_ALLOC_HOOK_OPTS -include ${PROJECT_SOURCE_DIR}/src/core/alloc_hook_io.h)
endif()

# fr_layer(NAME SOURCES...): the OBJECT library fr_NAME of one src/ folder.
function(fr_layer name)
  add_library(fr_${name} OBJECT ${ARGN})
  target_include_directories(fr_${name} PUBLIC ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(fr_${name} PUBLIC OpenMP::OpenMP_C PkgConfig::CJSON)
  target_compile_definitions(fr_${name} PRIVATE FR_BUILDING_LIBRARY=1 ${FR_ALLOC_HOOK_DEFS})
  target_compile_options(fr_${name} PRIVATE ${FR_ALLOC_HOOK_OPTS})
endfunction()

# The variant list (src/core/variants.inc, one FR_VARIANT row a line): FR_VARIANTS, the names in list order, and
# FR_VARIANT_FLAGS_<name>, the compile options of its files (style.md 3: only those files get ISA flags). Read at
# configure time; editing the list re-runs CMake. Every variant needs its kernel table, src/kernels/ops_<name>.c.
set(FR_VARIANT_LIST ${PROJECT_SOURCE_DIR}/src/core/variants.inc)
set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${FR_VARIANT_LIST})
file(STRINGS ${FR_VARIANT_LIST} _fr_rows REGEX "^FR_VARIANT\\(")
set(FR_VARIANTS "")
foreach(_row IN LISTS _fr_rows)
  if(NOT _row MATCHES "^FR_VARIANT\\(([a-z0-9]+),.*\"([^\"]*)\"\\)$")
    message(FATAL_ERROR "src/core/variants.inc: a row CMake cannot read (one row a line, the flags a string last): ${_row}")
  endif()
  set(_name ${CMAKE_MATCH_1})
  separate_arguments(_flags UNIX_COMMAND "${CMAKE_MATCH_2}")
  list(APPEND FR_VARIANTS ${_name})
  set(FR_VARIANT_FLAGS_${_name} "${_flags}")
  if(NOT EXISTS ${PROJECT_SOURCE_DIR}/src/kernels/ops_${_name}.c)
    message(FATAL_ERROR "src/core/variants.inc lists the variant ${_name}, which has no kernel table: "
                        "src/kernels/ops_${_name}.c (fr_kops_over_${_name}) is missing (docs/adding-an-isa-variant.md)")
  endif()
endforeach()
if(NOT FR_VARIANTS)
  message(FATAL_ERROR "src/core/variants.inc: no FR_VARIANT row")
endif()

# fr_isa_flags(FILE VARIANT): the variant's compile options on one source file.
function(fr_isa_flags file isa)
  if(NOT isa IN_LIST FR_VARIANTS)
    message(FATAL_ERROR "fr_isa_flags: ${isa} is not a variant of src/core/variants.inc")
  endif()
  if(FR_VARIANT_FLAGS_${isa})
    set_source_files_properties(${file} PROPERTIES COMPILE_OPTIONS "${FR_VARIANT_FLAGS_${isa}}")
  endif()
endfunction()

# fr_add_test(NAME SOURCES src... [LABELS l...] [TIMEOUT s] [ARGS a...] [LIBS l...]): one ctest test, linked with
# libflashref, the test kit fr_testkit (tests/common: CHECK, the seeded generator) and a folder's helper libraries.
# Label "quick" for unit tests; "slow" ones still run in make test; "exhaustive" ones only in make test-exhaustive.
function(fr_add_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LABELS;ARGS;LIBS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(${name} PRIVATE ${T_LIBS} flashref_static fr_testkit)
  add_test(NAME ${name} COMMAND ${name} ${T_ARGS} WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 600)
  endif()
  if(FR_SANITIZE)
    # Sanitized builds run 2-4x slower; the limits guard against hangs, not against slowness.
    math(EXPR T_TIMEOUT "${T_TIMEOUT} * 4")
  endif()
  if(NOT T_LABELS)
    set(T_LABELS unit)
  endif()
  set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS "${T_LABELS}")
endfunction()

# fr_layer_glob(NAME): every .c file of the calling folder and its sub-folders (src/verify's rooms); a file named
# *_<variant>.c (a name of the variant list) gets that variant's flags and nothing else does (style.md 3).
function(fr_layer_glob name)
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.c)
  foreach(f ${srcs})
    get_filename_component(_stem ${f} NAME_WE)
    foreach(v IN LISTS FR_VARIANTS)
      if(_stem MATCHES "_${v}$")
        fr_isa_flags(${f} ${v})
      endif()
    endforeach()
  endforeach()
  if(NOT srcs)
    set(srcs ${PROJECT_SOURCE_DIR}/cmake/empty.c)
  endif()
  fr_layer(${name} ${srcs})
endfunction()

# Adds every immediate subfolder of the calling folder that has a CMakeLists.txt (tests/, bench/, fuzz/ areas).
function(fr_add_subfolders)
  file(GLOB children LIST_DIRECTORIES true CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*)
  foreach(c ${children})
    if(IS_DIRECTORY ${c} AND EXISTS ${c}/CMakeLists.txt)
      add_subdirectory(${c})
    endif()
  endforeach()
endfunction()

# fr_add_tests_glob([LABELS l...] [TIMEOUT s] [LIBS l...]): every test_*.c of the calling folder becomes one test named
# after it (so several engineers can add tests to one folder without editing this file).
function(fr_add_tests_glob)
  cmake_parse_arguments(G "" "TIMEOUT" "LABELS;LIBS" ${ARGN})
  file(GLOB tsrcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/test_*.c)
  foreach(f ${tsrcs})
    get_filename_component(n ${f} NAME_WE)
    set(extra "")
    if(G_TIMEOUT)
      list(APPEND extra TIMEOUT ${G_TIMEOUT})
    endif()
    if(G_LABELS)
      list(APPEND extra LABELS ${G_LABELS})
    endif()
    if(G_LIBS)
      list(APPEND extra LIBS ${G_LIBS})
    endif()
    fr_add_test(${n} SOURCES ${f} ${extra})
  endforeach()
endfunction()
