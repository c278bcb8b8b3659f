// Files for fuzz targets whose code under test opens paths: a scratch folder per process, and
// bytes written into it (rewritten each input; the folder is removed at exit).
#ifndef TWINSPAN_TESTS_FUZZ_FUZZ_FILES_H_
#define TWINSPAN_TESTS_FUZZ_FUZZ_FILES_H_

#include <string>
#include <string_view>

namespace twinspan::fuzz {

// This process's scratch folder (made on first use, under /dev/shm when it exists).
const std::string& ScratchDir();

// Replaces ScratchDir()/`name` with `bytes`; returns its path.
std::string WriteScratch(const std::string& name, std::string_view bytes);

}  // namespace twinspan::fuzz

#endif  // TWINSPAN_TESTS_FUZZ_FUZZ_FILES_H_
