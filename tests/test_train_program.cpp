// minidl-train as its users run it, as a separate process: --help and its error exits, the CIFAR-10
// path end to end on generated files in the official binary format (every CNN, f32 and both AMP
// modes: the loss must fall), and a run stopped after a checkpoint and resumed by a second process
// ending exactly where an uninterrupted run ends.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <tuple>
#include <vector>

#include "data/idx.h"
#include "serialize/serialize.h"
#include "framework/cuda.h"
#include "framework/json.h"
#include "ops/cpu_isa.h"
#include "targets.h"
#include "temp_dir.h"

#ifndef MINIDL_TRAIN_BIN
#error "MINIDL_TRAIN_BIN (the path of minidl-train) must be defined by the build"
#endif

using minidl::Json;

namespace {

struct Result {
  int status = -1;
  std::string output;  // stdout and stderr together
};

// Runs a shell command, capturing stdout and stderr together.
Result run_command(const std::string& cmd) {
  Result r;
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int raw = ::pclose(p);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

Result run_train(const std::string& args) { return run_command(std::string(MINIDL_TRAIN_BIN) + " " + args + " 2>&1"); }

// The values of `key=` on every EPOCH line, in order.
std::vector<double> epoch_values(const std::string& output, const std::string& key) {
  std::vector<double> out;
  size_t pos = 0;
  while ((pos = output.find("EPOCH ", pos)) != std::string::npos) {
    const size_t eol = output.find('\n', pos);
    const size_t k = output.find(" " + key + "=", pos);
    if (k != std::string::npos && k < eol) out.push_back(std::stod(output.substr(k + key.size() + 2)));
    pos = eol;
  }
  return out;
}

Json last_line_json(const std::string& output) {
  std::string s = output;
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return Json::parse(s.substr(s.rfind('\n') + 1));
}

// A CIFAR-10 set in the official layout (1 label byte + 3072 pixel bytes per record, channel
// planes R, G, B): each class is one bright channel in one of four quadrants over noise, so a
// small CNN can learn it in a few epochs.
void write_cifar10(const TempDir& dir, int per_file, uint32_t seed) {
  uint32_t state = seed;
  auto next = [&] { return state = state * 1664525u + 1013904223u; };
  auto write_file = [&](const std::string& name, int records) {
    std::ofstream f(dir.file(name), std::ios::binary);
    for (int r = 0; r < records; ++r) {
      const int label = static_cast<int>(next() >> 24) % 10;
      std::vector<uint8_t> rec(3073);
      rec[0] = static_cast<uint8_t>(label);
      const int channel = label % 3, quadrant = label % 4;
      for (int c = 0; c < 3; ++c)
        for (int y = 0; y < 32; ++y)
          for (int x = 0; x < 32; ++x) {
            const bool lit = c == channel && (y / 16) * 2 + x / 16 == quadrant;
            const int noise = static_cast<int>(next() >> 26);  // 0..63
            rec[1 + c * 1024 + y * 32 + x] = static_cast<uint8_t>((lit ? 160 : 40) + noise);
          }
      f.write(reinterpret_cast<const char*>(rec.data()), static_cast<std::streamsize>(rec.size()));
    }
  };
  for (int i = 1; i <= 5; ++i) write_file("data_batch_" + std::to_string(i) + ".bin", per_file);
  write_file("test_batch.bin", per_file);
}

// Fashion-MNIST-shaped IDX files (28x28 u8 images, u8 labels): class k is a bright horizontal
// band at rows 2k..2k+5 over noise.
void write_mnist_like(const TempDir& dir, int n_train, int n_test, int test_side = 28) {
  uint32_t state = 7;
  auto next = [&] { return state = state * 1664525u + 1013904223u; };
  auto write_split = [&](const std::string& prefix, int n, int side) {
    std::vector<uint8_t> images(static_cast<size_t>(n) * 784), labels(n);
    for (int i = 0; i < n; ++i) {
      labels[i] = static_cast<uint8_t>((next() >> 24) % 10);
      for (int p = 0; p < 784; ++p) {
        const int row = p / 28;
        const bool band = row >= 2 * labels[i] && row < 2 * labels[i] + 6;
        images[i * 784 + p] = static_cast<uint8_t>((band ? 180 : 20) + (next() >> 27));
      }
    }
    images.resize(static_cast<size_t>(n) * side * side);  // another side: the bands are cut, the shape is what counts
    minidl::data::write_idx_u8(dir.file(prefix + "-images-idx3-ubyte"), {n, side, side}, images.data());
    minidl::data::write_idx_u8(dir.file(prefix + "-labels-idx1-ubyte"), {n}, labels.data());
  };
  write_split("train", n_train, 28);
  write_split("t10k", n_test, test_side);
}

// The names of the tensors (weights, optimizer state) that differ between two checkpoints in
// any bit, or that only one of them holds.
std::vector<std::string> differing_tensors(const std::string& path_a, const std::string& path_b) {
  const minidl::Checkpoint a = minidl::Checkpoint::load(path_a), b = minidl::Checkpoint::load(path_b);
  std::vector<std::string> out;
  for (const std::string& name : a.tensors.keys()) {
    const minidl::Tensor* other = b.tensors.find(name);
    const minidl::Tensor& t = a.tensors.at(name);
    const size_t bytes = static_cast<size_t>(t.numel()) * minidl::element_size(t.dtype());
    if (!other || other->dtype() != t.dtype() || other->shape() != t.shape() ||
        std::memcmp(t.contiguous().raw_data(), other->contiguous().raw_data(), bytes) != 0)
      out.push_back(name);
  }
  for (const std::string& name : b.tensors.keys())
    if (!a.tensors.contains(name)) out.push_back(name);
  return out;
}
}  // namespace

TEST_CASE("minidl-train --help documents every flag, and bad input exits with status 2", "[train_program]") {
  Result help = run_train("--help");
  CHECK(help.status == 0);
  for (const char* flag : {"--model", "--dataset", "--data", "--epochs", "--batch-size", "--lr", "--optimizer", "--momentum",
                           "--weight-decay", "--seed", "--device", "--amp", "--checkpoint", "--resume", "--metrics", "--json",
                           "--precision-report", "--nan-policy", "Exit status"}) {
    INFO(flag);
    CHECK(help.output.find(flag) != std::string::npos);
  }
  for (const auto& [args, expected] : std::vector<std::pair<std::string, std::string>>{
           {"--bogus", "--bogus"},
           {"--epochs zero", "--epochs"},
           {"--epochs 0", "--epochs"},
           {"--amp fp8", "--amp"},
           {"--model transformer", "--model"},
           {"--lr", "--lr"}}) {
    INFO(args);
    Result r = run_train(args);
    CHECK(r.status == 2);
    CHECK(r.output.find(expected) != std::string::npos);
  }
}

TEST_CASE("minidl-train trains the CIFAR-10 models end to end on official-format files and the loss falls",
          "[train_program][cifar]") {
  TempDir dir;
  write_cifar10(dir, 64, 3);  // 320 training and 64 test images
  for (const auto& [model, amp, epochs] : std::vector<std::tuple<std::string, std::string, int>>{
           {"cnn", "off", 4}, {"cnn", "bf16", 4}, {"resnet20", "fp16", 2}}) {
    INFO(model << " --amp " << amp);
    Result r = run_train("--model " + model + " --dataset cifar10 --data " + dir.path.string() + " --epochs " +
                         std::to_string(epochs) + " --batch-size 32 --lr 0.02 --amp " + amp +
                         " --no-progress --seed 1 --metrics " + dir.file(model + amp + ".csv"));
    REQUIRE(r.status == 0);
    const std::vector<double> loss = epoch_values(r.output, "train_loss");
    REQUIRE(loss.size() == static_cast<size_t>(epochs));
    CHECK(loss.back() < 0.8 * loss.front());
    const Json summary = last_line_json(r.output);
    CHECK(summary.at("dataset").as_string() == "cifar10");
    CHECK(summary.at("amp").as_string() == amp);
    const double acc = summary.at("test_accuracy").as_double();
    CHECK(acc >= 0.0);
    CHECK(acc <= 1.0);
    if (amp == "fp16") CHECK(summary.at("final_scale").as_double() > 0);
  }
}

TEST_CASE("minidl-train resumed from a mid-epoch checkpoint in a new process ends as an uninterrupted run",
          "[train_program][checkpoint]") {
  TempDir dir;
  write_mnist_like(dir, 600, 200);
  const std::string common = "--dataset fashion-mnist --data " + dir.path.string() +
                             " --epochs 2 --batch-size 50 --no-progress --seed 4 --amp fp16";
  Result whole = run_train(common + " --json " + dir.file("whole.json"));
  REQUIRE(whole.status == 0);
  Result first = run_train(common + " --max-steps 17 --checkpoint " + dir.file("ck.safetensors"));
  REQUIRE(first.status == 0);
  Result rest = run_train(common + " --resume " + dir.file("ck.safetensors") + " --json " + dir.file("rest.json"));
  REQUIRE(rest.status == 0);
  CHECK(rest.output.find("resumed from") != std::string::npos);
  const Json a = last_line_json(whole.output), b = last_line_json(rest.output);
  CHECK(a.at("steps").as_int() == 24);
  CHECK(b.at("steps").as_int() == 24);
  // The same weights give the same evaluation, to the last bit.
  CHECK(a.at("test_loss").as_double() == b.at("test_loss").as_double());
  CHECK(a.at("test_accuracy").as_double() == b.at("test_accuracy").as_double());
  CHECK(a.at("final_scale").as_double() == b.at("final_scale").as_double());
  CHECK(a.at("test_accuracy").as_double() > 0.5);  // the bands are learnable
}

TEST_CASE("minidl-train --device cuda trains LeNet-5, the CIFAR CNN and ResNet-20 on a GPU, and refuses clearly without one",
          "[train_program][cuda]") {
  TempDir dir;
  write_mnist_like(dir, 256, 64);
  write_cifar10(dir, 32, 5);  // 160 training and 32 test images
  if (!minidl::cuda::is_available()) {
    Result r = run_train("--model lenet --dataset fashion-mnist --data " + dir.path.string() + " --device cuda --epochs 1 --no-progress");
    CHECK(r.status == 2);
    CHECK(r.output.find("--device cuda") != std::string::npos);
    CHECK(r.output.find(minidl::cuda::is_compiled() ? "no usable CUDA GPU" : "no CUDA backend") != std::string::npos);
    // Reported as skipped (a failure under MINIDL_EXPECT_GPU=1) for the training half.
    minidl::testing::runs_here(minidl::DeviceType::CUDA, "minidl-train --device cuda training");
    return;
  }
  for (const auto& [model, dataset, amp] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"lenet", "fashion-mnist", "off"}, {"lenet", "fashion-mnist", "fp16"}, {"lenet", "fashion-mnist", "bf16"},
           {"cnn", "cifar10", "fp16"}, {"resnet20", "cifar10", "bf16"}}) {
    INFO(model << " --amp " << amp);
    Result r = run_train("--model " + model + " --dataset " + dataset + " --data " + dir.path.string() +
                         " --device cuda --epochs 2 --batch-size 32 --lr 0.02 --amp " + amp + " --no-progress --seed 1");
    INFO(r.output);
    REQUIRE(r.status == 0);
    const Json summary = last_line_json(r.output);
    CHECK(summary.at("device").as_string() == "cuda");
    CHECK(summary.at("amp").as_string() == amp);
    const std::vector<double> loss = epoch_values(r.output, "train_loss");
    REQUIRE(loss.size() == 2);
    CHECK(std::isfinite(loss.back()));
    CHECK(loss.back() < loss.front());
  }
}

