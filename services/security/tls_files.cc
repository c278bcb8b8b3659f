#include "services/security/tls_files.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"

namespace twinspan::security {
namespace {

struct OpenSslFree {
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
using Certificate = std::unique_ptr<X509, OpenSslFree>;

absl::Status Bad(const char* flag, const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(flag, " ", path, ": ", what));
}

absl::Status ReadCertificates(const char* flag, const std::string& path,
                              std::vector<Certificate>* out) {
  std::unique_ptr<BIO, OpenSslFree> bio(BIO_new_file(path.c_str(), "r"));
  if (bio == nullptr) {
    ERR_clear_error();
    return Bad(flag, path, "cannot be read");
  }
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    out->emplace_back(cert);
  }
  ERR_clear_error();  // the read past the last certificate leaves an error behind
  if (out->empty()) {
    return Bad(flag, path, "holds no PEM certificate (\"-----BEGIN CERTIFICATE-----\")");
  }
  return absl::OkStatus();
}

// The certificate chain and key of one identity: they parse, match, and the leaf is valid now.
absl::Status CheckIdentity(const char* cert_flag, const std::string& cert_path,
                           const char* key_flag, const std::string& key_path) {
  if (cert_path.empty() != key_path.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(cert_flag, " and ", key_flag, " go together: give both or neither"));
  }
  if (cert_path.empty()) return absl::OkStatus();
  std::vector<Certificate> chain;
  if (absl::Status s = ReadCertificates(cert_flag, cert_path, &chain); !s.ok()) return s;
  std::unique_ptr<BIO, OpenSslFree> bio(BIO_new_file(key_path.c_str(), "r"));
  if (bio == nullptr) {
    ERR_clear_error();
    return Bad(key_flag, key_path, "cannot be read");
  }
  std::unique_ptr<EVP_PKEY, OpenSslFree> key(
      PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (key == nullptr) {
    return Bad(key_flag, key_path,
               "holds no unencrypted PEM private key (\"-----BEGIN PRIVATE KEY-----\")");
  }
  X509* leaf = chain.front().get();
  if (X509_check_private_key(leaf, key.get()) != 1) {
    ERR_clear_error();
    return Bad(key_flag, key_path,
               absl::StrCat("is not the key of the certificate in ", cert_flag, " ", cert_path,
                            " (its first certificate must be the leaf of this key)"));
  }
  if (X509_cmp_current_time(X509_get0_notAfter(leaf)) <= 0) {
    return Bad(cert_flag, cert_path, "the certificate has expired; issue a new one");
  }
  if (X509_cmp_current_time(X509_get0_notBefore(leaf)) >= 0) {
    return Bad(cert_flag, cert_path,
               "the certificate is not valid yet (its notBefore is in the future; check the "
               "clock)");
  }
  return absl::OkStatus();
}

absl::Status CheckBundle(const char* flag, const std::string& path) {
  if (path.empty()) return absl::OkStatus();
  std::vector<Certificate> bundle;
  return ReadCertificates(flag, path, &bundle);
}

absl::Status CheckInterval(absl::Duration interval) {
  if (interval < absl::Seconds(1)) {
    return absl::InvalidArgumentError("--tls-reload-seconds must be at least 1");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckServerTlsFiles(const ServerTlsFiles& files) {
  if (!files.enabled()) {
    if (!files.client_ca_file.empty()) {
      return absl::InvalidArgumentError(
          "--tls-ca needs --tls-cert and --tls-key: client certificates are checked only on a "
          "TLS port");
    }
    return absl::OkStatus();
  }
  if (absl::Status s = CheckInterval(files.reload_interval); !s.ok()) return s;
  if (absl::Status s = CheckIdentity("--tls-cert", files.cert_file, "--tls-key", files.key_file);
      !s.ok()) {
    return s;
  }
  return CheckBundle("--tls-ca", files.client_ca_file);
}

absl::Status CheckClientTlsFiles(const ClientTlsFiles& files) {
  if (!files.enabled()) {
    if (!files.server_name.empty()) {
      return absl::InvalidArgumentError(
          "--upstream-tls-server-name needs --upstream-tls-ca (or --upstream-tls-cert): the name "
          "is checked only over TLS");
    }
    return absl::OkStatus();
  }
  if (absl::Status s = CheckInterval(files.reload_interval); !s.ok()) return s;
  if (absl::Status s = CheckIdentity("--upstream-tls-cert", files.cert_file, "--upstream-tls-key",
                                     files.key_file);
      !s.ok()) {
    return s;
  }
  return CheckBundle("--upstream-tls-ca", files.ca_file);
}

}  // namespace twinspan::security
