# ptx_brx (tools/ptx_brx.c): the host tool that turns the CUDA interpreter's PTX
# compare trees into jump tables. Plain C, so it and its test build with or without CUDA;
# vm/cuda_hip/cuda.cmake defines the same target when the CUDA backend is on.
if(NOT TARGET dvm_ptx_brx)
  add_executable(dvm_ptx_brx tools/ptx_brx.c)
  target_include_directories(dvm_ptx_brx PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
endif()
# Synthetic PTX inputs (written by the test into a temporary folder): every value's jump
# target, trampolines, the switches it must leave alone, usage and file errors.
add_executable(test_ptx_brx tests/test_ptx_brx.c)
target_include_directories(test_ptx_brx PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
add_test(NAME test_ptx_brx COMMAND test_ptx_brx $<TARGET_FILE:dvm_ptx_brx>)
