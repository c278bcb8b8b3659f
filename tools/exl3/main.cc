// twinspan-exl3: inspect EXL3 checkpoints and export dense weights.
//   twinspan-exl3 inspect DIR_OR_FILE
//   twinspan-exl3 dequant --in FILE --tensor PREFIX --out OUT.safetensors
//   twinspan-exl3 dequant-model --in EXL3_DIR --out DIR [--dtype f32|bf16]
#include <cstdio>
#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "common/safetensors/checkpoint.h"
#include "tools/exl3/dense_export.h"
#include "tools/exl3/inspect.h"

namespace {

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "twinspan-exl3: %s\n", std::string(status.message()).c_str());
  return 1;
}

int Inspect(const std::string& path) {
  absl::StatusOr<std::unique_ptr<twinspan::Checkpoint>> checkpoint =
      twinspan::Checkpoint::Open(path);
  if (!checkpoint.ok()) return Fail(checkpoint.status());
  absl::StatusOr<twinspan::exl3::CheckpointReport> report =
      twinspan::exl3::InspectCheckpoint(**checkpoint);
  if (!report.ok()) return Fail(report.status());
  std::fputs(twinspan::exl3::FormatReport(*report).c_str(), stdout);
  return 0;
}

int Dequant(const std::string& in, const std::string& prefix, const std::string& out) {
  absl::StatusOr<std::unique_ptr<twinspan::Checkpoint>> checkpoint = twinspan::Checkpoint::Open(in);
  if (!checkpoint.ok()) return Fail(checkpoint.status());
  const absl::Status status = twinspan::exl3::ExportDense(**checkpoint, prefix, out);
  if (!status.ok()) return Fail(status);
  return 0;
}

int DequantModel(const std::string& in, const std::string& out, const std::string& dtype) {
  const absl::Status status = twinspan::exl3::ExportDenseModel(
      in, out, dtype == "bf16" ? twinspan::DType::kBF16 : twinspan::DType::kF32);
  if (!status.ok()) return Fail(status);
  return 0;
}

}  // namespace

// CLI11_PARSE catches CLI11's own exceptions; any other (bad_alloc) should end the program.
// NOLINTNEXTLINE(bugprone-exception-escape)
int main(int argc, char** argv) {
  CLI::App app{"Inspect EXL3 checkpoints and export dense weights"};
  app.require_subcommand(1);

  std::string inspect_path;
  CLI::App* inspect =
      app.add_subcommand("inspect", "Per tensor: shape, K, codebook, bytes; then totals");
  inspect->add_option("path", inspect_path, "Checkpoint directory or .safetensors file")
      ->required();

  std::string in, prefix, out;
  CLI::App* dequant = app.add_subcommand(
      "dequant", "Write one EXL3 linear as dense fp32 'weight' [n, k] (HF orientation)");
  dequant->add_option("--in", in, "Checkpoint directory or .safetensors file")->required();
  dequant->add_option("--tensor", prefix, "Linear prefix, e.g. model.layers.0.mlp.down_proj")
      ->required();
  dequant->add_option("--out", out, "Output .safetensors file")->required();

  std::string model_in, model_out, dtype = "f32";
  CLI::App* dequant_model = app.add_subcommand(
      "dequant-model",
      "Write a whole EXL3 checkpoint as a dense HF checkpoint (every EXL3 linear as .weight)");
  dequant_model->add_option("--in", model_in, "EXL3 checkpoint folder")->required();
  dequant_model->add_option("--out", model_out, "output folder (must not exist, or be empty)")
      ->required();
  dequant_model->add_option("--dtype", dtype, "dtype of the dequantized linears")
      ->check(CLI::IsMember({"f32", "bf16"}))
      ->capture_default_str();

  CLI11_PARSE(app, argc, argv);
  if (inspect->parsed()) return Inspect(inspect_path);
  if (dequant_model->parsed()) return DequantModel(model_in, model_out, dtype);
  return Dequant(in, prefix, out);
}
