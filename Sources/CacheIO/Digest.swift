import CSupport

package enum Digest {
    /// Lowercase hex SHA-256 of a string's UTF-8 bytes.
    /// Runs once per proxied request (the cache key), so it hashes the string's
    /// own storage and writes the hex in place: no intermediate arrays.
    package static func sha256Hex(_ text: String) -> String {
        var text = text
        var digest: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        withUnsafeMutableBytes(of: &digest) { out in
            text.withUTF8 { bytes in
                cs_sha256(bytes.baseAddress, bytes.count, out.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        return withUnsafeBytes(of: digest) { raw in
            String(unsafeUninitializedCapacity: 64) { hex in
                for (i, byte) in raw.enumerated() {
                    hex[2 * i] = hexDigit(byte >> 4)
                    hex[2 * i + 1] = hexDigit(byte & 15)
                }
                return 64
            }
        }
    }

    /// HMAC-SHA256 of `message` under `key`; nil if OpenSSL fails.
    package static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: 32)
        let status = key.withUnsafeBytes { k in
            message.withUnsafeBytes { m in
                out.withUnsafeMutableBufferPointer { cs_hmac_sha256(k.baseAddress, k.count, m.baseAddress, m.count, $0.baseAddress) }
            }
        }
        return status == 0 ? out : nil
    }

    /// `count` bytes from OpenSSL's CSPRNG (keys); nil if it cannot supply them.
    package static func randomBytes(_ count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        let status = bytes.withUnsafeMutableBufferPointer { cs_random_bytes($0.baseAddress, $0.count) }
        return status == 0 ? bytes : nil
    }

    @inline(__always)
    private static func hexDigit(_ v: UInt8) -> UInt8 {
        v < 10 ? 0x30 + v : 0x57 + v  // "0"... or "a"...
    }
}
