#include "data/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "fluxion/error.h"

namespace fluxion::data {

MappedFile::MappedFile(const std::string& path, const char* op) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fluxion::detail::fail(op, "'" + path + "': cannot open (" + std::strerror(errno) + ")");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fluxion::detail::fail(op, "'" + path + "': not a regular file");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    data_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (data_ == MAP_FAILED) {
      int error = errno;
      ::close(fd);
      data_ = nullptr;
      fluxion::detail::fail(
          op, "'" + path + "': cannot map " + std::to_string(size_) + " bytes (" + std::strerror(error) + ")");
    }
    // Batches read rows in a shuffled order: read-ahead of neighbouring pages would be wasted.
    ::madvise(data_, size_, MADV_RANDOM);
  }
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(data_, size_);
}

}  // namespace fluxion::data
