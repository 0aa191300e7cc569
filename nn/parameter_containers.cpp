// ParameterList and ParameterDict.
#include "nn/parameter_containers.h"

#include <sstream>

#include "framework/error.h"

namespace minidl::nn {

namespace {
// "(key): Parameter [3, 4] float32" entries, as PyTorch's repr lists them, on one line.
std::string describe_entries(const std::string& type, const TensorDict& entries) {
  std::ostringstream os;
  os << type << "(";
  bool first = true;
  for (const auto& [key, t] : entries) {
    os << (first ? "" : ", ") << "(" << key << "): Parameter " << shape_str(t.shape()) << " " << dtype_name(t.dtype());
    if (t.device().is_cuda()) os << " " << t.device().str();
    first = false;
  }
  os << ")";
  return os.str();
}

// A replica's slots: bind_replica replaces them, so only shape and dtype count.
std::vector<std::pair<std::string, Tensor>> fresh_like(const TensorDict& entries) {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& [key, t] : entries) out.emplace_back(key, empty(t.shape(), t.dtype()));
  return out;
}
}  // namespace

// ---------------------------------------------------------------- ParameterList

Tensor ParameterList::append(Tensor parameter) {
  MINIDL_CHECK(parameter.defined(), "ParameterList::append", "the parameter is an undefined tensor");
  return register_parameter(std::to_string(size()), std::move(parameter));
}

void ParameterList::extend(const std::vector<Tensor>& parameters) {
  for (const Tensor& p : parameters) append(p);
}

size_t ParameterList::checked_index(int64_t index) const {
  const auto n = static_cast<int64_t>(size());
  MINIDL_CHECK(index >= -n && index < n, "ParameterList", "index ", index, " is out of range for ", n, " parameters");
  return static_cast<size_t>(index < 0 ? index + n : index);
}

void ParameterList::set(int64_t index, Tensor parameter) {
  MINIDL_CHECK(parameter.defined(), "ParameterList::set", "the parameter is an undefined tensor");
  assign_parameter(std::to_string(checked_index(index)), std::move(parameter));
}

Tensor ParameterList::operator[](int64_t index) const { return own_parameters().item(checked_index(index)).second; }

std::string ParameterList::describe() const { return describe_entries(type_name(), own_parameters()); }

ModulePtr ParameterList::clone_structure() const {
  auto copy = std::make_shared<ParameterList>();
  for (auto& [key, t] : fresh_like(own_parameters())) copy->append(t);
  return copy;
}

// ---------------------------------------------------------------- ParameterDict

Tensor ParameterDict::insert(const std::string& key, Tensor parameter) {
  MINIDL_CHECK(parameter.defined(), "ParameterDict::insert", "the parameter under '", key, "' is an undefined tensor");
  return assign_parameter(key, std::move(parameter));
}

void ParameterDict::update(const std::vector<std::pair<std::string, Tensor>>& parameters) {
  for (const auto& [key, p] : parameters) insert(key, p);
}

Tensor ParameterDict::operator[](const std::string& key) const {
  const Tensor* t = own_parameters().find(key);
  MINIDL_CHECK(t != nullptr, "ParameterDict", "no parameter under the key '", key, "'");
  return *t;
}

Tensor ParameterDict::pop(const std::string& key) {
  Tensor t = (*this)[key];
  remove_parameter(key);
  return t;
}

void ParameterDict::clear() {
  for (const std::string& key : keys()) remove_parameter(key);
}

std::string ParameterDict::describe() const { return describe_entries(type_name(), own_parameters()); }

ModulePtr ParameterDict::clone_structure() const { return std::make_shared<ParameterDict>(fresh_like(own_parameters())); }

}  // namespace minidl::nn
