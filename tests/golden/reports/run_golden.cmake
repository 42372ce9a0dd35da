# One report golden test: run `fprof report ... --format md`, compare stdout with the committed file.
# -DFPROF=... -DWORKDIR=dir -DEXPECTED=file -DACTUAL_DIR=dir -DARGS=a;b;c
# Regenerate after an intended change: FPROF_GOLDEN_UPDATE=1 ctest -L golden -R report_golden  (docs/report.md)
execute_process(COMMAND ${FPROF} ${ARGS} WORKING_DIRECTORY ${WORKDIR}
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT "${rc}" STREQUAL "0")
  message(FATAL_ERROR "fprof ${ARGS}: exit ${rc}\nstdout:\n${out}\nstderr:\n${err}")
endif()
if(DEFINED ENV{FPROF_GOLDEN_UPDATE})
  file(WRITE "${EXPECTED}" "${out}")
  message(STATUS "updated ${EXPECTED}")
  return()
endif()
if(NOT EXISTS "${EXPECTED}")
  message(FATAL_ERROR "${EXPECTED} is missing; create it with FPROF_GOLDEN_UPDATE=1 ctest -L golden -R report_golden")
endif()
file(READ "${EXPECTED}" expected)
if(NOT out STREQUAL expected)
  get_filename_component(name "${EXPECTED}" NAME)
  file(WRITE "${ACTUAL_DIR}/${name}.actual" "${out}")
  message(FATAL_ERROR "output differs from ${EXPECTED}\n  diff -u ${EXPECTED} ${ACTUAL_DIR}/${name}.actual\n"
                      "If the change is intended: FPROF_GOLDEN_UPDATE=1 ctest -L golden -R report_golden, and review the diff.")
endif()
