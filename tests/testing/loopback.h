// Small helpers of the tests that run services on 127.0.0.1: where the binaries are, a free port,
// waiting for a condition, and an HTTP GET (the /metrics endpoints).
#ifndef TWINSPAN_TESTS_TESTING_LOOPBACK_H_
#define TWINSPAN_TESTS_TESTING_LOOPBACK_H_

#include <functional>
#include <string>

#include "absl/time/time.h"

namespace twinspan::testing {

// The folder of the service binaries and make-demo: $TWINSPAN_SERVICE_BIN_DIR, else this test
// binary's folder or the build root two levels above it (whichever holds twinspan-router).
std::string FindServiceBinDir();

// A port free now on 127.0.0.1 (for flags that need a fixed address before the process starts).
int FreePort();

// Polls `predicate` every 100 ms until it holds (true) or `timeout` passes (false).
bool WaitFor(const std::function<bool()>& predicate, absl::Duration timeout);

struct HttpResponse {
  int status = 0;  // 0 when the request failed
  std::string body;
};
// An HTTP/1.0 GET of `path` on 127.0.0.1:`port`; `headers` are extra "Name: value\r\n" lines.
HttpResponse HttpGet(int port, const std::string& path, const std::string& headers = "");

}  // namespace twinspan::testing

#endif  // TWINSPAN_TESTS_TESTING_LOOPBACK_H_
