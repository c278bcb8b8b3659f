// One request and its reply as the handlers see it (HttpExchange), over Beast's parsed request:
// the reply's bytes in HTTP/1.1 framing, whole or chunked, handed to a ReplySink.
#ifndef TWINSPAN_SERVICES_HTTP_HTTP_EXCHANGE_H_
#define TWINSPAN_SERVICES_HTTP_HTTP_EXCHANGE_H_

#include <string>
#include <utility>
#include <vector>

#include "boost/beast/http/message.hpp"
#include "boost/beast/http/string_body.hpp"
#include "services/http/http_server.h"

namespace twinspan::http {

using BeastRequest = boost::beast::http::request<boost::beast::http::string_body>;

// Where an exchange's bytes go, in order.
class ReplySink {
 public:
  virtual ~ReplySink() = default;
  // False when the client is gone (then every later call is false too).
  virtual bool Write(std::string bytes) = 0;
};

// A ReplySink that keeps the bytes, for a reply made where the connection cannot be written
// (the gate, on the connection's own thread).
class BufferSink : public ReplySink {
 public:
  bool Write(std::string bytes) override {
    bytes_ += bytes;
    return true;
  }
  std::string& bytes() { return bytes_; }

 private:
  std::string bytes_;
};

// Not thread-safe: one handler at a time.
class BeastExchange : public HttpExchange {
 public:
  // `closes`: the connection closes after this reply whatever the request asked.
  BeastExchange(BeastRequest request, ReplySink* sink, bool closes);

  absl::string_view method() const override;
  absl::string_view path() const override { return path_; }
  absl::string_view header(absl::string_view name) const override;
  const std::string& body() const override { return request_.body(); }
  void AddHeader(absl::string_view name, absl::string_view value) override;
  bool Reply(int status, absl::string_view content_type, absl::string_view body) override;
  bool StartStream(int status, absl::string_view content_type) override;
  bool Send(absl::string_view data) override;
  // The terminator goes out in one write: node-fetch 2 (the openai SDK v4's transport) on Node 18
  // reports "Premature close" when `0\r\n\r\n` arrives split (node-fetch#1576).
  void End() override;

  // After the handler: 500 when it did not reply, and the end of a stream it left open.
  void Finish();
  // The connection may carry another request: the reply was whole and written, and neither the
  // request nor the server asked to close.
  bool reusable() const { return ended_ && !failed_ && !closes_; }

 private:
  std::string StatusLine(int status) const;
  bool Write(std::string bytes);

  BeastRequest request_;
  ReplySink* sink_;
  std::string path_;
  std::vector<std::pair<std::string, std::string>> headers_;  // for the reply not yet started
  bool closes_;
  bool chunked_ = false;  // HTTP/1.0 clients get the stream unframed, ended by the close
  bool started_ = false;
  bool streaming_ = false;
  bool ended_ = false;
  bool failed_ = false;
};

}  // namespace twinspan::http

#endif  // TWINSPAN_SERVICES_HTTP_HTTP_EXCHANGE_H_
