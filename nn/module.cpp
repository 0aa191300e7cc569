// nn::Module: registration, traversal, modes, device/dtype moves, state dicts, printing.
#include "nn/module.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <ostream>
#include <sstream>
#include <typeinfo>
#include <unordered_set>

#include "framework/grad_mode.h"
#include "framework/error.h"
#include "autocast/state.h"
#include "ops/ops.h"

namespace minidl::nn {

namespace {
struct AutocastSetting {
  DeviceType device;
  std::optional<DType> dtype;
  bool enabled;
};

// What a module's forward runs inside: its path as the scope name of the nodes it records, and its
// own autocast setting if it has one.
struct DefaultForwardScope {
  std::optional<amp::ScopeName> name;
  std::optional<amp::autocast> autocast;
};

std::shared_ptr<void> default_forward_scope(const Module& m) {
  const auto& setting = std::static_pointer_cast<AutocastSetting>(m.amp_state());
  if (m.path().empty() && !setting) return nullptr;
  auto scope = std::make_shared<DefaultForwardScope>();
  if (!m.path().empty()) scope->name.emplace(m.path(), true);
  if (setting) scope->autocast.emplace(setting->device, setting->dtype, setting->enabled);
  return scope;
}

ForwardScopeFactory& scope_factory() {
  static ForwardScopeFactory f = default_forward_scope;
  return f;
}

std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}
}  // namespace

void set_forward_scope_factory(ForwardScopeFactory factory) { scope_factory() = std::move(factory); }

void Module::set_autocast(std::optional<DType> dtype, bool enabled, DeviceType device) {
  amp_state_ = std::make_shared<AutocastSetting>(AutocastSetting{device, dtype, enabled});
}

namespace {
// The modules whose forward scope is open on this thread, innermost last.
std::vector<const Module*>& open_scopes() {
  thread_local std::vector<const Module*> open;
  return open;
}
}  // namespace

ForwardScope::ForwardScope(const Module* module, std::shared_ptr<void> state)
    : module_(module), state_(std::move(state)) {
  open_scopes().push_back(module_);
}

ForwardScope::~ForwardScope() {
  if (!module_) return;
  auto& open = open_scopes();
  // Innermost first; a token outliving an inner one (unusual) is still found.
  for (auto it = open.rbegin(); it != open.rend(); ++it)
    if (*it == module_) {
      open.erase(std::next(it).base());
      break;
    }
  state_.reset();  // close the scope (autocast, name) before the token is gone
}

ForwardScope Module::forward_scope() const {
  const ForwardScopeFactory& f = scope_factory();
  if (!f) return ForwardScope();
  const auto& open = open_scopes();
  if (!open.empty() && open.back() == this) return ForwardScope();  // already open: called, then forward opened it
  return ForwardScope(this, f(*this));
}

namespace detail {
void set_data(const Tensor& param, const Tensor& data) {
  TensorImpl* p = param.impl();
  const TensorImpl* d = data.impl();
  p->storage = d->storage;
  p->sizes = d->sizes;
  p->strides = d->strides;
  p->offset = d->offset;
  p->dtype = d->dtype;
  p->grad_accumulator.reset();  // its recorded input metadata described the old data
}

std::string group_digits(int64_t n) {
  const std::string digits = std::to_string(n < 0 ? -n : n);
  std::string s = n < 0 ? std::string(1, '-') : std::string();
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) s.push_back(',');
    s.push_back(digits[i]);
  }
  return s;
}
}  // namespace detail

// ---------------------------------------------------------------- registration

void Module::check_new_name(const std::string& name, const char* what) const {
  MINIDL_CHECK(!name.empty(), what, "name cannot be empty");
  MINIDL_CHECK(name.find('.') == std::string::npos, what, "name '", name, "' cannot contain \".\"");
  MINIDL_CHECK(!parameters_.contains(name) && !buffers_.contains(name) &&
                   std::none_of(children_.begin(), children_.end(), [&](const auto& c) { return c.first == name; }),
               what, "attribute '", name, "' already exists in ", type_name());
}

