// The deploy sample's data file: named arrays one after another (name, dtype, shape, bytes), so
// that the runtime-only executable reads its data without Fluxion's dataset and checkpoint code.
#pragma once

#include <fluxion/array.h>
#include <fluxion/error.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <string>

namespace deploy {

inline void write_arrays(const std::string& path, const std::map<std::string, fluxion::Array>& arrays) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  auto put = [&](int64_t v) { out.write(reinterpret_cast<const char*>(&v), sizeof v); };
  for (const auto& [name, a] : arrays) {
    put(static_cast<int64_t>(name.size()));
    out.write(name.data(), static_cast<std::streamsize>(name.size()));
    put(static_cast<int64_t>(a.dtype()));
    put(a.rank());
    for (int64_t d : a.shape()) put(d);
    out.write(static_cast<const char*>(a.data()),
              static_cast<std::streamsize>(a.size() * fluxion::dtype_size(a.dtype())));
  }
  if (!out.flush()) throw fluxion::Error("cannot write " + path);
}

inline std::map<std::string, fluxion::Array> read_arrays(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw fluxion::Error("cannot open " + path + " (run deploy_export first)");
  auto get = [&] {
    int64_t v = 0;
    in.read(reinterpret_cast<char*>(&v), sizeof v);
    return v;
  };
  auto bad = [&](const std::string& what) { throw fluxion::Error(path + " is not a deploy data file: " + what); };
  std::map<std::string, fluxion::Array> out;
  while (in.peek() != std::char_traits<char>::eof()) {
    int64_t name_size = get();
    if (!in || name_size < 0 || name_size > 4096) bad("a name's length is " + std::to_string(name_size));
    std::string name(static_cast<size_t>(name_size), '\0');
    in.read(name.data(), static_cast<std::streamsize>(name.size()));
    int64_t dtype_code = get(), rank = get();
    if (!in || dtype_code < 0 || dtype_code > static_cast<int64_t>(fluxion::DType::boolean) || rank < 0 || rank > 8) {
      bad("array '" + name + "' has a bad dtype or rank");
    }
    auto dtype = static_cast<fluxion::DType>(dtype_code);
    fluxion::Shape shape(static_cast<size_t>(rank));
    for (int64_t& d : shape) {
      d = get();
      if (!in || d < 0 || d > (int64_t{1} << 31)) bad("array '" + name + "' has a bad shape");
    }
    fluxion::Array a = fluxion::Array::empty(dtype, shape);
    in.read(static_cast<char*>(a.mutable_data()), static_cast<std::streamsize>(a.size() * fluxion::dtype_size(dtype)));
    if (!in) bad("it is cut off at array " + name);
    out.emplace(name, a);
  }
  return out;
}

}  // namespace deploy
