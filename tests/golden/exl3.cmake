# EXL3 against exllamav3's own output (shared/golden/exl3_*; see its README for keys/tolerances).
twinspan_test(exl3_decode_golden_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/exl3_decode_golden_test.cc
  LIBS twinspan_exl3
  LABELS golden)
twinspan_test(exl3_linear_golden_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/exl3_linear_golden_test.cc
  LIBS twinspan_cpu twinspan_exl3
  LABELS golden)
