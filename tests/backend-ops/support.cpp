// --mode=support: the table op x dtype x backend from each backend's supports().
#include <iomanip>
#include <iostream>

#include "engine/core/registry.h"
#include "tests/backend-ops/harness.h"

namespace kiln::backend_ops {

void print_support_table(const std::vector<Device>& devs) {
  std::vector<Device> all{Device()};
  all.insert(all.end(), devs.begin(), devs.end());
  std::cout << std::left << std::setw(24) << "op" << std::setw(8) << "dtype";
  for (const Device& d : all) std::cout << std::setw(10) << d.str();
  std::cout << "\n";
  for (int o = 0; o < static_cast<int>(OpId::count); ++o)
    for (int t = 0; t < kNumDTypes; ++t) {
      const OpId op = static_cast<OpId>(o);
      const DType dt = static_cast<DType>(t);
      std::cout << std::setw(24) << op_id_name(op) << std::setw(8) << dtype_name(dt);
      for (const Device& d : all) std::cout << std::setw(10) << (backend_for(d)->supports(op, dt) ? "yes" : "-");
      std::cout << "\n";
    }
}

}  // namespace kiln::backend_ops
