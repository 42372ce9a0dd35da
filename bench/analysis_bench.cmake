# The analyzer benchmark executable (bench/analysis_bench.cpp); included from the analysis tests'
# CMakeLists until bench/ has a CMakeLists of its own.
add_executable(analysis_bench ${PROJECT_SOURCE_DIR}/bench/analysis_bench.cpp)
target_link_libraries(analysis_bench PRIVATE fprof_analysis fprof_core fprof_warnings)
