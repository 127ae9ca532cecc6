# Determinism across builds (docs/reliability.md): the CLI of this build (CLI_A) and the CLI of another
# build (CLI_B: tools/test.sh builds g++ Release first, then this clang ASan+UBSan build) write
# byte-identical files for the same input in --deterministic mode: plans with reordering, recomputation,
# offloading and placement, and MiniMalloc placements.
# cmake -DCLI_A=... -DCLI_B=... -DDATA=<source>/data -DWORK=<dir> -P compare_builds.cmake
if(NOT EXISTS "${CLI_B}")
  message("SKIP: no CLI of the other build at ${CLI_B} (build the default preset first)")
  return()
endif()
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(_cases
  "plan|${DATA}/models/resnet18-train-b32.json.gz|--deterministic -q --alignment 256"
  "plan|${DATA}/models/mobilenet_v2-train-b1.json.gz|--deterministic -q --budget 85MiB"
  # the default checkpointer's greedy winner anneals its drop set here (std::pow, std::exp, mt19937
  # draws), over an alternative order the scheduler left (timeline::alternatives); the 4th field is
  # text the file must contain, so that the case keeps covering both
  "plan|${DATA}/models/transformer-train-b1.json.gz|--deterministic -q --budget 23136692|default(greedy+anneal on lookahead)"
  "plan|${DATA}/models/resnet18-train-b1.json.gz|--deterministic -q --offloader default --bandwidth 12e9 --budget 78MiB"
  "place|${DATA}/benchmarks/minimalloc/A.1048576.csv|--deterministic"
  "place|${DATA}/benchmarks/idealloc/resnet50.csv|--deterministic --placer exact")
set(_i 0)
foreach(_case IN LISTS _cases)
  string(REPLACE "|" ";" _f "${_case}")
  list(GET _f 0 _cmd)
  list(GET _f 1 _input)
  list(GET _f 2 _opts)
  list(LENGTH _f _fields)
  set(_must "")
  if(_fields GREATER 3)
    list(GET _f 3 _must)
  endif()
  separate_arguments(_opts UNIX_COMMAND "${_opts}")
  if(_cmd STREQUAL "plan")
    set(_ext json)
  else()
    set(_ext csv)
  endif()
  foreach(_side A B)
    set(_out "${WORK}/case${_i}-${_side}.${_ext}")
    execute_process(COMMAND "${CLI_${_side}}" ${_cmd} "${_input}" ${_opts} -o "${_out}"
                    RESULT_VARIABLE _rc OUTPUT_VARIABLE _so ERROR_VARIABLE _se)
    if(NOT _rc EQUAL 0)
      message(FATAL_ERROR "${CLI_${_side}} ${_cmd} ${_input} ${_opts}: exit ${_rc}\n${_so}${_se}")
    endif()
  endforeach()
  execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${WORK}/case${_i}-A.${_ext}" "${WORK}/case${_i}-B.${_ext}"
                  RESULT_VARIABLE _diff)
  if(NOT _diff EQUAL 0)
    message(FATAL_ERROR "the two builds wrote different files for: ${_cmd} ${_input} ${_opts}\n"
                        "  ${WORK}/case${_i}-A.${_ext}\n  ${WORK}/case${_i}-B.${_ext}")
  endif()
  if(NOT _must STREQUAL "")
    file(READ "${WORK}/case${_i}-A.${_ext}" _text)
    string(FIND "${_text}" "${_must}" _at)
    if(_at EQUAL -1)
      message(FATAL_ERROR "${_cmd} ${_input} ${_opts}: the plan no longer contains '${_must}' (the case was chosen to cover it)")
    endif()
  endif()
  file(SIZE "${WORK}/case${_i}-A.${_ext}" _size)
  message("identical (${_size} bytes): ${_cmd} ${_input} ${_opts}")
  math(EXPR _i "${_i} + 1")
endforeach()
