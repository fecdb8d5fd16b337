// Links a relocatable x86-64 ELF object (what LLVM writes for a CPU program) into this process
// without LLVM: its allocated sections are laid out in one mapping, its undefined symbols are
// resolved by the caller, its relocations applied, and the mapping made executable. Calls to
// symbols farther than 2 GiB go through stubs and a global offset table inside the mapping.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace fluxion::cpu {

class LinkedObject {
 public:
  LinkedObject(void* base, size_t bytes, std::map<std::string, void*> symbols);
  ~LinkedObject();
  LinkedObject(const LinkedObject&) = delete;
  LinkedObject& operator=(const LinkedObject&) = delete;
  // The address of the object's defined global symbol `name`, or nullptr.
  void* symbol(const std::string& name) const;

 private:
  void* base_;
  size_t bytes_;
  std::map<std::string, void*> symbols_;
};

// The address of an undefined symbol of the object, or nullptr when there is none.
using SymbolResolver = std::function<void*(const std::string& name)>;

// Links `elf`. Raises Error (op "load", naming `source`) for anything it does not read: another
// machine or file type, a section or relocation it does not know, a symbol `resolve` cannot
// find, offsets outside the file. Never reads or writes outside `elf` and its mapping.
std::unique_ptr<LinkedObject> link_object(std::string_view elf, const SymbolResolver& resolve,
                                          const std::string& source);

// Links `elfs` in order, as a program compiled in several objects: an object's undefined symbols
// are looked up first among the global symbols of the objects linked before it, then through
// `resolve`. Raises Error as link_object does.
std::vector<std::unique_ptr<LinkedObject>> link_objects(const std::vector<std::string>& elfs,
                                                        const SymbolResolver& resolve, const std::string& source);

}  // namespace fluxion::cpu
