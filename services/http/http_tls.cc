#include "services/http/http_tls.h"

#include <openssl/ssl.h>

#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "boost/asio/buffer.hpp"
#include "spdlog/spdlog.h"

namespace twinspan::http {
namespace {

namespace ssl = boost::asio::ssl;

absl::StatusOr<std::string> ReadFile(const std::string& path, const char* flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in.is_open()) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " ", path, ": cannot be opened"));
  }
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpTlsContext>> HttpTlsContext::Open(
    const security::ServerTlsFiles& files) {
  auto context = std::unique_ptr<HttpTlsContext>(new HttpTlsContext(files));
  absl::StatusOr<Contents> contents = context->Read();
  if (!contents.ok()) return contents.status();
  absl::StatusOr<std::shared_ptr<ssl::context>> made = context->Make(*contents);
  if (!made.ok()) return made.status();
  absl::MutexLock lock(&context->mu_);
  context->loaded_ = *std::move(contents);
  context->current_ = *std::move(made);
  return context;
}

std::shared_ptr<ssl::context> HttpTlsContext::Current() const {
  absl::MutexLock lock(&mu_);
  return current_;
}

void HttpTlsContext::Reload() {
  absl::StatusOr<Contents> contents = Read();
  if (!contents.ok()) {
    spdlog::warn("http: TLS files not reloaded, keeping the last good ones: {}",
                 contents.status().ToString());
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    if (*contents == loaded_) return;
  }
  absl::StatusOr<std::shared_ptr<ssl::context>> made = Make(*contents);
  if (!made.ok()) {
    spdlog::warn("http: TLS files changed but not usable, keeping the last good ones: {}",
                 made.status().ToString());
    return;
  }
  absl::MutexLock lock(&mu_);
  loaded_ = *std::move(contents);
  current_ = *std::move(made);
  spdlog::info("http: TLS certificate reloaded from {}", files_.cert_file);
}

absl::StatusOr<HttpTlsContext::Contents> HttpTlsContext::Read() const {
  Contents contents;
  absl::StatusOr<std::string> cert = ReadFile(files_.cert_file, "--tls-cert");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadFile(files_.key_file, "--tls-key");
  if (!key.ok()) return key.status();
  contents.cert = *std::move(cert);
  contents.key = *std::move(key);
  if (!files_.client_ca_file.empty()) {
    absl::StatusOr<std::string> ca = ReadFile(files_.client_ca_file, "--tls-ca");
    if (!ca.ok()) return ca.status();
    contents.ca = *std::move(ca);
  }
  return contents;
}

absl::StatusOr<std::shared_ptr<ssl::context>> HttpTlsContext::Make(const Contents& contents) const {
  auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
  boost::system::error_code ec;
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                           ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                           ssl::context::no_tlsv1_1 | ssl::context::single_dh_use,
                       ec);
  context->use_certificate_chain(boost::asio::buffer(contents.cert), ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-cert ", files_.cert_file, ": ", ec.message()));
  }
  context->use_private_key(boost::asio::buffer(contents.key), ssl::context::pem, ec);
  if (ec || SSL_CTX_check_private_key(context->native_handle()) != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tls-key ", files_.key_file, ": not the key of --tls-cert ", files_.cert_file));
  }
  if (!files_.client_ca_file.empty()) {
    context->add_certificate_authority(boost::asio::buffer(contents.ca), ec);
    if (ec) {
      return absl::InvalidArgumentError(
          absl::StrCat("--tls-ca ", files_.client_ca_file, ": ", ec.message()));
    }
    context->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert, ec);
    // OpenSSL refuses resumed sessions of verified clients without a session id context.
    static constexpr unsigned char kSessionContext[] = "twinspan-http";
    SSL_CTX_set_session_id_context(context->native_handle(), kSessionContext,
                                   sizeof(kSessionContext) - 1);
  }
  return context;
}

}  // namespace twinspan::http
