// Where golden reference data lives for tests: $TWINSPAN_GOLDEN, else the build's default.
#ifndef TWINSPAN_TESTS_TESTING_GOLDEN_H_
#define TWINSPAN_TESTS_TESTING_GOLDEN_H_

#include <string>

namespace twinspan::testing {

// Returns the golden folder joined with `relative`. Fails the current test (and returns "") when
// the folder is missing: golden tests must never pass by not running.
std::string GoldenPath(const std::string& relative);

}  // namespace twinspan::testing

#endif  // TWINSPAN_TESTS_TESTING_GOLDEN_H_
