#include "services/http/http_connection.h"

#include <atomic>
#include <future>
#include <limits>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "boost/asio/post.hpp"
#include "boost/asio/redirect_error.hpp"
#include "boost/asio/steady_timer.hpp"
#include "boost/asio/use_awaitable.hpp"
#include "boost/asio/write.hpp"
#include "boost/beast/core/flat_buffer.hpp"
#include "boost/beast/core/tcp_stream.hpp"
#include "boost/beast/http/empty_body.hpp"
#include "boost/beast/http/error.hpp"
#include "boost/beast/http/parser.hpp"
#include "boost/beast/http/read.hpp"
#include "boost/beast/ssl/ssl_stream.hpp"
#include "nlohmann/json.hpp"
#include "services/http/http_exchange.h"
#include "spdlog/spdlog.h"

namespace twinspan::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using boost::system::error_code;

constexpr uint32_t kHeaderLimit = 64 << 10;        // request line and headers together
constexpr size_t kReadSize = 16 << 10;             // a read for the next request's first bytes
constexpr auto kLinger = std::chrono::seconds(2);  // reading a refused body before the close

std::chrono::steady_clock::duration Chrono(absl::Duration d) {
  return absl::ToChronoNanoseconds(d);
}

template <class Stream>
class Connection : public ReplySink {
 public:
  Connection(Stream& stream, const ConnectionShared& shared) : stream_(stream), shared_(shared) {}

  // Serves requests until one ends the connection, then closes it (after the refusal, if any).
  asio::awaitable<void> Run() {
    const std::string refusal = co_await ServeRequests();
    bool written = false;
    if (!refusal.empty()) written = co_await WriteNow(refusal);
    co_await Close(/*linger=*/written);
  }

  // A handler thread's write: the coroutine waits on the handler meanwhile, so the stream is
  // free; the write runs on the connection's strand under the write timeout.
  bool Write(std::string bytes) override {
    if (failed_) return false;
    std::promise<bool> written;
    asio::post(stream_.get_executor(), [this, &bytes, &written] {
      tcp().expires_after(Chrono(shared_.options.write_timeout));
      asio::async_write(stream_, asio::buffer(bytes), [this, &written](error_code ec, size_t) {
        tcp().expires_never();
        written.set_value(!ec);
      });
    });
    failed_ = !written.get_future().get();
    return !failed_;
  }

 private:
  static absl::string_view View(beast::string_view s) { return {s.data(), s.size()}; }
  static auto Redirect(error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }
  beast::tcp_stream& tcp() { return beast::get_lowest_layer(stream_); }

  // The requests of the connection in turn; returns the refusal that ends it, empty when it ends
  // without one (the client left, a timeout, a reply that closes).
  asio::awaitable<std::string> ServeRequests() {
    const HttpServerOptions& options = shared_.options;
    error_code ec;
    for (bool first = true;; first = false) {
      // A kept-alive connection waits for its next request under the idle timeout; the headers
      // then have their own.
      if (!first && buffer_.size() == 0) {
        tcp().expires_after(Chrono(options.idle_timeout));
        const size_t n = co_await stream_.async_read_some(buffer_.prepare(kReadSize), Redirect(ec));
        if (ec) co_return std::string();
        buffer_.commit(n);
      }
      tcp().expires_after(Chrono(options.header_timeout));
      bhttp::request_parser<bhttp::empty_body> head;
      head.header_limit(kHeaderLimit);
      // The limit is checked below, with its own reply (boost::none would refuse every length:
      // Beast 1.74 compares the length with the empty optional).
      head.body_limit(std::numeric_limits<uint64_t>::max());
      co_await bhttp::async_read_header(stream_, buffer_, head, Redirect(ec));
      tcp().expires_never();
      if (ec == bhttp::error::header_limit) {
        co_return RefusalReply(
            431, "INVALID_ARGUMENT",
            absl::StrCat("the request headers are over ", kHeaderLimit, " bytes"), false);
      }
      if (ec) {
        const bool malformed =
            ec.category() == bhttp::make_error_code(bhttp::error::bad_method).category() &&
            ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message;
        if (!malformed) co_return std::string();
        co_return RefusalReply(400, "INVALID_ARGUMENT",
                               absl::StrCat("malformed HTTP request: ", ec.message()), false);
      }
      if (shared_.gate) {
        BufferSink refusal;
        BeastExchange headers_only(BeastRequest(head.get().base()), &refusal, /*closes=*/true);
        if (!shared_.gate(headers_only)) {
          headers_only.Finish();
          co_return std::move(refusal.bytes());
        }
      }
      const int64_t limit = options.max_body_bytes;
      if (head.content_length() && *head.content_length() > static_cast<uint64_t>(limit)) {
        co_return TooLarge();
      }
      if (Inline(head)) {
        BufferSink reply;
        BeastExchange exchange(BeastRequest(head.get().base()), &reply, /*closes=*/false);
        shared_.handler(exchange);
        exchange.Finish();
        if (!co_await WriteNow(reply.bytes()) || !exchange.reusable()) co_return std::string();
        continue;
      }
      if (!shared_.pool->Reserve()) {
        co_return RefusalReply(503, "UNAVAILABLE",
                               absl::StrCat("all ", options.threads,
                                            " request threads are busy (--http-threads); retry "
                                            "shortly"),
                               true);
      }
      bool continued = true;
      if (absl::EqualsIgnoreCase(View(head.get()[bhttp::field::expect]), "100-continue")) {
        continued = co_await WriteNow("HTTP/1.1 100 Continue\r\n\r\n");
      }
      if (!continued) {
        shared_.pool->Release();
        co_return std::string();
      }
      bhttp::request_parser<bhttp::string_body> parser(std::move(head));
      parser.body_limit(static_cast<uint64_t>(limit));  // a chunked body is cut here
      tcp().expires_after(Chrono(options.body_timeout));
      co_await bhttp::async_read(stream_, buffer_, parser, Redirect(ec));
      tcp().expires_never();
      if (ec) {
        shared_.pool->Release();
        co_return ec == bhttp::error::body_limit ? TooLarge() : std::string();
      }
      const bool reusable = co_await Handle(parser.release());
      if (!reusable) co_return std::string();
    }
  }

