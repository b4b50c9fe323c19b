/// IPv4 in every spelling inet_aton takes (`a.b.c.d` to `a`; decimal, octal `0`, hex `0x`):
/// `0177.0.0.1` and `127.1` reach 127.0.0.1, so "this machine" checks read them as it does.
package enum IPv4Literal {
    /// Host byte order.
    package static func parse<S: StringProtocol>(_ text: S) -> UInt32? {
        let parts = text.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard (1...4).contains(parts.count) else { return nil }
        let values = parts.compactMap { number($0) }
        guard values.count == parts.count else { return nil }
        let lastBits = UInt64(8 * (5 - parts.count))
        guard values.dropLast().allSatisfy({ $0 <= 0xFF }), values[values.count - 1] < (1 << lastBits) else { return nil }
        var address: UInt64 = 0
        for (index, value) in values.dropLast().enumerated() { address |= value << UInt64(24 - 8 * index) }
        return UInt32(address | values[values.count - 1])
    }

    /// Nil past 32 bits.
    private static func number<C: Collection>(_ bytes: C) -> UInt64? where C.Element == UInt8 {
        var digits = bytes[...]
        guard !digits.isEmpty else { return nil }
        var radix: UInt64 = digits.count >= 2 && digits.first == UInt8(ascii: "0") ? 8 : 10
        if radix == 8, digits.dropFirst().first.map({ $0 | 0x20 == UInt8(ascii: "x") }) == true {
            radix = 16
            digits = digits.dropFirst(2)
            guard !digits.isEmpty else { return nil }
        }
        var value: UInt64 = 0
        for byte in digits {
            guard let digit = ASCII.hexValue(byte).map(UInt64.init), digit < radix else { return nil }
            value = value * radix + digit
            guard value <= UInt64(UInt32.max) else { return nil }
        }
        return value
    }
}
