// One HTTP/1.1 connection, plaintext or TLS, as a coroutine on the server's io_context: it reads
// each request's headers and body under timeouts without a thread, runs the gate on the headers,
// refuses an over-limit body unread, and hands the request to a handler thread of the pool.
#ifndef TWINSPAN_SERVICES_HTTP_HTTP_CONNECTION_H_
#define TWINSPAN_SERVICES_HTTP_HTTP_CONNECTION_H_

#include <memory>
#include <string>
#include <utility>  // before Boost 1.74's awaitable.hpp, which uses std::exchange without it

#include "boost/asio/awaitable.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/ssl/context.hpp"
#include "services/http/handler_pool.h"
#include "services/http/http_server.h"

namespace twinspan::http {

// What every connection of one server shares; outlives them.
struct ConnectionShared {
  HttpServerOptions options;
  HttpHandler handler;
  HttpGate gate;
  HandlerPool* pool = nullptr;
};

// Serves `socket` until the client leaves, a timeout passes or a reply closes it. `tls` null:
// plaintext. The socket's executor must be a strand: the coroutine and the handler's writes run
// on it.
boost::asio::awaitable<void> ServeConnection(boost::asio::ip::tcp::socket socket,
                                             std::shared_ptr<boost::asio::ssl::context> tls,
                                             const ConnectionShared* shared);

// The reply to a request refused before its handler, in the OpenAI error shape the API's other
// errors have, closing the connection.
std::string RefusalReply(int status, absl::string_view code, absl::string_view message,
                         bool retry_after);

}  // namespace twinspan::http

#endif  // TWINSPAN_SERVICES_HTTP_HTTP_CONNECTION_H_
