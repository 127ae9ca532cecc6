# Runs packaging/vcpkg/ports/memplan/portfile.cmake here, where vcpkg itself cannot be installed, then
# consumes the result as the port's `usage` file says.
#   cmake -DPORT_DIR=<port> -DWORK=<dir> -DFEATURES=json;cbc -DGENERATOR=Ninja -DCXX=g++ -P run_vcpkg_port.cmake
# The vcpkg helper functions the portfile calls are defined below with vcpkg's documented behaviour
# for this case (a release-only, header-only port): vcpkg_check_features maps the requested features
# to -D<switch>=ON/OFF, vcpkg_cmake_configure/install run CMake into CURRENT_PACKAGES_DIR,
# vcpkg_cmake_config_fixup checks the config folder, vcpkg_fixup_pkgconfig checks the .pc files.
# What is NOT exercised: vcpkg's dependency builds (the system's packages stand in), triplets, the
# binary cache, vcpkg.json's schema validation beyond a JSON parse.
cmake_minimum_required(VERSION 3.20)
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(PORT memplan)
set(CURRENT_PACKAGES_DIR "${WORK}/packages/${PORT}")
set(CURRENT_BUILDTREES_DIR "${WORK}/buildtrees/${PORT}")
set(CMAKE_CURRENT_LIST_DIR_SAVED "${CMAKE_CURRENT_LIST_DIR}")

function(stub_run)
  string(REPLACE ";" " " shown "${ARGN}")
  message(STATUS "[vcpkg stub] ${shown}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "command failed (${rc}): ${shown}\n${out}\n${err}")
  endif()
endfunction()

# vcpkg.json must parse and declare every feature requested.
file(READ "${PORT_DIR}/vcpkg.json" manifest)
string(JSON name GET "${manifest}" name)
if(NOT name STREQUAL "memplan")
  message(FATAL_ERROR "vcpkg.json names '${name}'")
endif()
foreach(f IN LISTS FEATURES)
  string(JSON desc ERROR_VARIABLE missing GET "${manifest}" features ${f} description)
  if(missing)
    message(FATAL_ERROR "vcpkg.json has no feature '${f}'")
  endif()
endforeach()

function(vcpkg_check_features)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "OUT_FEATURE_OPTIONS" "FEATURES")
  set(opts "")
  list(LENGTH arg_FEATURES n)
  math(EXPR last "${n} - 1")
  foreach(i RANGE 0 ${last} 2)
    math(EXPR j "${i} + 1")
    list(GET arg_FEATURES ${i} feature)
    list(GET arg_FEATURES ${j} switch)
    if(feature IN_LIST FEATURES)
      list(APPEND opts "-D${switch}=ON")
    else()
      list(APPEND opts "-D${switch}=OFF")
    endif()
  endforeach()
  set(${arg_OUT_FEATURE_OPTIONS} "${opts}" PARENT_SCOPE)
endfunction()

function(vcpkg_cmake_configure)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "SOURCE_PATH" "OPTIONS")
  set(build "${CURRENT_BUILDTREES_DIR}/${TARGET_TRIPLET}-rel")
  set(cxx "")
  if(CXX)
    set(cxx "-DCMAKE_CXX_COMPILER=${CXX}")
  endif()
  stub_run(${CMAKE_COMMAND} -S "${arg_SOURCE_PATH}" -B "${build}" -G "${GENERATOR}" -DCMAKE_BUILD_TYPE=Release
           "-DCMAKE_INSTALL_PREFIX=${CURRENT_PACKAGES_DIR}" ${cxx} ${arg_OPTIONS})
  set_property(GLOBAL PROPERTY stub_build "${build}")
endfunction()

function(vcpkg_cmake_install)
  get_property(build GLOBAL PROPERTY stub_build)
  stub_run(${CMAKE_COMMAND} --build "${build}")
  stub_run(${CMAKE_COMMAND} --install "${build}")
endfunction()

function(vcpkg_cmake_config_fixup)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "PACKAGE_NAME;CONFIG_PATH" "")
  # vcpkg moves CONFIG_PATH to share/PACKAGE_NAME; the port installs there already.
  if(NOT EXISTS "${CURRENT_PACKAGES_DIR}/share/${arg_PACKAGE_NAME}/memplanConfig.cmake")
    message(FATAL_ERROR "no memplanConfig.cmake in share/${arg_PACKAGE_NAME}")
  endif()
endfunction()

function(vcpkg_fixup_pkgconfig)
  file(GLOB pcs "${CURRENT_PACKAGES_DIR}/share/pkgconfig/*.pc" "${CURRENT_PACKAGES_DIR}/lib/pkgconfig/*.pc")
  if(NOT pcs)
    message(FATAL_ERROR "no pkg-config files installed")
  endif()
endfunction()

set(TARGET_TRIPLET x64-linux)
include("${PORT_DIR}/portfile.cmake")

foreach(f share/memplan/usage share/memplan/copyright include/memplan/olla.hpp share/pkgconfig/memplan.pc)
  if(NOT EXISTS "${CURRENT_PACKAGES_DIR}/${f}")
    message(FATAL_ERROR "the port did not install ${f}")
  endif()
endforeach()
if(EXISTS "${CURRENT_PACKAGES_DIR}/lib" OR EXISTS "${CURRENT_PACKAGES_DIR}/debug")
  message(FATAL_ERROR "a header-only port must not leave lib/ or debug/")
endif()

# Consume as `usage` says: find_package(memplan CONFIG REQUIRED) + memplan::memplan (+ a feature target).
set(consumer "${WORK}/consumer")
file(MAKE_DIRECTORY "${consumer}")
set(extra "")
if("json" IN_LIST FEATURES)
  set(extra "memplan::json")
endif()
file(WRITE "${consumer}/CMakeLists.txt" "cmake_minimum_required(VERSION 3.20)\nproject(usage LANGUAGES CXX)\nfind_package(memplan CONFIG REQUIRED)\nadd_executable(main main.cpp)\ntarget_link_libraries(main PRIVATE memplan::memplan ${extra})\n")
file(COPY_FILE "${TEST_PROGRAM}" "${consumer}/main.cpp")
set(cxx "")
if(CXX)
  set(cxx "-DCMAKE_CXX_COMPILER=${CXX}")
endif()
stub_run(${CMAKE_COMMAND} -S "${consumer}" -B "${consumer}/build" -G "${GENERATOR}" ${cxx} "-DCMAKE_PREFIX_PATH=${CURRENT_PACKAGES_DIR}")
stub_run(${CMAKE_COMMAND} --build "${consumer}/build")
stub_run("${consumer}/build/main")
message(STATUS "[vcpkg stub] port installed and consumed (features: ${FEATURES})")
