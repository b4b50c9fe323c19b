import CSupport

/// Whole-body gzip (RFC 1952) over zlib, for playlists an origin gzips: decoded to be
/// rewritten, encoded again. Any thread.
package enum Gzip {
    /// ID1 ID2 and deflate.
    package static func isGzip(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 3 && bytes[0] == 0x1F && bytes[1] == 0x8B && bytes[2] == 0x08
    }

    /// Nil when malformed, truncated or larger than `cap`.
    package static func decode(_ bytes: [UInt8], cap: Int) -> [UInt8]? {
        call { out, length in bytes.withUnsafeBufferPointer { cs_gunzip($0.baseAddress, $0.count, cap, &out, &length) } }
    }

    /// One member; nil only when out of memory.
    package static func encode(_ bytes: [UInt8]) -> [UInt8]? {
        call { out, length in bytes.withUnsafeBufferPointer { cs_gzip($0.baseAddress, $0.count, &out, &length) } }
    }

    private static func call(_ body: (inout UnsafeMutablePointer<UInt8>?, inout Int) -> Int32) -> [UInt8]? {
        var out: UnsafeMutablePointer<UInt8>?
        var length = 0
        guard body(&out, &length) == 0, let out else { return nil }
        defer { cs_free(out) }
        return Array(UnsafeBufferPointer(start: out, count: length))
    }
}
