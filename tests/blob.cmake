# Blob writer/reader, verifier and disassembler (tests/test_blob.c).
add_executable(test_blob tests/test_blob.c)
target_link_libraries(test_blob PRIVATE dvm)
target_include_directories(test_blob PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
# Until the emit helper's bytecode/ops.c and program.c land, the test defines their two
# facts itself (the library never does).
if(NOT EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/bytecode/ops.c)
  target_compile_definitions(test_blob PRIVATE DVM_TEST_DEFINE_OPS)
endif()
if(NOT EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/bytecode/program.c)
  target_compile_definitions(test_blob PRIVATE DVM_TEST_DEFINE_PROGRAM_FREE)
endif()
# Real kernels once the whole compiler is in the tree.
if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/compiler/parse.c AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/compiler/autodiff.c
   AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/compiler/emit.c)
  target_compile_definitions(test_blob PRIVATE DVM_TEST_HAVE_COMPILER)
endif()
add_test(NAME blob COMMAND test_blob)
# Real kernels through the compiler: verify, round trip, corrupt.
add_test(NAME blob_compiled COMMAND test_blob --compiled)
