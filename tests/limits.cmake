# The compiler's limits: every deep or huge generated source compiles or fails with a clear
# error, on a 256 KiB thread stack (tests/test_compile_stack.c) and within seconds
# (tests/test_limits.py).
find_package(Threads REQUIRED)
add_executable(test_compile_stack tests/test_compile_stack.c)
target_include_directories(test_compile_stack PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}) # tests/check.h
target_link_libraries(test_compile_stack PRIVATE dvm Threads::Threads)
target_include_directories(test_compile_stack PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
add_test(NAME compile_stack COMMAND test_compile_stack)
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_test(NAME compile_limits COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tests/test_limits.py $<TARGET_FILE:dvm_cli>)
