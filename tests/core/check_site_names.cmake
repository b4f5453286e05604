# cmake -DSOURCE_DIR=<repository root> -P check_site_names.cmake
# Site names have one author, core/common/site_names.* (mlpLayerName, blockName, blockSitePath,
# kLmHeadName, kBlocksPrefix; read back with sitePlace): fails on code in core/, ui/, app/ or gpu/
# that spells a site name itself — `"fc" +` (an MLP layer's name), a string literal that is a block
# name or path ("blocks.1", "blocks.0.attn.qkv", a glob "blocks.*") or the head ("lm_head",
# "lm_head.weight"). Prose (a literal with a space: help texts), a quote escaped inside another
# literal (an example in an error message) and text after // are not checked.
cmake_policy(SET CMP0007 NEW)
if(NOT DEFINED SOURCE_DIR)
  message(FATAL_ERROR "check_site_names: -DSOURCE_DIR=... is required")
endif()
set(literal "\"fc\" *\\+|(^|[^\\\\])\"blocks\\.[^\" ]*\"|(^|[^\\\\])\"lm_head[^\" ]*\"")
file(GLOB_RECURSE files RELATIVE ${SOURCE_DIR} ${SOURCE_DIR}/core/*.h ${SOURCE_DIR}/core/*.cpp ${SOURCE_DIR}/ui/*.h
     ${SOURCE_DIR}/ui/*.cpp ${SOURCE_DIR}/app/*.h ${SOURCE_DIR}/app/*.cpp ${SOURCE_DIR}/gpu/*.h ${SOURCE_DIR}/gpu/*.cpp
     ${SOURCE_DIR}/gpu/*.cu)
list(LENGTH files nfiles)
if(nfiles LESS 100)
  message(FATAL_ERROR "check_site_names: only ${nfiles} source files under ${SOURCE_DIR}; wrong directory?")
endif()
set(problems)
foreach(f IN LISTS files)
  if(f MATCHES "^core/common/site_names\\.")
    continue()
  endif()
  file(STRINGS ${SOURCE_DIR}/${f} lines ENCODING UTF-8 REGEX "${literal}")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "//.*$" "" code "${line}")
    if(code MATCHES "${literal}")
      string(STRIP "${line}" shown)
      list(APPEND problems "${f}: ${shown}")
    endif()
  endforeach()
endforeach()
if(problems)
  list(JOIN problems "\n  " text)
  message(FATAL_ERROR "site names spelled outside core/common/site_names.* (use its builders):\n  ${text}")
endif()
message(STATUS "check_site_names: ${nfiles} files, no site name spelled outside core/common/site_names.*")
