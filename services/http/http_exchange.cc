#include "services/http/http_exchange.h"

#include "absl/strings/str_cat.h"
#include "boost/beast/http/status.hpp"

namespace twinspan::http {
namespace {

namespace beast_http = boost::beast::http;

absl::string_view View(boost::beast::string_view s) { return {s.data(), s.size()}; }

}  // namespace

BeastExchange::BeastExchange(BeastRequest request, ReplySink* sink, bool closes)
    : request_(std::move(request)), sink_(sink), closes_(closes || !request_.keep_alive()) {
  const absl::string_view target = View(request_.target());
  path_ = std::string(target.substr(0, target.find('?')));
  if (path_.empty()) path_ = "/";
}

absl::string_view BeastExchange::method() const { return View(request_.method_string()); }

absl::string_view BeastExchange::header(absl::string_view name) const {
  const auto it = request_.find(boost::beast::string_view(name.data(), name.size()));
  return it == request_.end() ? absl::string_view() : View(it->value());
}

void BeastExchange::AddHeader(absl::string_view name, absl::string_view value) {
  headers_.emplace_back(name, value);
}

std::string BeastExchange::StatusLine(int status) const {
  std::string out = absl::StrCat(
      "HTTP/1.1 ", status, " ",
      View(beast_http::obsolete_reason(static_cast<beast_http::status>(status))), "\r\n");
  for (const auto& [name, value] : headers_) absl::StrAppend(&out, name, ": ", value, "\r\n");
  if (closes_) out += "Connection: close\r\n";
  return out;
}

bool BeastExchange::Reply(int status, absl::string_view content_type, absl::string_view body) {
  if (started_) return false;
  started_ = true;
  std::string bytes = StatusLine(status);
  absl::StrAppend(&bytes, "Content-Type: ", content_type, "\r\nContent-Length: ", body.size(),
                  "\r\n\r\n", body);
  ended_ = Write(std::move(bytes));
  return ended_;
}

bool BeastExchange::StartStream(int status, absl::string_view content_type) {
  if (started_) return false;
  started_ = true;
  streaming_ = true;
  chunked_ = request_.version() >= 11;
  if (!chunked_) closes_ = true;
  std::string bytes = StatusLine(status);
  absl::StrAppend(&bytes, "Content-Type: ", content_type, "\r\nCache-Control: no-cache\r\n",
                  chunked_ ? "Transfer-Encoding: chunked\r\n" : "", "\r\n");
  return Write(std::move(bytes));
}

bool BeastExchange::Send(absl::string_view data) {
  if (!streaming_ || data.empty()) return streaming_ && !failed_;
  if (!chunked_) return Write(std::string(data));
  return Write(absl::StrCat(absl::Hex(data.size()), "\r\n", data, "\r\n"));
}

void BeastExchange::End() {
  if (!streaming_) return;
  streaming_ = false;
  ended_ = chunked_ ? Write("0\r\n\r\n") : !failed_;
}

void BeastExchange::Finish() {
  if (!started_) Reply(500, "text/plain", "no reply\n");
  End();
}

bool BeastExchange::Write(std::string bytes) {
  if (failed_) return false;
  failed_ = !sink_->Write(std::move(bytes));
  return !failed_;
}

}  // namespace twinspan::http
