// The HTTP server (services/http/http_server.h) over loopback sockets: keep-alive, the gate before
// the body, bodies over the limit refused unread or cut, the thread and connection limits, the
// header timeout, chunked streams and Send's answer once the client is gone.
#include "services/http/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace twinspan::http {
namespace {

// A blocking loopback client socket.
class Client {
 public:
  explicit Client(int port) : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval timeout{10, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  }
  ~Client() { close(fd_); }

  bool connected() const { return connected_; }
  bool Send(const std::string& bytes) {
    return send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }
  // One read: empty at the end of the stream (or a timeout).
  std::string ReadSome() {
    char buffer[65536];
    const ssize_t n = recv(fd_, buffer, sizeof(buffer), 0);
    return n > 0 ? std::string(buffer, n) : std::string();
  }
  // Everything until the server closes.
  std::string ReadAll() {
    std::string out;
    for (std::string piece = ReadSome(); !piece.empty(); piece = ReadSome()) out += piece;
    return out;
  }
  // Reads until `bytes` ends with `suffix`.
  std::string ReadUntil(absl::string_view suffix) {
    std::string out;
    while (!absl::EndsWith(out, suffix)) {
      const std::string piece = ReadSome();
      if (piece.empty()) break;
      out += piece;
    }
    return out;
  }

