#include "support/files.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "fluxion/error.h"

namespace fluxion::support {

namespace {

std::atomic<int64_t> write_budget{-1};  // bytes before an injected failure; -1: none

// write(2) that honours the injected fault.
bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    size_t n = bytes.size();
    int64_t budget = write_budget.load();
    if (budget >= 0) {
      if (budget == 0) {
        errno = ENOSPC;
        return false;
      }
      n = std::min<size_t>(n, static_cast<size_t>(budget));
    }
    ssize_t w = ::write(fd, bytes.data(), n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (budget >= 0) write_budget.fetch_sub(w);
    bytes.remove_prefix(static_cast<size_t>(w));
  }
  return true;
}

}  // namespace

void fail_writes_after_for_testing(int64_t bytes) { write_budget.store(bytes); }

void write_file_atomically(const std::string& path, std::string_view bytes, std::string_view op) {
  static std::atomic<uint64_t> counter{0};
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) detail::fail(op, "cannot create '" + tmp + "': " + std::strerror(errno));
  bool ok = write_all(fd, bytes) && ::fsync(fd) == 0;
  int saved = ok ? 0 : errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    saved = errno;
  }
  std::error_code ec, ignored;
  if (!ok) {
    std::filesystem::remove(tmp, ignored);
    detail::fail(op, "cannot write '" + path + "': " + std::strerror(saved) + " (any previous file is unchanged)");
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ignored);
    detail::fail(
        op, "cannot rename '" + tmp + "' to '" + path + "': " + ec.message() + " (any previous file is unchanged)");
  }
}

}  // namespace fluxion::support
