#include "app/cli/run_data.h"

#include <algorithm>

#include "app/cli/datasets.h"
#include "app/cli/predict_input.h"
#include "engine/core/error.h"
#include "engine/data/class_filter.h"

namespace kiln::cli {

RunData run_data(const io::SafetensorsFile& file, const std::filesystem::path& run) {
  RunData r;
  if (auto tx = file.metadata.find(kTextMetadataKey); tx != file.metadata.end()) {
    r.text = load_run_text((run / tx->second).string());
    r.tokenizer = load_run_tokenizer(run.string(), *r.text);
    r.names = r.text->classes;
  } else if (auto it = file.metadata.find(kTableMetadataKey); it != file.metadata.end()) {
    r.table = load_run_table((run / it->second).string());
    r.names = r.table->second.classes;
    r.regression = r.table->second.task == data::Task::regression;
  } else if (auto img = file.metadata.find(kImagesMetadataKey); img != file.metadata.end()) {
    r.image = load_run_images((run / img->second).string());
    r.names = r.image->classes;
  } else {
    auto ds = file.metadata.find("kiln.dataset");
    const std::string dataset = ds != file.metadata.end() ? ds->second : "fashion-mnist";
    KILN_CHECK(std::find(dataset_names().begin(), dataset_names().end(), dataset) != dataset_names().end(), ValueError,
               (run / "model.safetensors").string(), " was trained on '", dataset, "', whose inputs kiln predict does "
               "not know (its run files are missing)");
    r.names = class_names(dataset);
    if (auto it = file.metadata.find(data::kClassesMetadataKey); it != file.metadata.end()) {
      std::vector<std::string> kept;
      for (int64_t k : data::parse_classes(it->second, static_cast<int64_t>(r.names.size())))
        kept.push_back(r.names[static_cast<size_t>(k)]);
      r.names = kept;
      r.class_subset = true;
    }
    r.image = idx_image_run(r.names);
  }
  return r;
}

}  // namespace kiln::cli