Tensor Module::prepare_parameter(const std::string& name, Tensor tensor, bool requires_grad) const {
  if (tensor.defined()) {
    MINIDL_CHECK(tensor.is_leaf(), "register_parameter", "parameter '", name,
                 "' must be a leaf tensor (use .detach() on the result of an operation)");
    if (tensor.is_floating_point()) tensor.requires_grad_(requires_grad);
    else MINIDL_CHECK(!requires_grad, "register_parameter", "parameter '", name, "' is ", dtype_name(tensor.dtype()),
                      "; only floating point parameters can require gradients (pass requires_grad=false)");
    tensor.set_name(join(path_, name));
  }
  return tensor;
}

Tensor Module::register_parameter(const std::string& name, Tensor tensor, bool requires_grad) {
  check_new_name(name, "register_parameter");
  tensor = prepare_parameter(name, std::move(tensor), requires_grad);
  parameters_.insert(name, tensor);
  return tensor;
}

Tensor Module::assign_parameter(const std::string& name, Tensor tensor) {
  if (!parameters_.contains(name)) return register_parameter(name, std::move(tensor));
  tensor = prepare_parameter(name, std::move(tensor), true);
  parameters_.set(name, tensor);
  return tensor;
}

void Module::remove_parameter(const std::string& name) {
  MINIDL_CHECK(parameters_.contains(name), type_name(), "no parameter named '", name, "'");
  parameters_.erase(name);
}

Tensor Module::register_buffer(const std::string& name, Tensor tensor, bool persistent) {
  check_new_name(name, "register_buffer");
  MINIDL_CHECK(!tensor.defined() || !tensor.requires_grad() || tensor.is_leaf(), "register_buffer", "buffer '", name,
               "' is part of a graph; register a detached tensor");
  if (tensor.defined()) tensor.set_name(join(path_, name));
  buffers_.insert(name, tensor);
  if (!persistent) non_persistent_.push_back(name);
  return tensor;
}

void Module::adopt_module(const std::string& name, const ModulePtr& module) {
  MINIDL_CHECK(module != nullptr, "register_module", "submodule '", name, "' is null");
  MINIDL_CHECK(module.get() != this, "register_module", "a module cannot be its own submodule");
  module->name_ = name;
  module->set_path(join(path_, name));
}

// A submodule taken out of this tree becomes a root again: its names no longer carry our path.
void Module::release_module(Module& module) {
  module.name_.clear();
  module.set_path("");
}

void Module::register_module_impl(const std::string& name, const ModulePtr& module) {
  check_new_name(name, "register_module");
  adopt_module(name, module);
  children_.emplace_back(name, module);
}

void Module::assign_module(const std::string& name, const ModulePtr& module) {
  auto it = std::find_if(children_.begin(), children_.end(), [&](const auto& c) { return c.first == name; });
  if (it == children_.end()) return register_module_impl(name, module);
  adopt_module(name, module);
  if (it->second != module) release_module(*it->second);
  it->second = module;
}

void Module::remove_module(const std::string& name) {
  auto it = std::find_if(children_.begin(), children_.end(), [&](const auto& c) { return c.first == name; });
  MINIDL_CHECK(it != children_.end(), type_name(), "no submodule named '", name, "'");
  release_module(*it->second);
  children_.erase(it);
}

void Module::set_path(const std::string& path) {
  path_ = path;
  for (const auto& [n, t] : parameters_)
    if (t.defined()) t.set_name(join(path_, n));
  for (const auto& [n, t] : buffers_)
    if (t.defined()) t.set_name(join(path_, n));
  for (const auto& [n, c] : children_) c->set_path(join(path_, n));
}

// ---------------------------------------------------------------- names

std::string Module::type_name() const {
  const char* mangled = typeid(*this).name();
  int status = 0;
  char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string s = (status == 0 && demangled) ? demangled : mangled;
  std::free(demangled);
  // Drop namespaces ("minidl::nn::Linear", "(anonymous namespace)::Net") but keep template args.
  const size_t lt = s.find('<');
  const size_t cut = s.rfind("::", lt == std::string::npos ? std::string::npos : lt);
  if (cut != std::string::npos) s = s.substr(cut + 2);
  return s;
}

