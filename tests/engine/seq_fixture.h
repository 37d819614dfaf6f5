// Shared by the sequence-layer tests: reads tests/fixtures/seq/ (written by
// tests/fixtures/make_seq_fixtures.py, which documents the files) and compares tensors.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/tensor.h"
#include "engine/io/safetensors.h"

namespace kiln::test {

struct SeqCase {
  std::string name, layer;
  nlohmann::json config;
};
inline void PrintTo(const SeqCase& c, std::ostream* os) { *os << c.name; }

inline std::string seq_fixture_path(const std::string& file) { return std::string(KILN_FIXTURES_DIR) + "/seq/" + file; }

// The cases of tests/fixtures/seq/cases.json whose "layer" is in `layers`; one case named
// "unreadable_fixture" (whose test then fails) when the file cannot be read.
inline std::vector<SeqCase> seq_cases(const std::vector<std::string>& layers) {
  std::vector<SeqCase> out;
  try {
    std::ifstream in(seq_fixture_path("cases.json"));
    nlohmann::json doc = nlohmann::json::parse(in);
    for (const auto& c : doc.at("cases")) {
      std::string layer = c.at("layer");
      if (std::find(layers.begin(), layers.end(), layer) != layers.end())
        out.push_back({c.at("name"), layer, c.at("config")});
    }
  } catch (const std::exception&) {
    out.clear();
  }
  if (out.empty()) out.push_back({"unreadable_fixture", "", {}});
  return out;
}

inline std::map<std::string, Tensor> load_named(const std::string& file) {
  std::map<std::string, Tensor> m;
  for (auto& [name, t] : io::load_safetensors(seq_fixture_path(file)).tensors) m[name] = t;
  return m;
}

// |got - want| <= tol elementwise, with the first mismatch named.
inline void expect_close(const Tensor& got, const Tensor& want, const std::string& what, double tol = 1e-6) {
  ASSERT_TRUE(got.defined()) << what << " is undefined";
  ASSERT_EQ(got.shape(), want.shape()) << what;
  std::vector<double> g = got.to(DType::f64).contiguous().to_vector<double>();
  std::vector<double> w = want.to(DType::f64).contiguous().to_vector<double>();
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < g.size(); ++i)
    if (!(std::abs(g[i] - w[i]) <= worst)) {
      worst = std::isnan(g[i]) ? INFINITY : std::abs(g[i] - w[i]);
      at = i;
    }
  EXPECT_LE(worst, tol) << what << ": element " << at << " is " << g[at] << ", PyTorch gives " << w[at];
}

inline std::string case_name(const testing::TestParamInfo<SeqCase>& info) { return info.param.name; }

}  // namespace kiln::test
