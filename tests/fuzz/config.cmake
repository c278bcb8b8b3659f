# Model and router configuration files: config.json (HF, quantization_config, dflash_config, the
# target's and the drafter's view of it) and the router's JSON config. The router's parser is a
# single file compiled in: its library is heavy to link.
twinspan_fuzz_target(model_config LIBS twinspan_config DICT json.dict)
twinspan_fuzz_target(router_config SOURCES ${CMAKE_SOURCE_DIR}/services/router/router_config.cc
  LIBS twinspan_base nlohmann_json::nlohmann_json DICT json.dict)
