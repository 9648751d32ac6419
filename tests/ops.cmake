# Every task opcode's PROPS in bytecode/ops.def against what the CPU interpreter does with it
# (tests/test_ops.c): a new store opcode without DVM_E_STORE fails here.
add_executable(test_ops tests/test_ops.c)
target_link_libraries(test_ops PRIVATE dvm)
target_include_directories(test_ops PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
add_test(NAME ops COMMAND test_ops)