 private:
  int fd_;
  bool connected_ = false;
};

std::string Get(absl::string_view path, absl::string_view extra = "") {
  return absl::StrCat("GET ", path, " HTTP/1.1\r\nHost: x\r\n", extra, "\r\n");
}

std::string Post(absl::string_view path, absl::string_view body) {
  return absl::StrCat("POST ", path, " HTTP/1.1\r\nHost: x\r\nContent-Length: ", body.size(),
                      "\r\n\r\n", body);
}

class HttpServerTest : public ::testing::Test {
 protected:
  void Start(const HttpServerOptions& options, HttpHandler handler, HttpGate gate = nullptr) {
    auto server = HttpServer::Start(options, std::move(handler), std::move(gate));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }
  static void Echo(HttpExchange& exchange) {
    exchange.Reply(200, "text/plain", absl::StrCat(exchange.path(), ":", exchange.body()));
  }
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerTest, KeepsTheConnectionForTheNextRequest) {
  Start(HttpServerOptions(), Echo);
  Client client(server_->port());
  ASSERT_TRUE(client.Send(Post("/a?q=1", "one")));
  EXPECT_TRUE(absl::EndsWith(client.ReadUntil("/a:one"), "/a:one"));
  ASSERT_TRUE(client.Send(Post("/b", "two") + Get("/c", "Connection: close\r\n")));
  const std::string rest = client.ReadAll();
  EXPECT_TRUE(absl::StrContains(rest, "/b:two")) << rest;
  EXPECT_TRUE(absl::StrContains(rest, "Connection: close\r\n")) << rest;
  EXPECT_TRUE(absl::EndsWith(rest, "/c:")) << rest;
}

TEST_F(HttpServerTest, TheGateRefusesBeforeTheBodyAndCloses) {
  std::atomic<int> handled{0};
  Start(
      HttpServerOptions(), [&](HttpExchange& e) { ++handled, Echo(e); },
      [](HttpExchange& e) {
        if (e.header("authorization") == "yes") return true;
        e.AddHeader("WWW-Authenticate", "Bearer");
        e.Reply(401, "text/plain", "no");
        return false;
      });
  Client client(server_->port());
  // Only the headers: the refusal comes without the body.
  ASSERT_TRUE(client.Send("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"));
  const std::string reply = client.ReadAll();
  EXPECT_TRUE(absl::StartsWith(reply, "HTTP/1.1 401 Unauthorized\r\n")) << reply;
  EXPECT_TRUE(absl::StrContains(reply, "WWW-Authenticate: Bearer\r\n")) << reply;
  EXPECT_EQ(handled.load(), 0);
}

TEST_F(HttpServerTest, AnOverLimitBodyIsRefusedUnreadAndAChunkedOneIsCut) {
  HttpServerOptions options;
  options.max_body_bytes = 1000;
  Start(options, Echo);
  {
    Client client(server_->port());
    ASSERT_TRUE(client.Send("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 1001\r\n\r\n"));
    const std::string reply = client.ReadAll();
    EXPECT_TRUE(absl::StartsWith(reply, "HTTP/1.1 413 ")) << reply;
    EXPECT_TRUE(absl::StrContains(reply, "--max-message-mb")) << reply;
  }
  {
    Client client(server_->port());
    ASSERT_TRUE(client.Send("POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"));
    std::string reply;
    for (int i = 0; i < 20 && reply.empty(); ++i) {
      if (!client.Send(absl::StrCat("64\r\n", std::string(100, 'x'), "\r\n"))) break;
    }
    reply = client.ReadAll();
    EXPECT_TRUE(absl::StartsWith(reply, "HTTP/1.1 413 ")) << reply;
  }
  Client client(server_->port());
  ASSERT_TRUE(client.Send(Post("/ok", std::string(1000, 'y')) + Get("/", "Connection: close\r\n")));
  EXPECT_TRUE(absl::StrContains(client.ReadAll(), "/ok:yyy"));
}

TEST_F(HttpServerTest, ARequestOverTheThreadLimitGets503AndTheFlag) {
  HttpServerOptions options;
  options.threads = 1;
  absl::Notification started, release;
  Start(options, [&](HttpExchange& e) {
    if (e.path() == "/hold") {
      started.Notify();
      release.WaitForNotification();
    }
    Echo(e);
  });
  Client holder(server_->port());
  ASSERT_TRUE(holder.Send(Get("/hold")));
  started.WaitForNotification();
  Client refused(server_->port());
  ASSERT_TRUE(refused.Send(Get("/health")));
  const std::string reply = refused.ReadAll();
  EXPECT_TRUE(absl::StartsWith(reply, "HTTP/1.1 503 ")) << reply;
  EXPECT_TRUE(absl::StrContains(reply, "Retry-After: 1\r\n")) << reply;
  EXPECT_TRUE(absl::StrContains(reply, "--http-threads")) << reply;
  release.Notify();
  EXPECT_TRUE(absl::EndsWith(holder.ReadUntil("/hold:"), "/hold:"));
}

TEST_F(HttpServerTest, AConnectionOverTheLimitIsRefused) {
  HttpServerOptions options;
  options.max_connections = 2;
  Start(options, Echo);
  Client a(server_->port()), b(server_->port());
  absl::SleepFor(absl::Milliseconds(100));
  Client c(server_->port());
  ASSERT_TRUE(c.Send(Get("/")));
  const std::string reply = c.ReadAll();
  EXPECT_TRUE(absl::StartsWith(reply, "HTTP/1.1 503 ")) << reply;
  EXPECT_TRUE(absl::StrContains(reply, "--http-max-connections")) << reply;
}

TEST_F(HttpServerTest, HeadersThatDoNotArriveInTimeCloseTheConnection) {
  HttpServerOptions options;
  options.header_timeout = absl::Milliseconds(300);
  Start(options, Echo);
  Client slow(server_->port());
  ASSERT_TRUE(slow.Send("GET / HTTP/1.1\r\nHost: x\r\n"));  // and never the blank line
  const absl::Time start = absl::Now();
  EXPECT_EQ(slow.ReadAll(), "");
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST_F(HttpServerTest, AStreamIsChunkedAndItsTerminatorComesInOneWrite) {
  Start(HttpServerOptions(), [](HttpExchange& e) {
    ASSERT_TRUE(e.StartStream(200, "text/event-stream"));
    EXPECT_TRUE(e.Send("data: 1\n\n"));
    EXPECT_TRUE(e.Send("data: [DONE]\n\n"));
    absl::SleepFor(absl::Milliseconds(50));  // the terminator's write alone
    e.End();
  });
  Client client(server_->port());
  ASSERT_TRUE(client.Send(Get("/")));
  std::string all, last;
  while (!absl::EndsWith(all, "\r\n0\r\n\r\n")) {
    last = client.ReadSome();
    ASSERT_FALSE(last.empty()) << all;
    all += last;
  }
  EXPECT_TRUE(absl::StrContains(all, "Transfer-Encoding: chunked\r\n")) << all;
  EXPECT_TRUE(absl::StrContains(all, "\r\n9\r\ndata: 1\n\n\r\ne\r\ndata: [DONE]\n\n\r\n")) << all;
  EXPECT_EQ(last, "0\r\n\r\n");
}

TEST_F(HttpServerTest, SendIsFalseOnceTheClientIsGone) {
  absl::Notification gone;
  std::atomic<bool> noticed{false};
  Start(HttpServerOptions(), [&](HttpExchange& e) {
    ASSERT_TRUE(e.StartStream(200, "text/event-stream"));
    gone.WaitForNotification();
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (absl::Now() < deadline) {
      if (!e.Send(std::string(1024, 'x'))) {
        noticed = true;
        break;
      }
      absl::SleepFor(absl::Milliseconds(5));
    }
    e.End();
  });
  {
    Client client(server_->port());
    ASSERT_TRUE(client.Send(Get("/")));
    EXPECT_TRUE(absl::StartsWith(client.ReadSome(), "HTTP/1.1 200 OK\r\n"));
  }
  gone.Notify();
  server_.reset();  // waits for the handler
  EXPECT_TRUE(noticed.load());
}

}  // namespace
}  // namespace twinspan::http
