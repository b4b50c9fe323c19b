// The secondary cache key of RFC 9111 §4.1: the request's values of the
// fields a stored response's Vary names. A later request may reuse the
// response only if its own values give the same key.

/// A normalised secondary key. Field names are lower-cased, deduplicated and
/// sorted; each value is the request's field lines joined with ", ", with
/// whitespace around commas folded away and the ends trimmed (§4.1 allows
/// such normalisation). The content-negotiation fields (Accept,
/// Accept-Charset, Accept-Encoding, Accept-Language), whose members are
/// case-insensitive and whose preference their q-values say, not their
/// order, are normalised further: members lower-cased, blanks around `;`
/// and `=` dropped, empty and repeated members dropped, sorted; so
/// `en, fr` and `FR,en` select one variant. A missing field is distinct
/// from an empty one.
package struct VaryKey: Sendable, Hashable {
    /// (lower-cased name, normalised value or nil when the field is absent).
    package var entries: [Entry]

    package struct Entry: Sendable, Hashable {
        package var name: String
        package var value: String?

        package init(name: String, value: String?) {
            self.name = name
            self.value = value
        }
    }

    package init(entries: [Entry]) { self.entries = entries }

    /// The key of `request` under the response's Vary, or nil for `Vary: *`,
    /// which no request ever matches (§4.1). No Vary gives the empty key.
    package init?(vary responseHeaders: HTTPHeaders, request requestHeaders: HTTPHeaders) {
        var names = Set<String>()
        for value in responseHeaders.values("Vary") {
            for part in value.split(separator: ",") {
                let name = trimmedOWS(String(part))
                if name == "*" { return nil }
                // Player telemetry (CMCD) changes with every request and chooses
                // no content: a Vary naming it would make every request a miss.
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

    /// Whether a new request selects the response stored under this key:
    /// the key the stored Vary gives for it equals this one (§4.1).
    package static func matches(storedKey: VaryKey?, storedResponseHeaders: HTTPHeaders,
                                request: HTTPHeaders) -> Bool {
        guard let storedKey, let key = VaryKey(vary: storedResponseHeaders, request: request) else { return false }
        return key == storedKey
    }

    /// One line per entry, "name: value" or "name" alone when absent, for
    /// storage or hashing. Field values cannot hold line breaks, so the
    /// encoding is unambiguous.
    package var text: String {
        entries.map { e in e.value.map { "\(e.name): \($0)" } ?? e.name }.joined(separator: "\n")
    }

    /// Fields of proactive negotiation (RFC 9110 §12.5) whose list order and case mean nothing.
    static let negotiationFields: Set<String> = ["accept", "accept-charset", "accept-encoding", "accept-language"]

    /// A negotiation field's members as a set: lower-cased, without blanks
    /// around parameters, empty and repeated members dropped, sorted.
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

    /// Field lines combined as one list (RFC 9110 §5.3), OWS around commas
    /// and at the ends removed; everything else, case included, kept.
    static func normalised(_ lines: [String]) -> String {
        lines.joined(separator: ",")
            .split(separator: ",", omittingEmptySubsequences: false)
            .map { trimmedOWS(String($0)) }
            .joined(separator: ",")
    }
}
