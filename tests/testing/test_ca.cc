#include "tests/testing/test_ca.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <utility>

#include "absl/strings/str_cat.h"

namespace twinspan::testing {
namespace {

struct OpenSslFree {
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
};
using Key = std::unique_ptr<EVP_PKEY, OpenSslFree>;
using Certificate = std::unique_ptr<X509, OpenSslFree>;

absl::Status OpenSslError(const std::string& what) {
  char text[256] = "";
  ERR_error_string_n(ERR_get_error(), text, sizeof(text));
  ERR_clear_error();
  return absl::InternalError(absl::StrCat("test CA: ", what, ": ", text));
}

absl::Status AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  std::unique_ptr<X509_EXTENSION, OpenSslFree> ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
  if (ext == nullptr || X509_add_ext(cert, ext.get(), -1) != 1) {
    return OpenSslError(absl::StrCat("extension ", value));
  }
  return absl::OkStatus();
}

// A certificate for `subject_key`, signed by `issuer_key` (self-signed when `issuer` is null).
absl::StatusOr<Certificate> MakeCertificate(const std::string& common_name, EVP_PKEY* subject_key,
                                            X509* issuer, EVP_PKEY* issuer_key, long serial,
                                            absl::Duration not_before, absl::Duration not_after,
                                            bool ca) {
  Certificate cert(X509_new());
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), absl::ToInt64Seconds(not_before));
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), absl::ToInt64Seconds(not_after));
  X509_set_pubkey(cert.get(), subject_key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                             0);
  X509* signer = issuer != nullptr ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  const std::pair<int, const char*> extensions[] = {
      {NID_basic_constraints, ca ? "critical,CA:TRUE" : "critical,CA:FALSE"},
      {NID_key_usage, ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature"},
      {NID_subject_key_identifier, "hash"},
      {NID_authority_key_identifier, "keyid:always"},
  };
  for (const auto& [nid, value] : extensions) {
    if (absl::Status s = AddExtension(cert.get(), signer, nid, value); !s.ok()) return s;
  }
  if (!ca) {
    for (const auto& [nid, value] :
         {std::pair<int, const char*>{NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost"},
          {NID_ext_key_usage, "serverAuth,clientAuth"}}) {
      if (absl::Status s = AddExtension(cert.get(), signer, nid, value); !s.ok()) return s;
    }
  }
  if (X509_sign(cert.get(), issuer_key, EVP_sha256()) == 0) return OpenSslError("sign");
  return cert;
}

absl::Status WritePem(const std::string& path, X509* cert, EVP_PKEY* key) {
  std::unique_ptr<BIO, OpenSslFree> bio(BIO_new_file(path.c_str(), "w"));
  if (bio == nullptr) return OpenSslError(absl::StrCat("cannot write ", path));
  const int ok = cert != nullptr ? PEM_write_bio_X509(bio.get(), cert)
                                 : PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0,
                                                            nullptr, nullptr);
  if (ok != 1) return OpenSslError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

}  // namespace

struct TestCa::Keys {
  Key key;
  Certificate cert;
};

TestCa::TestCa(std::string dir, std::string name, std::unique_ptr<Keys> keys)
    : dir_(std::move(dir)), name_(std::move(name)), keys_(std::move(keys)) {
  cert_file_ = absl::StrCat(dir_, "/", name_, "-ca.pem");
}

TestCa::~TestCa() = default;

absl::StatusOr<std::unique_ptr<TestCa>> TestCa::Create(const std::string& dir,
                                                       const std::string& name) {
  auto keys = std::make_unique<Keys>();
  keys->key.reset(EVP_EC_gen("P-256"));
  if (keys->key == nullptr) return OpenSslError("EC key");
  absl::StatusOr<Certificate> cert =
      MakeCertificate(name + " CA", keys->key.get(), nullptr, keys->key.get(), 1, absl::Hours(-1),
                      absl::Hours(48), /*ca=*/true);
  if (!cert.ok()) return cert.status();
  keys->cert = *std::move(cert);
  std::unique_ptr<TestCa> ca(new TestCa(dir, name, std::move(keys)));
  if (absl::Status s = WritePem(ca->cert_file_, ca->keys_->cert.get(), nullptr); !s.ok()) {
    return s;
  }
  return ca;
}

absl::StatusOr<TestIdentity> TestCa::Issue(const std::string& name, absl::Duration not_before,
                                           absl::Duration not_after) {
  Key key(EVP_EC_gen("P-256"));
  if (key == nullptr) return OpenSslError("EC key");
  absl::StatusOr<Certificate> cert =
      MakeCertificate(name, key.get(), keys_->cert.get(), keys_->key.get(), ++serial_, not_before,
                      not_after, /*ca=*/false);
  if (!cert.ok()) return cert.status();
  TestIdentity identity{absl::StrCat(dir_, "/", name, ".pem"),
                        absl::StrCat(dir_, "/", name, ".key")};
  if (absl::Status s = WritePem(identity.cert_file, cert->get(), nullptr); !s.ok()) return s;
  if (absl::Status s = WritePem(identity.key_file, nullptr, key.get()); !s.ok()) return s;
  return identity;
}

}  // namespace twinspan::testing
