#include "services/structured/vocab_trie.h"

#include <algorithm>
#include <utility>

namespace twinspan::structured {

VocabTrie::VocabTrie(const std::vector<std::optional<std::string>>& token_bytes)
    : vocab_size_(static_cast<int>(token_bytes.size())), nodes_(1), bytes_(token_bytes) {
  for (size_t id = 0; id < token_bytes.size(); ++id) {
    if (!token_bytes[id].has_value() || token_bytes[id]->empty()) {
      bytes_[id].reset();
      continue;
    }
    int32_t node = 0;
    for (char c : *token_bytes[id]) {
      const auto byte = static_cast<uint8_t>(c);
      auto& children = nodes_[node].children;
      auto it = std::find_if(children.begin(), children.end(),
                             [byte](const auto& child) { return child.first == byte; });
      if (it != children.end()) {
        node = it->second;
        continue;
      }
      const auto next = static_cast<int32_t>(nodes_.size());
      children.emplace_back(byte, next);
      nodes_.emplace_back();  // invalidates `children`
      nodes_.back().byte = byte;
      node = next;
    }
    nodes_[node].ids.push_back(static_cast<uint32_t>(id));
  }
}

std::optional<std::string_view> VocabTrie::bytes(uint32_t id) const {
  if (id >= bytes_.size() || !bytes_[id].has_value()) return std::nullopt;
  return std::string_view(*bytes_[id]);
}

absl::Status VocabTrie::Walk(const std::function<absl::StatusOr<bool>(std::string_view)>& viable,
                             engine::TokenMask* mask) const {
  // Depth-first; path holds the bytes from the root to the node on top of the stack.
  struct Frame {
    int32_t node;
    size_t depth;
  };
  std::vector<Frame> stack;
  for (const auto& child : nodes_[0].children) stack.push_back({child.second, 0});
  std::string path;
  while (!stack.empty()) {
    const Frame frame = stack.back();
    stack.pop_back();
    path.resize(frame.depth);
    path.push_back(static_cast<char>(nodes_[frame.node].byte));
    absl::StatusOr<bool> ok = viable(path);
    if (!ok.ok()) return ok.status();
    if (!*ok) continue;
    const Node& node = nodes_[frame.node];
    for (uint32_t id : node.ids) mask->Allow(id);
    for (const auto& child : node.children) stack.push_back({child.second, frame.depth + 1});
  }
  return absl::OkStatus();
}

}  // namespace twinspan::structured
