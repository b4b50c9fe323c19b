package enum ContentCoding {
    /// Accept-Encoding (RFC 9110 §12.5.3) against a Content-Encoding value or list; "identity"
    /// always passes. Without Accept-Encoding, identity only: RFC 9110 would allow any, but
    /// players and curl without `--compressed` cannot decode; the cost is one more variant.
    package static func accepts(_ request: HTTPHeaders, coding: String) -> Bool {
        let codings = coding.split(separator: ",").map { ASCII.lowercased(String(trimmedOWS(String($0)))) }
            .filter { !$0.isEmpty && $0 != "identity" }
        guard !codings.isEmpty else { return true }
        let lines = request.values("Accept-Encoding")
        guard !lines.isEmpty else { return false }
        var accepted: [String: Bool] = [:]
        for member in lines.joined(separator: ",").split(separator: ",") {
            let parts = member.split(separator: ";")
            let name = ASCII.lowercased(String(trimmedOWS(String(parts.first ?? ""))))
            var q = true
            for parameter in parts.dropFirst() {
                let p = trimmedOWS(String(parameter))
                if p.lowercased().hasPrefix("q="), let value = Double(p.dropFirst(2)) { q = value > 0 }
            }
            if !name.isEmpty { accepted[name] = q }
        }
        return codings.allSatisfy { name in
            accepted[name] ?? accepted[name == "gzip" ? "x-gzip" : name] ?? accepted["*"] ?? false
        }
    }
}
