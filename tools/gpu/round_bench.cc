// twinspan_round_bench: one 27B-shaped speculative round on the GPU (DESIGN.md "One round", one
// stream), timed against its bytes-over-bandwidth floor. Opens the synthetic Qwen3.8-27B EXL3
// target and its DFlash2 drafter (twinspan-synth) on one CUDA backend (or two on one GPU),
// prefills a random prompt, then times:
//   round       verify [pending, 15 drafts] (16 rows; random weights accept nothing, so the window
//               is padded with the drafts repeated), greedy selection on the device (TopK k = 1),
//               commit, then one draft block: append the kept rows' taps, block forward of B rows,
//               two-span head, top-k, selector walk;
//   verify-N    the verify alone at 1, 8 and 16 rows (and 16 without taps), then Commit(0);
//   draft       the draft block alone (one appended row).
// --prefill-reps times prefills of --prefill-tokens first, on the prompt path and as 64-row
// launches.
// --tree-nodes N drafts best-first trees of N drafts instead: the round verifies the tree (N + 1
// rows) in one tree forward and commits the path greedy acceptance walks, and verify-tree times
// the tree's verify alone (no verify-N steps).
// --profile adds verify-16+commit (the commit timed as its own segment) and, for verify-1,
// verify-16, the commit and the draft, a table of each backend op's GPU time, calls and host time
// (ProfilingBackend: each op timed alone behind a spin), against the step's wall and busy times;
// with --prefill-reps, also for one prefill in the last of --prefill-chunks.
// On one backend the taps stay on the device (taps_out, AppendTapsInBackend); --host-taps and
// --two-backends send them through the host.
// Each: warm-up, then medians over --reps runs of wall time (host clock), GPU span (CUDA events)
// and GPU-busy time (each segment queued behind a spin kernel, so launch gaps vanish); no CUDA
// graph. The floor is the bytes each step moves (round_bytes.h) over the device-to-device copy
// bandwidth measured in the same run. Any CUDA or Status error exits 1.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_format.h"
#include "common/hash/sha256.h"
#include "common/status.h"
#include "kernels/cuda/cuda_backend.h"
#include "nlohmann/json.hpp"
#include "services/drafter/drafter.h"
#include "services/target/target_model.h"
#include "tools/gpu/profiling_backend.h"
#include "tools/gpu/round_bytes.h"
#include "tools/gpu/round_driver.h"
#include "tools/gpu/round_timer.h"

