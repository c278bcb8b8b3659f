#include "services/http/http_server.h"

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "boost/asio/co_spawn.hpp"
#include "boost/asio/detached.hpp"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/redirect_error.hpp"
#include "boost/asio/steady_timer.hpp"
#include "boost/asio/strand.hpp"
#include "boost/asio/use_awaitable.hpp"
#include "services/http/handler_pool.h"
#include "services/http/http_connection.h"
#include "services/http/http_tls.h"
#include "spdlog/spdlog.h"

namespace twinspan::http {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

// "host:port", "[v6]:port" or ":port"; a host name is resolved, the first address taken.
absl::StatusOr<tcp::endpoint> ParseListen(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(listen.substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("http: listen address ", listen, " is not HOST:PORT"));
  }
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) host = "0.0.0.0";
  error_code ec;
  const asio::ip::address address = asio::ip::make_address(host, ec);
  if (!ec) return tcp::endpoint(address, static_cast<uint16_t>(port));
  asio::io_context io;
  tcp::resolver resolver(io);
  const auto results = resolver.resolve(host, std::to_string(port), ec);
  if (ec || results.empty()) {
    return absl::UnavailableError(absl::StrCat("http: cannot resolve ", host, ": ", ec.message()));
  }
  return results.begin()->endpoint();
}

// The refusal of a connection over the limit: written once without waiting (a fresh socket's
// buffer takes it) and closed; a TLS client, which would need a handshake first, is only closed.
void RefuseConnection(tcp::socket& socket, bool tls, int limit) {
  error_code ec;
  socket.non_blocking(true, ec);
  if (!tls) {
    char discard[4096];
    while (socket.available(ec) > 0 && !ec) socket.read_some(asio::buffer(discard), ec);
    const std::string reply =
        RefusalReply(503, "UNAVAILABLE",
                     absl::StrCat("the server holds its limit of ", limit,
                                  " connections (--http-max-connections); retry shortly"),
                     true);
    socket.write_some(asio::buffer(reply), ec);
  }
  socket.shutdown(tcp::socket::shutdown_both, ec);
  socket.close(ec);
}

}  // namespace

struct HttpServer::Impl {
  ConnectionShared shared;
  std::unique_ptr<HandlerPool> pool;
  std::unique_ptr<HttpTlsContext> tls;
  std::atomic<int> connections{0};
  std::atomic<int64_t> refused_connections{0};
  // Destroyed before the members above: the connections' coroutines go with it.
  asio::io_context io;
  tcp::acceptor acceptor{io};
  asio::steady_timer reload{io};
  std::vector<std::thread> io_threads;

  explicit Impl(int io_threads) : io(io_threads) {}

  // Counts a connection for as long as its coroutine lives.
  struct Counted {
    std::atomic<int>* count;
    explicit Counted(std::atomic<int>* c) : count(c) { count->fetch_add(1); }
    Counted(Counted&& other) noexcept : count(std::exchange(other.count, nullptr)) {}
    ~Counted() {
      if (count != nullptr) count->fetch_sub(1);
    }
  };

  static asio::awaitable<void> Serve(tcp::socket socket, std::shared_ptr<asio::ssl::context> tls,
                                     const ConnectionShared* shared,
                                     [[maybe_unused]] Counted counted) {
    co_await ServeConnection(std::move(socket), std::move(tls), shared);
  }

  asio::awaitable<void> Accept() {
    const int limit = shared.options.max_connections;
    while (true) {
      tcp::socket socket(asio::make_strand(io));
      error_code ec;
      co_await acceptor.async_accept(socket, asio::redirect_error(asio::use_awaitable, ec));
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
      if (ec) {
        // Out of descriptors, most likely: wait for connections to close rather than spin.
        spdlog::warn("http: accept failed: {}", ec.message());
        asio::steady_timer pause(io, std::chrono::milliseconds(100));
        co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        continue;
      }
      if (connections.load() >= limit) {
        if (refused_connections.fetch_add(1) % 1000 == 0) {
          spdlog::warn("http: refused a connection over --http-max-connections {} ({} so far)",
                       limit, refused_connections.load());
        }
        RefuseConnection(socket, tls != nullptr, limit);
        continue;
      }
      socket.set_option(tcp::no_delay(true), ec);
      const auto executor = socket.get_executor();
      asio::co_spawn(executor,
                     Serve(std::move(socket), tls != nullptr ? tls->Current() : nullptr, &shared,
                           Counted(&connections)),
                     [](std::exception_ptr e) {
                       if (e == nullptr) return;
                       try {
                         std::rethrow_exception(e);
                       } catch (const std::exception& x) {
                         spdlog::warn("http: connection ended by {}", x.what());
                       }
                     });
    }
  }

  asio::awaitable<void> ReloadTls() {
    while (true) {
      reload.expires_after(absl::ToChronoNanoseconds(
          std::max(absl::Seconds(1), shared.options.tls.reload_interval)));
      error_code ec;
      co_await reload.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      if (ec) co_return;
      tls->Reload();
    }
  }
};

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpServerOptions& options,
                                                              HttpHandler handler, HttpGate gate) {
  if (options.threads < 1 || options.threads > 4096 || options.max_connections < 1 ||
      options.io_threads < 1 || options.max_body_bytes < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("http: threads ", options.threads, " must be in [1, 4096], connections ",
                     options.max_connections, " and io threads ", options.io_threads,
                     " at least 1, and the body limit positive"));
  }
  absl::StatusOr<tcp::endpoint> endpoint = ParseListen(options.listen);
  if (!endpoint.ok()) return endpoint.status();
  auto impl = std::make_unique<Impl>(options.io_threads);
  if (options.tls.enabled()) {
    absl::StatusOr<std::unique_ptr<HttpTlsContext>> tls = HttpTlsContext::Open(options.tls);
    if (!tls.ok()) return tls.status();
    impl->tls = *std::move(tls);
  }
  error_code ec;
  impl->acceptor.open(endpoint->protocol(), ec);
  if (!ec) impl->acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(*endpoint, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("http: cannot listen on ", options.listen, ": ", ec.message()));
  }
  const int port = impl->acceptor.local_endpoint(ec).port();
  impl->pool = std::make_unique<HandlerPool>(options.threads);
  impl->shared = ConnectionShared{options, std::move(handler), std::move(gate), impl->pool.get()};
  Impl* raw = impl.get();
  asio::co_spawn(raw->io, raw->Accept(), asio::detached);
  if (raw->tls != nullptr) asio::co_spawn(raw->io, raw->ReloadTls(), asio::detached);
  for (int i = 0; i < options.io_threads; ++i) {
    raw->io_threads.emplace_back([raw] { raw->io.run(); });
  }
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl), port));
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl, int port)
    : impl_(std::move(impl)), port_(port) {}

HttpServer::~HttpServer() {
  // No new connections; the handlers running finish (their writes need the io threads), then the
  // io threads stop and the open connections close with the io_context.
  asio::post(impl_->io, [impl = impl_.get()] {
    error_code ec;
    impl->acceptor.close(ec);
    impl->reload.cancel();
  });
  impl_->pool->Drain();
  impl_->io.stop();
  for (std::thread& thread : impl_->io_threads) thread.join();
}

}  // namespace twinspan::http
