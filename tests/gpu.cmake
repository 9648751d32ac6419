# CUDA/HIP build checks: the embedded interpreter images hold every expected target.
# (The GPU run tests are the kernel suites with --backend cuda/hip in suite.cmake: they
# exit 77, reported as skipped, where no device exists.)
if(DVM_CUDA_TARGETS OR DVM_HIP_BUNDLE)
  add_executable(gpu_dump_images tests/gpu_dump_images.c)
  target_link_libraries(gpu_dump_images PRIVATE dvm)
endif()
if(DVM_CUDA_TARGETS)
  set(_dvm_expect)
  foreach(a ${DVM_CUDA_ARCHS})
    string(APPEND _dvm_expect "sm_${a} ")
  endforeach()
  list(GET DVM_CUDA_ARCHS -1 _dvm_ptx)
  string(APPEND _dvm_expect "compute_${_dvm_ptx}")
  add_test(NAME gpu_build_cuda COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/tests/test_gpu_build.sh
           $<TARGET_FILE:gpu_dump_images> cuda "${_dvm_expect}")
endif()
if(DVM_HIP_BUNDLE)
  find_program(DVM_OFFLOAD_BUNDLER clang-offload-bundler
               PATHS /opt/rocm/llvm/bin /usr/lib/llvm-17/bin /usr/lib/llvm-16/bin /usr/lib/llvm-15/bin)
  string(REPLACE ";" " " _dvm_hexpect "${DVM_HIP_ARCHS}")
  if(DVM_OFFLOAD_BUNDLER)
    add_test(NAME gpu_build_hip COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/tests/test_gpu_build.sh
             $<TARGET_FILE:gpu_dump_images> hip "${_dvm_hexpect}" ${DVM_OFFLOAD_BUNDLER})
  else()
    message(WARNING "dvm: clang-offload-bundler not found: gpu_build_hip not registered")
  endif()
endif()
