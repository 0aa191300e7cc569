// TensorDict: an insertion-ordered map from names to tensors (PyTorch's OrderedDict[str, Tensor]).
// Module state dicts, named parameters and checkpoint contents use it; iteration follows insertion
// order, lookups are by name.
#pragma once
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "framework/error.h"
#include "ops/tensor.h"

namespace minidl {

class TensorDict {
 public:
  using Item = std::pair<std::string, Tensor>;

  TensorDict() = default;
  TensorDict(std::initializer_list<Item> items) {
    for (const auto& [k, v] : items) insert(k, v);
  }

  // Adds a new entry at the end; a duplicate name is an error.
  void insert(const std::string& name, const Tensor& t) {
    MINIDL_CHECK(!index_.count(name), "TensorDict", "duplicate key '", name, "'");
    index_.emplace(name, items_.size());
    items_.emplace_back(name, t);
  }
  // Replaces the value of an existing entry (keeping its position) or appends a new one.
  void set(const std::string& name, const Tensor& t) {
    auto it = index_.find(name);
    if (it == index_.end()) insert(name, t);
    else items_[it->second].second = t;
  }

  // Removes an entry (the others keep their order); a missing name is an error.
  void erase(const std::string& name) {
    auto it = index_.find(name);
    MINIDL_CHECK(it != index_.end(), "TensorDict", "no key '", name, "'");
    items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(it->second));
    index_.clear();
    for (size_t i = 0; i < items_.size(); ++i) index_.emplace(items_[i].first, i);
  }

  bool contains(const std::string& name) const { return index_.count(name) != 0; }
  const Tensor* find(const std::string& name) const {
    auto it = index_.find(name);
    return it == index_.end() ? nullptr : &items_[it->second].second;
  }
  const Tensor& at(const std::string& name) const {
    const Tensor* t = find(name);
    MINIDL_CHECK(t != nullptr, "TensorDict", "no key '", name, "'");
    return *t;
  }
  const Tensor& operator[](const std::string& name) const { return at(name); }

  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  std::vector<std::string> keys() const {
    std::vector<std::string> k;
    k.reserve(items_.size());
    for (const auto& it : items_) k.push_back(it.first);
    return k;
  }
  std::vector<Tensor> values() const {
    std::vector<Tensor> v;
    v.reserve(items_.size());
    for (const auto& it : items_) v.push_back(it.second);
    return v;
  }
  const Item& item(size_t i) const { return items_.at(i); }

  std::vector<Item>::const_iterator begin() const { return items_.begin(); }
  std::vector<Item>::const_iterator end() const { return items_.end(); }

 private:
  std::vector<Item> items_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace minidl
