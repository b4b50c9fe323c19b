/// Secrets (admin token, URL signatures) compared in time that depends only on the lengths.
package enum ConstantTime {
    package static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }  // lengths are not secret
        var difference: UInt8 = 0
        for i in 0..<a.count { difference |= a[i] ^ b[i] }
        return difference == 0
    }
}
