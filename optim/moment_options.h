// MomentOptionsBase: the options every first/second-moment optimizer has.
#pragma once
#include <memory>
#include <utility>

#include "framework/error.h"
#include "optim/optimizer.h"

namespace minidl::optim {

// The hyper-parameters of the Adam family (Adam, AdamW, Adamax, NAdam, RAdam); Derived is the concrete
// options type, so chained setters keep it.
template <class Derived>
struct MomentOptionsBase : OptimizerOptions {
  std::pair<double, double> betas_ = {0.9, 0.999};
  double eps_ = 1e-8;
  double weight_decay_ = 0.0;
  bool maximize_ = false;

  Derived& lr(double v) { lr_ = v; return self(); }
  Derived& betas(std::pair<double, double> v) { betas_ = v; return self(); }
  Derived& eps(double v) { eps_ = v; return self(); }
  Derived& weight_decay(double v) { weight_decay_ = v; return self(); }
  Derived& maximize(bool v) { maximize_ = v; return self(); }

  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<Derived>(self()); }
  Json to_json() const override {
    Json j = Json::object();
    j["lr"] = lr_;
    j["betas"] = Json::array({betas_.first, betas_.second});
    j["eps"] = eps_;
    j["weight_decay"] = weight_decay_;
    j["maximize"] = maximize_;
    return j;
  }
  void from_json(const Json& j) override {
    lr_ = j.get("lr", lr_);
    if (const Json* b = j.find("betas")) betas_ = {(*b)[0].as_double(), (*b)[1].as_double()};
    eps_ = j.get("eps", eps_);
    weight_decay_ = j.get("weight_decay", weight_decay_);
    maximize_ = j.get("maximize", maximize_);
  }

 protected:
  Derived& self() { return static_cast<Derived&>(*this); }
  const Derived& self() const { return static_cast<const Derived&>(*this); }
};

// PyTorch's checks of the family's options, with its words.
template <class Options>
void validate_moment_options(const char* name, const Options& o) {
  MINIDL_CHECK(o.lr_ >= 0.0, name, "Invalid learning rate: ", o.lr_);
  MINIDL_CHECK(o.eps_ >= 0.0, name, "Invalid epsilon value: ", o.eps_);
  MINIDL_CHECK(o.betas_.first >= 0.0 && o.betas_.first < 1.0, name, "Invalid beta parameter at index 0: ", o.betas_.first);
  MINIDL_CHECK(o.betas_.second >= 0.0 && o.betas_.second < 1.0, name, "Invalid beta parameter at index 1: ",
               o.betas_.second);
  MINIDL_CHECK(o.weight_decay_ >= 0.0, name, "Invalid weight_decay value: ", o.weight_decay_);
}

}  // namespace minidl::optim
