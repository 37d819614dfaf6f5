// Helpers shared by the engine tests.
#pragma once
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "engine/autograd/gradcheck.h"
#include "engine/core/ops.h"
#include "engine/core/random.h"

namespace kiln::test {

// A fresh directory under the system temp dir, removed with everything in it.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& prefix = "kiln-test") {
    std::string t = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    path = mkdtemp(t.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

inline void expect_values(const Tensor& t, const std::vector<double>& want, double tol = 1e-5) {
  std::vector<double> got = t.to(DType::f64).contiguous().to_vector<double>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

// Standard-normal f64 values from a seeded generator, requiring grad unless told not to.
inline Tensor randn64(const Shape& s, uint64_t seed, bool grad = true) {
  Generator g(seed);
  Tensor t = normal(s, 0, 1, DType::f64, Device(), &g);
  if (grad) t.requires_grad_(true);
  return t;
}

inline void expect_gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                             const std::vector<Tensor>& in) {
  autograd::GradcheckResult r = autograd::gradcheck(fn, in);
  EXPECT_TRUE(r.ok) << r.message;
}

}  // namespace kiln::test
