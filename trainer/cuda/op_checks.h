// The argument checks behind every op's CanImplement(): non-null, aligned device pointers, sizes
// that are not zero where a kernel divides by them, and limits. A chain of checks keeps its first
// failure, an InvalidArgument naming the op and the argument:
//
//   return OpChecks("Fill").Pointers(data, "data", source, "source").NonZero(count, "count")
//       .status();
//
// Host code only; it never touches the device (a pointer is checked, never dereferenced).
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace ember::trainer::cuda {

class OpChecks {
 public:
  explicit OpChecks(const char* op) : op_(op) {}

  // `pointer` is non-null and aligned for T.
  template <typename T>
  OpChecks& Pointer(const T* pointer, const char* name) {
    if (pointer == nullptr) return Fail(name, "is null");
    if (reinterpret_cast<uintptr_t>(pointer) % alignof(T) != 0) {
      return Fail(name, "is not aligned to " + std::to_string(alignof(T)) + " bytes");
    }
    return *this;
  }

  // Pointer for each (pointer, name) pair: Pointers(rows, "rows", input, "input").
  template <typename T, typename... More>
  OpChecks& Pointers(const T* pointer, const char* name, More... more) {
    Pointer(pointer, name);
    if constexpr (sizeof...(more) > 0) Pointers(more...);
    return *this;
  }

  // `pointer` is null, or as Pointer asks.
  template <typename T>
  OpChecks& OptionalPointer(const T* pointer, const char* name) {
    return pointer == nullptr ? *this : Pointer(pointer, name);
  }

  OpChecks& NonZero(uint64_t value, const char* name) {
    return value != 0 ? *this : Fail(name, "is 0");
  }

  OpChecks& AtMost(uint64_t value, uint64_t limit, const char* name) {
    if (value <= limit) return *this;
    return Fail(name,
                "is " + std::to_string(value) + ", over the limit of " + std::to_string(limit));
  }

  Status status() const { return failure_.empty() ? Status::Ok() : InvalidArgument(failure_); }

 private:
  OpChecks& Fail(const char* name, const std::string& what) {
    if (failure_.empty()) failure_ = std::string(op_) + ": " + name + " " + what;
    return *this;
  }

  const char* op_;
  std::string failure_;  // the first failed check's message; empty while all passed
};

}  // namespace ember::trainer::cuda
