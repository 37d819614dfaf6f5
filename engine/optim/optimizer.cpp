#include "engine/optim/optimizer.h"

#include <cstdlib>

#include "engine/core/error.h"

namespace kiln::optim {

Optimizer::Optimizer(std::vector<Tensor> params, double lr)
    : params_(std::move(params)), lr_(lr), state_(params_.size()), steps_(params_.size(), 0) {
  KILN_CHECK(!params_.empty(), ValueError, "optimizer got an empty parameter list");
  for (size_t i = 0; i < params_.size(); ++i)
    KILN_CHECK(params_[i].defined() && params_[i].is_leaf(), ValueError, "optimizer: parameter ", i,
               " is undefined or not a leaf tensor (optimizers update leaves only)");
  set_lr(lr);
}

void Optimizer::set_lr(double lr) {
  KILN_CHECK(lr >= 0, ValueError, "Invalid learning rate: ", lr);
  lr_ = lr;
}

void Optimizer::set_step_counts(std::vector<int64_t> counts) {
  KILN_CHECK(counts.size() == params_.size(), ValueError, "optimizer set_step_counts: got ", counts.size(),
             " counts for ", params_.size(), " parameters");
  for (size_t i = 0; i < counts.size(); ++i)
    KILN_CHECK(counts[i] >= 0, ValueError, "optimizer set_step_counts: parameter ", i, " gets a negative count ",
               counts[i]);
  steps_ = std::move(counts);
}

void Optimizer::zero_grad() {
  for (Tensor& p : params_) p.zero_grad();
}

Tensor& Optimizer::state(size_t i, const std::string& name) {
  Tensor& t = state_[i][name];
  if (!t.defined()) t = Tensor::zeros(params_[i].shape(), params_[i].dtype(), params_[i].device());
  return t;
}

bool Optimizer::has_state(size_t i, const std::string& name) const { return state_[i].count(name) > 0; }

OptimizerState Optimizer::state_dict() const {
  OptimizerState out;
  out.scalars = hyperparameters();
  out.scalars["lr"] = lr_;
  for (size_t i = 0; i < params_.size(); ++i) {
    std::string prefix = "state." + std::to_string(i) + ".";
    if (steps_[i] > 0) out.scalars[prefix + "step"] = static_cast<double>(steps_[i]);
    for (auto& [name, t] : state_[i]) out.tensors.emplace_back(prefix + name, t.detach());
  }
  return out;
}

namespace {
// "state.3.exp_avg" -> (3, "exp_avg"); false when the key has another form.
bool parse_state_key(const std::string& key, size_t& index, std::string& name) {
  if (key.rfind("state.", 0) != 0) return false;
  size_t dot = key.find('.', 6);
  if (dot == std::string::npos || dot == 6) return false;
  std::string digits = key.substr(6, dot - 6);
  if (digits.find_first_not_of("0123456789") != std::string::npos) return false;
  index = static_cast<size_t>(std::strtoull(digits.c_str(), nullptr, 10));
  name = key.substr(dot + 1);
  return true;
}
}  // namespace

void Optimizer::load_state_dict(const OptimizerState& s) {
  // Validate everything first so a bad checkpoint changes nothing.
  std::vector<std::map<std::string, Tensor>> state(params_.size());
  std::vector<int64_t> steps(params_.size(), 0);
  for (auto& [key, t] : s.tensors) {
    size_t i = 0;
    std::string name;
    KILN_CHECK(parse_state_key(key, i, name), ValueError, "optimizer load_state_dict: unexpected key ", key);
    KILN_CHECK(i < params_.size(), ValueError, "optimizer load_state_dict: ", key, " refers to parameter ", i,
               " but the optimizer has ", params_.size());
    KILN_CHECK(t.shape() == params_[i].shape(), ValueError, "optimizer load_state_dict: size mismatch for ", key,
               ": checkpoint ", shape_str(t.shape()), ", parameter ", shape_str(params_[i].shape()));
    state[i][name] = t.to(params_[i].device()).to(params_[i].dtype()).clone();
  }
  std::map<std::string, double> hyper;
  for (auto& [key, v] : s.scalars) {
    size_t i = 0;
    std::string name;
    if (parse_state_key(key, i, name)) {
      KILN_CHECK(i < params_.size() && name == "step", ValueError, "optimizer load_state_dict: unexpected key ", key);
      steps[i] = static_cast<int64_t>(v);
    } else if (key != "lr") {
      hyper[key] = v;
    }
  }
  if (auto it = s.scalars.find("lr"); it != s.scalars.end()) set_lr(it->second);
  set_hyperparameters(hyper);
  state_ = std::move(state);
  steps_ = std::move(steps);
}

}  // namespace kiln::optim
