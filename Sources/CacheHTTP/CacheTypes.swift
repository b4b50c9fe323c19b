/// `--cache-types`: `media` (proxy URLs' default: video, audio, playlists, manifests, octet
/// streams, no type), `all` (what RFC 9111 allows: the other modes' default), or media types.
package enum CacheTypes: Sendable, Equatable {
    case media
    case all
    case types(Set<String>)  // lowercased media types; a `type/*` entry is kept as `type/`

    /// `media`, `all`, or a list of `type/subtype` and `type/*`; nil when empty or without `/`.
    package static func parse(_ text: String) -> CacheTypes? {
        let trimmed = String(trimmedOWS(text)).lowercased()
        if trimmed == "media" { return .media }
        if trimmed == "all" { return .all }
        var types = Set<String>()
        for member in trimmed.split(separator: ",", omittingEmptySubsequences: false) {
            let name = String(trimmedOWS(String(member)))
            let parts = name.split(separator: "/", omittingEmptySubsequences: false)
            // `*/*` is spelled `all`.
            guard parts.count == 2, isToken(parts[0]), parts[0] != "*", parts[1] == "*" || isToken(parts[1]) else {
                return nil
            }
            types.insert(parts[1] == "*" ? String(parts[0]) + "/" : name)
        }
        return types.isEmpty ? nil : .types(types)
    }

    /// Without a Content-Type: kept by `media` and `all`, never by a list.
    package func allows(_ contentType: String?, media: (String?) -> Bool) -> Bool {
        switch self {
        case .all: return true
        case .media: return media(contentType)
        case .types(let types):
            guard let contentType else { return false }
            let type = bareMediaType(contentType)
            if types.contains(type) { return true }
            guard let slash = type.firstIndex(of: "/") else { return false }
            return types.contains(String(type[...slash]))
        }
    }

    private static func isToken(_ s: Substring) -> Bool { !s.isEmpty && s.utf8.allSatisfy(ASCII.isTokenChar) }
}
