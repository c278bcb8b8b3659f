# The soak's 3-minute version (tests/integration/py/soak.py; scripts/soak.sh runs 30 minutes).
if(TARGET twinspan-target AND TARGET twinspan-drafter AND TARGET twinspan-router)
  add_test(NAME soak_short_test COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/py/soak.py
    --bins ${CMAKE_BINARY_DIR} --minutes 3 --streams 8 --sample 10)
  # COST: the longest test starts first in a clean run (no timing history), so that ctest -j
  # packs the other tests beside it rather than leaving it alone at the end.
  set_tests_properties(soak_short_test PROPERTIES TIMEOUT 600 LABELS "integration;soak" COST 2000)
endif()