std::string Module::describe() const { return type_name(); }

// ---------------------------------------------------------------- traversal

TensorDict Module::named_parameters(bool recurse) const {
  TensorDict out;
  std::unordered_set<const TensorImpl*> seen;
  std::function<void(const Module&, const std::string&)> walk = [&](const Module& m, const std::string& prefix) {
    for (const auto& [n, t] : m.parameters_)
      if (t.defined() && seen.insert(t.impl()).second) out.insert(join(prefix, n), t);
    if (recurse)
      for (const auto& [n, c] : m.children_) walk(*c, join(prefix, n));
  };
  walk(*this, "");
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const { return named_parameters(recurse).values(); }

TensorDict Module::named_buffers(bool recurse) const {
  TensorDict out;
  std::unordered_set<const TensorImpl*> seen;
  std::function<void(const Module&, const std::string&)> walk = [&](const Module& m, const std::string& prefix) {
    for (const auto& [n, t] : m.buffers_)
      if (t.defined() && seen.insert(t.impl()).second) out.insert(join(prefix, n), t);
    if (recurse)
      for (const auto& [n, c] : m.children_) walk(*c, join(prefix, n));
  };
  walk(*this, "");
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const { return named_buffers(recurse).values(); }

std::vector<std::pair<std::string, ModulePtr>> Module::named_children() const { return children_; }

std::vector<ModulePtr> Module::children() const {
  std::vector<ModulePtr> out;
  for (const auto& c : children_) out.push_back(c.second);
  return out;
}

std::vector<std::pair<std::string, ModulePtr>> Module::named_modules() {
  // A module not owned by a shared_ptr (e.g. on the stack) is returned as a non-owning pointer.
  ModulePtr self = weak_from_this().lock();
  if (!self) self = ModulePtr(ModulePtr(), this);
  std::vector<std::pair<std::string, ModulePtr>> out;
  std::unordered_set<const Module*> seen;
  std::function<void(const ModulePtr&, const std::string&)> walk = [&](const ModulePtr& m, const std::string& prefix) {
    if (!seen.insert(m.get()).second) return;
    out.emplace_back(prefix, m);
    for (const auto& [n, c] : m->children_) walk(c, join(prefix, n));
  };
  walk(self, "");
  return out;
}

std::vector<ModulePtr> Module::modules() {
  std::vector<ModulePtr> out;
  for (auto& m : named_modules()) out.push_back(m.second);
  return out;
}

int64_t Module::num_parameters(bool trainable_only) const {
  int64_t n = 0;
  for (const auto& [name, t] : named_parameters())
    if (!trainable_only || t.requires_grad()) n += t.numel();
  return n;
}

void Module::apply(const std::function<void(Module&)>& fn) {
  for (auto& [n, c] : children_) c->apply(fn);
  fn(*this);
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [n, c] : children_) c->train(on);
}

Module& Module::requires_grad_(bool requires_grad) {
  for (Tensor p : parameters()) p.requires_grad_(requires_grad);
  return *this;
}

// ---------------------------------------------------------------- device / dtype

namespace {
// Replaces t's data by convert(t), and its gradient likewise; visits each TensorImpl once.
void convert_all(Module& root, const std::function<Tensor(const Tensor&)>& convert) {
  NoGradGuard ng;
  std::unordered_set<const TensorImpl*> seen;
  auto visit = [&](const Tensor& t) {
    if (!t.defined() || !seen.insert(t.impl()).second) return;
    Tensor data = convert(t.detach());
    if (data.impl() == t.impl() || (data.impl()->storage == t.impl()->storage && data.dtype() == t.dtype())) return;
    Tensor grad = t.grad();
    detail::set_data(t, data);
    if (grad.defined()) Tensor(t).set_grad(convert(grad.detach()));
  };
  for (const Tensor& p : root.named_parameters().values()) visit(p);
  for (const Tensor& b : root.named_buffers().values()) visit(b);
}
}  // namespace

void Module::to(Device device) {
  convert_all(*this, [&](const Tensor& t) { return t.to(device); });
}

namespace {
// As PyTorch's "nn.Module.to only accepts floating point or complex dtypes": an integer module
// would hold parameters that require grad but cannot have one, truncated to integers.
void check_module_dtype(DType dtype) {
  MINIDL_CHECK(is_floating(dtype), "Module::to", "only floating point dtypes are accepted, got ", dtype_name(dtype));
}
}  // namespace

void Module::to(DType dtype) {
  check_module_dtype(dtype);
  convert_all(*this, [&](const Tensor& t) { return t.is_floating_point() ? t.to(dtype) : t; });
}

void Module::to(Device device, DType dtype) {
  check_module_dtype(dtype);
  convert_all(*this, [&](const Tensor& t) { return (t.is_floating_point() ? t.to(dtype) : t).to(device); });
}

void Module::zero_grad(bool set_to_none) {
  NoGradGuard ng;
  for (Tensor p : parameters()) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (set_to_none) {
      p.set_grad(Tensor());
    } else {
      Tensor z = g.detach();  // drop any graph a create_graph backward attached
      z.zero_();
      p.set_grad(z);
    }
  }
}

