import CSupport

package enum Digest {
    /// Lowercase hex. Once per proxied request (the cache key): no intermediate arrays.
    package static func sha256Hex(_ text: String) -> String {
        var text = text
        var digest: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        withUnsafeMutableBytes(of: &digest) { out in
            text.withUTF8 { bytes in
                cs_sha256(bytes.baseAddress, bytes.count, out.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        return withUnsafeBytes(of: digest, hex)
    }

    package static func hex(_ raw: UnsafeRawBufferPointer) -> String {
        String(unsafeUninitializedCapacity: 2 * raw.count) { hex in
            for (i, byte) in raw.enumerated() {
                hex[2 * i] = hexDigit(byte >> 4)
                hex[2 * i + 1] = hexDigit(byte & 15)
            }
            return 2 * raw.count
        }
    }

    package static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: 32)
        let status = key.withUnsafeBytes { k in
            message.withUnsafeBytes { m in
                out.withUnsafeMutableBufferPointer { cs_hmac_sha256(k.baseAddress, k.count, m.baseAddress, m.count, $0.baseAddress) }
            }
        }
        return status == 0 ? out : nil
    }

    /// The project's own: no OpenSSL lookup per call.
    package static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        bytes.withUnsafeBytes { input in
            out.withUnsafeMutableBufferPointer { cs_sha256(input.baseAddress, input.count, $0.baseAddress!) }
        }
        return out
    }

    /// For the hot path: padded once, each MAC is two SHA-256 runs (`hmacSHA256` fetches a MAC
    /// each call). At most 64 bytes.
    package struct HMACKey: Sendable {
        private let inner: [UInt8]
        private let outer: [UInt8]

        package init(_ key: [UInt8]) {
            precondition(key.count <= 64, "an HMAC key of at most a block")
            let padded = key + [UInt8](repeating: 0, count: 64 - key.count)
            inner = padded.map { $0 ^ 0x36 }
            outer = padded.map { $0 ^ 0x5c }
        }

        /// RFC 2104.
        package func mac(_ message: some Sequence<UInt8>) -> [UInt8] {
            var first = inner
            first.append(contentsOf: message)
            return sha256(outer + sha256(first))
        }
    }

    /// From OpenSSL's CSPRNG.
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
