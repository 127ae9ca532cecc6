# memplan_add_areas(): add_subdirectory() every sub-folder of the current folder that has a
# CMakeLists.txt, in sorted order. tests/, bench/, examples/ and apps/ are made of such areas, each
# owned by its own folder, so adding an area never edits a shared list.
function(memplan_add_areas)
  file(GLOB _subdirs LIST_DIRECTORIES true RELATIVE ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/*)
  list(SORT _subdirs)
  foreach(_d IN LISTS _subdirs)
    if(IS_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/${_d} AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${_d}/CMakeLists.txt)
      add_subdirectory(${_d})
    endif()
  endforeach()
endfunction()

# memplan_append_options(OPTIONS TARGET...): appends to each TARGET the compile options in the string
# OPTIONS, split as a shell would ("-O1 -g"); nothing when OPTIONS is empty. The cache strings that
# tune one part of the build (MEMPLAN_TEST_OPTIMIZE, MEMPLAN_LIGHT_TEST_OPTIMIZE, MEMPLAN_BENCH_OPTIMIZE,
# MEMPLAN_APPS_OPTIMIZE) all go through it.
function(memplan_append_options options)
  if(NOT options)
    return()
  endif()
  separate_arguments(_opts UNIX_COMMAND "${options}")
  foreach(_t IN LISTS ARGN)
    target_compile_options(${_t} PRIVATE ${_opts})
  endforeach()
endfunction()
