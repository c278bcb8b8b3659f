# Services: the lane engine's exactness contract in one process, then real processes on loopback.
if(NOT TARGET twinspan_engine)
  return()
endif()
add_library(twinspan_toy_models STATIC ${CMAKE_CURRENT_LIST_DIR}/toy_models.cc)
target_link_libraries(twinspan_toy_models PUBLIC twinspan_engine)

twinspan_test(engine_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/engine_test.cc
  LIBS twinspan_engine twinspan_toy_models twinspan_structured LABELS integration services)
twinspan_test(engine_context_copy_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/engine_context_copy_test.cc
  LIBS twinspan_engine twinspan_toy_models LABELS integration services)
if(TARGET twinspan_grpc_draft_channel)
  twinspan_test(draft_faults_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/draft_faults_test.cc
    LIBS twinspan_grpc_draft_channel twinspan_toy_models LABELS integration services)
endif()

if(TARGET twinspan_grpc_draft_channel AND TARGET twinspan_drafter_service)
  twinspan_test(draft_plane_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/draft_plane_test.cc
    LIBS twinspan_grpc_draft_channel twinspan_drafter_service twinspan_toy_models
    LABELS integration services)
endif()

# Real processes on loopback, driven by a Python client generated from the protos.
if(TARGET twinspan-target AND TARGET twinspan-drafter AND TARGET twinspan-router AND TARGET twinspan-serve)
  add_test(NAME services_processes_test
    COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/py/services_test.py)
  # COST: among the longest tests, started early in a clean run (soak.cmake says why).
  set_tests_properties(services_processes_test PROPERTIES TIMEOUT 600 LABELS "integration;services"
    COST 400
    ENVIRONMENT "TWINSPAN_TARGET_BIN=$<TARGET_FILE:twinspan-target>;TWINSPAN_DRAFTER_BIN=$<TARGET_FILE:twinspan-drafter>;TWINSPAN_ROUTER_BIN=$<TARGET_FILE:twinspan-router>;TWINSPAN_SERVE_BIN=$<TARGET_FILE:twinspan-serve>;TWINSPAN_MAKE_DEMO_BIN=$<TARGET_FILE:make-demo>;TWINSPAN_PROTO_DIR=${CMAKE_SOURCE_DIR}/proto")
endif()

# Faults with real processes: a misbehaving drafter, a killed target, cancellations, drain,
# overload.
if(TARGET twinspan-target AND TARGET twinspan-drafter AND TARGET twinspan-router)
  add_test(NAME services_faults_test
    COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/py/faults_test.py)
  set_tests_properties(services_faults_test PROPERTIES TIMEOUT 600 LABELS "integration;services"
    COST 300
    ENVIRONMENT "TWINSPAN_TARGET_BIN=$<TARGET_FILE:twinspan-target>;TWINSPAN_DRAFTER_BIN=$<TARGET_FILE:twinspan-drafter>;TWINSPAN_ROUTER_BIN=$<TARGET_FILE:twinspan-router>;TWINSPAN_MAKE_DEMO_BIN=$<TARGET_FILE:make-demo>;TWINSPAN_PROTO_DIR=${CMAKE_SOURCE_DIR}/proto")
endif()

# Bad model files refused at load, naming the file and the fix; what a request can leave in logs.
if(TARGET twinspan-target AND TARGET twinspan-drafter AND TARGET twinspan-router AND
   TARGET make-demo)
  add_test(NAME services_model_files_test
    COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/py/model_files_test.py)
  set_tests_properties(services_model_files_test PROPERTIES TIMEOUT 300
    LABELS "integration;services"
    ENVIRONMENT "TWINSPAN_TARGET_BIN=$<TARGET_FILE:twinspan-target>;TWINSPAN_DRAFTER_BIN=$<TARGET_FILE:twinspan-drafter>;TWINSPAN_ROUTER_BIN=$<TARGET_FILE:twinspan-router>;TWINSPAN_MAKE_DEMO_BIN=$<TARGET_FILE:make-demo>;TWINSPAN_PROTO_DIR=${CMAKE_SOURCE_DIR}/proto")
endif()

if(TARGET twinspan_router)
  twinspan_test(router_config_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/router_config_test.cc
    LIBS twinspan_router LABELS integration services)
endif()

