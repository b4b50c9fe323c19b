/// Comparisons of secrets (admin token, URL signatures) whose running time
/// depends only on the lengths, never on where the first difference is.
package enum ConstantTime {
    /// Whether `a` and `b` hold the same bytes.
    package static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }  // lengths are not secret
        var difference: UInt8 = 0
        for i in 0..<a.count { difference |= a[i] ^ b[i] }
        return difference == 0
    }
}
