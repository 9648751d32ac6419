# Includes and calls point down the layers: heap/ needs nothing of vm/, the backends nothing
# of the host runtime, api.c nothing of launch.c; no include cycle (docs/internals.md).
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_test(NAME test_layers COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tests/test_layers.py ${CMAKE_CURRENT_SOURCE_DIR})