#ifdef MINIDL_MPIEXEC
TEST_CASE("minidl-train under mpirun -np 2 trains data parallel, rank 0 alone reports", "[train_program][dist]") {
  TempDir dir;
  write_mnist_like(dir, 600, 200);
  const std::string cmd = std::string(MINIDL_MPIEXEC) +
                          " --allow-run-as-root --oversubscribe -np 2 --mca btl self,tcp --mca btl_tcp_if_include lo " +
                          MINIDL_TRAIN_BIN + " --dataset fashion-mnist --data " + dir.path.string() +
                          " --epochs 2 --batch-size 25 --no-progress --seed 4 --json " + dir.file("dp.json") + " 2>&1";
  const Result r = run_command(cmd);
  INFO(r.output);
  REQUIRE(r.status == 0);
  auto count = [&](const std::string& s) {
    size_t k = 0;
    for (size_t pos = r.output.find(s); pos != std::string::npos; pos = r.output.find(s, pos + 1)) ++k;
    return k;
  };
  CHECK(count("data parallel: 2 ranks") == 1);
  CHECK(count("\"world_size\"") == 1);  // one JSON summary: rank 0's
  CHECK(epoch_values(r.output, "train_loss").size() == 2);
  const Json summary = last_line_json(r.output);
  CHECK(summary.at("world_size").as_int() == 2);
  CHECK(summary.at("batch_size").as_int() == 25);
  CHECK(summary.at("steps").as_int() == 24);  // 600 samples / (2 ranks x 25) per step, 2 epochs
  CHECK(summary.at("test_accuracy").as_double() > 0.5);
}
#endif

