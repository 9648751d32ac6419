# Emitter tests: hand-built IR lowered by dvm_emit, checked node by node.
add_executable(test_emit tests/test_emit.c)
target_link_libraries(test_emit PRIVATE dvm)
target_include_directories(test_emit PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
add_test(NAME emit COMMAND test_emit)
