import Glibc

/// Scenario 10: each server's memory at rest (no connection, nothing in
/// flight), once before the first scenario and once after the last.
extension Bench {
    /// Resident memory of each one-loop/one-worker server, in MB, by name.
    func restingRSS() -> [String: Double] {
        usleep(500_000)  // connections of a scenario just finished are closed by now
        var figures: [String: Double] = [:]
        for server in hitServers {
            if let rss = ProcessStats.rss(server.pids) { figures[server.kind.rawValue] = mb(rss) }
        }
        return figures
    }

    func atRestScenario(atStart: [String: Double]) -> ScenarioResult {
        let title = "memory at rest: RSS with no connection, before the first scenario and after the last"
        log("scenario 10: \(title)")
        let afterRun = restingRSS()
        let rows = hitServers.map { server in
            let name = server.kind.rawValue
            return Row(server: name, metrics: ["RSS at start MB": atStart[name], "RSS after run MB": afterRun[name]]
                .compactMapValues { $0 })
        }
        var result = ScenarioResult(id: 10, title: title, columns: ["RSS at start MB", "RSS after run MB"],
                                    rows: rows, peers: [], ratios: [:], targets: [], notes: [])
        addRatios(&result)
        let proxy = ServerKind.proxy.rawValue
        // Judged on the larger figure: a daemon spends most of its life at rest after serving.
        let figure = [atStart[proxy], afterRun[proxy]].compactMap { $0 }.max()
        result.targets = [Targets.atMost("proxy RSS at rest ≤ \(Int(Targets.idleRSSMB)) MB (the larger of the two)",
                                         figure, Targets.idleRSSMB)]
        result.notes.append("RSS of the one-loop proxy and the one-worker nginx peers of scenarios 1–7, with no connection open")
        return result
    }
}
