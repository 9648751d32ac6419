# Host runtime tests: the .npy reader/writer, and the `dvm` command (usage errors, argument
# errors naming the parameter, missing files, no output files after a failed launch).
add_executable(test_npy tests/test_npy.c)
target_link_libraries(test_npy PRIVATE dvm_npy dvm)
target_include_directories(test_npy PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
add_test(NAME test_npy COMMAND test_npy WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})

find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_test(NAME test_cli COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tests/test_cli.py
         $<TARGET_FILE:dvm_cli> ${CMAKE_CURRENT_SOURCE_DIR}/examples)

# `auto` passes over a software Vulkan device: run with lavapipe as the only Vulkan driver
# (skipped, 77, where it is not installed).
add_executable(test_auto tests/test_auto.c)
target_include_directories(test_auto PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}) # tests/check.h
target_link_libraries(test_auto PRIVATE dvm)
add_test(NAME test_auto COMMAND test_auto)
set_tests_properties(test_auto PROPERTIES SKIP_RETURN_CODE 77)
if(EXISTS /usr/share/vulkan/icd.d/lvp_icd.x86_64.json)
  set_tests_properties(test_auto PROPERTIES ENVIRONMENT
    "VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json;VK_ICD_FILENAMES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json")
endif()

add_executable(test_api tests/test_api.c)
target_include_directories(test_api PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}) # tests/check.h
target_link_libraries(test_api PRIVATE dvm)
add_test(NAME test_api COMMAND test_api)

# Arrays over caller-owned memory (dvm_array_wrap_host/_device, dvm_array_data) on each
# backend; skipped (77) where the backend or its device is missing.
add_executable(test_wrap tests/test_wrap.c)
target_link_libraries(test_wrap PRIVATE dvm)
target_include_directories(test_wrap PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
foreach(be cpu vulkan cuda hip)
  add_test(NAME wrap_${be} COMMAND test_wrap ${be})
  set_tests_properties(wrap_${be} PROPERTIES SKIP_RETURN_CODE 77)
endforeach()

# The library reads no behaviour switch from the environment: getenv only for the cache
# directory (DVM_CACHE_DIR, XDG_CACHE_HOME, HOME); switches are dvm_context_opts fields.
add_test(NAME test_no_env COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tests/test_no_env.py ${CMAKE_CURRENT_SOURCE_DIR})

# The user docs cite nothing outside the repository, and the paths they name exist.
add_test(NAME test_docs COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tests/test_docs.py ${CMAKE_CURRENT_SOURCE_DIR})

# Outputs survive kill -9: every --out file is the old one or the new one, whole.
add_test(NAME test_kill COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tests/test_kill.py $<TARGET_FILE:dvm_cli>)
set_tests_properties(test_kill PROPERTIES LABELS nosan TIMEOUT 300)

# The serial tasks the host runs before a launch run once on every backend (a hand-built blob).
add_executable(test_hostrun tests/test_hostrun.c)
target_link_libraries(test_hostrun PRIVATE dvm)
target_include_directories(test_hostrun PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
add_test(NAME hostrun COMMAND test_hostrun)
