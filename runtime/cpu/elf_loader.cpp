#include "runtime/cpu/elf_loader.h"

#include <elf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "fluxion/error.h"
#include "support/round_up.h"

namespace fluxion::cpu {
namespace {

// Bounds that keep a damaged object from asking for absurd work.
constexpr uint64_t kMaxMappingBytes = uint64_t{1} << 30;
constexpr uint64_t kMaxAlign = 4096;
constexpr size_t kMaxSymbols = size_t{1} << 20;

// One stub per symbol: jmp *[rip + disp32] to the symbol's GOT entry, padded to 8 bytes.
constexpr size_t kStubBytes = 8;

struct Section {
  Elf64_Shdr header;
  uint64_t offset = 0;  // in the mapping; meaningful when mapped
  bool mapped = false;
};

// The mapping's parts in order: code (read + execute), read-only data, writable data.
enum Part { kCode, kReadOnly, kWritable, kParts };

class Linker {
 public:
  Linker(std::string_view elf, const SymbolResolver& resolve, const std::string& source)
      : elf_(elf), resolve_(resolve), source_(source) {}

  std::unique_ptr<LinkedObject> link() {
    read_header();
    read_sections();
    read_symbols();
    lay_out();
    map();
    try {
      resolve_symbols();
      write_stubs();
      relocate();
      protect();
    } catch (...) {
      munmap(base_, bytes_);
      throw;
    }
    return std::make_unique<LinkedObject>(base_, bytes_, globals());
  }

 private:
  [[noreturn]] void bad(const std::string& what) const {
    detail::fail("load", source_ + ": cannot link its native code: " + what);
  }

  // `count` items of `size` bytes at `offset` lie inside the file.
  void check_range(uint64_t offset, uint64_t count, uint64_t size, const char* what) const {
    if (size != 0 && count > elf_.size() / size) bad(std::string(what) + " lies outside the file");
    if (offset > elf_.size() || count * size > elf_.size() - offset) bad(std::string(what) + " lies outside the file");
  }

  template <class T>
  T read_at(uint64_t offset) const {
    T v;
    std::memcpy(&v, elf_.data() + offset, sizeof v);
    return v;
  }

  void read_header() {
    if (elf_.size() < sizeof(Elf64_Ehdr)) bad("shorter than an ELF header");
    eh_ = read_at<Elf64_Ehdr>(0);
    if (std::memcmp(eh_.e_ident, ELFMAG, SELFMAG) != 0) bad("not an ELF object");
    if (eh_.e_ident[EI_CLASS] != ELFCLASS64 || eh_.e_ident[EI_DATA] != ELFDATA2LSB)
      bad("not a 64-bit little-endian object");
    if (eh_.e_type != ET_REL) bad("not a relocatable object");
    if (eh_.e_machine != EM_X86_64) bad("not x86-64 code (machine " + std::to_string(eh_.e_machine) + ")");
    if (eh_.e_shentsize != sizeof(Elf64_Shdr) || eh_.e_shnum == 0) bad("unexpected section header table");
  }

  void read_sections() {
    check_range(eh_.e_shoff, eh_.e_shnum, sizeof(Elf64_Shdr), "the section header table");
    for (uint16_t i = 0; i < eh_.e_shnum; ++i) {
      Section s;
      s.header = read_at<Elf64_Shdr>(eh_.e_shoff + uint64_t{i} * sizeof(Elf64_Shdr));
      if (s.header.sh_type != SHT_NOBITS && s.header.sh_type != SHT_NULL)
        check_range(s.header.sh_offset, 1, s.header.sh_size, "a section");
      if (s.header.sh_flags & SHF_TLS) bad("thread-local storage is not supported");
      sections_.push_back(s);
    }
  }

