// Training and testing on some of a data set's classes, relabelled 0..k-1 (as torchvision
// users do with a Subset and a target_transform): `kiln train --classes 0-4` and Kiln Studio's
// dataset setting "classes". A `kiln train` run records the classes in its summary.json
// ("classes") and in its model.safetensors metadata (kClassesMetadataKey) so that `kiln eval`
// tests on the same classes with the same labels; a Studio run in its config JSON.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/data/dataset.h"

namespace kiln::data {

inline constexpr const char* kClassesMetadataKey = "kiln.classes";  // "5,6,7,8,9"

// The classes of a spec "0-4", "0,2,5" or "0-2,7" (ascending, no duplicates; spaces around the
// numbers are allowed), for a data set of `num_classes` classes. ValueError naming the spec
// (as `what`: "--classes '0-12': class 12 is out of range ...") when it is empty, malformed, has
// a reversed range or a duplicate, or names a class outside [0, num_classes).
std::vector<int64_t> parse_classes(const std::string& spec, int64_t num_classes, const std::string& what = "--classes");
// "0,1,2" (what parse_classes reads back).
std::string classes_str(const std::vector<int64_t>& classes);

// The samples of `dataset` whose label (an i64 target [B]) is one of `classes`, in the data set's
// order, relabelled: classes[i] becomes i. Reads every label once (in batches of 1024).
class ClassFilter : public Dataset {
 public:
  ClassFilter(std::shared_ptr<const Dataset> dataset, const std::vector<int64_t>& classes);
  int64_t size() const override { return static_cast<int64_t>(indices_.size()); }
  Batch get_batch(const std::vector<int64_t>& indices) const override;
  // The index in the unfiltered data set of sample i (0 <= i < size(); IndexError otherwise).
  int64_t source_index(int64_t i) const;

 private:
  std::shared_ptr<const Dataset> dataset_;
  std::vector<int64_t> indices_;  // into dataset_
  std::vector<int64_t> relabel_;  // old label -> new label (-1: not kept)
};

}  // namespace kiln::data
