# cuda.cmake: the CUDA backend. At build time nvcc compiles THE interpreter (vm/interp/,
# through interp_cuda.cu) to PTX, ptx_brx turns its dispatch into jump tables, ptxas makes
# SASS for every architecture in DVM_CUDA_ARCHS and fatbinary bundles them with the newest
# PTX (newer GPUs JIT it once). The fatbin is embedded in the library as a byte array;
# libcuda.so.1 is opened at run time (nothing links to it).
if(DVM_CUDA STREQUAL "OFF")
  return()
endif()
find_program(DVM_NVCC nvcc HINTS ENV CUDA_HOME ENV CUDA_PATH PATH_SUFFIXES bin PATHS /usr/local/cuda/bin)
if(NOT DVM_NVCC)
  if(DVM_CUDA STREQUAL "ON")
    message(FATAL_ERROR "DVM_CUDA=ON but nvcc was not found (set CUDA_HOME or put nvcc on PATH)")
  endif()
  message(STATUS "dvm: CUDA backend off (nvcc not found)")
  return()
endif()

# nvcc 13 dropped sm_70 (Volta) and older: 75 is the oldest it can target.
set(DVM_CUDA_ARCHS "75;80;86;89;90" CACHE STRING "SASS architectures of the embedded CUDA interpreter")
list(GET DVM_CUDA_ARCHS -1 _dvm_ptx)
# Each SASS target is compiled from the PTX of the oldest architecture that shares its code:
# interp_cuda.cu differs only at __CUDA_ARCH__ 800 (the warp vote, launch bounds) and 900
# (launch bounds), so every sm_8x takes compute_80's PTX: 3 front-end runs (about 22 s each
# here) instead of 5 for the default list. The newest architecture's PTX is embedded too,
# for newer GPUs.
set(_dvm_virts)
foreach(a ${DVM_CUDA_ARCHS})
  set(v ${a})
  if(a GREATER_EQUAL 80 AND a LESS 90)
    set(v 80)
  endif()
  list(APPEND _dvm_virts ${v})
  set(_dvm_virt_of_${a} ${v})
endforeach()
list(REMOVE_DUPLICATES _dvm_virts)
set(_dvm_targets)
foreach(a ${DVM_CUDA_ARCHS})
  string(APPEND _dvm_targets "sm_${a} ")
endforeach()
string(APPEND _dvm_targets "compute_${_dvm_ptx} (PTX)")
set(DVM_CUDA_TARGETS "${_dvm_targets}" CACHE INTERNAL "")
# Extra flags for the interpreter (measuring variants, e.g. -DDVM_POLL_EVERY=1, -lineinfo).
set(DVM_CUDA_FLAGS "" CACHE STRING "extra nvcc flags for the embedded CUDA interpreter (its PTX)")
set(DVM_PTXAS_FLAGS "" CACHE STRING "extra ptxas flags for the embedded CUDA interpreter (e.g. -lineinfo)")
separate_arguments(DVM_CUDA_FLAGS)
separate_arguments(DVM_PTXAS_FLAGS)
# The dispatch as a jump table: nvcc lowers the interpreter's switch to a tree of compares
# (no jump tables, ever); ptx_brx replaces each marked tree in the PTX by one brx.idx
# (ptx_brx.c; the stencil 11% faster on an H200). OFF compiles the plain
# switch (for measuring).
option(DVM_CUDA_BRX "CUDA interpreter: dispatch through a PTX jump table (ptx_brx)" ON)
get_filename_component(_dvm_cuda_bin ${DVM_NVCC} DIRECTORY)
find_program(DVM_PTXAS ptxas HINTS ${_dvm_cuda_bin} NO_DEFAULT_PATH)
find_program(DVM_FATBINARY fatbinary HINTS ${_dvm_cuda_bin} NO_DEFAULT_PATH)
if(NOT DVM_PTXAS OR NOT DVM_FATBINARY)
  message(FATAL_ERROR "dvm: ptxas or fatbinary not found beside ${DVM_NVCC}")