// ---------------------------------------------------------------- state dicts

void Module::collect_state(const std::string& prefix, TensorDict& out, bool detach) const {
  for (const auto& [n, t] : parameters_)
    if (t.defined()) out.insert(join(prefix, n), detach ? t.detach() : t);
  for (const auto& [n, t] : buffers_) {
    if (!t.defined()) continue;
    if (std::find(non_persistent_.begin(), non_persistent_.end(), n) != non_persistent_.end()) continue;
    out.insert(join(prefix, n), detach ? t.detach() : t);
  }
  for (const auto& [n, c] : children_) c->collect_state(join(prefix, n), out, detach);
}

void Module::zero_buffer_when_missing(const std::string& name) {
  MINIDL_CHECK(buffers_.contains(name), type_name(), "zero_buffer_when_missing: no buffer named '", name, "'");
  zero_when_missing_.push_back(name);
}

void Module::collect_zero_when_missing(const std::string& prefix, std::vector<std::string>& out) const {
  for (const auto& n : zero_when_missing_) out.push_back(join(prefix, n));
  for (const auto& [n, c] : children_) c->collect_zero_when_missing(join(prefix, n), out);
}

// PyTorch's rule, module by module: a key under this module's prefix is unexpected when its next
// name is neither a child nor one of the module's own parameters or persistent buffers.
void Module::collect_unexpected(const std::string& prefix, const TensorDict& state, std::vector<std::string>& out) const {
  const std::string head = prefix.empty() ? prefix : prefix + ".";
  for (const auto& [key, t] : state) {
    if (key.compare(0, head.size(), head) != 0) continue;
    const std::string next = key.substr(head.size(), key.find('.', head.size()) - head.size());
    const bool child = std::any_of(children_.begin(), children_.end(), [&](const auto& c) { return c.first == next; });
    const bool parameter = parameters_.contains(next) && parameters_.at(next).defined();
    const bool buffer = buffers_.contains(next) && buffers_.at(next).defined() &&
                        std::find(non_persistent_.begin(), non_persistent_.end(), next) == non_persistent_.end();
    if (!child && !parameter && !buffer) out.push_back(key);
  }
  for (const auto& [n, c] : children_) c->collect_unexpected(join(prefix, n), state, out);
}

TensorDict Module::state_dict() const {
  TensorDict out;
  collect_state("", out, true);
  return out;
}

namespace {
// PyTorch's backward-compatibility rule: a 0-dim tensor takes the first element of a 1-D entry.
bool scalar_from_vector(const Tensor& own, const Tensor& entry) {
  return own.dim() == 0 && entry.dim() == 1 && entry.numel() > 0;
}
}  // namespace