  // A bodiless request to one of options.inline_paths.
  bool Inline(const bhttp::request_parser<bhttp::empty_body>& head) const {
    if (head.chunked() || head.content_length().value_or(0) != 0) return false;
    const beast::string_view target = head.get().target();
    const absl::string_view path = View(target.substr(0, target.find('?')));
    for (const std::string& p : shared_.options.inline_paths) {
      if (p == path) return true;
    }
    return false;
  }

  std::string TooLarge() const {
    return RefusalReply(413, "RESOURCE_EXHAUSTED",
                        absl::StrCat("the request body is over the limit of ",
                                     shared_.options.max_body_bytes, " bytes (--max-message-mb)"),
                        false);
  }

  // Runs the handler on the thread reserved for it and waits for it without a thread of its own.
  // True when the connection may carry another request.
  asio::awaitable<bool> Handle(BeastRequest request) {
    BeastExchange exchange(std::move(request), this, /*closes=*/false);
    asio::steady_timer done(stream_.get_executor(), asio::steady_timer::time_point::max());
    shared_.pool->Run([this, &exchange, &done] {
      shared_.handler(exchange);
      exchange.Finish();
      // Posted to the strand, so it runs after the wait below has begun.
      asio::post(stream_.get_executor(), [&done] { done.cancel(); });
    });
    error_code ec;
    co_await done.async_wait(Redirect(ec));
    co_return exchange.reusable();
  }

  asio::awaitable<bool> WriteNow(const std::string& bytes) {
    error_code ec;
    tcp().expires_after(Chrono(shared_.options.write_timeout));
    co_await asio::async_write(stream_, asio::buffer(bytes), Redirect(ec));
    tcp().expires_never();
    co_return !ec;
  }

  // `linger`: a refusal was written; the body the client may still be sending is read and dropped
  // for a moment first, so that the close does not reset the connection before the client has
  // read the refusal.
  asio::awaitable<void> Close(bool linger) {
    error_code ec;
    if constexpr (!std::is_same_v<Stream, beast::tcp_stream>) {
      tcp().expires_after(std::chrono::seconds(1));
      co_await stream_.async_shutdown(Redirect(ec));
    }
    tcp().socket().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
    if (linger) {
      char discard[4096];
      tcp().expires_after(kLinger);
      while (!ec) {
        co_await tcp().async_read_some(asio::buffer(discard), Redirect(ec));
      }
    }
    tcp().close();
  }

  Stream& stream_;
  const ConnectionShared& shared_;
  beast::flat_buffer buffer_;
  bool failed_ = false;  // a handler's write failed: the client is gone
};

}  // namespace

std::string RefusalReply(int status, absl::string_view code, absl::string_view message,
                         bool retry_after) {
  const nlohmann::json body = {
      {"error",
       {{"message", message},
        {"type", status == 413 || status == 431 || status == 400 ? "invalid_request_error"
                                                                 : "server_error"},
        {"param", nullptr},
        {"code", code}}}};
  BufferSink sink;
  BeastExchange exchange(BeastRequest(), &sink, /*closes=*/true);
  if (retry_after) exchange.AddHeader("Retry-After", "1");
  exchange.Reply(status, "application/json", body.dump());
  return std::move(sink.bytes());
}

asio::awaitable<void> ServeConnection(asio::ip::tcp::socket socket,
                                      std::shared_ptr<asio::ssl::context> tls,
                                      const ConnectionShared* shared) {
  beast::tcp_stream tcp(std::move(socket));
  if (tls == nullptr) {
    Connection<beast::tcp_stream> connection(tcp, *shared);
    co_await connection.Run();
    co_return;
  }
  beast::ssl_stream<beast::tcp_stream> stream(std::move(tcp), *tls);
  error_code ec;
  beast::get_lowest_layer(stream).expires_after(Chrono(shared->options.header_timeout));
  co_await stream.async_handshake(asio::ssl::stream_base::server,
                                  asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    spdlog::debug("http: TLS handshake failed: {}", ec.message());
    co_return;
  }
  beast::get_lowest_layer(stream).expires_never();
  Connection<beast::ssl_stream<beast::tcp_stream>> connection(stream, *shared);
  co_await connection.Run();
}

}  // namespace twinspan::http
