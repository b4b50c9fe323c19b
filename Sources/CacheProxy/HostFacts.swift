import CacheHTTP

/// What the request gate needs from a request's Host field: whether it is acceptable (RFC 9112 §3.2:
/// one field, a valid authority; none only in HTTP/1.0) and whether it names a loopback host.
package struct HostFacts: Equatable {
    package var error: HostError?
    /// The first Host value as received; nil without one.
    package var value: String?
    package var isLoopback: Bool

    package init(_ head: HTTPRequestHead) {
        if case .failure(let why) = Intermediary.validateHost(head) { error = why } else { error = nil }
        value = head.headers["host"]
        isLoopback = value.map(LoopbackHost.contains) ?? false
    }

    /// A keep-alive client sends the same Host on every request: a connection reuses the last facts.
    struct Memo {
        private var last: HostFacts?

        mutating func facts(for head: HTTPRequestHead) -> HostFacts {
            // Only with a single Host field do the facts depend on its value alone.
            let single = head.headers.single("host")
            if let single, let last, last.value == single { return last }
            let facts = HostFacts(head)
            last = single == nil ? nil : facts
            return facts
        }
    }
}
