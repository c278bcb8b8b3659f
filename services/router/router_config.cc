#include "services/router/router_config.h"

#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace twinspan::router {
namespace {

using nlohmann::json;

absl::Status Bad(const std::string& source, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": ", what));
}

// A launch entry with a "gpu" runs there: CUDA_VISIBLE_DEVICES leaves it the listed devices as
// cuda:0 .. cuda:n-1, so every --device / --drafter-device it has must name one of those (cpu
// contradicts the "gpu"), and one without --device gets --device cuda:0.
absl::Status PlaceOnGpu(const std::string& source, const std::string& pool, LaunchSpec* spec) {
  if (spec->gpu.empty()) return absl::OkStatus();
  const std::vector<std::string> gpus = absl::StrSplit(spec->gpu, ',', absl::SkipWhitespace());
  const int visible = static_cast<int>(gpus.size());
  const std::string where = absl::StrCat("pool \"", pool, "\": launch \"", spec->name,
                                         "\" (\"gpu\": \"", spec->gpu, "\")");
  bool has_device = false;
  for (size_t i = 0; i < spec->args.size(); ++i) {
    for (const absl::string_view flag : {"--device", "--drafter-device"}) {
      const std::string& arg = spec->args[i];
      std::string value;
      if (arg == flag && i + 1 < spec->args.size()) {
        value = spec->args[i + 1];
      } else if (absl::StartsWith(arg, absl::StrCat(flag, "="))) {
        value = arg.substr(flag.size() + 1);
      } else {
        continue;
      }
      has_device = has_device || flag == "--device";
      absl::string_view number = value;
      int ordinal = -1;
      if (!absl::ConsumePrefix(&number, "cuda:") || !absl::SimpleAtoi(number, &ordinal) ||
          ordinal < 0 || ordinal >= visible) {
        return Bad(source, absl::StrCat(where, ": ", flag, " ", value, " does not name one of the ",
                                        visible, " GPUs it sees (cuda:0 .. cuda:", visible - 1,
                                        "); drop \"gpu\" to run it elsewhere"));
      }
    }
  }
  if (!has_device) {
    spec->args.push_back("--device");
    spec->args.push_back("cuda:0");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<RouterConfig> ParseRouterConfig(const std::string& json_text,
                                               const std::string& source) {
  json root = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) return Bad(source, "not a JSON object");
  RouterConfig config;
  auto get_string = [&](const json& obj, const char* key, std::string* out) -> absl::Status {
    if (!obj.contains(key)) return absl::OkStatus();
    if (!obj[key].is_string()) return Bad(source, absl::StrCat("\"", key, "\" must be a string"));
    *out = obj[key].get<std::string>();
    return absl::OkStatus();
  };
  auto get_number = [&](const json& obj, const char* key, double* out) -> absl::Status {
    if (!obj.contains(key)) return absl::OkStatus();
    if (!obj[key].is_number()) return Bad(source, absl::StrCat("\"", key, "\" must be a number"));
    *out = obj[key].get<double>();
    return absl::OkStatus();
  };
  if (absl::Status s = get_string(root, "listen", &config.listen); !s.ok()) return s;
  if (absl::Status s = get_string(root, "metrics", &config.metrics); !s.ok()) return s;
  if (absl::Status s = get_string(root, "http", &config.http); !s.ok()) return s;
  double health_ms = absl::ToDoubleMilliseconds(config.health_interval);
  double startup_s = absl::ToDoubleSeconds(config.startup_timeout);
  double retries = config.max_retries;
  double message_mb = config.max_message_bytes / double(1 << 20);
  if (absl::Status s = get_number(root, "health_interval_ms", &health_ms); !s.ok()) return s;
  if (absl::Status s = get_number(root, "startup_timeout_s", &startup_s); !s.ok()) return s;
  if (absl::Status s = get_number(root, "max_retries", &retries); !s.ok()) return s;
  if (absl::Status s = get_number(root, "max_message_mb", &message_mb); !s.ok()) return s;
  if (health_ms < 10 || startup_s <= 0 || retries < 0 || retries > 10 || message_mb < 1 ||
      message_mb > 1024) {
    return Bad(source,
               "health_interval_ms >= 10, startup_timeout_s > 0, max_retries in [0, 10], "
               "max_message_mb in [1, 1024]");
  }
  config.health_interval = absl::Milliseconds(health_ms);
  config.startup_timeout = absl::Seconds(startup_s);
  config.max_retries = static_cast<int>(retries);
  config.max_message_bytes = static_cast<int>(message_mb * (1 << 20));

  if (!root.contains("pools") || !root["pools"].is_array() || root["pools"].empty()) {
    return Bad(source, "\"pools\" must be a non-empty array");
  }
  std::set<std::string> variants;
  for (const json& p : root["pools"]) {
    if (!p.is_object()) return Bad(source, "each pool must be an object");
    PoolConfig pool;
    if (absl::Status s = get_string(p, "variant", &pool.variant); !s.ok()) return s;
    if (pool.variant.empty()) return Bad(source, "a pool has no \"variant\"");
    if (!variants.insert(pool.variant).second) {
      return Bad(source, absl::StrCat("variant \"", pool.variant, "\" appears twice"));
    }
    if (absl::Status s = get_number(p, "weight", &pool.weight); !s.ok()) return s;
    if (!(pool.weight > 0)) {
      return Bad(source, absl::StrCat("pool \"", pool.variant, "\": weight must be > 0"));
    }
    if (!p.contains("workers") || !p["workers"].is_array() || p["workers"].empty()) {
      return Bad(source,
                 absl::StrCat("pool \"", pool.variant, "\": \"workers\" must list addresses"));
    }
    for (const json& w : p["workers"]) {
      if (!w.is_string() || w.get<std::string>().empty()) {
        return Bad(source, absl::StrCat("pool \"", pool.variant, "\": a worker is not an address"));
      }
      pool.workers.push_back(w.get<std::string>());
    }
    if (p.contains("launch")) {
      if (!p["launch"].is_array()) return Bad(source, "\"launch\" must be an array");
      for (const json& l : p["launch"]) {
        LaunchSpec spec;
        if (!l.is_object()) return Bad(source, "a launch entry must be an object");
        if (absl::Status s = get_string(l, "binary", &spec.binary); !s.ok()) return s;
        if (absl::Status s = get_string(l, "gpu", &spec.gpu); !s.ok()) return s;
        if (absl::Status s = get_string(l, "name", &spec.name); !s.ok()) return s;
        if (spec.binary.empty()) return Bad(source, "a launch entry has no \"binary\"");
        if (spec.binary.back() == '/') {  // its file name names the process when "name" is absent
          return Bad(source, absl::StrCat("launch binary \"", spec.binary,
                                          "\" names a folder, not a program"));
        }
        if (l.contains("args")) {
          if (!l["args"].is_array()) return Bad(source, "\"args\" must be an array of strings");
          for (const json& a : l["args"]) {
            if (!a.is_string()) return Bad(source, "\"args\" must be an array of strings");
            spec.args.push_back(a.get<std::string>());
          }
        }
        if (spec.name.empty()) spec.name = spec.binary.substr(spec.binary.find_last_of('/') + 1);
        if (absl::Status s = PlaceOnGpu(source, pool.variant, &spec); !s.ok()) return s;
        pool.launch.push_back(std::move(spec));
      }
    }
    config.pools.push_back(std::move(pool));
  }
  return config;
}

absl::StatusOr<RouterConfig> LoadRouterConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("router config ", path, " cannot be read"));
  std::stringstream text;
  text << in.rdbuf();
  return ParseRouterConfig(text.str(), path);
}

}  // namespace twinspan::router
