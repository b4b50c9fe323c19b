/// RFC 9110 §13.1.5: Range only while the client's validator names our representation.
package enum IfRange {
    /// An entity-tag must strongly match `etag` (weak ones never do), a date equal
    /// `lastModified` exactly; without that validator, false (the full body is sent).
    package static func allowsRange(_ ifRange: String, etag: String?, lastModified: String?) -> Bool {
        let value = trimmedOWS(ifRange)
        if value.utf8.first == UInt8(ascii: "\"") || value.utf8.starts(with: "W/\"".utf8) {
            guard let etag else { return false }
            let ours = trimmedOWS(etag)
            // Byte comparison: String == would apply Unicode equivalence.
            return isStrongTag(value) && isStrongTag(ours) && value.utf8.elementsEqual(ours.utf8)
        }
        guard let lastModified, !value.isEmpty else { return false }
        return value.utf8.elementsEqual(trimmedOWS(lastModified).utf8)
    }

    private static func isStrongTag(_ s: Substring) -> Bool {
        let u = s.utf8
        return u.count >= 2 && u.first == UInt8(ascii: "\"") && u.last == UInt8(ascii: "\"")
    }
}

func trimmedOWS(_ s: String) -> Substring { Substring(s.utf8.trimmingOWS()) }
