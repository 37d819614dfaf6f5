// --mode=support: the table op x dtype x backend from each backend's supports(); unary,
// binary and reduce have a row per sub-op ("unary.erf").
#include <iomanip>
#include <iostream>

#include "engine/core/registry.h"
#include "tests/backend-ops/harness.h"

namespace kiln::backend_ops {

namespace {
// The sub-ops of `op` as (name, id); one row of kEverySubOp for ops without them.
std::vector<std::pair<std::string, int>> sub_ops(OpId op) {
  std::vector<std::pair<std::string, int>> rows;
  const std::string prefix = std::string(op_id_name(op)) + ".";
  if (op == OpId::unary)
    for (int s = 0; s < static_cast<int>(UnaryOp::count); ++s)
      rows.emplace_back(prefix + unary_op_name(static_cast<UnaryOp>(s)), s);
  else if (op == OpId::binary)
    for (int s = 0; s < static_cast<int>(BinaryOp::count); ++s)
      rows.emplace_back(prefix + binary_op_name(static_cast<BinaryOp>(s)), s);
  else if (op == OpId::reduce)
    for (int s = 0; s < static_cast<int>(ReduceOp::count); ++s)
      rows.emplace_back(prefix + reduce_op_name(static_cast<ReduceOp>(s)), s);
  else
    rows.emplace_back(op_id_name(op), Backend::kEverySubOp);
  return rows;
}
}  // namespace

void print_support_table(const std::vector<Device>& devs) {
  std::vector<Device> all{Device()};
  all.insert(all.end(), devs.begin(), devs.end());
  std::cout << std::left << std::setw(24) << "op" << std::setw(8) << "dtype";
  for (const Device& d : all) std::cout << std::setw(10) << d.str();
  std::cout << "\n";
  for (int o = 0; o < static_cast<int>(OpId::count); ++o)
    for (const auto& [name, sub] : sub_ops(static_cast<OpId>(o)))
      for (int t = 0; t < kNumDTypes; ++t) {
        const DType dt = static_cast<DType>(t);
        std::cout << std::setw(24) << name << std::setw(8) << dtype_name(dt);
        for (const Device& d : all)
          std::cout << std::setw(10) << (backend_for(d)->supports(static_cast<OpId>(o), dt, sub) ? "yes" : "-");
        std::cout << "\n";
      }
}

}  // namespace kiln::backend_ops
