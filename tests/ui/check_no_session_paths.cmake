# cmake -DSOURCE_DIR=<repository root> -P check_no_session_paths.cmake
# The views name session datasets only through core's session layout
# (core/session/session_layout.h, via ui/session/session_paths.h): fails on a string literal in ui/ that
# starts with a run's top-level group followed by '/' ("history/…", "quantized/…", "error/…",
# "reference/…", "runs/…", …), or a regular expression over them ("^history/…", "^(?:history|…");
# core/session/run_index.h reads what a run holds from its paths; or a quantized dataset's suffix
# ("_scale_codes", …) glued to a path. Text after // on a line is a comment and not checked.
cmake_policy(SET CMP0007 NEW)
if(NOT DEFINED SOURCE_DIR)
  message(FATAL_ERROR "check_no_session_paths: -DSOURCE_DIR=... is required")
endif()
set(groups runs history quantized error reference inputs output observed check training block_stats what_if
           nonfinite weights sites probes attention advice)
list(JOIN groups "|" alternatives)
set(literal "\"\\^?(\\(\\?:)?(${alternatives})[/|]")
# A dataset's suffix ("_codes", "_scales", "_scale_codes", "_dequantized", "_quant_scales",
# "_rotated") glued to a path: the layout's quantizedCodes(), quantizedScales(), ... spell them.
set(suffixes codes scales scale_codes dequantized quant_scales rotated)
list(JOIN suffixes "|" suffix_alternatives)
string(APPEND literal "|\"_(${suffix_alternatives})\"")
file(GLOB_RECURSE files RELATIVE ${SOURCE_DIR} ${SOURCE_DIR}/ui/*.h ${SOURCE_DIR}/ui/*.cpp)
list(LENGTH files nfiles)
if(nfiles LESS 20)
  message(FATAL_ERROR "check_no_session_paths: only ${nfiles} files under ${SOURCE_DIR}/ui; wrong directory?")
endif()
set(problems)
foreach(f IN LISTS files)
  file(STRINGS ${SOURCE_DIR}/${f} lines REGEX "${literal}")
  foreach(line IN LISTS lines)
    if(line MATCHES "^[ \t]*#[ \t]*include")
      continue()
    endif()
    string(REGEX REPLACE "//.*$" "" code "${line}")
    if(code MATCHES "${literal}")
      string(STRIP "${line}" shown)
      list(APPEND problems "${f}: ${shown}")
    endif()
  endforeach()
endforeach()
if(problems)
  list(JOIN problems "\n  " msg)
  message(FATAL_ERROR "check_no_session_paths: session paths spelled in ui/ (use core/session/session_layout.h):\n  ${msg}")
endif()
message(STATUS "check_no_session_paths: ${nfiles} ui files, no session path literal")