#ifdef MINIDL_MPIEXEC
TEST_CASE("minidl-train --sync-bn under mpirun -np 2 syncs the CNN's batch norms", "[train_program][dist][cifar]") {
  TempDir dir;
  write_cifar10(dir, 16, 5);  // 80 training and 16 test images
  const std::string cmd = std::string(MINIDL_MPIEXEC) +
                          " --allow-run-as-root --oversubscribe -np 2 --mca btl self,tcp --mca btl_tcp_if_include lo " +
                          MINIDL_TRAIN_BIN + " --model cnn --dataset cifar10 --data " + dir.path.string() +
                          " --epochs 1 --batch-size 8 --max-steps 3 --no-progress --sync-bn 2>&1";
  const Result r = run_command(cmd);
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK(r.output.find("sync_bn=on") != std::string::npos);
  CHECK(r.output.find("synced batch norm: 5 layers") != std::string::npos);  // rank 0 alone prints
  CHECK(last_line_json(r.output).at("steps").as_int() == 3);
}
#endif

TEST_CASE("minidl-train range-checks every integer flag: exit status 2 and the flag named", "[train_program]") {
  for (const auto& [args, flag] : std::vector<std::pair<std::string, std::string>>{
           {"--batch-size 9223372036854775807", "--batch-size"},
           {"--batch-size 99999999999999999999", "--batch-size"},
           {"--workers 4294967297", "--workers"},
           {"--workers -1", "--workers"},
           {"--seed -1", "--seed"},
           {"--seed 1.5", "--seed"},
           {"--epochs 9223372036854775807", "--epochs"},
           {"--epochs 2x", "--epochs"},
           {"--limit-train -5", "--limit-train"},
           {"--max-steps -1", "--max-steps"}}) {
    INFO(args);
    Result r = run_train(args + " --data /nonexistent-minidl-data --no-progress");
    CHECK(r.status == 2);
    CHECK(r.output.find(flag) != std::string::npos);
    CHECK(r.output.find("cannot open") == std::string::npos);  // refused before any data is read
  }
}

