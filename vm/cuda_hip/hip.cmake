# hip.cmake: the HIP backend. hipcc --genco compiles the same interpreter source for every
# AMD target in DVM_HIP_ARCHS into one offload bundle, embedded in the library; the HIP
# runtime (libamdhip64.so) is opened at run time and loads it with hipModuleLoadData.
if(DVM_HIP STREQUAL "OFF")
  return()
endif()
find_program(DVM_HIPCC hipcc HINTS ENV ROCM_PATH PATH_SUFFIXES bin PATHS /opt/rocm/bin)
# hipcc bundles its code objects with clang-offload-bundler; so does this build.
find_program(DVM_OFFLOAD_BUNDLER clang-offload-bundler HINTS ENV ROCM_PATH PATH_SUFFIXES llvm/bin
             PATHS /opt/rocm/llvm/bin /usr/lib/llvm-17/bin /usr/lib/llvm-16/bin /usr/lib/llvm-15/bin)
if(NOT DVM_HIPCC OR NOT DVM_OFFLOAD_BUNDLER)
  if(DVM_HIP STREQUAL "ON")
    message(FATAL_ERROR "DVM_HIP=ON but hipcc or clang-offload-bundler was not found (set ROCM_PATH or put them on PATH)")
  endif()
  message(STATUS "dvm: HIP backend off (hipcc or clang-offload-bundler not found)")
  return()
endif()

# Every target the toolchain has device libraries for (Debian ROCm 5.2 / clang 15: gfx1100
# has none, so it is left out).
set(DVM_HIP_ARCHS "gfx803;gfx900;gfx906;gfx908;gfx90a;gfx940;gfx1010;gfx1030" CACHE STRING
    "AMD targets of the embedded HIP interpreter")
string(REPLACE ";" " " _dvm_hip_targets "${DVM_HIP_ARCHS}")
set(_dvm_gpu ${CMAKE_CURRENT_SOURCE_DIR}/vm/cuda_hip)
set(_dvm_hsaco ${CMAKE_CURRENT_BINARY_DIR}/dvm_interp_hip.co)
# One hipcc per target, so that make runs them side by side (clang 15 compiles the targets of
# one command one after another), then one offload bundle of them all, as hipcc would write it.
set(_dvm_hip_objs)
set(_dvm_bundle_targets host-x86_64-unknown-linux)
set(_dvm_bundle_inputs -input=/dev/null)
foreach(a ${DVM_HIP_ARCHS})
  set(o ${CMAKE_CURRENT_BINARY_DIR}/dvm_interp_hip-${a}.out)
  add_custom_command(OUTPUT ${o}
    COMMAND ${DVM_HIPCC} --genco --no-gpu-bundle-output -O3 -std=c++17 --offload-arch=${a}
            -I${CMAKE_CURRENT_SOURCE_DIR} -o ${o} ${_dvm_gpu}/interp_hip.cpp
    DEPENDS ${_dvm_gpu}/interp_hip.cpp ${_dvm_gpu}/interp_cuda.cu ${CMAKE_CURRENT_SOURCE_DIR}/vm/interp/gpu_abi.h
            ${CMAKE_CURRENT_SOURCE_DIR}/vm/interp/interp_core.h ${CMAKE_CURRENT_SOURCE_DIR}/vm/interp/interp_run.h
            ${CMAKE_CURRENT_SOURCE_DIR}/vm/interp/interp_ops.h ${CMAKE_CURRENT_SOURCE_DIR}/vm/interp/engine_scalar.h
            ${CMAKE_CURRENT_SOURCE_DIR}/vm/interp/engine_lanes.h
            ${CMAKE_CURRENT_SOURCE_DIR}/bytecode/bc.h ${CMAKE_CURRENT_SOURCE_DIR}/bytecode/ops.def
    COMMENT "hipcc: the HIP interpreter for ${a}"
    VERBATIM)
  list(APPEND _dvm_hip_objs ${o})
  string(APPEND _dvm_bundle_targets ",hipv4-amdgcn-amd-amdhsa--${a}")
  list(APPEND _dvm_bundle_inputs -input=${o})
endforeach()
add_custom_command(OUTPUT ${_dvm_hsaco}
  COMMAND ${DVM_OFFLOAD_BUNDLER} -type=o -bundle-align=4096 -targets=${_dvm_bundle_targets}
          ${_dvm_bundle_inputs} -output=${_dvm_hsaco}
  DEPENDS ${_dvm_hip_objs}
  COMMENT "clang-offload-bundler: the HIP interpreter bundle (${_dvm_hip_targets})"
  VERBATIM)
include(${CMAKE_CURRENT_SOURCE_DIR}/cmake/gpu_image.cmake)
dvm_gpu_image(HIP dvm_hip ${_dvm_hsaco} "${_dvm_hip_targets}" hip_backend.c)
set(DVM_HIP_BUNDLE ${_dvm_hsaco} CACHE INTERNAL "")
message(STATUS "dvm: HIP backend on (${DVM_HIPCC}; ${_dvm_hip_targets})")