  void read_symbols() {
    for (size_t i = 0; i < sections_.size(); ++i) {
      const Elf64_Shdr& h = sections_[i].header;
      if (h.sh_type != SHT_SYMTAB) continue;
      if (symtab_ >= 0) bad("more than one symbol table");
      if (h.sh_entsize != sizeof(Elf64_Sym) || h.sh_link >= sections_.size()) bad("malformed symbol table");
      symtab_ = static_cast<int>(i);
    }
    if (symtab_ < 0) bad("no symbol table");
    const Elf64_Shdr& h = sections_[static_cast<size_t>(symtab_)].header;
    size_t n = h.sh_size / sizeof(Elf64_Sym);
    if (n > kMaxSymbols) bad("too many symbols");
    const Elf64_Shdr& strtab = sections_[h.sh_link].header;
    if (strtab.sh_type != SHT_STRTAB) bad("the symbol table's names are not a string table");
    for (size_t i = 0; i < n; ++i) {
      Elf64_Sym s = read_at<Elf64_Sym>(h.sh_offset + i * sizeof(Elf64_Sym));
      symbols_.push_back(s);
      names_.push_back(name_at(strtab, s.st_name));
    }
  }

  std::string name_at(const Elf64_Shdr& strtab, uint32_t at) const {
    if (at >= strtab.sh_size) bad("a symbol name lies outside its string table");
    std::string_view table = elf_.substr(strtab.sh_offset, strtab.sh_size);
    size_t end = table.find('\0', at);
    if (end == std::string_view::npos) bad("a symbol name is not terminated");
    return std::string(table.substr(at, end - at));
  }

  static Part part_of(const Elf64_Shdr& h) {
    if (h.sh_flags & SHF_EXECINSTR) return kCode;
    return (h.sh_flags & SHF_WRITE) ? kWritable : kReadOnly;
  }

  // Offsets of every allocated section, then the stubs (in the code) and the GOT (read-only);
  // each part starts on a page so it can be protected on its own.
  void lay_out() {
    uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    uint64_t at = 0;
    auto place = [&](uint64_t size, uint64_t align) {
      if (align > kMaxAlign) bad("a section asks for alignment " + std::to_string(align));
      if (align > 1) at = support::round_up(at, align);
      uint64_t offset = at;
      if (size > kMaxMappingBytes - at)
        bad("its sections are larger than " + std::to_string(kMaxMappingBytes) + " bytes");
      at += size;
      return offset;
    };
    for (int part = kCode; part < kParts; ++part) {
      at = support::round_up(at, page);
      part_begin_[part] = at;
      for (Section& s : sections_) {
        // An SHT_NULL header is inactive (its other fields mean nothing): never map it.
        if (!(s.header.sh_flags & SHF_ALLOC) || s.header.sh_type == SHT_NULL || part_of(s.header) != part) continue;
        uint64_t align = s.header.sh_addralign == 0 ? 1 : s.header.sh_addralign;
        if ((align & (align - 1)) != 0) bad("a section's alignment is not a power of two");
        s.offset = place(s.header.sh_size, align);
        s.mapped = true;
      }
      if (part == kCode) stubs_ = place(symbols_.size() * kStubBytes, 16);
      if (part == kReadOnly) got_ = place(symbols_.size() * 8, 8);
    }
    bytes_ = std::max<uint64_t>(support::round_up(at, page), page);
  }

  void map() {
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) bad("cannot map " + std::to_string(bytes_) + " bytes");
    base_ = static_cast<char*>(p);
    for (const Section& s : sections_) {
      if (s.mapped && s.header.sh_type != SHT_NOBITS)
        std::memcpy(base_ + s.offset, elf_.data() + s.header.sh_offset, s.header.sh_size);
    }
  }

  void resolve_symbols() {
    addresses_.assign(symbols_.size(), 0);
    placed_.assign(symbols_.size(), nullptr);
    for (size_t i = 1; i < symbols_.size(); ++i) {
      const Elf64_Sym& s = symbols_[i];
      if (s.st_shndx == SHN_UNDEF) {
        if (names_[i].empty()) continue;
        void* a = resolve_(names_[i]);
        if (!a && ELF64_ST_BIND(s.st_info) != STB_WEAK) bad("undefined symbol '" + names_[i] + "'");
        addresses_[i] = reinterpret_cast<uint64_t>(a);
      } else if (s.st_shndx == SHN_ABS) {
        addresses_[i] = s.st_value;
      } else if (s.st_shndx < sections_.size() && sections_[s.st_shndx].mapped) {
        const Section& sec = sections_[s.st_shndx];
        if (s.st_value > sec.header.sh_size) bad("symbol '" + names_[i] + "' lies outside its section");
        placed_[i] = base_ + sec.offset + s.st_value;
        addresses_[i] = reinterpret_cast<uint64_t>(placed_[i]);
      } else if (s.st_shndx >= SHN_LORESERVE) {
        bad("symbol '" + names_[i] + "' is in special section " + std::to_string(s.st_shndx));
      }
    }
  }

