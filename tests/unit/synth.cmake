# twinspan-synth (tools/synth/): presets against the reference tables, and the tiny pair through the
# target and drafter loaders.
if(TARGET twinspan_synth AND TARGET twinspan_drafter)
  twinspan_test(synth_test
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/synth_test.cc
    LIBS twinspan_synth twinspan_drafter twinspan_target twinspan_speculative_loop twinspan_hash
    LABELS unit)
endif()
