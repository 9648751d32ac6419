# CPU benchmark: dvm against native C (gcc -O2) in the same run. Not a test: run
#   build/bench_cpu            (full sizes; bench/RESULTS.md records its output)
#   build/bench_cpu --quick    (small sizes, a smoke run)
#   build/bench_cpu --kernels saxpy,stencil --reps 9   (some kernels only; --help lists the options)
add_executable(bench_cpu bench/bench_cpu.c)
target_link_libraries(bench_cpu PRIVATE dvm OpenMP::OpenMP_C m)
target_include_directories(bench_cpu PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_options(bench_cpu PRIVATE -O2)

# The same particle step with vec3 / mat3 and with scalars (issue: vectors cost nothing):
#   build/bench_vec            (2^17 particles; bench/RESULTS.md records its output)
#   build/bench_vec --quick    (a smoke run)
add_executable(bench_vec bench/bench_vec.c)
target_link_libraries(bench_vec PRIVATE dvm m)
target_compile_options(bench_vec PRIVATE -O2)
