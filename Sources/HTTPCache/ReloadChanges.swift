import CacheHTTP

/// One option a reload changes, as the log shows it: texts before and after (a `header` value
/// hidden: it may carry credentials), and whether it widens who or what the proxy serves.
public struct ReloadChange: Sendable, Equatable {
    public let option: String
    public let before: [String]
    public let after: [String]
    /// Why it widens access (more origins, new credentials or forwarded fields, a LAN address); nil if not.
    public let widening: String?
}

extension ServeSettings {
    /// Every option whose texts differ in `new`, in table order (a reload logs each, widening ones loudly).
    public func changes(to new: ServeSettings) -> [ReloadChange] {
        ServeOption.all.compactMap { option in
            let before = given[option.name] ?? []
            let after = new.given[option.name] ?? []
            guard before != after else { return nil }
            let hidden = option.name == "header"
            return ReloadChange(option: option.name, before: hidden ? before.map(Self.fieldName) : before,
                                after: hidden ? after.map(Self.fieldName) : after,
                                widening: Self.widening(option.name, before: before, after: after))
        }
    }

    /// `Name: (hidden)` of a `header` text.
    private static func fieldName(_ text: String) -> String {
        (text.split(separator: ":", maxSplits: 1).first.map(String.init) ?? text) + ": (value hidden)"
    }

    private static func widening(_ name: String, before: [String], after: [String]) -> String? {
        let added = Set(after.map { $0.lowercased() }).subtracting(before.map { $0.lowercased() })
        switch name {
        case "allow-origin":
            if !before.isEmpty && after.isEmpty { return "the allow-list is removed: every origin may be fetched" }
            if !before.isEmpty && !added.isEmpty { return "more origins may be fetched: \(added.sorted().joined(separator: ", "))" }
        case "header":
            if !added.isEmpty { return "origin requests carry new header fields (credentials reach the origins allowed)" }
        case "forward-header":
            if !added.isEmpty { return "more client fields are forwarded to origins: \(added.sorted().joined(separator: ", "))" }
        case "host":
            if let host = after.last, !LoopbackHost.contains(host) { return "the proxy listens on a LAN address (\(host))" }
        case "server-name":
            if !added.isEmpty { return "reverse proxying answers more public names: \(added.sorted().joined(separator: ", "))" }
        case "allow-lan-reverse-proxy", "insecure":
            if after.last.map({ $0 != "false" }) == true { return "\(name) is turned on" }
        default:
            return nil
        }
        return nil
    }
}
