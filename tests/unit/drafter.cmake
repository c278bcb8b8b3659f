# Drafter ops and model: unit tests.
twinspan_test(drafter_ops_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/drafter/topk_test.cc
          ${CMAKE_CURRENT_LIST_DIR}/drafter/dynamic_conv_test.cc
          ${CMAKE_CURRENT_LIST_DIR}/drafter/candidate_selector_test.cc
  LIBS twinspan_cpu
  LABELS unit asan)
if(TARGET twinspan_drafter)
  twinspan_test(drafter_unit_test
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/drafter/drafter_config_test.cc
            ${CMAKE_CURRENT_LIST_DIR}/drafter/head_variant_test.cc
            ${CMAKE_CURRENT_LIST_DIR}/drafter/drafter_weights_test.cc
            ${CMAKE_CURRENT_LIST_DIR}/drafter/draft_head_test.cc
            ${CMAKE_CURRENT_LIST_DIR}/drafter/drafter_linear_test.cc
            ${CMAKE_CURRENT_LIST_DIR}/drafter/drafter_backend_test.cc
            ${CMAKE_CURRENT_LIST_DIR}/drafter/draft_tree_test.cc
    LIBS twinspan_drafter twinspan_safetensors
    LABELS unit)
endif()

# The committed demo pair in models/demo (its reference tokens come from transformers).
if(TARGET twinspan_drafter AND TARGET twinspan_target)
  twinspan_test(demo_model_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/demo_model_test.cc
    LIBS twinspan_drafter twinspan_target twinspan_tokenizer LABELS unit)
  target_compile_definitions(demo_model_test PRIVATE TWINSPAN_DEMO_DIR="${CMAKE_SOURCE_DIR}/models/demo")
endif()

# The drafter's prompt-prefix cache behind the engine's DraftModel (the demo pair's drafter).
if(TARGET twinspan_drafter_server)
  twinspan_test(drafter_prefix_cache_test
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/drafter/drafter_prefix_cache_test.cc
    LIBS twinspan_drafter_server LABELS unit)
  target_compile_definitions(drafter_prefix_cache_test PRIVATE
    TWINSPAN_DEMO_DIR="${CMAKE_SOURCE_DIR}/models/demo")
  # The drafter service's options: ranges refused by flag name, the defaults.
  twinspan_test(drafter_adapter_test
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/drafter/drafter_adapter_test.cc
    LIBS twinspan_drafter_server LABELS unit)
  target_compile_definitions(drafter_adapter_test PRIVATE
    TWINSPAN_DEMO_DIR="${CMAKE_SOURCE_DIR}/models/demo")
endif()
