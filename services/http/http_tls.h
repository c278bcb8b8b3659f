// The HTTP port's TLS context from the gRPC port's files (--tls-cert, --tls-key, and --tls-ca to
// require client certificates), read again every reload interval as gRPC's certificate watcher
// does, so a rotated certificate serves new connections without a restart.
#ifndef TWINSPAN_SERVICES_HTTP_HTTP_TLS_H_
#define TWINSPAN_SERVICES_HTTP_HTTP_TLS_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "boost/asio/ssl/context.hpp"
#include "services/security/tls_files.h"

namespace twinspan::http {

// Thread-safe.
class HttpTlsContext {
 public:
  // InvalidArgument naming the file when the files do not make a context.
  // REQUIRES: files.enabled().
  static absl::StatusOr<std::unique_ptr<HttpTlsContext>> Open(
      const security::ServerTlsFiles& files);

  // The context a new connection handshakes with; it lives as long as the connection holds it.
  std::shared_ptr<boost::asio::ssl::context> Current() const;
  // Reads the files again and swaps the context when they changed; a file that does not make a
  // context is logged and the last good one kept (gRPC's watcher does the same).
  void Reload();
  const security::ServerTlsFiles& files() const { return files_; }

 private:
  struct Contents {
    std::string cert, key, ca;
    bool operator==(const Contents&) const = default;
  };
  explicit HttpTlsContext(security::ServerTlsFiles files) : files_(std::move(files)) {}
  absl::StatusOr<Contents> Read() const;
  absl::StatusOr<std::shared_ptr<boost::asio::ssl::context>> Make(const Contents& contents) const;

  const security::ServerTlsFiles files_;
  mutable absl::Mutex mu_;
  Contents loaded_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<boost::asio::ssl::context> current_ ABSL_GUARDED_BY(mu_);
};

}  // namespace twinspan::http

#endif  // TWINSPAN_SERVICES_HTTP_HTTP_TLS_H_