namespace twinspan::gpu {
namespace {

constexpr double kGoalUs = 5000.0, kTokensPerRound = 6.74;

// A fingerprint of logits, so that two builds' prefills can be compared bit for bit.
std::string LogitsSha256(const std::vector<float>& v) {
  absl::StatusOr<std::string> h = hash::Sha256Hex(
      std::string_view(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
  return h.ok() ? *h : h.status().ToString();
}

struct Flags {
  std::string target, drafter, json, head = "two-span";
  int64_t prompt = 300, context = 4096, verify_rows = 16, block = 0, keep = 0, tree_nodes = 0;
  int64_t prefill_tokens = 4096;
  std::vector<int64_t> prefill_chunks = {256};
  int reps = 20, warmup = 3, profile_reps = 5, prefill_reps = 0;
  double profile_spin_us = 40;
  bool two_backends = false, host_taps = false, profile = false;
};

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// The device-to-device copy bandwidth (read + write bytes over time) of 4 GiB, median of 10.
absl::StatusOr<double> CopyBandwidth(backend::Backend& b, cudaStream_t stream, RoundTimer& timer) {
  const size_t bytes = size_t{4} << 30;
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<backend::Buffer> src, b.Allocate(bytes));
  ABSL_ASSIGN_OR_RETURN(std::unique_ptr<backend::Buffer> dst, b.Allocate(bytes));
  ABSL_RETURN_IF_ERROR(b.Zero(src->data(), bytes));
  const Step copy{"copy",
                  {{[&] {
                      ABSL_RETURN_IF_ERROR(b.Copy(dst->data(), src->data(), bytes));
                      return b.Synchronize();
                    },
                    stream}},
                  nullptr};
  ABSL_ASSIGN_OR_RETURN(const StepTimes t, timer.Time(copy, 2, 10));
  return 2.0 * bytes / (t.span_us * 1e3);  // GB/s
}

class Bench {
 public:
  explicit Bench(const Flags& f) : f_(f) {}

  absl::Status Run() {
    auto start = std::chrono::steady_clock::now();
    ABSL_ASSIGN_OR_RETURN(target_backend_, cuda::NewCudaBackend({}));
    if (f_.two_backends) {
      ABSL_ASSIGN_OR_RETURN(drafter_backend_, cuda::NewCudaBackend({}));
    }
    if (f_.profile) {  // The models run on the decorators; streams and copies on the CUDA backends.
      ABSL_ASSIGN_OR_RETURN(target_profiler_, ProfilingBackend::Create(*target_backend_));
      if (f_.two_backends) {
        ABSL_ASSIGN_OR_RETURN(drafter_profiler_, ProfilingBackend::Create(*drafter_backend_));
      }
    }
    backend::Backend* tb = f_.profile ? target_profiler_.get() : target_backend_.get();
    backend::Backend* db = !f_.two_backends ? tb
                           : f_.profile     ? drafter_profiler_.get()
                                            : drafter_backend_.get();
    ABSL_ASSIGN_OR_RETURN(
        target_, target::OpenTargetModel(f_.target, {.backend = tb, .context = f_.context}));
    const double target_s = Seconds(start);
    start = std::chrono::steady_clock::now();
    ABSL_ASSIGN_OR_RETURN(
        drafter_,
        drafter::Drafter::Open(f_.drafter, f_.target,
                               {.model = {.backend = db, .context = f_.context}, .head = f_.head}));
    const double drafter_s = Seconds(start);
    const bool q4 = drafter_->model().weights().layers[0].q_proj.is_q4();
    std::printf(
        "load: target %.1f s, drafter %.1f s (linears %s, head %s: %lld columns; taps %s)\n",
        target_s, drafter_s, q4 ? "Q4" : "as stored, NOT Q4", f_.head.c_str(),
        static_cast<long long>(drafter_->head().columns()),
        f_.two_backends || f_.host_taps ? "through the host" : "on the device");
    json_["load"] = {{"target_s", target_s}, {"drafter_s", drafter_s}, {"drafter_q4", q4}};

    ABSL_ASSIGN_OR_RETURN(target_stream_, cuda::CudaBackendStream(*target_backend_));
    ABSL_ASSIGN_OR_RETURN(
        drafter_stream_,
        cuda::CudaBackendStream(f_.two_backends ? *drafter_backend_ : *target_backend_));
    ABSL_ASSIGN_OR_RETURN(RoundTimer timer, RoundTimer::Create());
    ABSL_ASSIGN_OR_RETURN(copy_gbs_, CopyBandwidth(*tb, target_stream_, timer));
    std::printf("copy 4 GiB d2d: %.0f GB/s (read + write)\n", copy_gbs_);
    json_["copy_gbs"] = copy_gbs_;

    driver_ =
        std::make_unique<RoundDriver>(*target_, *drafter_,
                                      RoundOptions{.prompt = f_.prompt,
                                                   .block = f_.block,
                                                   .keep = f_.keep,
                                                   .device_taps = !f_.two_backends && !f_.host_taps,
                                                   .tree_nodes = f_.tree_nodes});
    start = std::chrono::steady_clock::now();
    ABSL_RETURN_IF_ERROR(driver_->Prefill());
    std::printf("prefill: %lld tokens and the first block in %.2f s\n",
                static_cast<long long>(f_.prompt), Seconds(start));
    ABSL_ASSIGN_OR_RETURN(target_weights_, TargetWeightBytes(f_.target));
    ABSL_ASSIGN_OR_RETURN(drafter_weights_, DrafterWeightBytes(f_.drafter, drafter_->head()));

    if (f_.prefill_reps > 0) ABSL_RETURN_IF_ERROR(TimePrefill());
    const int64_t rows = f_.tree_nodes > 0 ? f_.tree_nodes + 1 : f_.verify_rows;
    ABSL_RETURN_IF_ERROR(Report(timer, "round", RoundStep(rows), RoundBytes(rows)));
    if (f_.tree_nodes > 0) {
      ABSL_RETURN_IF_ERROR(
          Report(timer, "verify-tree", VerifyStep(rows, true), TargetBytes(rows, 0, true)));
    } else {
      for (const int64_t r : {int64_t{1}, int64_t{8}, int64_t{16}}) {
        ABSL_RETURN_IF_ERROR(Report(timer, absl::StrFormat("verify-%d", r), VerifyStep(r, true),
                                    TargetBytes(r, 0, true)));
      }
      ABSL_RETURN_IF_ERROR(
          Report(timer, "verify-16-no-taps", VerifyStep(16, false), TargetBytes(16, 0, false)));
    }
    ABSL_RETURN_IF_ERROR(Report(timer, "draft", DraftStep(), DrafterBytes(1)));
    if (f_.profile && f_.tree_nodes == 0) {
      ABSL_RETURN_IF_ERROR(
          Report(timer, "verify-16+commit", CommitStep(rows), TargetBytes(rows, 1, true)));
      ABSL_RETURN_IF_ERROR(Profile());
    }
    ABSL_RETURN_IF_ERROR(tb->Synchronize());
    ABSL_RETURN_IF_ERROR(db->Synchronize());
    PrintSummary(target_s, drafter_s);
    if (f_.profile && f_.tree_nodes == 0) PrintProfileSummary();
    if (!f_.json.empty()) std::ofstream(f_.json) << json_.dump(2) << "\n";
    return absl::OkStatus();
  }

 private:
  // --prefill-reps: fresh sequences prefilled with --prefill-tokens random ids in chunks of each
  // of --prefill-chunks rows (no taps, the last row's logits) on the prompt path with its tile
  // picked per call and with 64-row tiles forced, and in the first chunk size as 64-row launches
  // too (SetCudaBackendExl3Prompt), one warm-up each; the medians of the wall times. Every
  // run's last logits must equal the first's bit for bit.
  absl::Status TimePrefill() {
    std::mt19937 rng(11);
    std::vector<int32_t> tokens(f_.prefill_tokens);
    for (int32_t& t : tokens) t = static_cast<int32_t>(rng() % 150000);
    std::vector<float> first;  // The last row's logits of the first configuration.
    bool same = true;
    double last_median = 0;  // The last chunk size's prompt path, the one --profile profiles.
    struct Path {
      int prompt_rows, tile;
      const char* name;
    };
    const Path paths[] = {
        {-1, 0, "64-row launches"}, {0, 64, "prompt path, 64-row tiles"}, {0, 0, "prompt path"}};
    for (size_t c = 0; c < f_.prefill_chunks.size(); ++c) {
      const int64_t chunk = f_.prefill_chunks[c];
      for (const Path& path : paths) {
        if (path.prompt_rows == -1 && c > 0) continue;
        ABSL_RETURN_IF_ERROR(
            cuda::SetCudaBackendExl3Prompt(*target_backend_, path.prompt_rows, path.tile));
        std::vector<double> s;
        for (int i = 0; i <= f_.prefill_reps; ++i) {
          ABSL_ASSIGN_OR_RETURN(std::unique_ptr<target::SequenceState> state,
                                target_->NewSequence());
          const auto start = std::chrono::steady_clock::now();
          ABSL_ASSIGN_OR_RETURN(target::ForwardResult r,
                                target::Prefill(*target_, *state, tokens, chunk, {}));
          if (i > 0) s.push_back(Seconds(start));
          if (i > 0) continue;
          if (first.empty()) first = r.logits;
          same = same && r.logits.size() == first.size() &&
                 std::memcmp(r.logits.data(), first.data(), first.size() * sizeof(float)) == 0;
        }
        std::sort(s.begin(), s.end());
        const double median = s[s.size() / 2];
        last_median = median;
        std::printf(
            "prefill %lld tokens, chunks of %lld, %s: %.1f ms median of %d, %.0f tokens/s\n",
            static_cast<long long>(f_.prefill_tokens), static_cast<long long>(chunk), path.name,
            median * 1e3, f_.prefill_reps, f_.prefill_tokens / median);
        std::fflush(stdout);
        json_["prefill"].push_back({{"tokens", f_.prefill_tokens},
                                    {"chunk", chunk},
                                    {"prompt_path", path.prompt_rows == 0},
                                    {"tile", path.tile},
                                    {"median_s", median}});
      }
    }
    std::printf("prefill: the last row's logits of every run bit for bit: %s (sha256 %s)\n",
                same ? "equal" : "DIFFERENT", LogitsSha256(first).c_str());
    json_["prefill_logits_equal"] = same;
    ABSL_RETURN_IF_ERROR(cuda::SetCudaBackendExl3Prompt(*target_backend_, 0, 0));
    if (!same) return absl::InternalError("prefill logits differ between paths or chunk sizes");
    if (f_.profile) ABSL_RETURN_IF_ERROR(ProfilePrefill(tokens, last_median));
    return absl::OkStatus();
  }

  // --profile with --prefill-reps: the ops of one prefill in chunks of the last --prefill-chunks
  // size on the prompt path, against that configuration's median wall time.
  absl::Status ProfilePrefill(const std::vector<int32_t>& tokens, double wall_s) {
    const int64_t chunk = f_.prefill_chunks.back();
    const auto prefill = [this, &tokens, chunk]() -> absl::Status {
      ABSL_ASSIGN_OR_RETURN(std::unique_ptr<target::SequenceState> state, target_->NewSequence());
      return target::Prefill(*target_, *state, tokens, chunk, {}).status();
    };
    const auto none = [] { return absl::OkStatus(); };
    const ProfiledStep step{absl::StrFormat("prefill-%d", chunk),
                            target_profiler_.get(),
                            none,
                            prefill,
                            none,
                            wall_s * 1e6,
                            wall_s * 1e6};
    return ProfileStep(step);
  }

  // With two backends the commit runs on the target's stream and the draft on the drafter's, so
  // the round's second half is two segments there.
  Step RoundStep(int64_t rows) {
    RoundDriver& d = *driver_;
    Step step{"round", {{[&d, rows] { return d.Verify(rows, true); }, target_stream_}}, nullptr};
    const auto note = [this, &d]() { kept_.push_back(d.last_keep()); };
    if (!f_.two_backends) {
      step.segments.push_back({[&d, note] {
                                 ABSL_RETURN_IF_ERROR(d.Commit(false));
                                 note();
                                 return d.AppendAndDraft();
                               },
                               target_stream_});
    } else {
      step.segments.push_back({[&d, note] {
                                 ABSL_RETURN_IF_ERROR(d.Commit(true));
                                 note();
                                 return absl::OkStatus();
                               },
                               target_stream_});
      step.segments.push_back({[&d] { return d.AppendAndDraft(); }, drafter_stream_});
    }
    return step;
  }
  Step VerifyStep(int64_t rows, bool taps) {
    RoundDriver& d = *driver_;
    return {"verify", {{[&d, rows, taps] { return d.Verify(rows, taps); }, target_stream_}}, [&d] {
              return d.Discard();
            }};
  }
  Step DraftStep() {
    RoundDriver& d = *driver_;
    return {"draft", {{[&d] { return d.AppendOneAndDraft(); }, drafter_stream_}}, nullptr};
  }
  // The round without its draft timed: the commit is segment 1.
  Step CommitStep(int64_t rows) {
    RoundDriver& d = *driver_;
    return {"verify-16+commit",
            {{[&d, rows] { return d.Verify(rows, true); }, target_stream_},
             {[&d] { return d.Commit(true); }, target_stream_}},
            [&d] { return d.AppendAndDraft(); }};
  }

  // One profiled step: `before` and `after` untimed around `run`, one warm-up run first.
  struct ProfiledStep {
    std::string name;
    ProfilingBackend* profiler;
    std::function<absl::Status()> before, run, after;
    double wall_us, busy_us;
  };
  absl::Status Profile() {
    RoundDriver& d = *driver_;
    const int64_t rows = f_.verify_rows;
    const auto none = [] { return absl::OkStatus(); };
    const auto discard = [&d] { return d.Discard(); };
    ProfilingBackend* tp = target_profiler_.get();
    ProfilingBackend* dp = f_.two_backends ? drafter_profiler_.get() : tp;
    const StepTimes& commit = times_["verify-16+commit"];
    const std::vector<ProfiledStep> steps = {
        {"verify-1", tp, none, [&d] { return d.Verify(1, true); }, discard,
         times_["verify-1"].wall_us, times_["verify-1"].busy_us},
        {"verify-16", tp, none, [&d] { return d.Verify(16, true); }, discard,
         times_["verify-16"].wall_us, times_["verify-16"].busy_us},
        {"commit", tp, [&d, rows] { return d.Verify(rows, true); }, [&d] { return d.Commit(true); },
         [&d] { return d.AppendAndDraft(); }, commit.segment_wall_us.at(1),
         commit.segment_busy_us.at(1)},
        {"draft", dp, none, [&d] { return d.AppendOneAndDraft(); }, none, times_["draft"].wall_us,
         times_["draft"].busy_us},
    };
    for (const ProfiledStep& s : steps) ABSL_RETURN_IF_ERROR(ProfileStep(s));
    return absl::OkStatus();
  }
  absl::Status ProfileStep(const ProfiledStep& s) {
    for (int i = 0; i <= f_.profile_reps; ++i) {
      ABSL_RETURN_IF_ERROR(s.before());
      s.profiler->Begin(f_.profile_spin_us);
      const absl::Status run = s.run();
      ABSL_RETURN_IF_ERROR(s.profiler->End());
      ABSL_RETURN_IF_ERROR(run);
      ABSL_RETURN_IF_ERROR(s.after());
      if (i == 0) s.profiler->Take();  // The warm-up run.
    }
    PrintProfile(s, s.profiler->Take());
    return absl::OkStatus();
  }

  void PrintProfile(const ProfiledStep& s, const StepProfile& p) {
    std::printf(
        "==== profile %s: median of %d runs; each op timed alone behind a %.0f us spin\n"
        "%s: wall %.0f us, GPU busy %.0f us; ops' GPU time %.0f us (%.1f%% of wall); busy - ops "
        "%.0f us; wall - ops %.0f us (launch gaps, host); ops' host time %.0f us\n",
        s.name.c_str(), p.runs, f_.profile_spin_us, s.name.c_str(), s.wall_us, s.busy_us, p.gpu_us,
        100.0 * p.gpu_us / s.wall_us, s.busy_us - p.gpu_us, s.wall_us - p.gpu_us, p.host_us);
    std::printf("  %-34s %6s %9s %6s %9s %9s\n", "op", "calls", "GPU us", "share", "us/call",
                "host us");
    nlohmann::json ops = nlohmann::json::array();
    for (const OpProfile& o : p.ops) {
      std::printf("  %-34s %6.0f %9.1f %5.1f%% %9.2f %9.1f\n", o.op.c_str(), o.calls, o.gpu_us,
                  100.0 * o.gpu_us / s.wall_us, o.calls > 0 ? o.gpu_us / o.calls : 0.0, o.host_us);
      ops.push_back(
          {{"op", o.op}, {"calls", o.calls}, {"gpu_us", o.gpu_us}, {"host_us", o.host_us}});
    }
    std::printf("  %-34s %6s %9.1f %5.1f%%           %9.1f\n", "sum of ops", "", p.gpu_us,
                100.0 * p.gpu_us / s.wall_us, p.host_us);
    std::printf("  %-34s %6s %9.1f %5.1f%%\n", "rest (wall - ops: gaps, host)", "",
                s.wall_us - p.gpu_us, 100.0 * (s.wall_us - p.gpu_us) / s.wall_us);
    json_["profile"][s.name] = {{"wall_us", s.wall_us},
                                {"busy_us", s.busy_us},
                                {"ops_gpu_us", p.gpu_us},
                                {"ops_host_us", p.host_us},
                                {"runs", p.runs},
                                {"spin_us", f_.profile_spin_us},
                                {"ops", ops}};
    profile_lines_.push_back(absl::StrFormat(
        "%s: wall %.2f ms, busy %.2f ms, ops %.2f ms, rest %.2f ms; top: %s %.2f ms", s.name,
        s.wall_us / 1e3, s.busy_us / 1e3, p.gpu_us / 1e3, (s.wall_us - p.gpu_us) / 1e3,
        p.ops.empty() ? "-" : p.ops[0].op, p.ops.empty() ? 0.0 : p.ops[0].gpu_us / 1e3));
  }
  void PrintProfileSummary() const {
    std::printf("profile (per step; ops = GPU time of the backend's ops, each alone):\n");
    for (const std::string& l : profile_lines_) std::printf("  %s\n", l.c_str());
  }

  Bytes TargetBytes(int64_t rows, int64_t keep, bool taps) const {
    Bytes b = target_weights_;
    b += TargetStateBytes(target_->config(), rows, keep, driver_->target_length(),
                          taps ? drafter_->config().num_taps() : 0);
    return b;
  }
  Bytes DrafterBytes(int64_t appended) const {
    Bytes b = drafter_weights_;
    b += DrafterStateBytes(drafter_->config(), appended, driver_->block(),
                           driver_->drafter_length(), drafter_->head().columns());
    return b;
  }
  Bytes RoundBytes(int64_t rows) const {
    const int64_t keep = f_.keep > 0 ? f_.keep : 1;
    Bytes b = TargetBytes(rows, keep, true);
    b += DrafterBytes(keep);
    return b;
  }

  absl::Status Report(RoundTimer& timer, const std::string& name, const Step& step,
                      const Bytes& bytes) {
    kept_.clear();
    ABSL_ASSIGN_OR_RETURN(const StepTimes t, timer.Time(step, f_.warmup, f_.reps));
    const double floor_us = bytes.total() / (copy_gbs_ * 1e3);
    std::printf(
        "%-18s wall %8.0f us (p10 %.0f, p90 %.0f)  GPU span %8.0f  GPU busy %8.0f  "
        "launch gaps %6.0f  floor %6.0f us (%.2f GB)  %.1fx floor\n",
        name.c_str(), t.wall_us, t.wall_p10_us, t.wall_p90_us, t.span_us, t.busy_us,
        t.wall_us - t.busy_us, floor_us, bytes.total() / 1e9, t.wall_us / floor_us);
    nlohmann::json j = t.ToJson();
    j["bytes"] = bytes.ToJson();
    j["floor_us"] = floor_us;
    if (!kept_.empty()) {
      j["kept_rows"] = kept_;
      double mean = 0;
      for (const int64_t k : kept_) mean += static_cast<double>(k) / kept_.size();
      std::printf("%-18s rows committed per round: %.2f on average\n", "", mean);
    }
    json_["steps"][name] = j;
    times_[name] = t;
    floors_[name] = floor_us;
    return absl::OkStatus();
  }

  void PrintSummary(double target_s, double drafter_s) {
    const StepTimes& r = times_["round"];
    const double floor = floors_["round"];
    json_["goal_us"] = kGoalUs;
    json_["tokens_per_round"] = kTokensPerRound;
    json_["tokens_per_s"] = kTokensPerRound * 1e6 / r.wall_us;
    json_["cuda_graph"] = false;
    std::printf("==== summary (no CUDA graph: launch gaps = wall - GPU busy)\n");
    std::printf(
        "round (verify %lld rows%s, commit, draft B=%lld%s): wall %.2f ms, GPU busy %.2f ms, "
        "floor %.2f ms (%.1fx); goal 5 ms %s\n",
        static_cast<long long>(f_.tree_nodes > 0 ? f_.tree_nodes + 1 : f_.verify_rows),
        f_.tree_nodes > 0 ? " as a tree" : "", static_cast<long long>(driver_->block()),
        f_.two_backends ? ", two backends" : "", r.wall_us / 1e3, r.busy_us / 1e3, floor / 1e3,
        r.wall_us / floor, r.wall_us <= kGoalUs ? "met" : "NOT met");
    std::printf("round: %.0f tokens/s at %.2f tokens per round (goal 1348; GPU busy alone: %.0f)\n",
                kTokensPerRound * 1e6 / r.wall_us, kTokensPerRound,
                kTokensPerRound * 1e6 / r.busy_us);
    for (const char* s : {"verify-1", "verify-16", "verify-tree", "draft"}) {
      if (times_.count(s) == 0) continue;
      std::printf("%s: wall %.2f ms, GPU busy %.2f ms, floor %.2f ms\n", s, times_[s].wall_us / 1e3,
                  times_[s].busy_us / 1e3, floors_[s] / 1e3);
    }
    std::printf("load: target %.1f s, drafter %.1f s; copy %.0f GB/s\n", target_s, drafter_s,
                copy_gbs_);
  }

  const Flags f_;
  std::unique_ptr<backend::Backend> target_backend_, drafter_backend_;
  std::unique_ptr<ProfilingBackend> target_profiler_, drafter_profiler_;  // --profile
  std::vector<std::string> profile_lines_;
  std::unique_ptr<target::TargetModel> target_;
  std::unique_ptr<drafter::Drafter> drafter_;
  std::unique_ptr<RoundDriver> driver_;
  cudaStream_t target_stream_ = nullptr, drafter_stream_ = nullptr;
  std::vector<int64_t> kept_;
  Bytes target_weights_, drafter_weights_;
  double copy_gbs_ = 0;
  std::map<std::string, StepTimes> times_;
  std::map<std::string, double> floors_;
  nlohmann::json json_;
};

}  // namespace
}  // namespace twinspan::gpu

int main(int argc, char** argv) {
  twinspan::gpu::Flags f;
  CLI::App app{"twinspan_round_bench: one 27B-shaped speculative round on the GPU"};
  app.add_option("--target", f.target, "Target checkpoint (twinspan-synth qwen3.8-27b)")
      ->required();
  app.add_option("--drafter", f.drafter, "Drafter checkpoint (qwen3.8-27b-dflash2)")->required();
  app.add_option("--json", f.json, "Write the figures here");
  app.add_option("--head", f.head, "Head variant");
  app.add_option("--prompt", f.prompt, "Prompt tokens prefilled")->check(CLI::PositiveNumber);
  app.add_option("--context", f.context, "Positions per sequence and stream");
  app.add_option("--verify-rows", f.verify_rows, "Rows a round verifies")
      ->check(CLI::Range(int64_t{1}, twinspan::gpu::kMaxRoundRows));
  app.add_option("--tree-nodes", f.tree_nodes,
                 "Draft best-first trees of this many drafts and verify them as trees")
      ->check(CLI::Range(int64_t{0}, twinspan::gpu::kMaxRoundRows - 1));
  app.add_option("--block", f.block, "Draft block size (0: the drafter's)");
  app.add_option("--keep", f.keep, "Rows a round commits (0: as greedy acceptance says)");
  app.add_option("--reps", f.reps, "Timed runs per step")->check(CLI::Range(20, 10000));
  app.add_option("--warmup", f.warmup, "Untimed runs first");
  app.add_option("--prefill-reps", f.prefill_reps,
                 "Timed prefills of --prefill-tokens, prompt path and 64-row launches (0: none)")
      ->check(CLI::Range(0, 100));
  app.add_option("--prefill-tokens", f.prefill_tokens, "Tokens of each timed prefill")
      ->check(CLI::PositiveNumber);
  app.add_option("--prefill-chunks", f.prefill_chunks,
                 "Comma list of rows per forward of the timed prefills (the first also as 64-row "
                 "launches)")
      ->check(CLI::PositiveNumber)
      ->delimiter(',');
  app.add_flag("--two-backends", f.two_backends, "Drafter on a second CUDA backend, same GPU");
  app.add_flag("--host-taps", f.host_taps,
               "Taps through the host even on one backend (two backends always do)");
  app.add_flag("--profile", f.profile,
               "Per-op GPU time of verify-1, verify-16, the commit and the draft");
  app.add_option("--profile-reps", f.profile_reps, "Profiled runs per step")
      ->check(CLI::Range(1, 1000));
  app.add_option("--profile-spin-us", f.profile_spin_us,
                 "Spin queued before each profiled op (longer than its host side)")
      ->check(CLI::Range(0.0, 10000.0));
  CLI11_PARSE(app, argc, argv);
  twinspan::gpu::Bench bench(f);
  if (const absl::Status s = bench.Run(); !s.ok()) {
    std::fprintf(stderr, "twinspan_round_bench: FAILED: %s\n", s.ToString().c_str());
    std::printf("FAILED: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