  void write_stubs() {
    for (size_t i = 0; i < symbols_.size(); ++i) {
      std::memcpy(base_ + got_ + 8 * i, &addresses_[i], 8);
      char* stub = base_ + stubs_ + kStubBytes * i;
      int64_t disp = static_cast<int64_t>(got_ + 8 * i) - static_cast<int64_t>(stubs_ + kStubBytes * i + 6);
      auto d32 = static_cast<int32_t>(disp);
      const unsigned char jmp[2] = {0xff, 0x25};
      std::memcpy(stub, jmp, 2);
      std::memcpy(stub + 2, &d32, 4);
      std::memset(stub + 6, 0xcc, kStubBytes - 6);
    }
  }

  void relocate() {
    for (const Section& rs : sections_) {
      if (rs.header.sh_type == SHT_REL) bad("REL relocations are not supported");
      if (rs.header.sh_type != SHT_RELA) continue;
      if (rs.header.sh_info >= sections_.size()) bad("a relocation section names no section");
      const Section& target = sections_[rs.header.sh_info];
      if (!target.mapped) continue;  // relocations of debug or other unloaded sections
      if (rs.header.sh_entsize != sizeof(Elf64_Rela) || rs.header.sh_link != static_cast<uint32_t>(symtab_)) {
        bad("malformed relocation section");
      }
      for (uint64_t k = 0; k < rs.header.sh_size / sizeof(Elf64_Rela); ++k) {
        apply(target, read_at<Elf64_Rela>(rs.header.sh_offset + k * sizeof(Elf64_Rela)));
      }
    }
  }

  void apply(const Section& target, const Elf64_Rela& r) {
    uint32_t type = ELF64_R_TYPE(r.r_info);
    uint64_t sym = ELF64_R_SYM(r.r_info);
    if (sym >= symbols_.size())
      bad("a relocation names symbol " + std::to_string(sym) + " of " + std::to_string(symbols_.size()));
    const Elf64_Sym& s = symbols_[sym];
    if (s.st_shndx != SHN_UNDEF && s.st_shndx != SHN_ABS &&
        (s.st_shndx >= sections_.size() || !sections_[s.st_shndx].mapped)) {
      bad("a relocation refers to symbol '" + names_[sym] + "' of a section that is not loaded");
    }
    uint64_t width = type == R_X86_64_64 || type == R_X86_64_PC64 ? 8 : 4;
    if (r.r_offset > target.header.sh_size || width > target.header.sh_size - r.r_offset)
      bad("a relocation lies outside its section");
    char* place = base_ + target.offset + r.r_offset;
    // The arithmetic is modulo 2^64, as a linker's: a damaged addend must not overflow a signed
    // sum. Where a 32-bit field needs the value's sign, the wrapped sum is read as signed.
    auto p = reinterpret_cast<uint64_t>(place);
    uint64_t sv = addresses_[sym];
    auto a = static_cast<uint64_t>(r.r_addend);
    auto stub = reinterpret_cast<uint64_t>(base_ + stubs_ + kStubBytes * sym);
    auto got = reinterpret_cast<uint64_t>(base_ + got_ + 8 * sym);
    switch (type) {
      case R_X86_64_NONE: return;
      case R_X86_64_64: return write64(place, sv + a);
      case R_X86_64_PC64: return write64(place, sv + a - p);
      case R_X86_64_PC32:
      case R_X86_64_PLT32: {
        // A call that cannot reach its target directly goes through the target's stub.
        auto v = static_cast<int64_t>(sv + a - p);
        if (!fits32(v) && s.st_shndx == SHN_UNDEF) v = static_cast<int64_t>(stub + a - p);
        return write32(place, v, names_[sym]);
      }
      case R_X86_64_GOTPCREL:
      case R_X86_64_GOTPCRELX:
      case R_X86_64_REX_GOTPCRELX: return write32(place, static_cast<int64_t>(got + a - p), names_[sym]);
      case R_X86_64_32: {
        if (sv + a > UINT32_MAX) bad("symbol '" + names_[sym] + "' lies above 4 GiB");
        auto v32 = static_cast<uint32_t>(sv + a);
        std::memcpy(place, &v32, 4);
        return;
      }
      case R_X86_64_32S: return write32(place, static_cast<int64_t>(sv + a), names_[sym]);
      default: bad("relocation type " + std::to_string(type) + " is not supported");
    }
  }

