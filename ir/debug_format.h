// The format of debug_print (ops.def): text in which "{}" is a field, filled by the next
// operand's values, and "{{" and "}}" stand for literal braces, as in std::format and Python.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fluxion::ir {

// The number of fields in `format`, or -1 when a brace is neither a field nor doubled; then
// *error (when given) says where it is.
int64_t format_fields(std::string_view format, std::string* error = nullptr);

// `format` with field i replaced by fields[i] and doubled braces made single; `fields` holds
// format_fields(format) strings.
std::string fill_format(std::string_view format, const std::vector<std::string>& fields);

}  // namespace fluxion::ir
