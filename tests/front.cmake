# The front end (lexer, parser, checker, race check, IR dump): tests/test_front.c. Linked
# with the library: dvm_front sits in compile.c beside the later stages.
add_executable(test_front tests/test_front.c)
target_link_libraries(test_front PRIVATE dvm)
target_include_directories(test_front PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
add_test(NAME front COMMAND test_front)