  static bool fits32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }
  static void write64(char* place, uint64_t v) { std::memcpy(place, &v, 8); }
  void write32(char* place, int64_t v, const std::string& name) const {
    if (!fits32(v)) bad("a 32-bit relocation of '" + name + "' does not reach it");
    auto v32 = static_cast<int32_t>(v);
    std::memcpy(place, &v32, 4);
  }

  void protect() {
    const int prot[kParts] = {PROT_READ | PROT_EXEC, PROT_READ, PROT_READ | PROT_WRITE};
    for (int part = kCode; part < kParts; ++part) {
      uint64_t end = part + 1 < kParts ? part_begin_[part + 1] : bytes_;
      if (end > part_begin_[part] && mprotect(base_ + part_begin_[part], end - part_begin_[part], prot[part]) != 0) {
        bad("cannot protect its mapping");
      }
    }
  }

  std::map<std::string, void*> globals() const {
    std::map<std::string, void*> out;
    for (size_t i = 1; i < symbols_.size(); ++i) {
      // Entry points and data the caller looks up live in sections (absolute symbols are not
      // addresses of the object), where resolve_symbols placed them: a section index that is
      // also a reserved one (SHN_ABS in a file of that many sections) is absolute there too.
      if (placed_[i] && ELF64_ST_BIND(symbols_[i].st_info) == STB_GLOBAL && !names_[i].empty()) {
        out[names_[i]] = placed_[i];
      }
    }
    return out;
  }

  std::string_view elf_;
  const SymbolResolver& resolve_;
  const std::string& source_;
  Elf64_Ehdr eh_{};
  std::vector<Section> sections_;
  int symtab_ = -1;
  std::vector<Elf64_Sym> symbols_;
  std::vector<std::string> names_;
  std::vector<uint64_t> addresses_;
  std::vector<char*> placed_;  // per symbol: where it lies in a mapped section, or nullptr
  uint64_t part_begin_[kParts] = {};
  uint64_t stubs_ = 0, got_ = 0, bytes_ = 0;
  char* base_ = nullptr;
};

}  // namespace

LinkedObject::LinkedObject(void* base, size_t bytes, std::map<std::string, void*> symbols)
    : base_(base), bytes_(bytes), symbols_(std::move(symbols)) {}

LinkedObject::~LinkedObject() { munmap(base_, bytes_); }

void* LinkedObject::symbol(const std::string& name) const {
  auto it = symbols_.find(name);
  return it == symbols_.end() ? nullptr : it->second;
}

std::unique_ptr<LinkedObject> link_object(std::string_view elf, const SymbolResolver& resolve,
                                          const std::string& source) {
  return Linker(elf, resolve, source).link();
}

std::vector<std::unique_ptr<LinkedObject>> link_objects(const std::vector<std::string>& elfs,
                                                        const SymbolResolver& resolve, const std::string& source) {
  std::vector<std::unique_ptr<LinkedObject>> linked;
  auto earlier_first = [&](const std::string& name) -> void* {
    for (const std::unique_ptr<LinkedObject>& o : linked) {
      if (void* p = o->symbol(name)) return p;
    }
    return resolve(name);
  };
  for (const std::string& elf : elfs) linked.push_back(link_object(elf, earlier_first, source));
  return linked;
}

}  // namespace fluxion::cpu
