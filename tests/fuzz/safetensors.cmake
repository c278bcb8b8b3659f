# The safetensors parser: any bytes as a whole file image (ParseSafetensorsImage).
twinspan_fuzz_target(safetensors_header LIBS twinspan_safetensors)
# Whole checkpoints on disk (one file or a sharded folder with its index), every tensor converted.
twinspan_fuzz_target(safetensors_file SOURCES ${TWINSPAN_FUZZ_DIR}/fuzz_files.cc
  LIBS twinspan_safetensors)
# EXL3 tensor sets: every stored linear of a file loaded, small ones decoded and split in views.
twinspan_fuzz_target(exl3_tensors SOURCES ${TWINSPAN_FUZZ_DIR}/fuzz_files.cc LIBS twinspan_exl3)
