#include "engine/io/atomic_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "engine/core/error.h"

namespace kiln::io {

namespace fs = std::filesystem;

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  fs::path p(path_);
  fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  KILN_CHECK(fs::is_directory(dir), IoError, path_, ": cannot write (directory ", dir.string(), " does not exist)");
  std::string base = p.filename().string();
  base.insert(base.begin(), '.');
  base.append(".tmp-XXXXXX");
  std::string templ = (dir / base).string();
  std::vector<char> name(templ.begin(), templ.end());
  name.push_back('\0');
  int fd = mkstemp(name.data());
  KILN_CHECK(fd >= 0, IoError, path_, ": cannot create a temporary file (", std::strerror(errno), ")");
  tmp_ = name.data();
  fchmod(fd, 0644);
  file_ = fdopen(fd, "wb");
  if (!file_) {
    int err = errno;
    close(fd);
    std::remove(tmp_.c_str());
    throw IoError(detail::str_cat(path_, ": cannot open a temporary file (", std::strerror(err), ")"));
  }
}

AtomicFile::~AtomicFile() {
  if (file_) std::fclose(file_);
  if (!committed_) std::remove(tmp_.c_str());
}

void AtomicFile::write(const void* data, size_t nbytes) {
  KILN_CHECK(file_ && !committed_, IoError, path_, ": write after commit");
  if (nbytes == 0) return;
  KILN_CHECK(std::fwrite(data, 1, nbytes, file_) == nbytes, IoError, path_, ": write failed (", std::strerror(errno),
             ")");
}

void AtomicFile::commit() {
  KILN_CHECK(file_ && !committed_, IoError, path_, ": commit twice");
  bool ok = std::fflush(file_) == 0 && fsync(fileno(file_)) == 0;
  int err = errno;
  ok = (std::fclose(file_) == 0) && ok;
  file_ = nullptr;
  KILN_CHECK(ok, IoError, path_, ": write failed (", std::strerror(err), ")");
  KILN_CHECK(std::rename(tmp_.c_str(), path_.c_str()) == 0, IoError, path_, ": cannot replace the file (",
             std::strerror(errno), ")");
  committed_ = true;
}

}  // namespace kiln::io
