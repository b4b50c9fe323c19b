/// CONNECT tunnels of one loop, in total and per client. Each holds an origin slot, mostly idle: capped at a
/// quarter of the loop's slots (one client half of that) so a miss never waits. Loop thread only.
struct TunnelQuota {
    let total: Int
    let perClient: Int
    /// Open tunnels by client address: the one record (the total is derived).
    private var byClient: [String: Int] = [:]

    var open: Int { byClient.values.reduce(0, +) }

    init(originSlots: Int) {
        total = max(1, originSlots / 4)
        perClient = max(1, total / 2)
    }

    /// False at either cap.
    mutating func admit(_ client: String) -> Bool {
        let mine = byClient[client, default: 0]
        guard mine < perClient, open < total else { return false }
        byClient[client] = mine + 1
        return true
    }

    mutating func release(_ client: String) {
        if let count = byClient[client], count > 1 { byClient[client] = count - 1 } else { byClient[client] = nil }
    }
}
