# twinspan-exl3: inspect EXL3 checkpoints, export a linear or a whole checkpoint as dense weights.
add_library(twinspan_exl3_tools STATIC
  ${CMAKE_CURRENT_LIST_DIR}/exl3/dense_export.cc
  ${CMAKE_CURRENT_LIST_DIR}/exl3/inspect.cc)
target_link_libraries(twinspan_exl3_tools PUBLIC twinspan_exl3 twinspan_files)
add_executable(twinspan-exl3 ${CMAKE_CURRENT_LIST_DIR}/exl3/main.cc)
target_link_libraries(twinspan-exl3 PRIVATE twinspan_exl3_tools CLI11::CLI11)