if(TARGET twinspan_draft_link AND TARGET twinspan_drafter)
  twinspan_test(tap_fuser_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/tap_fuser_test.cc
    LIBS twinspan_draft_link twinspan_drafter twinspan_cpu_backend nlohmann_json::nlohmann_json
    LABELS integration services)
endif()

# The router's placement: it launches a drafter and a target itself (CPU here; gpu-check.sh runs the
# same binary on GPUs).
if(TARGET twinspan-router AND TARGET twinspan-target AND TARGET twinspan-drafter AND TARGET make-demo)
  twinspan_test(placement_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/placement_test.cc
    LIBS twinspan_proto twinspan_service_process nlohmann_json::nlohmann_json
    LABELS integration services TIMEOUT 300)
  add_dependencies(placement_test twinspan-router twinspan-target twinspan-drafter make-demo)
endif()

twinspan_test(tree_engine_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/tree_engine_test.cc
  LIBS twinspan_engine twinspan_toy_models LABELS integration services)

# The OpenAI-compatible HTTP API with curl and the official `openai` npm client (pinned, installed
# at test time: Debian 12 packages no OpenAI client), on the trained demo pair.
if(TARGET twinspan-serve AND TARGET twinspan-router AND TARGET twinspan-target)
  set(TWINSPAN_OPENAI_NPM_DIR ${CMAKE_BINARY_DIR}/openai-npm)
  add_test(NAME http_openai_setup
    COMMAND npm install --no-save --no-audit --no-fund --prefix ${TWINSPAN_OPENAI_NPM_DIR}
            openai@4.95.0)
  set_tests_properties(http_openai_setup PROPERTIES FIXTURES_SETUP openai_npm
    LABELS "integration;http" TIMEOUT 600)
  add_test(NAME http_test COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/py/http_test.py)
  set_tests_properties(http_test PROPERTIES FIXTURES_REQUIRED openai_npm TIMEOUT 300
    LABELS "integration;services;http"
    ENVIRONMENT "TWINSPAN_SERVE_BIN=$<TARGET_FILE:twinspan-serve>;TWINSPAN_ROUTER_BIN=$<TARGET_FILE:twinspan-router>;TWINSPAN_TARGET_BIN=$<TARGET_FILE:twinspan-target>;TWINSPAN_MODELS_DIR=${CMAKE_SOURCE_DIR}/models/demo;TWINSPAN_PROTO_DIR=${CMAKE_SOURCE_DIR}/proto;TWINSPAN_OPENAI_PACKAGE=${TWINSPAN_OPENAI_NPM_DIR}/node_modules/openai")
  # The HTTP API behind bearer tokens (plaintext behind a TLS proxy).
  add_test(NAME http_auth_test COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/py/http_auth_test.py)
  set_tests_properties(http_auth_test PROPERTIES TIMEOUT 120
    LABELS "integration;services;http;security"
    ENVIRONMENT "TWINSPAN_SERVE_BIN=$<TARGET_FILE:twinspan-serve>;TWINSPAN_ROUTER_BIN=$<TARGET_FILE:twinspan-router>;TWINSPAN_MODELS_DIR=${CMAKE_SOURCE_DIR}/models/demo")
  # HTTPS with the gRPC port's certificates, client certificates and rotation (a CA made by the
  # test), with curl and the official openai client.
  add_test(NAME http_tls_test COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/py/http_tls_test.py)
  set_tests_properties(http_tls_test PROPERTIES FIXTURES_REQUIRED openai_npm TIMEOUT 300
    LABELS "integration;services;http;security"
    ENVIRONMENT "TWINSPAN_SERVE_BIN=$<TARGET_FILE:twinspan-serve>;TWINSPAN_ROUTER_BIN=$<TARGET_FILE:twinspan-router>;TWINSPAN_MODELS_DIR=${CMAKE_SOURCE_DIR}/models/demo;TWINSPAN_OPENAI_PACKAGE=${TWINSPAN_OPENAI_NPM_DIR}/node_modules/openai")
  # Idle connections, the connection and thread limits, over-limit bodies and memory.
  add_test(NAME http_limits_test
    COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/py/http_limits_test.py)
  set_tests_properties(http_limits_test PROPERTIES TIMEOUT 300 LABELS "integration;services;http"
    ENVIRONMENT "TWINSPAN_SERVE_BIN=$<TARGET_FILE:twinspan-serve>;TWINSPAN_MODELS_DIR=${CMAKE_SOURCE_DIR}/models/demo")
endif()
