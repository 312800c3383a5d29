// Frame: one message part as the transport carries it, an owned run of bytes.
//
// Part of the transport (common/transport.h): encoders write into a Frame, sockets send and
// receive Frames, decoders read them in place. A Frame received from the network points into
// the transport's own buffer, so nothing is copied between the socket and the decoder; a Frame
// built with Adopt hands a heap buffer to the transport without a copy on the way out.
//
// Move-only. A Frame belongs to one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

namespace ember {

// Largest frame a process accepts; sized for the biggest legitimate batch (2M keys x dim 64).
constexpr size_t kMaxFrameBytes = size_t{1} << 30;

class Frame {
 public:
  // An empty frame (size 0).
  Frame();
  // `size` bytes, uninitialised.
  explicit Frame(size_t size);
  // A copy of `bytes`.
  explicit Frame(std::string_view bytes);
  Frame(const void* data, size_t size);
  // Takes over `data`, which std::malloc allocated; std::free releases it once the frame (or the
  // socket that sends it) is done with it.
  static Frame AdoptMalloced(void* data, size_t size);

  Frame(Frame&& other) noexcept;
  Frame& operator=(Frame&& other) noexcept;
  ~Frame();

  void* data();
  const void* data() const;
  size_t size() const;
  std::span<const uint8_t> bytes() const {
    return {static_cast<const uint8_t*>(data()), size()};
  }
  std::string_view view() const { return {static_cast<const char*>(data()), size()}; }

 private:
  friend struct TransportAccess;
  struct Impl;  // the ZeroMQ message
  std::unique_ptr<Impl> impl_;
};

}  // namespace ember
