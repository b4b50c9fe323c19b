/// How many CONNECT tunnels one loop holds, in total and per client
/// address. Each tunnel holds an origin connection slot for as long as it
/// lives, and most of them sit idle (a browser's kept-alive TLS): without a
/// cap, tunnels could take every slot and leave a cache miss waiting. The
/// caps keep tunnels to a quarter of the loop's origin slots, and one
/// client to half of that. Loop thread only (a value in `ProxyServer`).
struct TunnelQuota {
    /// Most tunnels at once on the loop.
    let total: Int
    /// Most tunnels of one client address at once on the loop.
    let perClient: Int
    /// Open tunnels by client address: the one record (the total is derived).
    private var byClient: [String: Int] = [:]

    /// Tunnels open on the loop.
    var open: Int { byClient.values.reduce(0, +) }

    /// The caps for a loop with `originSlots` origin connections.
    init(originSlots: Int) {
        total = max(1, originSlots / 4)
        perClient = max(1, total / 2)
    }

    /// Takes a place for `client`'s new tunnel; false at either cap.
    mutating func admit(_ client: String) -> Bool {
        let mine = byClient[client, default: 0]
        guard mine < perClient, open < total else { return false }
        byClient[client] = mine + 1
        return true
    }

    /// `client`'s tunnel ended: its place is free.
    mutating func release(_ client: String) {
        if let count = byClient[client], count > 1 { byClient[client] = count - 1 } else { byClient[client] = nil }
    }
}
