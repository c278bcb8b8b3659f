#include "tools/synth/shard_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "nlohmann/json.hpp"
#include "tools/synth/fill.h"

namespace twinspan::synth {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// About 16 MiB per work item: large enough for pwrite, small enough to balance 16 threads.
constexpr int64_t kChunkBytes = int64_t{16} << 20;

struct ShardFile {
  std::string name;
  int fd = -1;
  int64_t data_start = 0;  // 8 + header length.
  int64_t size = 0;
};

// A run of one tensor's elements at a fixed place in one file.
struct WorkItem {
  size_t tensor = 0;
  size_t shard = 0;
  int64_t file_offset = 0;
  int64_t begin = 0;
  int64_t count = 0;
};

absl::Status Errno(const std::string& what, const std::string& path) {
  return absl::InternalError(absl::StrFormat("%s %s: %s", what, path, std::strerror(errno)));
}

absl::Status WriteAll(int fd, const void* data, int64_t bytes, int64_t offset,
                      const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::pwrite(fd, p, static_cast<size_t>(bytes), offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Errno("cannot write", path);
    p += n;
    bytes -= n;
    offset += n;
  }
  return absl::OkStatus();
}

absl::Status WriteText(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return Errno("cannot write", path.string());
  return absl::OkStatus();
}

std::string ShardName(size_t i, size_t n) {
  if (n == 1) return "model.safetensors";
  return absl::StrFormat("model-%05d-of-%05d.safetensors", i + 1, n);
}

// The safetensors header of one shard; tensors laid out back to back in `order`.
std::string Header(const CheckpointSpec& spec, const std::vector<size_t>& order) {
  nlohmann::ordered_json header;
  header["__metadata__"] = {{"format", "pt"}};
  int64_t offset = 0;
  for (const size_t i : order) {
    const TensorSpec& t = spec.tensors[i];
    header[t.name] = {{"dtype", DTypeName(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.bytes()}}};
    offset += t.bytes();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // The data section starts 8-byte aligned.
  return text;
}

// Draws and writes the items on `threads` threads, logging progress from the calling thread.
absl::Status RunItems(const CheckpointSpec& spec, const std::vector<ShardFile>& files,
                      const std::vector<WorkItem>& items, const WriteOptions& options,
                      int64_t total_bytes, Clock::time_point start) {
  std::atomic<size_t> next{0};
  std::atomic<int64_t> done_bytes{0};
  std::atomic<bool> failed{false};
  std::mutex error_mu;
  absl::Status error;
  const auto work = [&] {
    std::vector<std::byte> buffer;
    for (size_t i = next++; i < items.size() && !failed; i = next++) {
      const WorkItem& item = items[i];
      const TensorSpec& t = spec.tensors[item.tensor];
      const int64_t bytes = item.count * static_cast<int64_t>(DTypeSize(t.dtype));
      buffer.resize(bytes);
      FillElements(t, options.seed, item.begin, item.count, buffer.data());
      const ShardFile& file = files[item.shard];
      absl::Status s = WriteAll(file.fd, buffer.data(), bytes, item.file_offset, file.name);
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (error.ok()) error = s;
        failed = true;
      }
      done_bytes += bytes;
    }
  };
  std::vector<std::thread> workers;
  workers.reserve(options.threads);
  for (int i = 0; i < options.threads; ++i) workers.emplace_back(work);
  auto last_log = Clock::now();
  while (next < items.size() && !failed) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (options.log == nullptr || Clock::now() - last_log < std::chrono::seconds(2)) continue;
    last_log = Clock::now();
    const double seconds = std::chrono::duration<double>(last_log - start).count();
    const double gb = static_cast<double>(done_bytes) / 1e9;
    const double rate = gb / std::max(seconds, 1e-9);
    std::fprintf(options.log, "twinspan-synth: %.2f / %.2f GB (%.0f%%), %.2f GB/s, ETA %.0f s\n",
                 gb, static_cast<double>(total_bytes) / 1e9,
                 100.0 * static_cast<double>(done_bytes) / std::max<int64_t>(total_bytes, 1), rate,
                 (static_cast<double>(total_bytes) / 1e9 - gb) / std::max(rate, 1e-9));
    std::fflush(options.log);
  }
  for (std::thread& t : workers) t.join();
  return error;
}

}  // namespace

std::vector<std::vector<size_t>> PlanShards(const CheckpointSpec& spec, int64_t max_shard_bytes) {
  std::vector<std::vector<size_t>> shards;
  int64_t bytes = 0;
  for (size_t i = 0; i < spec.tensors.size(); ++i) {
    const int64_t b = spec.tensors[i].bytes();
    if (shards.empty() || (bytes > 0 && bytes + b > max_shard_bytes)) {
      shards.emplace_back();
      bytes = 0;
    }
    shards.back().push_back(i);
    bytes += b;
  }
  // Within a shard, as the safetensors library orders them: wider dtypes first, then by name, so
  // every tensor starts aligned to its element size.
  for (std::vector<size_t>& order : shards) {
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const TensorSpec &ta = spec.tensors[a], &tb = spec.tensors[b];
      const size_t sa = DTypeSize(ta.dtype), sb = DTypeSize(tb.dtype);
      return sa != sb ? sa > sb : ta.name < tb.name;
    });
  }
  return shards;
}

