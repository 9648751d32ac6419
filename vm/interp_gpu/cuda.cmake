# cuda.cmake: the CUDA backend. nvcc compiles THE interpreter (interp_core.h, through
# interp_cuda.cu) into one fatbin at build time: SASS for every architecture in
# DVM_CUDA_ARCHS plus PTX for the newest, so newer GPUs JIT it once. The fatbin is embedded
# in the library as a byte array; libcuda.so.1 is opened at run time (nothing links to it).
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
# (launch bounds), so every sm_8x takes compute_80's PTX. nvcc runs its front end once per
# PTX architecture (about 22 s each here) and ptxas once per SASS target: 3 front-end runs
# instead of 5 for the default list (the fatbin: 118 -> 101 s of CPU here). The last target
# also gets its own PTX, for newer GPUs. `--threads 0`: the groups compile side by side when
# cores are free (the end of a build, once the HIP targets are done).
set(_dvm_virts)
foreach(a ${DVM_CUDA_ARCHS})
  set(v ${a})
  if(a GREATER_EQUAL 80 AND a LESS 90)
    set(v 80)
  endif()
  list(APPEND _dvm_virts ${v})
  set(_dvm_sass_${v} "${_dvm_sass_${v}}${_dvm_sep_${v}}sm_${a}")
  set(_dvm_sep_${v} ",")
endforeach()
list(REMOVE_DUPLICATES _dvm_virts)
set(_dvm_gencode)
set(_dvm_targets)
foreach(v ${_dvm_virts})
  set(codes "${_dvm_sass_${v}}")
  if(v EQUAL _dvm_ptx)
    set(codes "${codes},compute_${v}")
  endif()
  list(APPEND _dvm_gencode "-gencode=arch=compute_${v},code=[${codes}]")
endforeach()
foreach(a ${DVM_CUDA_ARCHS})
  string(APPEND _dvm_targets "sm_${a} ")
endforeach()
string(APPEND _dvm_targets "compute_${_dvm_ptx} (PTX)")
set(DVM_CUDA_TARGETS "${_dvm_targets}" CACHE INTERNAL "")
# Extra nvcc flags for the interpreter (measuring variants, e.g. -DDVM_POLL_EVERY=1).
set(DVM_CUDA_FLAGS "" CACHE STRING "extra nvcc flags for the embedded CUDA interpreter")
separate_arguments(DVM_CUDA_FLAGS)

set(_dvm_gpu ${CMAKE_CURRENT_SOURCE_DIR}/vm/interp_gpu)
set(_dvm_fatbin ${CMAKE_CURRENT_BINARY_DIR}/dvm_interp_cuda.fatbin)
add_custom_command(OUTPUT ${_dvm_fatbin}
  COMMAND ${DVM_NVCC} -fatbin -O3 -std=c++17 ${_dvm_gencode} --threads 0 -Xptxas -warn-spills ${DVM_CUDA_FLAGS}
          -I${CMAKE_CURRENT_SOURCE_DIR} -o ${_dvm_fatbin} ${_dvm_gpu}/interp_cuda.cu
  DEPENDS ${_dvm_gpu}/interp_cuda.cu ${_dvm_gpu}/gpu_abi.h ${CMAKE_CURRENT_SOURCE_DIR}/vm/interp_cpu/interp_core.h
          ${CMAKE_CURRENT_SOURCE_DIR}/bytecode/bc.h ${CMAKE_CURRENT_SOURCE_DIR}/bytecode/ops.def
  COMMENT "nvcc: the CUDA interpreter for ${_dvm_targets}"
  VERBATIM)
include(${CMAKE_CURRENT_LIST_DIR}/gpu_image.cmake)
dvm_gpu_image(CUDA dvm_cuda ${_dvm_fatbin} "${_dvm_targets}" cuda_backend.c)
set(DVM_CUDA_FATBIN ${_dvm_fatbin} CACHE INTERNAL "")
message(STATUS "dvm: CUDA backend on (${DVM_NVCC}; ${_dvm_targets})")
