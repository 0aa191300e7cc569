// End-to-end training behaviour: a convergence test on a generated data set (f32, bf16 autocast,
// fp16 autocast + GradScaler), an interrupted run resumed from a checkpoint in fresh objects that
// ends bitwise equal to an uninterrupted one, and the zoo's models trained twice on two threads
// ending bitwise equal.
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <functional>

#include "data/dataloader.h"
#include "data/tensor_dataset.h"
#include "minidl.h"
#include "nn/models.h"
#include "thread_count.h"

using namespace minidl;

namespace {
// Four Gaussian blobs in 8-D, one class each: separable, so a small MLP must reach ~100%.
data::TensorDataset blobs(int64_t n, uint64_t seed) {
  Generator centers_gen(1234);  // the same four classes in every set
  Tensor centers = mul(randn({4, 8}, {}, &centers_gen), 3.0);
  Generator g(seed);
  Tensor labels = randint(0, 4, {n}, DType::I64, &g);
  Tensor x = add(index_select(centers, 0, labels), randn({n, 8}, {}, &g));
  return data::TensorDataset(x, labels);
}

struct Run {
  std::shared_ptr<nn::models::MLP> model;
  std::unique_ptr<optim::SGD> opt;
  std::unique_ptr<amp::GradScaler> scaler;
  std::unique_ptr<data::DataLoader> loader;
};

Run make_run(const data::Dataset& set, bool fp16) {
  manual_seed(42);
  Run r;
  r.model = std::make_shared<nn::models::MLP>(8, std::vector<int64_t>{32}, 4);
  r.opt = std::make_unique<optim::SGD>(r.model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  r.scaler = std::make_unique<amp::GradScaler>(amp::GradScalerOptions().enabled_(fp16).init_scale_(1024).growth_interval_(3));
  r.loader = std::make_unique<data::DataLoader>(set, data::LoaderOptions().batch_size(32).shuffle(true).seed(7).workers(1));
  return r;
}

// Trains until `steps` optimizer steps have been taken in total (counting from `done`).
void train_steps(Run& r, int64_t done, int64_t steps, std::optional<DType> amp_dtype) {
  while (done < steps) {
    for (auto& b : *r.loader) {
      r.opt->zero_grad();
      Tensor loss;
      {
        amp::autocast scope(DeviceType::CPU, amp_dtype, amp_dtype.has_value());
        loss = cross_entropy(r.model->forward(b.data), b.target);
      }
      r.scaler->scale(loss).backward();
      r.scaler->step(*r.opt);
      r.scaler->update();
      if (++done == steps) return;
    }
  }
}

double accuracy(nn::Layer& model, const data::TensorDataset& set, std::optional<DType> amp_dtype) {
  InferenceMode im;
  amp::autocast scope(DeviceType::CPU, amp_dtype, amp_dtype.has_value());
  data::Batch b = set.get_batch([&] {
    std::vector<int64_t> idx(set.size());
    for (int64_t i = 0; i < set.size(); ++i) idx[i] = i;
    return idx;
  }());
  Tensor pred = argmax(model.forward(b.data), 1);
  return sum(eq(pred, b.target)).item() / static_cast<double>(set.size());
}
}  // namespace

TEST_CASE("an MLP converges on a generated data set in f32, bf16 and fp16", "[training]") {
  data::TensorDataset train = blobs(2048, 1), test = blobs(512, 2);
  for (auto [name, dtype] : std::vector<std::pair<const char*, std::optional<DType>>>{
           {"f32", std::nullopt}, {"bf16", DType::BF16}, {"fp16", DType::F16}}) {
    INFO(name);
    Run r = make_run(train, dtype == DType::F16);
    train_steps(r, 0, 200, dtype);
    CHECK(accuracy(*r.model, test, dtype) > 0.97);
  }
}

TEST_CASE("resuming from a checkpoint in fresh objects is bitwise identical", "[training][checkpoint]") {
  data::TensorDataset set = blobs(1000, 3);  // 32 batches per epoch: the split lands mid-epoch
  for (bool fp16 : {false, true}) {
    INFO("fp16 " << fp16);
    std::optional<DType> amp_dtype = fp16 ? std::optional<DType>(DType::F16) : std::nullopt;
    Run whole = make_run(set, fp16);
    train_steps(whole, 0, 50, amp_dtype);

    const std::string path = "test_training_resume.safetensors";
    {
      Run first = make_run(set, fp16);
      train_steps(first, 0, 20, amp_dtype);
      Checkpoint ck;
      ck.put("model", first.model->state_dict());
      ck.put("optim", first.opt->state_dict());
      Json s = Json::object();
      for (const auto& [k, v] : first.scaler->state_dict()) s[k] = v;
      ck.put("scaler", s);
      ck.put("loader_epoch", Json(first.loader->state().epoch));
      ck.put("loader_batch", Json(first.loader->state().batch));
      ck.save(path);
    }
    Run second = make_run(set, fp16);  // fresh objects, fresh initialisation
    Checkpoint ck = Checkpoint::load(path);
    second.model->load_state_dict(ck.tensors_under("model"));
    second.opt->load_state_dict(ck.state_dict("optim"));
    if (fp16) {
      std::map<std::string, double> s;
      for (const auto& [k, v] : ck.meta.at("scaler").members()) s[k] = v.as_double();
      second.scaler->load_state_dict(s);
    }
    second.loader->load_state(ck.meta.at("loader_epoch").as_int(), ck.meta.at("loader_batch").as_int());
    train_steps(second, 20, 50, amp_dtype);
    std::remove(path.c_str());

    auto a = whole.model->parameters(), b = second.model->parameters();
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      auto va = a[i].to_vector<float>(), vb = b[i].to_vector<float>();
      CHECK(std::memcmp(va.data(), vb.data(), va.size() * sizeof(float)) == 0);
    }
    CHECK(whole.scaler->get_scale() == second.scaler->get_scale());
  }
}

