// Incremental UTF-8 well-formedness: whether a byte string so far can still be completed into
// valid UTF-8 (no overlongs, surrogates or code points past U+10FFFF), one byte at a time.
#ifndef TWINSPAN_SERVICES_STRUCTURED_UTF8_PREFIX_H_
#define TWINSPAN_SERVICES_STRUCTURED_UTF8_PREFIX_H_

#include <cstdint>
#include <string_view>

namespace twinspan::structured {

// A value type: the state after the bytes fed so far.
class Utf8Prefix {
 public:
  // Feeds one byte; false (and the state unchanged) when no valid UTF-8 continues with it.
  bool Add(uint8_t byte) {
    if (pending_ == 0) {
      if (byte < 0x80) return true;
      if (byte >= 0xC2 && byte <= 0xDF) return Expect(1, 0x80, 0xBF);
      if (byte == 0xE0) return Expect(2, 0xA0, 0xBF);
      if (byte == 0xED) return Expect(2, 0x80, 0x9F);
      if (byte >= 0xE1 && byte <= 0xEF) return Expect(2, 0x80, 0xBF);
      if (byte == 0xF0) return Expect(3, 0x90, 0xBF);
      if (byte >= 0xF1 && byte <= 0xF3) return Expect(3, 0x80, 0xBF);
      if (byte == 0xF4) return Expect(3, 0x80, 0x8F);
      return false;
    }
    if (byte < lo_ || byte > hi_) return false;
    --pending_;
    lo_ = 0x80;
    hi_ = 0xBF;
    return true;
  }
  // Feeds every byte; false at the first that does not fit (the state is then unspecified).
  bool Add(std::string_view bytes) {
    for (char c : bytes) {
      if (!Add(static_cast<uint8_t>(c))) return false;
    }
    return true;
  }
  // True between characters (the output could end here).
  bool at_boundary() const { return pending_ == 0; }

 private:
  bool Expect(int pending, uint8_t lo, uint8_t hi) {
    pending_ = pending;
    lo_ = lo;
    hi_ = hi;
    return true;
  }
  int pending_ = 0;  // continuation bytes still due
  uint8_t lo_ = 0x80, hi_ = 0xBF;
};

}  // namespace twinspan::structured

#endif  // TWINSPAN_SERVICES_STRUCTURED_UTF8_PREFIX_H_
