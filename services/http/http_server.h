// An HTTP/1.1 server, plaintext or HTTPS, on Boost.Beast over Asio: a few threads read every
// connection's requests without blocking, so an idle or slow client costs a socket, not a thread;
// a pool of threads runs the (blocking) handlers, one exchange per request, with replies whole or
// streamed in chunks (server-sent events).
#ifndef TWINSPAN_SERVICES_HTTP_HTTP_SERVER_H_
#define TWINSPAN_SERVICES_HTTP_HTTP_SERVER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "services/security/tls_files.h"

namespace twinspan::http {

struct HttpServerOptions {
  std::string listen = "127.0.0.1:0";  // host:port; port 0 picks a free one
  // Requests served at once (handler threads); a streamed completion holds one. One more is
  // refused with 503 and Retry-After.
  int threads = 32;
  // Connections open at once, idle ones included; one more is refused and closed.
  int max_connections = 4096;
  int io_threads = 2;                 // threads reading requests and writing replies
  int64_t max_body_bytes = 64 << 20;  // larger bodies get 413 without being read
  // From the connection (or a kept-alive request's first byte) to the end of the headers.
  absl::Duration header_timeout = absl::Seconds(10);
  absl::Duration body_timeout = absl::Seconds(60);   // the whole body
  absl::Duration idle_timeout = absl::Seconds(60);   // between requests on a kept-alive connection
  absl::Duration write_timeout = absl::Seconds(30);  // one write to a client that stopped reading
  // Paths whose bodiless requests the handler answers on the reading thread, without a handler
  // thread, so they are answered while every one is busy (a liveness probe's /health). Their
  // handler must not block.
  std::vector<std::string> inline_paths;
  // enabled(): HTTPS, with client certificates when client_ca_file is set; the files are read
  // again every reload_interval.
  security::ServerTlsFiles tls;
};

// One request and its reply, on the server's thread; not thread-safe.
class HttpExchange {
 public:
  virtual ~HttpExchange() = default;
  virtual absl::string_view method() const = 0;
  virtual absl::string_view path() const = 0;  // without the query string
  // The value of header `name` (any case), empty when absent.
  virtual absl::string_view header(absl::string_view name) const = 0;
  virtual const std::string& body() const = 0;
  // A header for the reply that Reply or StartStream starts next.
  virtual void AddHeader(absl::string_view name, absl::string_view value) = 0;
  // The whole reply. False when the client is gone.
  virtual bool Reply(int status, absl::string_view content_type, absl::string_view body) = 0;
  // Starts a chunked reply; Send writes one chunk, End the last. False when the client is gone.
  virtual bool StartStream(int status, absl::string_view content_type) = 0;
  virtual bool Send(absl::string_view data) = 0;
  virtual void End() = 0;
};

using HttpHandler = std::function<void(HttpExchange&)>;
// Runs on the headers before the body is read (an empty body()): true lets the request on to the
// handler; false after replying ends it there, its body unread and its connection closed.
using HttpGate = std::function<bool(HttpExchange&)>;

// Owns the listener; stops it (waiting for handlers to return) on destruction.
class HttpServer {
 public:
  // Serves every request that `gate` (when set, on a reading thread: it must not block) lets on
  // with `handler` (which must reply) on options.threads threads; a body over max_body_bytes is
  // refused with 413 before the handler runs, unread when its Content-Length says so.
  // Unavailable naming the address when it cannot be bound; InvalidArgument for options out of
  // range or TLS files that do not load.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(const HttpServerOptions& options,
                                                           HttpHandler handler,
                                                           HttpGate gate = nullptr);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }

 private:
  struct Impl;
  HttpServer(std::unique_ptr<Impl> impl, int port);
  std::unique_ptr<Impl> impl_;
  int port_;
};

}  // namespace twinspan::http

#endif  // TWINSPAN_SERVICES_HTTP_HTTP_SERVER_H_
