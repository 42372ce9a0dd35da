# The analyzer and report benchmark executable (bench/analysis_bench.cpp). Included from
# tests/unit/analysis/CMakeLists.txt; bench/CMakeLists.txt may include it too (the guard makes a
# second include a no-op).
if(TARGET analysis_bench)
  return()
endif()
add_executable(analysis_bench ${PROJECT_SOURCE_DIR}/bench/analysis_bench.cpp)
target_include_directories(analysis_bench PRIVATE ${PROJECT_SOURCE_DIR}/tests/common)
target_link_libraries(analysis_bench PRIVATE fprof_reports fprof_analysis fprof_core fprof_warnings)