endif()
if(NOT TARGET dvm_ptx_brx)
  add_executable(dvm_ptx_brx ${CMAKE_CURRENT_SOURCE_DIR}/tools/ptx_brx.c)
  target_include_directories(dvm_ptx_brx PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
endif()

set(_dvm_gpu ${CMAKE_CURRENT_SOURCE_DIR}/vm/cuda_hip)
set(_dvm_deps ${_dvm_gpu}/interp_cuda.cu ${CMAKE_CURRENT_SOURCE_DIR}/vm/interp/gpu_abi.h ${CMAKE_CURRENT_SOURCE_DIR}/vm/interp/interp_core.h
              ${CMAKE_CURRENT_SOURCE_DIR}/vm/interp/interp_run.h ${CMAKE_CURRENT_SOURCE_DIR}/vm/interp/interp_ops.h
              ${CMAKE_CURRENT_SOURCE_DIR}/vm/interp/engine_scalar.h ${CMAKE_CURRENT_SOURCE_DIR}/vm/interp/engine_lanes.h
              ${CMAKE_CURRENT_SOURCE_DIR}/bytecode/bc.h ${CMAKE_CURRENT_SOURCE_DIR}/bytecode/ops.def)
set(_dvm_images)
set(_dvm_image_args)
set(_dvm_brx_reports)
foreach(v ${_dvm_virts})
  set(ptx ${CMAKE_CURRENT_BINARY_DIR}/dvm_interp_compute_${v}.ptx)
  # with the rewrite: nvcc writes the marked PTX beside, ptx_brx the PTX the fatbin gets
  set(nvcc_out ${ptx})
  set(brx_def)
  set(brx_step)
  set(brx_out)
  if(DVM_CUDA_BRX)
    set(nvcc_out ${CMAKE_CURRENT_BINARY_DIR}/dvm_interp_compute_${v}.raw.ptx)
    set(rep ${CMAKE_CURRENT_BINARY_DIR}/dvm_interp_compute_${v}.brx.txt)
    set(brx_def -DDVM_GPU_BRX)
    set(brx_step COMMAND dvm_ptx_brx ${nvcc_out} ${ptx} --report ${rep})
    set(brx_out ${rep})
    list(APPEND _dvm_brx_reports ${rep})
  endif()
  add_custom_command(OUTPUT ${ptx} ${brx_out}
    COMMAND ${DVM_NVCC} -ptx -O3 -std=c++17 -arch=compute_${v} ${brx_def} ${DVM_CUDA_FLAGS}
            -I${CMAKE_CURRENT_SOURCE_DIR} -o ${nvcc_out} ${_dvm_gpu}/interp_cuda.cu
    ${brx_step}
    DEPENDS ${_dvm_deps} $<$<BOOL:${DVM_CUDA_BRX}>:dvm_ptx_brx>
    COMMENT "nvcc: the CUDA interpreter's PTX for compute_${v}"
    VERBATIM)
  set(_dvm_ptx_${v} ${ptx})
endforeach()
foreach(a ${DVM_CUDA_ARCHS})
  set(ptx ${_dvm_ptx_${_dvm_virt_of_${a}}})
  set(cubin ${CMAKE_CURRENT_BINARY_DIR}/dvm_interp_sm_${a}.cubin)
  add_custom_command(OUTPUT ${cubin}
    COMMAND ${DVM_PTXAS} -O3 -arch=sm_${a} -warn-spills ${DVM_PTXAS_FLAGS} -o ${cubin} ${ptx}
    DEPENDS ${ptx}
    COMMENT "ptxas: the CUDA interpreter for sm_${a}"
    VERBATIM)
  list(APPEND _dvm_images ${cubin})
  list(APPEND _dvm_image_args "--image3=kind=elf,sm=${a},file=${cubin}")
endforeach()
list(APPEND _dvm_image_args "--image3=kind=ptx,sm=${_dvm_ptx},file=${_dvm_ptx_${_dvm_ptx}}")
set(_dvm_fatbin ${CMAKE_CURRENT_BINARY_DIR}/dvm_interp_cuda.fatbin)
add_custom_command(OUTPUT ${_dvm_fatbin}
  COMMAND ${DVM_FATBINARY} -64 --create=${_dvm_fatbin} ${_dvm_image_args}
  DEPENDS ${_dvm_images} ${_dvm_ptx_${_dvm_ptx}}
  COMMENT "fatbinary: the CUDA interpreter for ${_dvm_targets}"
  VERBATIM)
set(DVM_CUDA_BRX_REPORTS "${_dvm_brx_reports}" CACHE INTERNAL "")
include(${CMAKE_CURRENT_SOURCE_DIR}/cmake/gpu_image.cmake)
dvm_gpu_image(CUDA dvm_cuda ${_dvm_fatbin} "${_dvm_targets}" cuda_backend.c)
set(DVM_CUDA_FATBIN ${_dvm_fatbin} CACHE INTERNAL "")
message(STATUS "dvm: CUDA backend on (${DVM_NVCC}; ${_dvm_targets})")
