# The CPU ops on each instruction set (cpu::Isa) against scalar references of their order.
twinspan_test(cpu_exl3_linear_paths_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/cpu_exl3_linear_paths_test.cc
  LIBS twinspan_exl3_fixture twinspan_exl3 twinspan_cpu
  LABELS unit asan)
# cpu::Linear's dense AVX2 columns against Dot.
twinspan_test(cpu_linear_paths_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/cpu_linear_paths_test.cc
  LIBS twinspan_exl3_fixture twinspan_cpu twinspan_safetensors
  LABELS unit asan)
# cpu::Attention on each instruction set against its scalar order; ExpAvx2 against std::exp.
twinspan_test(cpu_attention_paths_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/cpu_attention_paths_test.cc
  LIBS twinspan_cpu
  LABELS unit asan)