TEST_CASE("minidl-train checks that output paths are writable before training", "[train_program]") {
  TempDir dir;
  write_mnist_like(dir, 100, 20);
  const std::string common = "--data " + dir.path.string() + " --epochs 1 --batch-size 50 --no-progress ";
  for (const std::string flag : {"--checkpoint", "--metrics", "--json"}) {
    for (const std::string& path : {std::string("/nonexistent-minidl-dir/out"), dir.path.string()}) {
      INFO(flag << " " << path);
      Result r = run_train(common + flag + " " + path);
      CHECK(r.status == 2);
      CHECK(r.output.find(flag) != std::string::npos);
      CHECK(r.output.find(path) != std::string::npos);
      CHECK(r.output.find("EPOCH") == std::string::npos);  // nothing was trained
    }
  }
}

TEST_CASE("minidl-train stops on a non-finite loss (or skips it with --nan-policy skip); the summary is strict JSON",
          "[train_program][nan]") {
  TempDir dir;
  write_mnist_like(dir, 200, 40);
  const std::string common = "--data " + dir.path.string() + " --epochs 2 --batch-size 20 --lr 1e6 --no-progress --seed 3 ";
  auto strict = [](const std::string& text) {
    for (const char* word : {"NaN", "Infinity"}) {
      INFO(word);
      CHECK(text.find(word) == std::string::npos);
    }
  };
  Result stop = run_train(common + "--json " + dir.file("stop.json") + " --checkpoint " + dir.file("ck.safetensors"));
  CHECK(stop.status == 3);
  CHECK(stop.output.find("non-finite training loss") != std::string::npos);
  CHECK(stop.output.find("--nan-policy skip") != std::string::npos);
  std::ifstream f(dir.file("stop.json"));
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  REQUIRE(!text.empty());
  strict(text);
  const Json s = Json::parse(text);
  CHECK(s.at("train_loss").is_null());
  CHECK(s.at("stopped").as_string().find("non-finite training loss") != std::string::npos);
  CHECK(s.at("null_reasons").at("train_loss").as_string().find("not finite") != std::string::npos);

  Result skip = run_train(common + "--nan-policy skip");
  CHECK(skip.status == 0);
  const Json k = last_line_json(skip.output);
  CHECK(k.at("nonfinite_loss_batches").as_int() > 0);
  strict(k.dump());
  CHECK(run_train(common + "--nan-policy maybe").status == 2);
}

