/* interp_hip.cpp: the HIP build of the GPU entry points: the same source as CUDA (the
 * atomics, qualifiers and launch model used there exist under the same names in HIP). */
#include "vm/cuda_hip/interp_cuda.cu"
