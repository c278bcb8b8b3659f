"""twinspan-bench: concurrent cells, exactness checks and tokens per round against the public gRPC API."""
