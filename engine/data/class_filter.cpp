#include "engine/data/class_filter.h"

#include <algorithm>
#include <charconv>

#include "engine/core/error.h"

namespace kiln::data {

namespace {

std::string trimmed(const std::string& s) {
  const size_t first = s.find_first_not_of(' ');
  return first == std::string::npos ? std::string() : s.substr(first, s.find_last_not_of(' ') - first + 1);
}

int64_t parse_class(const std::string& spec, const std::string& raw, int64_t num_classes, const std::string& what) {
  const std::string text = trimmed(raw);
  int64_t v = -1;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  KILN_CHECK(!text.empty() && ec == std::errc() && p == end, ValueError, what, " '", spec, "': '", text,
             "' is not a class number (write e.g. 0-4 or 0,2,5)");
  KILN_CHECK(v >= 0 && v < num_classes, ValueError, what, " '", spec, "': class ", v,
             " is out of range; the data set has classes 0 to ", num_classes - 1);
  return v;
}

}  // namespace

std::vector<int64_t> parse_classes(const std::string& spec, int64_t num_classes, const std::string& what) {
  KILN_CHECK(!trimmed(spec).empty(), ValueError, what, " needs classes, e.g. 0-4 or 0,2,5");
  std::vector<int64_t> out;
  size_t start = 0;
  while (start <= spec.size()) {
    const size_t comma = std::min(spec.find(',', start), spec.size());
    const std::string part = trimmed(spec.substr(start, comma - start));
    const size_t dash = part.find('-', 1);  // "-1" is a malformed number, not a range
    if (dash == std::string::npos) {
      out.push_back(parse_class(spec, part, num_classes, what));
    } else {
      const int64_t lo = parse_class(spec, part.substr(0, dash), num_classes, what);
      const int64_t hi = parse_class(spec, part.substr(dash + 1), num_classes, what);
      KILN_CHECK(lo <= hi, ValueError, what, " '", spec, "': the range ", part, " is reversed (write ", hi, "-", lo,
                 ")");
      for (int64_t c = lo; c <= hi; ++c) out.push_back(c);
    }
    start = comma + 1;
  }
  std::sort(out.begin(), out.end());
  const auto dup = std::adjacent_find(out.begin(), out.end());
  KILN_CHECK(dup == out.end(), ValueError, what, " '", spec, "' names class ", dup == out.end() ? 0 : *dup,
             " twice");
  return out;
}

std::string classes_str(const std::vector<int64_t>& classes) {
  std::string s;
  for (int64_t c : classes) {
    if (!s.empty()) s += ',';
    s += std::to_string(c);
  }
  return s;
}

ClassFilter::ClassFilter(std::shared_ptr<const Dataset> dataset, const std::vector<int64_t>& classes)
    : dataset_(std::move(dataset)) {
  KILN_CHECK(!classes.empty(), ValueError, "ClassFilter: no classes to keep");
  relabel_.assign(static_cast<size_t>(classes.back()) + 1, -1);
  for (size_t i = 0; i < classes.size(); ++i) relabel_[static_cast<size_t>(classes[i])] = static_cast<int64_t>(i);
  constexpr int64_t kChunk = 1024;
  for (int64_t first = 0; first < dataset_->size(); first += kChunk) {
    std::vector<int64_t> idx;
    for (int64_t i = first; i < std::min(first + kChunk, dataset_->size()); ++i) idx.push_back(i);
    const Tensor labels = dataset_->get_batch(idx).target.to(Device{}).contiguous();
    KILN_CHECK(labels.dtype() == DType::i64 && labels.dim() == 1, ValueError,
               "--classes needs class labels (i64 [N]), this data set's targets are ", dtype_name(labels.dtype()), " ",
               shape_str(labels.shape()));
    const int64_t* l = labels.data_ptr<int64_t>();
    for (size_t j = 0; j < idx.size(); ++j)
      if (l[j] >= 0 && l[j] < static_cast<int64_t>(relabel_.size()) && relabel_[static_cast<size_t>(l[j])] >= 0)
        indices_.push_back(idx[j]);
  }
}

int64_t ClassFilter::source_index(int64_t i) const {
  KILN_CHECK(i >= 0 && i < size(), IndexError, "ClassFilter: index ", i, " outside [0, ", size(), ")");
  return indices_[static_cast<size_t>(i)];
}

Batch ClassFilter::get_batch(const std::vector<int64_t>& indices) const {
  std::vector<int64_t> idx;
  idx.reserve(indices.size());
  for (int64_t i : indices) {
    KILN_CHECK(i >= 0 && i < size(), IndexError, "ClassFilter: index ", i, " outside [0, ", size(), ")");
    idx.push_back(indices_[static_cast<size_t>(i)]);
  }
  Batch b = dataset_->get_batch(idx);
  const Tensor labels = b.target.to(Device{}).contiguous();
  const int64_t* l = labels.data_ptr<int64_t>();
  std::vector<int64_t> mapped(idx.size());
  for (size_t j = 0; j < idx.size(); ++j) mapped[j] = relabel_[static_cast<size_t>(l[j])];
  b.target = Tensor::from_vector(mapped, {static_cast<int64_t>(mapped.size())}, b.target.device());
  return b;
}

}  // namespace kiln::data
