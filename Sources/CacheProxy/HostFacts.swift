import CacheHTTP

/// What the request gate needs from a request's Host field: whether it is
/// acceptable (RFC 9112 §3.2: one field, a valid authority; none only in
/// HTTP/1.0) and whether it names a loopback host (the rebinding check).
package struct HostFacts: Equatable {
    /// Why the Host field is refused; nil when it is acceptable.
    package var error: HostError?
    /// The first Host value as received; nil without one.
    package var value: String?
    package var isLoopback: Bool

    package init(_ head: HTTPRequestHead) {
        if case .failure(let why) = Intermediary.validateHost(head) { error = why } else { error = nil }
        value = head.headers["host"]
        isLoopback = value.map(LoopbackHost.contains) ?? false
    }

    /// A keep-alive client sends the same Host on every request: a connection
    /// keeps the facts of the last value and reuses them while it repeats.
    struct Memo {
        private var last: HostFacts?

        mutating func facts(for head: HTTPRequestHead) -> HostFacts {
            // With a single Host field the facts depend on its value alone,
            // so only those of a single field are kept and reused.
            let single = head.headers.single("host")
            if let single, let last, last.value == single { return last }
            let facts = HostFacts(head)
            last = single == nil ? nil : facts
            return facts
        }
    }
}
