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
