// SHA-256 digests as lowercase hex, computed with OpenSSL's libcrypto.
#ifndef TWINSPAN_COMMON_HASH_SHA256_H_
#define TWINSPAN_COMMON_HASH_SHA256_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace twinspan::hash {

// Returns the SHA-256 of `data` as 64 lowercase hex characters.
// Errors: Internal if libcrypto fails (out of memory, a FIPS provider refusing the digest).
absl::StatusOr<std::string> Sha256Hex(std::string_view data);

// Incremental SHA-256: Update() any number of times, then FinishHex() once.
// Not thread-safe: one instance per thread of use.
class Sha256 {
 public:
  // Errors: Internal if libcrypto cannot create or initialise a digest context.
  static absl::StatusOr<Sha256> Create();

  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  ~Sha256();

  // Errors: Internal from libcrypto; FailedPrecondition after FinishHex().
  absl::Status Update(std::string_view data);
  // Returns the digest as 64 lowercase hex characters. REQUIRES: called at most once.
  absl::StatusOr<std::string> FinishHex();

 private:
  struct Context;
  explicit Sha256(std::unique_ptr<Context> context);
  std::unique_ptr<Context> context_;
};

}  // namespace twinspan::hash

#endif  // TWINSPAN_COMMON_HASH_SHA256_H_
