# hip.cmake: the HIP backend. hipcc --genco compiles the same interpreter source for every
# AMD target in DVM_HIP_ARCHS into one offload bundle, embedded in the library; the HIP
# runtime (libamdhip64.so) is opened at run time and loads it with hipModuleLoadData.
if(DVM_HIP STREQUAL "OFF")
  return()
endif()
find_program(DVM_HIPCC hipcc HINTS ENV ROCM_PATH PATH_SUFFIXES bin PATHS /opt/rocm/bin)
if(NOT DVM_HIPCC)
  if(DVM_HIP STREQUAL "ON")
    message(FATAL_ERROR "DVM_HIP=ON but hipcc was not found (set ROCM_PATH or put hipcc on PATH)")
  endif()
  message(STATUS "dvm: HIP backend off (hipcc not found)")
  return()
endif()

# Every target the toolchain has device libraries for (Debian ROCm 5.2 / clang 15: gfx1100
# has none, so it is left out).
set(DVM_HIP_ARCHS "gfx803;gfx900;gfx906;gfx908;gfx90a;gfx940;gfx1010;gfx1030" CACHE STRING
    "AMD targets of the embedded HIP interpreter")
set(_dvm_hip_flags)
foreach(a ${DVM_HIP_ARCHS})
  list(APPEND _dvm_hip_flags --offload-arch=${a})
endforeach()
string(REPLACE ";" " " _dvm_hip_targets "${DVM_HIP_ARCHS}")
set(_dvm_gpu ${CMAKE_CURRENT_SOURCE_DIR}/vm/interp_gpu)
set(_dvm_hsaco ${CMAKE_CURRENT_BINARY_DIR}/dvm_interp_hip.co)
add_custom_command(OUTPUT ${_dvm_hsaco}
  COMMAND ${DVM_HIPCC} --genco -O3 -std=c++17 ${_dvm_hip_flags} -I${CMAKE_CURRENT_SOURCE_DIR}
          -o ${_dvm_hsaco} ${_dvm_gpu}/interp_hip.cpp
  DEPENDS ${_dvm_gpu}/interp_hip.cpp ${_dvm_gpu}/interp_cuda.cu ${_dvm_gpu}/gpu_abi.h
          ${CMAKE_CURRENT_SOURCE_DIR}/vm/interp_cpu/interp_core.h
          ${CMAKE_CURRENT_SOURCE_DIR}/bytecode/bc.h ${CMAKE_CURRENT_SOURCE_DIR}/bytecode/ops.def
  COMMENT "hipcc: the HIP interpreter for ${_dvm_hip_targets}"
  VERBATIM)
include(${CMAKE_CURRENT_LIST_DIR}/gpu_image.cmake)
dvm_gpu_image(HIP dvm_hip ${_dvm_hsaco} "${_dvm_hip_targets}" hip_backend.c)
set(DVM_HIP_BUNDLE ${_dvm_hsaco} CACHE INTERNAL "")
message(STATUS "dvm: HIP backend on (${DVM_HIPCC}; ${_dvm_hip_targets})")
