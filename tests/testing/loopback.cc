#include "tests/testing/loopback.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace twinspan::testing {

namespace fs = std::filesystem;

std::string FindServiceBinDir() {
  const char* given = std::getenv("TWINSPAN_SERVICE_BIN_DIR");
  if (given != nullptr && *given != '\0') return given;
  const fs::path self = fs::read_symlink("/proc/self/exe").parent_path();
  for (const fs::path& dir : {self, self.parent_path().parent_path()}) {
    if (fs::exists(dir / "twinspan-router")) return dir.string();
  }
  return self.string();
}

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

bool WaitFor(const std::function<bool()>& predicate, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!predicate()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(100));
  }
  return true;
}

HttpResponse HttpGet(int port, const std::string& path, const std::string& headers) {
  HttpResponse result;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return result;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string request =
        absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: 127.0.0.1\r\n", headers, "\r\n");
    if (write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
      char buf[4096];
      for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) response.append(buf, n);
    }
  }
  close(fd);
  // "HTTP/1.1 200 OK\r\n...\r\n\r\nbody"
  const size_t space = response.find(' ');
  const size_t body = response.find("\r\n\r\n");
  if (space == std::string::npos || body == std::string::npos ||
      !absl::SimpleAtoi(response.substr(space + 1, 3), &result.status)) {
    return result;
  }
  result.body = response.substr(body + 4);
  return result;
}

}  // namespace twinspan::testing