LoadResult Module::load_state_dict(const TensorDict& state, bool strict) {
  TensorDict own;
  collect_state("", own, false);
  std::vector<std::string> zero_when_missing;
  collect_zero_when_missing("", zero_when_missing);
  auto zeroed_when_missing = [&](const std::string& name) {
    return std::find(zero_when_missing.begin(), zero_when_missing.end(), name) != zero_when_missing.end();
  };
  LoadResult r;
  std::vector<std::string> mismatches;
  for (const auto& [name, t] : own) {
    const Tensor* src = state.find(name);
    if (!src) {
      if (!zeroed_when_missing(name)) r.missing_keys.push_back(name);
      continue;
    }
    MINIDL_CHECK(src->defined(), "load_state_dict", "state dict entry '", name, "' is an undefined tensor");
    if (src->shape() != t.shape() && !scalar_from_vector(t, *src))
      mismatches.push_back(minidl::detail::concat("size mismatch for ", name, ": copying a param with shape ",
                                          shape_str(src->shape()), " from checkpoint, the shape in current model is ",
                                          shape_str(t.shape()), "."));
  }
  collect_unexpected("", state, r.unexpected_keys);

  auto quoted = [](const std::vector<std::string>& keys) {
    std::string s;
    for (size_t i = 0; i < keys.size(); ++i) s += (i ? ", \"" : "\"") + keys[i] + "\"";
    return s;
  };
  std::vector<std::string> errors;
  if (strict && !r.missing_keys.empty()) errors.push_back("Missing key(s) in state_dict: " + quoted(r.missing_keys) + ". ");
  if (strict && !r.unexpected_keys.empty())
    errors.push_back("Unexpected key(s) in state_dict: " + quoted(r.unexpected_keys) + ". ");
  errors.insert(errors.end(), mismatches.begin(), mismatches.end());
  if (!errors.empty()) {
    std::string msg = "Error(s) in loading state_dict for " + type_name() + ":";
    for (const auto& e : errors) msg += "\n\t" + e;
    throw Error(msg);
  }

  NoGradGuard ng;
  for (const auto& [name, t] : own) {
    if (const Tensor* src = state.find(name)) t.detach().copy_(scalar_from_vector(t, *src) ? src->select(0, 0) : *src);
    else if (zeroed_when_missing(name)) t.detach().zero_();
  }
  return r;
}

// ---------------------------------------------------------------- replication

ModulePtr Module::clone_structure() const {
  throw Error(detail::concat(type_name(), " cannot be replicated: it does not provide clone_structure() (override "
                             "nn::Module::clone_structure() to build a new ", type_name(),
                             " of the same configuration, or derive from nn::Cloneable<", type_name(), ">)"));
}

namespace {
std::string comma_list(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
  return s;
}

// Makes `slot` stand for `value`: its data (as set_data) and its autograd history, so the slot is
// a non-leaf output of the node that made `value` (or a plain leaf when nothing was recorded).
void take_on(const Tensor& slot, const Tensor& value) {
  detail::set_data(slot, value);
  TensorImpl* s = slot.impl();
  const TensorImpl* v = value.impl();
  s->grad_fn = v->grad_fn;
  s->output_nr = v->output_nr;
  s->requires_grad = v->requires_grad;
  s->grad.reset();
}

// The slots of one kind (parameters or buffers) of a module pair must line up name by name.
void bind_slots(const TensorDict& original, const TensorDict& replica, const char* kind, const std::string& where,
                const Module::ReplicaTensorFn& make, std::unordered_map<const TensorImpl*, Tensor>& made) {
  const std::vector<std::string> names = original.keys(), replica_names = replica.keys();
  MINIDL_CHECK(names == replica_names, "bind_replica", "the replica of ", where, " has ", kind, "s [",
               comma_list(replica_names), "], the module has [", comma_list(names), "]");
  for (const std::string& name : names) {
    const Tensor& o = *original.find(name);
    const Tensor& r = *replica.find(name);
    MINIDL_CHECK(o.defined() == r.defined(), "bind_replica", kind, " '", name, "' of ", where, " is ",
                 o.defined() ? "defined" : "empty", " in the module but ", r.defined() ? "defined" : "empty",
                 " in its replica");
    if (!o.defined()) continue;
    MINIDL_CHECK(o.shape() == r.shape(), "bind_replica", kind, " '", name, "' of ", where, " has shape ",
                 shape_str(o.shape()), " in the module but ", shape_str(r.shape()),
                 " in the replica clone_structure() built (a different configuration?)");
    MINIDL_CHECK(r.impl() != o.impl(), "bind_replica", kind, " '", name, "' of ", where,
                 " is the module's own tensor: clone_structure() must build new tensors, not register the original's");
    auto it = made.find(o.impl());
    if (it == made.end()) it = made.emplace(o.impl(), make(o)).first;
    take_on(r, it->second);
  }
}
}  // namespace

