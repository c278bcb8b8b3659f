# The demo pair's training code (tools/train): its unit tests and the golden check of its Qwen3
# and DFlash2 models against the reference implementations. They need PyTorch (Debian's
# python3-torch, not a CI dependency): without it they report skipped (exit 77).
set(TWINSPAN_TRAIN_PY "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('torch') else 77)")
add_test(NAME train_py_test
  COMMAND sh -c "/usr/bin/python3 -c \"$0\" && exec /usr/bin/python3 -m unittest discover -s \"$1\"/tools/train/tests"
  "${TWINSPAN_TRAIN_PY}" ${CMAKE_SOURCE_DIR})
set_tests_properties(train_py_test PROPERTIES TIMEOUT 300 LABELS "unit;python" SKIP_RETURN_CODE 77)
add_test(NAME train_golden_py_test
  COMMAND ${TWINSPAN_RUN_CHECK} -- sh -c "/usr/bin/python3 -c \"$0\" && exec /usr/bin/python3 \"$1\"/tools/train/check_golden.py \"$2\""
  "${TWINSPAN_TRAIN_PY}" ${CMAKE_SOURCE_DIR} {golden})
set_tests_properties(train_golden_py_test PROPERTIES TIMEOUT 300 LABELS "golden;python" SKIP_RETURN_CODE 77)