TEST_CASE("minidl-train --resume refuses a weights-only file, another batch size, sample limit or seed", "[train_program][checkpoint]") {
  TempDir dir;
  write_mnist_like(dir, 100, 20);
  const std::string common = "--data " + dir.path.string() + " --epochs 2 --no-progress ";
  const std::string ck = dir.file("ck.safetensors");
  REQUIRE(run_train(common + "--batch-size 20 --seed 5 --limit-train 80 --max-steps 2 --checkpoint " + ck).status == 0);
  for (const auto& [args, expected] : std::vector<std::pair<std::string, std::string>>{
           {"--batch-size 25 --seed 5 --limit-train 80", "--batch-size 20"},
           {"--batch-size 20 --seed 6 --limit-train 80", "--seed 5"},
           {"--batch-size 20 --seed 5 --limit-train 0", "--limit-train 80"}}) {
    INFO(args);
    Result r = run_train(common + args + " --resume " + ck);
    CHECK(r.status == 1);
    CHECK(r.output.find(expected) != std::string::npos);
    CHECK(r.output.find("minidl-train: minidl-train:") == std::string::npos);
  }
  CHECK(run_train(common + "--batch-size 20 --seed 5 --limit-train 80 --resume " + ck).status == 0);
  // Other hyper-parameters are taken from the checkpoint, and the run says so.
  Result changed = run_train(common + "--batch-size 20 --seed 5 --limit-train 80 --lr 0.5 --resume " + ck);
  CHECK(changed.status == 0);
  CHECK(changed.output.find("note: --lr 0.5 is not used: training continues with the checkpoint's 0.05") != std::string::npos);
  CHECK(epoch_values(changed.output, "lr") == std::vector<double>{0.05, 0.05});
  // A safetensors file of weights only (no training state).
  const std::string weights = dir.file("weights.safetensors");
  {
    std::ofstream w(weights, std::ios::binary);
    const std::string header = R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
    uint64_t n = header.size();
    w.write(reinterpret_cast<const char*>(&n), 8);
    w << header << std::string(4, '\0');
  }
  Result r = run_train(common + "--resume " + weights);
  CHECK(r.status == 1);
  CHECK(r.output.find("not a minidl-train checkpoint") != std::string::npos);
  CHECK(r.output.find(weights) != std::string::npos);
  CHECK(r.output.find("missing key") == std::string::npos);
}

TEST_CASE("minidl-train refuses an empty training set and test images of another shape", "[train_program]") {
  TempDir empty, mismatch;
  write_mnist_like(empty, 0, 20);
  Result r = run_train("--data " + empty.path.string() + " --epochs 1 --no-progress");
  CHECK(r.status == 1);
  CHECK(r.output.find("the training set in " + empty.path.string() + " is empty") != std::string::npos);
  write_mnist_like(mismatch, 40, 20, 14);
  r = run_train("--data " + mismatch.path.string() + " --epochs 1 --no-progress");
  CHECK(r.status == 1);
  CHECK(r.output.find("training images in " + mismatch.path.string() + " are [1, 28, 28] but test images are [1, 14, 14]") !=
        std::string::npos);
}

TEST_CASE("minidl-train --amp fp16 warns once when every step overflows and the loss scale cannot recover",
          "[train_program][amp]") {
  TempDir dir;
  write_mnist_like(dir, 120, 20);
  const std::string common = "--data " + dir.path.string() + " --amp fp16 --epochs 1 --batch-size 2 --no-progress --seed 2 ";
  const std::string ck = dir.file("ck.safetensors"), overflowing = dir.file("overflowing.safetensors");
  REQUIRE(run_train(common + "--max-steps 1 --checkpoint " + ck).status == 0);
  const std::string warning = "warning: fp16 loss scaling has collapsed";
  // Resumed as saved, the remaining 59 steps train: no warning.
  Result healthy = run_train(common + "--resume " + ck);
  CHECK(healthy.status == 0);
  CHECK(healthy.output.find(warning) == std::string::npos);
  // The same checkpoint with a loss scale of 3e38: the scaled f32 loss is inf, so every step has
  // inf/NaN gradients, is skipped and halves the scale (it would take ~110 halvings to recover).
  minidl::Checkpoint c = minidl::Checkpoint::load(ck);
  c.meta["scaler"]["scale"] = 3e38;
  c.save(overflowing);
  Result r = run_train(common + "--resume " + overflowing);
  INFO(r.output);
  CHECK(r.status == 0);
  const size_t at = r.output.find(warning);
  REQUIRE(at != std::string::npos);
  CHECK(r.output.find("50 consecutive skipped steps", at) != std::string::npos);
  CHECK(r.output.find(warning, at + 1) == std::string::npos);  // once
  CHECK(last_line_json(r.output).at("skipped_steps").as_int() == 59);
}

