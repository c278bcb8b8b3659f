#include "common/auth/bearer_token_auth.h"

#include <openssl/crypto.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/hash/sha256.h"
#include "spdlog/spdlog.h"

namespace twinspan::auth {
namespace {

// A token file is a few lines; anything larger is not one.
constexpr int64_t kMaxTokenFileBytes = 64 << 10;

// RFC 6750's b64token (token68): the characters a Bearer credential may have.
bool IsToken68(absl::string_view token) {
  size_t i = 0;
  for (; i < token.size(); ++i) {
    const char c = token[i];
    if (!absl::ascii_isalnum(c) && c != '-' && c != '.' && c != '_' && c != '~' && c != '+' &&
        c != '/') {
      break;
    }
  }
  if (i == 0) return false;
  for (; i < token.size(); ++i) {
    if (token[i] != '=') return false;
  }
  return true;
}

absl::StatusOr<std::vector<std::string>> ReadDigests(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(absl::StrCat("--auth-token-file ", path, ": cannot be read"));
  }
  std::stringstream text;
  text << in.rdbuf();
  if (text.str().size() > kMaxTokenFileBytes) {
    return absl::InvalidArgumentError(absl::StrCat("--auth-token-file ", path, ": larger than ",
                                                   kMaxTokenFileBytes,
                                                   " bytes; it should hold one token a line"));
  }
  std::vector<std::string> digests;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text.str(), '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    if (!IsToken68(line)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--auth-token-file ", path, ": line ", line_number,
          " is not a bearer token (letters, digits and -._~+/ with trailing '=' only)"));
    }
    absl::StatusOr<std::string> digest =
        hash::Sha256Hex(std::string_view(line.data(), line.size()));
    if (!digest.ok()) return digest.status();
    digests.push_back(*std::move(digest));
  }
  if (digests.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--auth-token-file ", path, ": holds no token (one a line; '#' starts a comment)"));
  }
  return digests;
}

}  // namespace

absl::StatusOr<std::unique_ptr<BearerTokenAuth>> BearerTokenAuth::Open(
    const BearerTokenOptions& options) {
  if (options.token_file.empty()) {
    return absl::InvalidArgumentError("--auth-token-file: no file named");
  }
  std::unique_ptr<BearerTokenAuth> auth(new BearerTokenAuth(options));
  absl::MutexLock lock(&auth->mu_);
  // The stamp before the read: a change in between is then seen by the next look.
  auth->stamp_ = StampOf(options.token_file);
  absl::StatusOr<std::vector<std::string>> digests = ReadDigests(options.token_file);
  if (!digests.ok()) return digests.status();
  auth->digests_ = *std::move(digests);
  auth->next_look_ = absl::Now() + options.reload_interval;
  return auth;
}

BearerTokenAuth::FileStamp BearerTokenAuth::StampOf(const std::string& path) {
  struct stat st;
  FileStamp stamp;
  if (::stat(path.c_str(), &st) == 0) {
    stamp.device = st.st_dev;
    stamp.inode = st.st_ino;
    stamp.size = st.st_size;
    stamp.mtime_ns = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  }
  return stamp;
}

void BearerTokenAuth::ReloadIfChanged() {
  const FileStamp stamp = StampOf(options_.token_file);
  if (stamp == stamp_) return;
  stamp_ = stamp;
  absl::StatusOr<std::vector<std::string>> digests = ReadDigests(options_.token_file);
  if (!digests.ok()) {
    spdlog::warn("auth: {}; keeping the {} tokens read before",
                 std::string(digests.status().message()), digests_.size());
    return;
  }
  digests_ = *std::move(digests);
  spdlog::info("auth: reloaded {}: {} bearer tokens", options_.token_file, digests_.size());
}

absl::Status BearerTokenAuth::Check(absl::string_view authorization) {
  // Hash first: the comparison below then sees 64 hex characters whatever was presented.
  absl::string_view credential = authorization;
  const bool bearer = absl::StartsWithIgnoreCase(credential, "bearer ");
  if (bearer) credential.remove_prefix(7);
  credential = absl::StripLeadingAsciiWhitespace(credential);
  absl::StatusOr<std::string> presented =
      hash::Sha256Hex(std::string_view(credential.data(), credential.size()));
  if (!presented.ok()) return absl::UnauthenticatedError(kUnauthenticatedMessage);

  absl::MutexLock lock(&mu_);
  const absl::Time now = absl::Now();
  if (now >= next_look_) {
    ReloadIfChanged();
    next_look_ = now + options_.reload_interval;
  }
  int differs_from_all = 1;
  for (const std::string& digest : digests_) {
    // CRYPTO_memcmp takes the same time wherever the first difference is; no early exit either.
    differs_from_all &= CRYPTO_memcmp(digest.data(), presented->data(), digest.size()) != 0;
  }
  if (!bearer || credential.empty() || differs_from_all) {
    return absl::UnauthenticatedError(kUnauthenticatedMessage);
  }
  return absl::OkStatus();
}

int BearerTokenAuth::token_count() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(digests_.size());
}

}  // namespace twinspan::auth
