# The drafter link: DraftRequests as the drafter receives them (over a toy drafter) and DraftReplies
# as the target receives them (handshake check, proposal box).
if(TARGET twinspan_grpc_draft_channel AND TARGET twinspan_drafter_service AND
   TARGET twinspan_toy_models)
  twinspan_fuzz_target(draft_link
    LIBS twinspan_grpc_draft_channel twinspan_drafter_service twinspan_toy_models)
endif()
