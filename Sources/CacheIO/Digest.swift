import CSupport

package enum Digest {
    /// Lowercase hex SHA-256 of a string's UTF-8 bytes.
    package static func sha256Hex(_ text: String) -> String {
        var out = [UInt8](repeating: 0, count: 32)
        var bytes = Array(text.utf8)
        cs_sha256(&bytes, bytes.count, &out)
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var hex = [UInt8]()
        hex.reserveCapacity(64)
        for byte in out {
            hex.append(digits[Int(byte >> 4)])
            hex.append(digits[Int(byte & 15)])
        }
        return String(decoding: hex, as: UTF8.self)
    }
}
