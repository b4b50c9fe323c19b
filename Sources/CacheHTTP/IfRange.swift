// RFC 9110 §13.1.5 If-Range: honour Range only if the client's validator
// still names the representation we have.

package enum IfRange {
    /// True when the Range may be honoured. An entity-tag must match `etag`
    /// by strong comparison (weak tags never match); anything else is an
    /// HTTP-date that must equal `lastModified` exactly. With no validator of
    /// the needed kind the answer is false, and the full body is sent.
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

    /// A complete strong entity-tag: DQUOTE *etagc DQUOTE.
    private static func isStrongTag(_ s: Substring) -> Bool {
        let u = s.utf8
        return u.count >= 2 && u.first == UInt8(ascii: "\"") && u.last == UInt8(ascii: "\"")
    }
}

func trimmedOWS(_ s: String) -> Substring {
    let u = s.utf8
    var lo = u.startIndex, hi = u.endIndex
    while lo < hi, ASCII.isOWS(u[lo]) { lo = u.index(after: lo) }
    while hi > lo, ASCII.isOWS(u[u.index(before: hi)]) { hi = u.index(before: hi) }
    return s[lo..<hi]
}
