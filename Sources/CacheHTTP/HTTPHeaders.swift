/// Ordered fields, duplicates kept: some (Set-Cookie, Via) must be forwarded as received.
/// Names compare case-insensitively (RFC 9110 §5.1).
package struct HTTPHeaders: Sendable, Sequence, Equatable {
    package typealias Element = (name: String, value: String)

    var fields: [Element]

    package init() { fields = [] }

    package init(_ pairs: [(String, String)]) { fields = pairs.map { (name: $0.0, value: $0.1) } }

    init(reservingCapacity n: Int) {
        fields = []
        fields.reserveCapacity(n)
    }

    package var count: Int { fields.count }
    package static func sameName(_ a: String, _ b: String) -> Bool { ASCII.equalsIgnoringCase(a, b) }

    package func makeIterator() -> IndexingIterator<[Element]> { fields.makeIterator() }

    package mutating func add(_ name: String, _ value: String) { fields.append((name: name, value: value)) }

    package mutating func remove(_ name: String) { removeAll { ASCII.equalsIgnoringCase($0.name, name) } }

    /// Copies nothing when it picks none.
    package mutating func removeAll(where shouldRemove: ((name: String, value: String)) -> Bool) {
        guard fields.contains(where: shouldRemove) else { return }
        fields.removeAll(where: shouldRemove)
    }

    package mutating func replace(_ name: String, _ value: String) {
        remove(name)
        add(name, value)
    }

    package subscript(name: String) -> String? {
        for f in fields where ASCII.equalsIgnoringCase(f.name, name) { return f.value }
        return nil
    }

    /// Nil for none or several.
    package func single(_ name: String) -> String? {
        var found: String?
        for f in fields where ASCII.equalsIgnoringCase(f.name, name) {
            if found != nil { return nil }
            found = f.value
        }
        return found
    }

    package func values(_ name: String) -> [String] {
        var out: [String] = []
        for f in fields where ASCII.equalsIgnoringCase(f.name, name) { out.append(f.value) }
        return out
    }

    package func contains(_ name: String) -> Bool {
        fields.contains { ASCII.equalsIgnoringCase($0.name, name) }
    }

    /// `token` in a comma list (`Connection: keep-alive, Upgrade`), scanned in place.
    package func hasToken(_ token: String, in name: String) -> Bool {
        let t = token.utf8
        if t.isEmpty { return false }
        for f in fields where ASCII.equalsIgnoringCase(f.name, name) {
            let v = f.value.utf8
            var start = v.startIndex
            while true {
                let end = v[start...].firstIndex(of: ASCII.comma) ?? v.endIndex
                let item = v[start..<end].trimmingOWS()
                if item.count == t.count, zip(item, t).allSatisfy({ ASCII.lower($0) == ASCII.lower($1) }) {
                    return true
                }
                if end == v.endIndex { break }
                start = v.index(after: end)
            }
        }
        return false
    }

    /// Values compare exactly.
    package static func == (a: HTTPHeaders, b: HTTPHeaders) -> Bool {
        guard a.fields.count == b.fields.count else { return false }
        for (x, y) in zip(a.fields, b.fields) {
            if x.value != y.value || !ASCII.equalsIgnoringCase(x.name, y.name) { return false }
        }
        return true
    }
}