absl::StatusOr<WriteReport> WriteCheckpoint(const CheckpointSpec& spec, const std::string& dir,
                                            const WriteOptions& options) {
  if (options.threads < 1 || options.max_shard_bytes < 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("twinspan-synth: threads %d and max_shard_bytes %d must be positive",
                        options.threads, options.max_shard_bytes));
  }
  const auto start = Clock::now();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrFormat("cannot create directory %s: %s", dir, ec.message()));
  }
  ABSL_RETURN_IF_ERROR(WriteText(fs::path(dir) / "config.json", spec.config_json));
  for (const auto& [name, text] : spec.files) {
    ABSL_RETURN_IF_ERROR(WriteText(fs::path(dir) / name, text));
  }

  const std::vector<std::vector<size_t>> shards = PlanShards(spec, options.max_shard_bytes);
  std::vector<ShardFile> files(shards.size());
  std::vector<WorkItem> items;
  nlohmann::json weight_map = nlohmann::json::object();
  absl::Status status;
  for (size_t s = 0; s < shards.size() && status.ok(); ++s) {
    ShardFile& file = files[s];
    file.name = (fs::path(dir) / ShardName(s, shards.size())).string();
    const std::string header = Header(spec, shards[s]);
    file.data_start = 8 + static_cast<int64_t>(header.size());
    file.fd = ::open(file.name.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (file.fd < 0) {
      status = Errno("cannot create", file.name);
      break;
    }
    uint8_t length[8];
    for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(header.size() >> (8 * i));
    status = WriteAll(file.fd, length, 8, 0, file.name);
    if (status.ok()) status = WriteAll(file.fd, header.data(), header.size(), 8, file.name);
    int64_t offset = file.data_start;
    for (const size_t i : shards[s]) {
      const TensorSpec& t = spec.tensors[i];
      weight_map[t.name] = ShardName(s, shards.size());
      const int64_t per_item =
          std::max<int64_t>(
              1, kChunkBytes / (kFillBlockElements * static_cast<int64_t>(DTypeSize(t.dtype)))) *
          kFillBlockElements;
      for (int64_t b = 0; b < t.numel(); b += per_item) {
        const int64_t count = std::min(per_item, t.numel() - b);
        items.push_back({i, s, offset, b, count});
        offset += count * static_cast<int64_t>(DTypeSize(t.dtype));
      }
    }
    file.size = offset;
    if (status.ok() && ::ftruncate(file.fd, file.size) != 0)
      status = Errno("cannot size", file.name);
  }
  if (status.ok()) {
    if (options.log != nullptr) {
      std::fprintf(options.log,
                   "twinspan-synth: %s\ntwinspan-synth: writing %zu tensors, %.2f GB "
                   "in %zu shard(s) to %s on %d threads\n",
                   spec.summary.c_str(), spec.tensors.size(),
                   static_cast<double>(spec.bytes()) / 1e9, shards.size(), dir.c_str(),
                   options.threads);
    }
    status = RunItems(spec, files, items, options, spec.bytes(), start);
  }
  for (const ShardFile& file : files) {
    if (file.fd < 0) continue;
    if (status.ok() && options.sync && ::fsync(file.fd) != 0)
      status = Errno("cannot sync", file.name);
    if (::close(file.fd) != 0 && status.ok()) status = Errno("cannot close", file.name);
  }
  ABSL_RETURN_IF_ERROR(status);
  WriteReport report;
  if (shards.size() > 1) {
    nlohmann::json index = {{"metadata", {{"total_size", spec.bytes()}}},
                            {"weight_map", weight_map}};
    ABSL_RETURN_IF_ERROR(
        WriteText(fs::path(dir) / "model.safetensors.index.json", index.dump(2) + "\n"));
    fs::remove(fs::path(dir) / "model.safetensors", ec);  // Left by an earlier one-shard run.
  } else {
    fs::remove(fs::path(dir) / "model.safetensors.index.json", ec);  // A stale index would win.
  }
  for (size_t s = 0; s < shards.size(); ++s) report.shards.push_back(ShardName(s, shards.size()));
  report.tensor_bytes = spec.bytes();
  report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (options.log != nullptr) {
    std::fprintf(options.log, "twinspan-synth: wrote %.2f GB in %.1f s (%.2f GB/s%s)\n",
                 static_cast<double>(report.tensor_bytes) / 1e9, report.seconds,
                 static_cast<double>(report.tensor_bytes) / 1e9 / std::max(report.seconds, 1e-9),
                 options.sync ? ", synced to disk" : ", page cache; --sync to include the disk");
  }
  return report;
}

}  // namespace twinspan::synth
