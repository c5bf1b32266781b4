# Read by ctest before any test is defined (a TEST_INCLUDE_FILES of the top
# directory). With WEFT_TEST_TIMEOUT_SCALE=<n> in ctest's environment, every
# test's own TIMEOUT property is multiplied by n: `ctest --timeout` only
# sets the limit of tests that have none, so a build that runs slower
# (tools/sanitize.sh: ASan, TSan) needs this to keep the bounds the tests
# set for themselves in proportion. It wraps set_tests_properties, through
# which every test file (gtest_discover_tests' included) sets its TIMEOUT.
get_property(_weft_timeout_scaled GLOBAL PROPERTY WEFT_TEST_TIMEOUT_SCALED)
if(NOT _weft_timeout_scaled AND NOT "$ENV{WEFT_TEST_TIMEOUT_SCALE}" STREQUAL "")
  if(NOT "$ENV{WEFT_TEST_TIMEOUT_SCALE}" MATCHES "^[1-9][0-9]*$")
    message(FATAL_ERROR "WEFT_TEST_TIMEOUT_SCALE must be a positive integer, not '$ENV{WEFT_TEST_TIMEOUT_SCALE}'")
  endif()
  set_property(GLOBAL PROPERTY WEFT_TEST_TIMEOUT_SCALED TRUE)
  function(set_tests_properties)
    # Each argument re-quoted as a bracket argument, so that list values
    # (ENVIRONMENT "A=1;B=2", LABELS "x;y") reach the real command whole.
    set(call "_set_tests_properties(")
    set(isTimeout FALSE)
    math(EXPR last "${ARGC} - 1")
    foreach(i RANGE ${last})
      set(arg "${ARGV${i}}")
      if(isTimeout AND arg MATCHES "^[0-9]+$")
        math(EXPR arg "${arg} * $ENV{WEFT_TEST_TIMEOUT_SCALE}")
      endif()
      set(isTimeout FALSE)
      if(arg STREQUAL "TIMEOUT")
        set(isTimeout TRUE)
      endif()
      string(APPEND call " [==[${arg}]==]")
    endforeach()
    string(APPEND call ")")
    cmake_language(EVAL CODE "${call}")
  endfunction()
endif()