ModulePtr Module::deep_copy(std::optional<Device> device) const {
  ModulePtr copy = clone_structure();
  const auto own_copy = [&](const Tensor& t) {
    Tensor c = t.detach().clone();
    if (device) c = c.to(*device);
    if (c.is_floating_point() && t.requires_grad()) c.requires_grad_(true);
    return c;
  };
  copy->bind_replica(*this, own_copy, own_copy);
  return copy;
}

void Module::bind_replica(const Module& original, const ReplicaTensorFn& param_for, const ReplicaTensorFn& buffer_for) {
  MINIDL_CHECK(&original != this, "bind_replica", "a module cannot be its own replica");
  std::unordered_map<const TensorImpl*, Tensor> made;
  bind_replica_tree(original, param_for, buffer_for, made);
  set_path(original.path_);  // scope names and parameter names as the original's
  name_ = original.name_;
}

void Module::bind_replica_tree(const Module& original, const ReplicaTensorFn& param_for,
                               const ReplicaTensorFn& buffer_for, std::unordered_map<const TensorImpl*, Tensor>& made) {
  const std::string where = original.path_.empty() ? original.type_name() : original.path_;
  MINIDL_CHECK(typeid(*this) == typeid(original), "bind_replica", "the replica of ", where, " is a ", type_name(),
               ", not a ", original.type_name());
  bind_slots(original.parameters_, parameters_, "parameter", where, param_for, made);
  bind_slots(original.buffers_, buffers_, "buffer", where, buffer_for, made);
  MINIDL_CHECK(children_.size() == original.children_.size(), "bind_replica", "the replica of ", where, " has ",
               children_.size(), " submodules, the module has ", original.children_.size());
  for (size_t i = 0; i < children_.size(); ++i) {
    MINIDL_CHECK(children_[i].first == original.children_[i].first, "bind_replica", "submodule ", i, " of ", where,
                 " is '", original.children_[i].first, "' in the module but '", children_[i].first, "' in its replica");
    children_[i].second->bind_replica_tree(*original.children_[i].second, param_for, buffer_for, made);
  }
  training_ = original.training_;
  amp_state_ = original.amp_state_;  // shared, read-only: the module's own set_autocast holds in its replicas
  hooks_ = original.hooks_ ? std::make_shared<ModuleHooks>(*original.hooks_) : nullptr;  // a copy, as PyTorch's deepcopy
}

// ---------------------------------------------------------------- printing

void Module::summary_lines(const std::string& label, int depth,
                           std::vector<std::pair<std::string, int64_t>>& lines) const {
  std::string text(static_cast<size_t>(depth) * 2, ' ');
  if (!label.empty()) text += "(" + label + "): ";
  text += describe();
  lines.emplace_back(text, num_parameters());
  for (const auto& [n, c] : children_) c->summary_lines(n, depth + 1, lines);
}

std::string Module::summary() const {
  std::vector<std::pair<std::string, int64_t>> lines;
  summary_lines("", 0, lines);
  size_t text_w = 0, num_w = 0;
  for (const auto& [t, n] : lines) {
    text_w = std::max(text_w, t.size());
    num_w = std::max(num_w, detail::group_digits(n).size());
  }
  std::ostringstream os;
  for (size_t i = 0; i < lines.size(); ++i) {
    const auto& [t, n] = lines[i];
    const std::string num = detail::group_digits(n);
    os << t << std::string(text_w - t.size() + 2 + num_w - num.size(), ' ') << num << " params";
    if (i + 1 < lines.size()) os << '\n';
  }
  const int64_t trainable = num_parameters(true), total = num_parameters();
  if (trainable != total) os << "\n(" << detail::group_digits(trainable) << " of " << detail::group_digits(total)
                             << " parameters trainable)";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Module& module) { return os << module.summary(); }

}  // namespace minidl::nn
