# bench/peers.py (dvm against Warp, Quadrants and JAX) keeps running: a --quick run of dvm
# alone, from python/dvm with this build's libdvm.so, no network and no peer needed
# (tests/test_peers.py). It needs an interpreter with numpy: DVM_PEERS_PYTHON, by default the
# first of CMake's Python3 and the system's /usr/bin/python3 that imports numpy; with none the
# test is skipped (exit 77) saying so. Not under the sanitizers: the library would be loaded
# into an uninstrumented Python.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
if(NOT DEFINED DVM_PEERS_PYTHON)
  set(_peers_py ${Python3_EXECUTABLE})
  foreach(py ${Python3_EXECUTABLE} /usr/bin/python3)
    execute_process(COMMAND ${py} -c "import numpy" RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
    if(rc EQUAL 0)
      set(_peers_py ${py})
      break()
    endif()
  endforeach()
  set(DVM_PEERS_PYTHON ${_peers_py} CACHE FILEPATH "Python with numpy for test_peers (bench/peers.py)")
endif()
add_test(NAME test_peers COMMAND ${DVM_PEERS_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tests/test_peers.py
         ${CMAKE_CURRENT_SOURCE_DIR} $<TARGET_FILE:dvm_shared>)
set_tests_properties(test_peers PROPERTIES SKIP_RETURN_CODE 77 LABELS nosan TIMEOUT 600)