TEST_CASE("minidl-train --detect-anomaly stops at the first NaN/inf naming the op and module, and changes no result",
          "[train_program][anomaly]") {
  TempDir dir;
  write_mnist_like(dir, 200, 40);
  const std::string common = "--data " + dir.path.string() + " --epochs 1 --batch-size 20 --no-progress --seed 3 ";
  Result bad = run_train(common + "--lr 1e6 --detect-anomaly");
  INFO(bad.output);
  CHECK(bad.status == 1);
  CHECK(bad.output.find("minidl-train: anomaly mode: ") != std::string::npos);
  CHECK(bad.output.find("in module 'fc") != std::string::npos);
  CHECK(bad.output.find("non-finite training loss") == std::string::npos);  // caught before the loss
  // A healthy run checked everywhere ends exactly as without the checks.
  Result plain = run_train(common + "--lr 0.05"), checked = run_train(common + "--lr 0.05 --detect-anomaly");
  REQUIRE(plain.status == 0);
  REQUIRE(checked.status == 0);
  CHECK(checked.output.find("detect_anomaly=on") != std::string::npos);
  for (const char* key : {"train_loss", "test_loss", "test_accuracy"})
    CHECK(last_line_json(checked.output).at(key).as_double() == last_line_json(plain.output).at(key).as_double());
}

TEST_CASE("minidl-train reads --flag=value and flag values, and refuses clearly what it cannot read", "[train_program]") {
  TempDir dir;
  write_mnist_like(dir, 100, 20);
  // --flag=value, --flag value and a flag with a value (--no-progress=true) mixed; the JSON agrees.
  Result r = run_train("--data=" + dir.path.string() + " --epochs=1 --batch-size 50 --lr=0.1 --no-progress=true --seed=3");
  REQUIRE(r.status == 0);
  const Json j = last_line_json(r.output);
  CHECK(j.at("epochs").as_int() == 1);
  CHECK(j.at("batch_size").as_int() == 50);
  CHECK(j.at("steps").as_int() == 2);
  // With --amp off the EPOCH line carries no loss scale.
  CHECK(r.output.find("EPOCH 1/1") != std::string::npos);
  CHECK(r.output.find("scale=") == std::string::npos);
  // --no-progress=false keeps progress on (stdout is not a terminal: periodic lines, none this short).
  CHECK(run_train("--data " + dir.path.string() + " --epochs 1 --batch-size 50 --no-progress=false").status == 0);
  // The last of a repeated flag wins, as before.
  CHECK(last_line_json(run_train("--data " + dir.path.string() + " --epochs 3 --epochs 1 --batch-size 50 --no-progress").output)
            .at("epochs")
            .as_int() == 1);
  for (const auto& [args, expected] : std::vector<std::pair<std::string, std::string>>{
           {"--bogus=3", "unknown flag '--bogus'"},
           {"stray", "unknown flag 'stray'"},
           {"--epochs=0", "value 0 for --epochs is out of range"},
           {"--epochs", "flag --epochs needs a value"},
           {"--epochs --lr 0.1", "invalid value '--lr' for --epochs"},  // as before: the next word is the value
           {"--no-progress=maybe", "--no-progress"}}) {
    INFO(args);
    Result bad = run_train(args);
    CHECK(bad.status == 2);
    CHECK(bad.output.find(expected) != std::string::npos);
    CHECK(bad.output.find("terminate called") == std::string::npos);
  }
  // A library error (here: no data) is a message and status 1, never an abort.
  Result missing = run_train("--data /nonexistent-minidl-data --epochs 1 --no-progress");
  CHECK(missing.status == 1);
  CHECK(missing.output.find("minidl-train: ") != std::string::npos);
  CHECK(missing.output.find("terminate called") == std::string::npos);
}

