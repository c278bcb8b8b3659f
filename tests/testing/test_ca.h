// A certificate authority made by a test (OpenSSL, EC P-256): a self-signed CA and leaf
// certificates for 127.0.0.1 / localhost, written as PEM files for the services' --tls-* flags.
#ifndef TWINSPAN_TESTS_TESTING_TEST_CA_H_
#define TWINSPAN_TESTS_TESTING_TEST_CA_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace twinspan::testing {

// The PEM files of one identity.
struct TestIdentity {
  std::string cert_file;
  std::string key_file;
};

// Not thread-safe.
class TestCa {
 public:
  // Makes a CA named `name` and writes its certificate to `dir`/`name`-ca.pem.
  static absl::StatusOr<std::unique_ptr<TestCa>> Create(const std::string& dir,
                                                        const std::string& name);
  ~TestCa();

  // The CA's certificate (the --tls-ca / --upstream-tls-ca of whoever trusts it).
  const std::string& cert_file() const { return cert_file_; }

  // Issues a leaf for 127.0.0.1 and localhost, usable by servers and clients, valid from
  // now + `not_before` to now + `not_after`; writes `dir`/`name`.pem and `dir`/`name`.key.
  absl::StatusOr<TestIdentity> Issue(const std::string& name,
                                     absl::Duration not_before = absl::Hours(-1),
                                     absl::Duration not_after = absl::Hours(24));

  struct Keys;

 private:
  TestCa(std::string dir, std::string name, std::unique_ptr<Keys> keys);
  std::string dir_, name_, cert_file_;
  std::unique_ptr<Keys> keys_;
  long serial_ = 1;
};

}  // namespace twinspan::testing

#endif  // TWINSPAN_TESTS_TESTING_TEST_CA_H_
