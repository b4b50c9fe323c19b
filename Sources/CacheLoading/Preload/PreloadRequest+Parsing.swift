// The textual forms of preload options, shared by the CLI and the admin route so both read them the same way.

extension PreloadRequest {
    /// "START-END" (inclusive, END ≥ START) → START..<END+1.
    package static func parseRange(_ text: String) -> Range<Int64>? {
        let parts = text.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let first = Int64(parts[0]), let last = Int64(parts[1]),
              first >= 0, last >= first, last < Int64.max else { return nil }
        return first..<(last + 1)
    }

    /// "all", "highest", "lowest" or a BANDWIDTH in bits per second.
    package static func parseVariants(_ text: String) -> PreloadVariants? {
        switch text.lowercased() {
        case "all": return .all
        case "highest": return .one(.highest)
        case "lowest": return .one(.lowest)
        default:
            guard let bits = Int(text), bits > 0 else { return nil }
            return .one(.closest(toBandwidth: bits))
        }
    }
}

extension PreloadFailure {
    /// The `HTTPCacheError.Code` raw value of this failure.
    package var code: Int32 {
        switch self {
        case .fetch(_, let code, _): return code
        case .playlist, .manifest: return -8
        case .canceled: return -7
        case .closed: return -11
        }
    }
}
