#include "services/http/http_server.h"

#include <civetweb.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "spdlog/spdlog.h"

namespace twinspan::http {
namespace {

class CivetExchange : public HttpExchange {
 public:
  // `closes`: the connection closes after the reply (a request whose body was left unread).
  CivetExchange(mg_connection* conn, const mg_request_info* info, std::string body,
                bool closes = false)
      : conn_(conn),
        info_(info),
        body_(std::move(body)),
        path_(info->local_uri != nullptr ? info->local_uri : "/"),
        closes_(closes) {}

  absl::string_view method() const override { return info_->request_method; }
  absl::string_view path() const override { return path_; }
  absl::string_view header(absl::string_view name) const override {
    for (int i = 0; i < info_->num_headers; ++i) {
      if (absl::EqualsIgnoreCase(info_->http_headers[i].name, name)) {
        return info_->http_headers[i].value;
      }
    }
    return {};
  }
  const std::string& body() const override { return body_; }
  void AddHeader(absl::string_view name, absl::string_view value) override {
    headers_.emplace_back(name, value);
  }

  bool Reply(int status, absl::string_view content_type, absl::string_view body) override {
    if (started_) return false;
    started_ = true;
    const std::string type(content_type);
    const std::string length = absl::StrCat(body.size());
    if (!StartHeaders(status)) return false;
    mg_response_header_add(conn_, "Content-Type", type.c_str(), -1);
    mg_response_header_add(conn_, "Content-Length", length.c_str(), -1);
    return mg_response_header_send(conn_) == 0 && Write(body);
  }

  bool StartStream(int status, absl::string_view content_type) override {
    if (started_) return false;
    started_ = true;
    streaming_ = true;
    const std::string type(content_type);
    if (!StartHeaders(status)) return false;
    mg_response_header_add(conn_, "Content-Type", type.c_str(), -1);
    mg_response_header_add(conn_, "Cache-Control", "no-cache", -1);
    mg_response_header_add(conn_, "Transfer-Encoding", "chunked", -1);
    return mg_response_header_send(conn_) == 0;
  }

  bool Send(absl::string_view data) override {
    if (!streaming_ || data.empty()) return streaming_;
    return mg_send_chunk(conn_, data.data(), static_cast<unsigned>(data.size())) > 0;
  }

  void End() override {
    if (!streaming_) return;
    streaming_ = false;
    mg_send_chunk(conn_, "", 0);
  }

  bool started() const { return started_; }
  int status() const { return status_; }

 private:
  // Before the status line: the headers say whether the connection stays open.
  bool StartHeaders(int status) {
    status_ = status;
    if (closes_) mg_disable_connection_keep_alive(conn_);
    if (mg_response_header_start(conn_, status) != 0) return false;
    for (const auto& [name, value] : headers_) {
      mg_response_header_add(conn_, name.c_str(), value.c_str(), -1);
    }
    return true;
  }

  bool Write(absl::string_view data) {
    return data.empty() ||
           mg_write(conn_, data.data(), data.size()) == static_cast<int>(data.size());
  }

  mg_connection* conn_;
  const mg_request_info* info_;
  std::string body_;
  std::string path_;
  std::vector<std::pair<std::string, std::string>> headers_;  // for the reply not yet started
  const bool closes_;
  int status_ = 0;
  bool started_ = false;
  bool streaming_ = false;
};

}  // namespace

struct HttpServer::Impl {
  HttpServerOptions options;
  HttpHandler handler;
  HttpGate gate;
  mg_context* context = nullptr;

  // 413 in the OpenAI error shape the API's other errors have; the connection closes after it.
  static int TooLarge(mg_connection* conn, const mg_request_info* info, int64_t limit) {
    CivetExchange(conn, info, "", /*closes=*/true)
        .Reply(413, "application/json",
               absl::StrCat(
                   R"json({"error":{"message":"the request body is over the limit of )json", limit,
                   R"json( bytes (--max-message-mb)","type":"invalid_request_error",)json",
                   R"json("param":null,"code":"RESOURCE_EXHAUSTED"}})json"));
    return 413;
  }

  // civetweb's request callback: the gate on the headers, the body read under the limit, then
  // the handler.
  static int Serve(mg_connection* conn, void* data) {
    auto* impl = static_cast<Impl*>(data);
    const mg_request_info* info = mg_get_request_info(conn);
    if (impl->gate) {
      CivetExchange headers_only(conn, info, "", /*closes=*/true);
      if (!impl->gate(headers_only)) {
        if (!headers_only.started()) headers_only.Reply(500, "text/plain", "no reply\n");
        return headers_only.status();
      }
    }
    const int64_t limit = impl->options.max_body_bytes;
    if (info->content_length > limit) return TooLarge(conn, info, limit);
    std::string body;
    char buffer[16384];
    while (true) {
      const int n = mg_read(conn, buffer, sizeof(buffer));
      if (n <= 0) break;
      if (static_cast<int64_t>(body.size()) + n > limit) return TooLarge(conn, info, limit);
      body.append(buffer, n);
    }
    CivetExchange exchange(conn, info, std::move(body));
    impl->handler(exchange);
    if (!exchange.started()) exchange.Reply(500, "text/plain", "no reply\n");
    exchange.End();
    return 200;
  }

  static int Log(const mg_connection*, const char* message) {
    spdlog::debug("http: {}", message);
    return 1;
  }
};

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpServerOptions& options,
                                                              HttpHandler handler, HttpGate gate) {
  if (options.threads < 1 || options.threads > 4096 || options.max_body_bytes < 1) {
    return absl::InvalidArgumentError(absl::StrCat("http: threads ", options.threads,
                                                   " must be in [1, 4096] and the body limit "
                                                   "positive"));
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->handler = std::move(handler);
  impl->gate = std::move(gate);
  mg_init_library(0);
  const std::string threads = absl::StrCat(options.threads);
  const std::string timeout = absl::StrCat(options.socket_timeout_ms);
  const char* config[] = {"listening_ports",
                          options.listen.c_str(),
                          "num_threads",
                          threads.c_str(),
                          "request_timeout_ms",
                          timeout.c_str(),
                          "enable_keep_alive",
                          "yes",
                          "keep_alive_timeout_ms",
                          "60000",
                          nullptr};
  mg_callbacks callbacks{};
  callbacks.log_message = &Impl::Log;
  impl->context = mg_start(&callbacks, nullptr, config);
  if (impl->context == nullptr) {
    mg_exit_library();
    return absl::UnavailableError(absl::StrCat("http: cannot listen on ", options.listen));
  }
  mg_set_request_handler(impl->context, "/", &Impl::Serve, impl.get());
  mg_server_port ports[4] = {};
  const int n = mg_get_server_ports(impl->context, 4, ports);
  if (n < 1) {
    mg_stop(impl->context);
    mg_exit_library();
    return absl::UnavailableError(absl::StrCat("http: no listening port for ", options.listen));
  }
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl), ports[0].port));
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl, int port)
    : impl_(std::move(impl)), port_(port) {}

HttpServer::~HttpServer() {
  mg_stop(impl_->context);
  mg_exit_library();
}

}  // namespace twinspan::http
