/// The secondary cache key (RFC 9111 §4.1): the request's values of the fields Vary names,
/// normalised as §4.1 allows: names lower-cased, deduplicated, sorted; field lines joined, OWS
/// dropped. Accept* members (ordered by q-values, any case) are also lower-cased, unblanked,
/// deduplicated and sorted: `en, fr` and `FR,en` select one variant. Missing ≠ empty.
package struct VaryKey: Sendable, Hashable {
    package var entries: [Entry]  // a nil value: the field is absent

    package struct Entry: Sendable, Hashable {
        package var name: String
        package var value: String?

        package init(name: String, value: String?) {
            self.name = name
            self.value = value
        }
    }

    package init(entries: [Entry]) { self.entries = entries }

    /// Nil for `Vary: *`, which nothing matches (§4.1); no Vary gives the empty key.
    package init?(vary responseHeaders: HTTPHeaders, request requestHeaders: HTTPHeaders) {
        var names = Set<String>()
        for value in responseHeaders.values("Vary") {
            for part in value.split(separator: ",") {
                let name = trimmedOWS(String(part))
                if name == "*" { return nil }
                // CMCD changes with every request and chooses no content: every request would miss.
                let lowered = ASCII.lowercased(String(name))
                if !name.isEmpty, !CMCD.fieldNames.contains(lowered) { names.insert(lowered) }
            }
        }
        entries = names.sorted().map { name in
            let lines = requestHeaders.values(name)
            guard !lines.isEmpty else { return Entry(name: name, value: nil) }
            let value = Self.negotiationFields.contains(name) ? VaryKey.unorderedMembers(lines) : VaryKey.normalised(lines)
            return Entry(name: name, value: value)
        }
    }

    package static func matches(storedKey: VaryKey?, storedResponseHeaders: HTTPHeaders,
                                request: HTTPHeaders) -> Bool {
        storedKey != nil && VaryKey(vary: storedResponseHeaders, request: request) == storedKey
    }

    /// "name: value" lines ("name" when absent): unambiguous, as values hold no line breaks.
    package var text: String {
        entries.map { e in e.value.map { "\(e.name): \($0)" } ?? e.name }.joined(separator: "\n")
    }

    /// Proactive negotiation fields (RFC 9110 §12.5).
    static let negotiationFields: Set<String> = ["accept", "accept-charset", "accept-encoding", "accept-language"]

    static func unorderedMembers(_ lines: [String]) -> String {
        var members = Set<String>()
        for member in lines.joined(separator: ",").split(separator: ",") {
            let parts = member.split(separator: ";", omittingEmptySubsequences: false).map { part in
                part.split(separator: "=", omittingEmptySubsequences: false)
                    .map { trimmedOWS(String($0)) }.joined(separator: "=")
            }
            let text = ASCII.lowercased(parts.joined(separator: ";"))
            if !text.isEmpty { members.insert(text) }
        }
        return members.sorted().joined(separator: ",")
    }

    /// One list (RFC 9110 §5.3), only OWS removed.
    static func normalised(_ lines: [String]) -> String {
        lines.joined(separator: ",")
            .split(separator: ",", omittingEmptySubsequences: false)
            .map { trimmedOWS(String($0)) }
            .joined(separator: ",")
    }
}
