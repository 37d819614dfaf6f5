// bench_dataset_reopen DIR [PROJECT=/tmp/bench_dataset_reopen.kiln]: what Kiln Studio does when a
// project on the image folder DIR is opened again (the Dataset panel's data::open_dataset, seed 0,
// 2 decoding threads, a 256 MiB cache), timed three ways in one run: without a stored file index
// (a project of schema 9 and older: every file listed and decoded), with the project's
// IndexStore on the first opening (the same, plus storing the index), and reopening with it
// (image/image_index_store.h: the folders checked, no file read). Prints seconds, the image files
// read and the stored index's size. PROJECT is created (replaced) and left for inspection. Needs
// KILN_OPENCV. To make a folder of 100,000 8 x 8 images: kiln_image_fixtures shapes DIR 100000 8.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "engine/data/dataset_source.h"
#include "projects/index_store.h"
#include "projects/project.h"

using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_dataset_reopen DIR [PROJECT]\n");
    return 2;
  }
  const std::string project = argc > 2 ? argv[2] : "/tmp/bench_dataset_reopen.kiln";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(project + suffix);
  kiln::projects::Project::create(project);
  auto open = [&](const char* what, bool store) {
    kiln::data::DatasetSource s;
    s.spec = std::string("imagefolder:") + argv[1];
    s.cache_mb = 256;
    if (store) s.index_store = std::make_shared<kiln::projects::ProjectIndexStore>(project);
    const int64_t read = kiln::data::image_files_read();
    const auto t0 = Clock::now();
    const kiln::data::OpenedDataset d = kiln::data::open_dataset(s);
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    std::printf("%-44s %8.3f s  %7lld image files read  %s\n", what, seconds,
                static_cast<long long>(kiln::data::image_files_read() - read), d.description().c_str());
    return seconds;
  };
  const double before = open("no stored index (schema <= 9)", false);
  open("first opening, index stored", true);
  const double after = open("reopening with the stored index", true);
  kiln::projects::Project p = kiln::projects::Project::open(project);
  kiln::projects::Statement s = p.database().prepare("SELECT length(data) FROM file_indexes");
  if (s.step()) std::printf("stored index: %lld bytes\n", static_cast<long long>(s.int64(0)));
  std::printf("reopening: %.1fx faster than without the stored index\n", before / after);
  return 0;
}
