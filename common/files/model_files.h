// The files of an HF model folder besides its weights: config.json read and written with its keys
// in order (as exllamav3 and transformers write it, 4-space indent), and the tokenizer, generation
// and chat template files that travel with a converted checkpoint.
#ifndef TWINSPAN_COMMON_FILES_MODEL_FILES_H_
#define TWINSPAN_COMMON_FILES_MODEL_FILES_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace twinspan::files {

// Copies tokenizer.json, tokenizer_config.json, generation_config.json, special_tokens_map.json
// and any chat_template* file from `from` to `to` when present. Internal naming a failed copy.
absl::Status CopyModelFiles(const std::string& from, const std::string& to);

// Writes `value` to `path` as exllamav3 does (4-space indent). Internal naming the path.
absl::Status WriteJson(const std::string& path, const nlohmann::ordered_json& value);

// `dir`/config.json as ordered JSON (keys in the file's order). NotFound / InvalidArgument naming
// the file.
absl::StatusOr<nlohmann::ordered_json> ReadConfigJson(const std::string& dir);

}  // namespace twinspan::files

#endif  // TWINSPAN_COMMON_FILES_MODEL_FILES_H_
