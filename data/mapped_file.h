// A file's bytes mapped read-only into memory: the operating system pages them in as they are
// read and may drop them again, so a data set larger than memory can be read row by row.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace fluxion::data {

class MappedFile {
 public:
  // Raises Error naming `op` and the path when the file cannot be opened or mapped.
  MappedFile(const std::string& path, const char* op);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace fluxion::data
