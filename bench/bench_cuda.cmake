# CUDA benchmark: dvm's CUDA backend against native nvcc kernels in the same process.
# Not a test (needs a GPU): build with `cmake --build build --target bench_cuda`, run
#   build/bench_cuda [--quick]; bench/RESULTS.md ("CUDA") records its output.
if(DVM_NVCC)
  list(GET DVM_CUDA_ARCHS -1 _dvm_bench_arch)
  add_custom_command(OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/bench_cuda
    COMMAND ${DVM_NVCC} -O3 -std=c++17 -arch=sm_${_dvm_bench_arch} -I${CMAKE_CURRENT_SOURCE_DIR}/include
            -I${CMAKE_CURRENT_SOURCE_DIR}
            -o ${CMAKE_CURRENT_BINARY_DIR}/bench_cuda ${CMAKE_CURRENT_SOURCE_DIR}/bench/cuda_native.cu
            $<TARGET_FILE:dvm> -Xcompiler -fopenmp -lgomp -ldl -lm
    DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/bench/cuda_native.cu dvm
    COMMENT "nvcc: bench_cuda"
    VERBATIM)
  add_custom_target(bench_cuda DEPENDS ${CMAKE_CURRENT_BINARY_DIR}/bench_cuda)
endif()