TEST_CASE("the zoo's models trained twice from the same seed on two threads end bitwise equal", "[training][determinism]") {
  // Large enough for the parallel paths: the pool's chunked loops, batch norm's chunked sums,
  // oneDNN's convolutions on a batch split across threads, the GEMMs. Three runs each, so a
  // reduction whose order depended on which thread took which chunk would show.
  const minidl::testing::ThreadCount two(2);
  struct Case {
    const char* name;
    std::function<std::shared_ptr<nn::Layer>()> make;
    Shape input;
  };
  const Case cases[] = {
      {"mlp b128", [] { return std::make_shared<nn::models::MLP>(784, std::vector<int64_t>{256, 256}, 10); }, {128, 784}},
      {"lenet b32", [] { return std::make_shared<nn::models::LeNet5>(); }, {32, 1, 28, 28}},
      {"cnn b8", [] { return std::make_shared<nn::models::SmallCNN>(); }, {8, 3, 32, 32}},
      {"resnet20 b8", [] { return std::make_shared<nn::models::ResNet20>(); }, {8, 3, 32, 32}},
  };
  for (const Case& c : cases)
    for (std::optional<DType> amp_dtype : {std::optional<DType>(), std::optional<DType>(DType::BF16)}) {
      INFO(c.name << (amp_dtype ? " bf16 autocast" : " f32"));
      auto train = [&] {
        manual_seed(5);
        std::shared_ptr<nn::Layer> model = c.make();
        optim::SGD opt(model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
        Generator g(6);
        for (int step = 0; step < 3; ++step) {
          Tensor x = randn(c.input, {}, &g), y = randint(0, 10, {c.input[0]}, DType::I64, &g);
          opt.zero_grad();
          Tensor loss;
          {
            amp::autocast scope(DeviceType::CPU, amp_dtype, amp_dtype.has_value());
            loss = cross_entropy(model->forward(x), y);
          }
          loss.backward();
          opt.step();
        }
        std::vector<std::vector<float>> params;
        for (const Tensor& p : model->parameters()) params.push_back(p.to_vector<float>());
        return params;
      };
      const auto first = train();
      for (int run = 1; run < 3; ++run) {
        const auto again = train();
        REQUIRE(again.size() == first.size());
        for (size_t i = 0; i < first.size(); ++i) {
          INFO("run " << run << ", parameter " << i);
          CHECK(std::memcmp(again[i].data(), first[i].data(), first[i].size() * sizeof(float)) == 0);
        }
      }
    }
}
