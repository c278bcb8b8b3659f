# Formats: safetensors, config, EXL3 host-side tests (all parse untrusted input, so all run under ASan).
set(FORMATS_UNIT_DIR ${CMAKE_CURRENT_LIST_DIR})
twinspan_test(formats_safetensors_test
  SOURCES ${FORMATS_UNIT_DIR}/formats_half_test.cc ${FORMATS_UNIT_DIR}/formats_safetensors_test.cc
          ${FORMATS_UNIT_DIR}/formats_safetensors_bad_input_test.cc
  LIBS twinspan_safetensors
  LABELS unit asan)
twinspan_test(formats_config_test
  SOURCES ${FORMATS_UNIT_DIR}/formats_config_test.cc
  LIBS twinspan_config
  LABELS unit asan)
twinspan_test(formats_exl3_core_test
  SOURCES ${FORMATS_UNIT_DIR}/formats_exl3_plan_test.cc ${FORMATS_UNIT_DIR}/formats_exl3_decode_test.cc
  LIBS twinspan_exl3
  LABELS unit asan)
twinspan_test(formats_exl3_test
  SOURCES ${FORMATS_UNIT_DIR}/formats_exl3_weight_test.cc
          ${FORMATS_UNIT_DIR}/formats_exl3_bad_input_test.cc
  LIBS twinspan_exl3_fixture twinspan_exl3 twinspan_cpu
  LABELS unit asan)
twinspan_test(formats_hadamard_test
  SOURCES ${FORMATS_UNIT_DIR}/formats_hadamard_test.cc
  LIBS twinspan_cpu twinspan_exl3
  LABELS unit asan)
