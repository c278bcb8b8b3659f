// Bearer-token authentication shared by every public front (gRPC, HTTP): the tokens of a file, read
// again when the file changes, and the check of an "authorization" value against them.
#ifndef TWINSPAN_COMMON_AUTH_BEARER_TOKEN_AUTH_H_
#define TWINSPAN_COMMON_AUTH_BEARER_TOKEN_AUTH_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace twinspan::auth {

struct BearerTokenOptions {
  // One token per line; blank lines and lines starting with '#' are skipped, so a rotation can
  // list the old and the new token for a while. Surrounding whitespace is not part of a token.
  std::string token_file;
  // How often Check() looks whether the file changed (inode, size, modification time); zero
  // looks on every call.
  absl::Duration reload_interval = absl::Seconds(1);
};

// The message of every refusal: the same whatever was wrong, so a caller learns nothing from it.
inline constexpr char kUnauthenticatedMessage[] = "authentication required";

// Thread-safe.
class BearerTokenAuth {
 public:
  // Reads the token file. InvalidArgument naming the file when it cannot be read, holds no token,
  // or a token has characters outside RFC 6750's token68 set.
  static absl::StatusOr<std::unique_ptr<BearerTokenAuth>> Open(const BearerTokenOptions& options);
  BearerTokenAuth(const BearerTokenAuth&) = delete;
  BearerTokenAuth& operator=(const BearerTokenAuth&) = delete;

  // OK when `authorization` (the header's value) is "Bearer <token>", the scheme in any case, for a
  // token of the file. Otherwise Unauthenticated with kUnauthenticatedMessage. The comparison takes
  // the same time for every presented token of any length. When the file changed it is read again
  // first; a file that became unreadable or empty keeps the previous tokens (logged as a warning).
  absl::Status Check(absl::string_view authorization);

  // The number of tokens now accepted (for logs and tests).
  int token_count() const;

 private:
  struct FileStamp {
    bool operator==(const FileStamp&) const = default;
    uint64_t device = 0, inode = 0;
    int64_t size = -1, mtime_ns = 0;
  };
  explicit BearerTokenAuth(const BearerTokenOptions& options) : options_(options) {}
  static FileStamp StampOf(const std::string& path);
  // Reads the file when its stamp differs from the last one read.
  void ReloadIfChanged() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const BearerTokenOptions options_;
  mutable absl::Mutex mu_;  // guards the token set while a reload swaps it
  std::vector<std::string> digests_ ABSL_GUARDED_BY(mu_);  // SHA-256 (hex) of each token
  FileStamp stamp_ ABSL_GUARDED_BY(mu_);
  absl::Time next_look_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace twinspan::auth

#endif  // TWINSPAN_COMMON_AUTH_BEARER_TOKEN_AUTH_H_
