// The router's configuration file (JSON): pools of target workers, one pool per head variant with a
// weight, and optionally the local processes the router starts for them (with the GPU each uses).
//
//   {"listen": "127.0.0.1:50050", "metrics": "127.0.0.1:9400",
//    "pools": [{"variant": "two-span", "weight": 50,
//               "workers": ["127.0.0.1:50061"],
//               "launch": [{"binary": "twinspan-drafter", "gpu": "0", "args": ["--listen", ...]},
//                          {"binary": "twinspan-target", "gpu": "1", "args": [...]}]}]}
#ifndef TWINSPAN_SERVICES_ROUTER_ROUTER_CONFIG_H_
#define TWINSPAN_SERVICES_ROUTER_ROUTER_CONFIG_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace twinspan::router {

// A local process the router starts before serving and stops when it exits.
struct LaunchSpec {
  std::string binary;  // absolute, or looked up beside the router binary
  std::vector<std::string> args;
  // CUDA_VISIBLE_DEVICES for it; empty leaves the variable alone. With a gpu the worker sees those
  // devices as cuda:0..: the parser checks its --device / --drafter-device against them and adds
  // --device cuda:0 when it has none.
  std::string gpu;
  std::string name;  // for logs; defaults to the binary's file name
};

struct PoolConfig {
  std::string variant;               // head variant name: "two-span", "full", "none", ...
  double weight = 1.0;               // share of new sessions, relative to the other pools
  std::vector<std::string> workers;  // target addresses (host:port)
  std::vector<LaunchSpec> launch;
};

struct RouterConfig {
  std::string listen = "127.0.0.1:50050";
  std::string metrics = "127.0.0.1:0";
  std::string http;  // the OpenAI-compatible HTTP API's address; empty: none (--http overrides)
  std::vector<PoolConfig> pools;
  absl::Duration health_interval = absl::Seconds(1);
  absl::Duration startup_timeout = absl::Seconds(120);  // launched workers must be healthy by then
  int max_retries = 1;  // other workers tried when nothing was streamed yet
  int max_message_bytes = 64 << 20;
};

// Parses the JSON text of a config. InvalidArgument naming the field for anything malformed:
// no pools, a duplicate variant, a weight <= 0, a pool without workers, a launch entry whose
// --device is not one of the GPUs its "gpu" leaves it.
absl::StatusOr<RouterConfig> ParseRouterConfig(const std::string& json_text,
                                               const std::string& source);
// Reads and parses a file. NotFound when it cannot be read.
absl::StatusOr<RouterConfig> LoadRouterConfig(const std::string& path);

}  // namespace twinspan::router

#endif  // TWINSPAN_SERVICES_ROUTER_ROUTER_CONFIG_H_
