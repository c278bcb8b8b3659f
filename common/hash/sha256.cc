#include "common/hash/sha256.h"

#include <openssl/evp.h>

#include <utility>

#include "common/status.h"

namespace twinspan::hash {
namespace {

std::string ToHex(const unsigned char* digest, unsigned int length) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex(2 * length, '0');
  for (unsigned int i = 0; i < length; ++i) {
    hex[2 * i] = kDigits[digest[i] >> 4];
    hex[2 * i + 1] = kDigits[digest[i] & 15];
  }
  return hex;
}

}  // namespace

struct Sha256::Context {
  EVP_MD_CTX* ctx = nullptr;
  bool finished = false;
  ~Context() { EVP_MD_CTX_free(ctx); }
};

Sha256::Sha256(std::unique_ptr<Context> context) : context_(std::move(context)) {}
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;
Sha256::~Sha256() = default;

absl::StatusOr<Sha256> Sha256::Create() {
  auto context = std::make_unique<Context>();
  context->ctx = EVP_MD_CTX_new();
  if (context->ctx == nullptr || EVP_DigestInit_ex(context->ctx, EVP_sha256(), nullptr) != 1) {
    return absl::InternalError("sha256: libcrypto could not initialise a SHA-256 context");
  }
  return Sha256(std::move(context));
}

absl::Status Sha256::Update(std::string_view data) {
  if (context_->finished) return absl::FailedPreconditionError("sha256: Update after FinishHex");
  if (EVP_DigestUpdate(context_->ctx, data.data(), data.size()) != 1) {
    return absl::InternalError("sha256: libcrypto EVP_DigestUpdate failed");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Sha256::FinishHex() {
  if (context_->finished) return absl::FailedPreconditionError("sha256: FinishHex called twice");
  context_->finished = true;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(context_->ctx, digest, &length) != 1) {
    return absl::InternalError("sha256: libcrypto EVP_DigestFinal_ex failed");
  }
  return ToHex(digest, length);
}

absl::StatusOr<std::string> Sha256Hex(std::string_view data) {
  ABSL_ASSIGN_OR_RETURN(Sha256 hasher, Sha256::Create());
  ABSL_RETURN_IF_ERROR(hasher.Update(data));
  return hasher.FinishHex();
}

}  // namespace twinspan::hash
