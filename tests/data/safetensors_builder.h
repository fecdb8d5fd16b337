// A safetensors file built byte by byte, as another tool (torch, numpy) would write it: any
// dtype code, the tensors' data packed without alignment, and no Fluxion code involved.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <fluxion/dtype.h>

namespace fluxion::testing {

class SafetensorsBuilder {
 public:
  // `values` as the little-endian bytes of a `dtype` tensor (T of that dtype's size).
  template <class T>
  SafetensorsBuilder& add(const std::string& name, const std::string& dtype, const Shape& shape,
                          const std::vector<T>& values) {
    std::string raw(values.size() * sizeof(T), '\0');
    if (!values.empty()) std::memcpy(raw.data(), values.data(), raw.size());
    return add_raw(name, dtype, shape, raw);
  }
  SafetensorsBuilder& add_raw(const std::string& name, const std::string& dtype, const Shape& shape,
                              const std::string& raw) {
    header_ += (header_.empty() ? "" : ",") + std::string("\"") + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":[";
    for (size_t d = 0; d < shape.size(); ++d) header_ += (d ? "," : "") + std::to_string(shape[d]);
    header_ +=
        "],\"data_offsets\":[" + std::to_string(data_.size()) + "," + std::to_string(data_.size() + raw.size()) + "]}";
    data_ += raw;
    return *this;
  }
  std::string bytes() const {
    std::string header = "{" + header_ + "}";
    uint64_t n = header.size();
    std::string out(8, '\0');
    std::memcpy(out.data(), &n, 8);
    return out + header + data_;
  }

 private:
  std::string header_, data_;
};

}  // namespace fluxion::testing
