/// base64url without padding (RFC 4648 §5). Strict decoding (no padding or whitespace, zero
/// unused bits): each byte string has exactly one encoding.
package enum Base64URL {
    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    package static func encode<C: Collection<UInt8>>(_ bytes: C, into out: inout [UInt8]) {
        out.reserveCapacity(out.count + (bytes.count * 4 + 2) / 3)
        var it = bytes.makeIterator()
        while let a = it.next() {
            let b = it.next(), c = it.next()
            let v = UInt32(a) << 16 | UInt32(b ?? 0) << 8 | UInt32(c ?? 0)
            out.append(alphabet[Int(v >> 18 & 63)])
            out.append(alphabet[Int(v >> 12 & 63)])
            if b != nil { out.append(alphabet[Int(v >> 6 & 63)]) }
            if c != nil { out.append(alphabet[Int(v & 63)]) }
        }
    }

    @inline(__always)
    private static func value(_ c: UInt8) -> UInt32? {
        switch c {
        case 0x41...0x5A: return UInt32(c &- 0x41)
        case 0x61...0x7A: return UInt32(c &- 0x61 &+ 26)
        case 0x30...0x39: return UInt32(c &- 0x30 &+ 52)
        case UInt8(ascii: "-"): return 62
        case UInt8(ascii: "_"): return 63
        default: return nil
        }
    }

    package static func decode<C: Collection<UInt8>>(_ chars: C) -> [UInt8]? {
        guard chars.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count * 3 / 4)
        var acc: UInt32 = 0
        var bits = 0
        for c in chars {
            guard let v = value(c) else { return nil }
            acc = acc << 6 | v
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: acc >> UInt32(bits)))
                acc &= (1 << UInt32(bits)) - 1
            }
        }
        return acc == 0 ? out : nil
    }
}