TEST_CASE("every key of the JSON summary is documented by --help and the README", "[train_program]") {
  TempDir dir;
  write_mnist_like(dir, 100, 20);
  const Result r = run_train("--data " + dir.path.string() + " --epochs 1 --batch-size 50 --no-progress");
  REQUIRE(r.status == 0);
  const std::string help = run_train("--help").output;
  std::ifstream f(std::string(MINIDL_SOURCE_DIR) + "/README.md");
  const std::string readme((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  REQUIRE(!readme.empty());
  std::vector<std::string> keys;
  const Json summary = last_line_json(r.output);
  for (const auto& [key, value] : summary.members()) keys.push_back(key);
  for (const char* conditional : {"stopped", "null_reasons"}) keys.emplace_back(conditional);
  CHECK(keys.size() > 15);
  for (const std::string& key : keys) {
    INFO(key);
    CHECK(help.find(key) != std::string::npos);
    CHECK(readme.find("`" + key + "`") != std::string::npos);
  }
}

TEST_CASE("minidl-train names the CPU kernel set it runs, and refuses an unknown MINIDL_MAX_CPU_ISA", "[train_program]") {
  TempDir dir;
  write_mnist_like(dir, 40, 20);
  Result r = run_train("--data " + dir.path.string() + " --epochs 1 --no-progress");
  CHECK(r.status == 0);
  CHECK(r.output.find(std::string("cpu kernels: ") + minidl::kernels::cpu_isa_name(minidl::kernels::active_cpu_isa())) != std::string::npos);
  r = run_command("MINIDL_MAX_CPU_ISA=sse9 " + std::string(MINIDL_TRAIN_BIN) + " --data " + dir.path.string() +
                  " --epochs 1 --no-progress 2>&1");
  CHECK(r.status == 1);
  CHECK(r.output.find("MINIDL_MAX_CPU_ISA: unknown value 'sse9' (expected baseline, avx2 or avx512)") != std::string::npos);
}

TEST_CASE("minidl-train --lr-schedule sets the rate of every step, and a resumed run continues the schedule exactly",
          "[train_program][checkpoint]") {
  TempDir dir;
  write_mnist_like(dir, 600, 200);
  // 12 steps per epoch, 24 in all: a 4-step warm-up, then cosine over the remaining 20.
  const std::string common = "--dataset fashion-mnist --data " + dir.path.string() +
                             " --epochs 2 --batch-size 50 --no-progress --seed 4 --lr 0.05 --lr-schedule cosine --warmup-steps 4";
  const std::string whole_ck = dir.file("whole.safetensors"), rest_ck = dir.file("rest.safetensors");
  Result whole = run_train(common + " --checkpoint " + whole_ck);
  REQUIRE(whole.status == 0);
  const Json a = last_line_json(whole.output);
  // The last step (index 23) runs at the cosine's rate at its epoch 19 of 20; the first epoch ends
  // with the rate of step 12 (cosine epoch 8).
  const double pi = std::acos(-1.0);
  CHECK(a.at("final_lr").as_double() == Approx(0.05 * (1 + std::cos(pi * 19 / 20)) / 2).epsilon(1e-12));
  const std::vector<double> lrs = epoch_values(whole.output, "lr");
  REQUIRE(lrs.size() == 2);
  CHECK(lrs[0] == Approx(0.05 * (1 + std::cos(pi * 8 / 20)) / 2).epsilon(1e-4));  // EPOCH lines print 4-5 digits
  CHECK(whole.output.find("lr_schedule=cosine warmup_steps=4") != std::string::npos);

  // Stopped after step 7 (inside the warm-up's successor) and resumed in a new process.
  const std::string ck = dir.file("ck.safetensors");
  REQUIRE(run_train(common + " --max-steps 7 --checkpoint " + ck).status == 0);
  Result rest = run_train(common + " --resume " + ck + " --checkpoint " + rest_ck);
  REQUIRE(rest.status == 0);
  CHECK(rest.output.find("note:") == std::string::npos);  // nothing differs
  const Json b = last_line_json(rest.output);
  CHECK(b.at("final_lr").as_double() == a.at("final_lr").as_double());
  // To the last bit: the weights and the optimizer state, and so the evaluation.
  CHECK(differing_tensors(whole_ck, rest_ck).empty());
  CHECK(b.at("test_loss").as_double() == a.at("test_loss").as_double());
  CHECK(b.at("test_accuracy").as_double() == a.at("test_accuracy").as_double());

  // Another schedule, warm-up or length is refused, naming what the checkpoint was written with.
  for (const auto& [args, expected] : std::vector<std::pair<std::string, std::string>>{
           {" --lr-schedule step", "was written with --lr-schedule cosine --warmup-steps 4"},
           {" --warmup-steps 2", "was written with --lr-schedule cosine --warmup-steps 4"},
           {" --epochs 3", "spans 24 steps, this run's would span 36"}}) {
    INFO(args);
    Result r = run_train(common + args + " --resume " + ck);
    CHECK(r.status == 1);
    CHECK(r.output.find(expected) != std::string::npos);
  }
}

// Kernels whose results depended on the addresses of their buffers (Eigen's element-by-element head
// and tail around aligned packets; test_cpu_isa) made a run's bits depend on the heap's layout,
// which the lengths of the argument strings move: a run and its resumption ended 1-2 ulp apart in
// some layouts (the temporary folder's name carries the PID). The same run with its data folder
// spelled 32 ways, each 2 characters longer ("/." appended): every one ends with the same bits.
TEST_CASE("minidl-train ends bit for bit the same whatever the lengths of its argument strings",
          "[train_program][checkpoint]") {
  TempDir dir;
  write_mnist_like(dir, 600, 200);
  const std::string flags = " --dataset fashion-mnist --epochs 2 --batch-size 50 --no-progress --seed 4 --lr-schedule cosine";
  std::string data = dir.path.string();
  const std::string first_ck = dir.file("ck100.safetensors");
  double first_loss = 0;
  for (int k = 0; k < 32; ++k, data += "/.") {
    const std::string ck = dir.file("ck" + std::to_string(100 + k) + ".safetensors");  // names of one length
    Result r = run_train("--data " + data + flags + " --checkpoint " + ck);
    INFO("data folder " << data);
    REQUIRE(r.status == 0);
    const double loss = last_line_json(r.output).at("test_loss").as_double();
    if (k == 0) {
      first_loss = loss;
      continue;
    }
    CHECK(loss == first_loss);
    CHECK(differing_tensors(first_ck, ck).empty());
  }
}

TEST_CASE("minidl-train --lr-schedule step and onecycle follow torch's schedules; bad schedule flags exit 2",
          "[train_program]") {
  TempDir dir;
  write_mnist_like(dir, 200, 20);
  const std::string common = "--data " + dir.path.string() + " --epochs 2 --batch-size 20 --no-progress --lr 0.1 ";  // 20 steps
  // step: x0.1 at 10 and 15; the last step (19) runs at 0.001.
  Result step = run_train(common + "--lr-schedule step");
  REQUIRE(step.status == 0);
  CHECK(last_line_json(step.output).at("final_lr").as_double() == Approx(0.1 * 0.1 * 0.1).epsilon(1e-12));
  CHECK(epoch_values(step.output, "lr") == std::vector<double>{0.01, 0.001});
  // onecycle over 20 steps: torch's OneCycleLR(max_lr=0.1, total_steps=20) sets 4e-07
  // for its step 19 (the last): initial_lr / final_div_factor.
  Result one = run_train(common + "--lr-schedule onecycle");
  REQUIRE(one.status == 0);
  CHECK(last_line_json(one.output).at("final_lr").as_double() == Approx(4e-07).epsilon(1e-9));
  for (const auto& [args, expected] : std::vector<std::pair<std::string, std::string>>{
           {"--lr-schedule linear", "invalid value 'linear' for --lr-schedule"},
           {"--lr-schedule onecycle --warmup-steps 3", "--warmup-steps does not apply to --lr-schedule onecycle"},
           {"--lr-schedule cosine --warmup-steps 20", "--warmup-steps 20 leaves no steps for --lr-schedule cosine (the run has 20 steps)"},
           {"--warmup-steps -1", "--warmup-steps"}}) {
    INFO(args);
    Result r = run_train(common + args);
    CHECK(r.status == 2);
    CHECK(r.output.find(expected) != std::string::npos);
  }
  // A warm-up alone (constant): from lr/3 up to lr over 5 steps, then lr.
  Result warm = run_train(common + "--warmup-steps 5");
  REQUIRE(warm.status == 0);
  CHECK(last_line_json(warm.output).at("final_lr").as_double() == 0.1);
}
