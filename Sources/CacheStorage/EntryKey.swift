/// A store key (SHA-256 of a cache key) as 32 bytes, what the index holds instead of 64 characters.
package struct EntryKey: Hashable, Sendable, Comparable {
    package var w0: UInt64, w1: UInt64, w2: UInt64, w3: UInt64

    package init(_ w0: UInt64, _ w1: UInt64, _ w2: UInt64, _ w3: UInt64) {
        (self.w0, self.w1, self.w2, self.w3) = (w0, w1, w2, w3)
    }

    /// Parses 64 lowercase hex digits; nil for anything else.
    package init?(hex: some StringProtocol) {
        // Native strings are contiguous: parsed in place (a hit's lookups come here).
        guard let key = hex.utf8.withContiguousStorageIfAvailable(Self.parse) ?? Self.parse(Array(hex.utf8)) else {
            return nil
        }
        self = key
    }

    private static func parse(_ hex: some Collection<UInt8>) -> EntryKey? {
        guard hex.count == 64 else { return nil }
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        var count = 0
        for byte in hex {
            let digit: UInt64
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt64(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt64(byte - UInt8(ascii: "a") + 10)
            default: return nil
            }
            switch count / 16 {
            case 0: words.0 = words.0 << 4 | digit
            case 1: words.1 = words.1 << 4 | digit
            case 2: words.2 = words.2 << 4 | digit
            default: words.3 = words.3 << 4 | digit
            }
            count += 1
        }
        return EntryKey(words.0, words.1, words.2, words.3)
    }

    package var hex: String {
        String(unsafeUninitializedCapacity: 64) { buffer in
            let digits: StaticString = "0123456789abcdef"
            var index = 0
            func emit(_ word: UInt64) {  // (no array of the words: a hit's lookups come here)
                var shift: UInt64 = 64
                while shift > 0 {
                    shift -= 4
                    buffer[index] = digits.utf8Start[Int((word >> shift) & 0xf)]
                    index += 1
                }
            }
            emit(w0)
            emit(w1)
            emit(w2)
            emit(w3)
            return 64
        }
    }

    /// The first 32 bits: what shards are chosen by.
    package var prefix32: UInt32 { UInt32(truncatingIfNeeded: w0 >> 32) }

    package static func < (a: EntryKey, b: EntryKey) -> Bool {
        (a.w0, a.w1, a.w2, a.w3) < (b.w0, b.w1, b.w2, b.w3)
    }
}
