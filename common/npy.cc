// NumPy .npy writer: magic, version 1.0, a padded Python-dict header, then the raw values.
#include "common/npy.h"

#include "common/check.h"
#include "common/file_io.h"

namespace ember {
namespace {

Status WriteArray(const std::string& path, const char* dtype, const void* data, size_t bytes,
                  size_t count, const std::vector<uint64_t>& shape) {
  uint64_t product = 1;
  std::string dims;
  for (uint64_t d : shape) {
    product *= d;
    dims += std::to_string(d) + ",";
  }
  if (shape.size() > 1) dims.pop_back();  // "(n,)" for one dimension, "(n, m)" otherwise
  EMBER_CHECK(product == count, product, count);
  std::string header = std::string("{'descr': '") + dtype +
                       "', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Magic (6) + version (2) + length (2) + header + '\n' is padded to a multiple of 64.
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string file("\x93NUMPY\x01\x00", 8);
  file += static_cast<char>(header.size() & 0xFF);
  file += static_cast<char>(header.size() >> 8);
  file += header;
  file.append(static_cast<const char*>(data), bytes);
  return WriteFileAtomically(path, file);
}

}  // namespace

Status WriteNpy(const std::string& path, std::span<const uint64_t> values,
                const std::vector<uint64_t>& shape) {
  return WriteArray(path, "<u8", values.data(), values.size_bytes(), values.size(), shape);
}

Status WriteNpy(const std::string& path, std::span<const float> values,
                const std::vector<uint64_t>& shape) {
  return WriteArray(path, "<f4", values.data(), values.size_bytes(), values.size(), shape);
}

Status WriteNpy(const std::string& path, std::span<const uint8_t> values,
                const std::vector<uint64_t>& shape) {
  return WriteArray(path, "|u1", values.data(), values.size_bytes(), values.size(), shape);
}

}  // namespace ember
