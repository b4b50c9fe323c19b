import Foundation

/// What a cache-hit scenario asks for.
enum HitKind {
    case ranges       // random 64 KiB ranges of the big resource
    case smallFiles   // whole 16 KiB resources picked at random
    case streaming    // the whole big resource
}

/// The cache-hit scenarios: 1–3 with one proxy loop against one nginx worker,
/// 8–9 with two loops against two workers (when the proxy has `--loops`).
extension Bench {
    private func title(_ kind: HitKind) -> String {
        let s = settings
        switch kind {
        case .ranges:
            return "cache hits: random \(s.rangeLength >> 10) KiB ranges of a \(mib(s.bigSize)) resource, \(s.hitConnections) connections"
        case .smallFiles:
            return "cache hits: whole \(s.smallSize >> 10) KiB resources (\(s.smallCount) files), \(s.hitConnections) connections"
        case .streaming:
            return "cache hits: whole \(mib(s.bigSize)) resource streaming, \(s.streamConnections) connections"
        }
    }

    /// `judge` replaces the issue #15 targets against nginx (scenarios that compare two proxies).
    func hitScenario(_ kind: HitKind, id: Int, servers: [ServerProcess], prefix: String = "",
                     clientThreads: Int = 1, judge: ((ScenarioResult) -> [TargetCheck])? = nil) -> ScenarioResult {
        let s = settings
        let title = prefix + title(kind) + (clientThreads > 1 ? " from \(clientThreads) client threads" : "")
        log("scenario \(id): \(title)")
        let connections = kind == .streaming ? s.streamConnections : s.hitConnections
        let mode: LoadMode = kind == .ranges ? .randomRange(length: s.rangeLength) : .randomWhole
        let fullCheckEvery: UInt32 = kind == .streaming ? 1000 : 16
        let targets: (Endpoint) -> [Target] = { [fixtures] in
            kind == .smallFiles ? fixtures.smalls(on: $0) : [fixtures.big(on: $0)]
        }
        func load(_ endpoint: Endpoint, _ duration: Double) -> Row {
            measure(endpoint, targets: targets(endpoint), mode: mode, connections: connections, duration: duration,
                    fullCheckEvery: fullCheckEvery, clientThreads: clientThreads).1
        }
        for server in servers {
            if server.kind.caches { warmCache(server.endpoint, targets(server.endpoint)) }
            _ = load(server.endpoint, s.warmup)
        }
        var rows: [String: [Row]] = [:]
        for round in 0..<s.rounds {
            // Rotate the order so no server always runs first (or last) in a round.
            for i in servers.indices {
                let row = load(servers[(i + round) % servers.count].endpoint, s.duration)
                log("  \(row.server): \(String(format: "%.0f", row.metrics["req/s"] ?? 0)) req/s, \(String(format: "%.1f", row.metrics["MB/s"] ?? 0)) MB/s")
                rows[row.server, default: []].append(row)
            }
        }
        let cpuColumn = kind == .streaming ? "CPU µs/MB" : "CPU µs/req"
        var result = ScenarioResult(id: id, title: title,
                                    columns: ["req/s", "MB/s", "p50 ms", "p99 ms", cpuColumn, "peak RSS MB", "origin MB"],
                                    rows: servers.compactMap { rows[$0.endpoint.name].map(Self.median) },
                                    peers: [], ratios: [:], targets: [], notes: [])
        addRatios(&result)
        result.targets = judge?(result) ?? hitTargets(kind, result)
        if s.rounds > 1 { result.notes.append("median of \(s.rounds) rounds of \(s.duration) s per server, servers alternating") }
        result.notes.append("\(cpuColumn): the server's user+system CPU time per \(kind == .streaming ? "MiB sent" : "response") (steadier than req/s on a shared machine)")
        if servers.contains(where: { $0.pids.count > 1 }) {
            result.notes.append("nginx with 2 workers runs a master too: its CPU and RSS are summed over the master and the workers")
        }
        return result
    }

    /// The issue's targets for a hit scenario; `unmeasured` marks them all not measured.
    func hitTargets(_ kind: HitKind, _ result: ScenarioResult?, unmeasured: String? = nil) -> [TargetCheck] {
        let direct = ServerKind.nginxDirect.rawValue, slice = ServerKind.nginxSlice.rawValue
        func ratio(_ peer: String, _ column: String) -> Double? { result?.ratios[peer]?[column] }
        func peerMissing(_ peer: String) -> String { unmeasured ?? "\(peer) did not run" }
        var targets: [TargetCheck]
        switch kind {
        case .ranges, .smallFiles:
            targets = [
                Targets.atLeast("req/s ≥ \(Targets.hitOverDirect) × nginx-direct", ratio(direct, "req/s"),
                                Targets.hitOverDirect, unmeasured: peerMissing(direct)),
                Targets.atLeast("req/s ≥ \(Targets.hitOverSlice) × nginx-slice", ratio(slice, "req/s"),
                                Targets.hitOverSlice, unmeasured: peerMissing(slice)),
            ]
        case .streaming:
            targets = [
                Targets.atLeast("MB/s ≥ \(Targets.streamOverDirect) × nginx-direct", ratio(direct, "MB/s"),
                                Targets.streamOverDirect, unmeasured: peerMissing(direct)),
                Targets.atLeast("MB/s ≥ \(Targets.streamOverSlice) × nginx-slice", ratio(slice, "MB/s"),
                                Targets.streamOverSlice, unmeasured: peerMissing(slice)),
                Targets.atMost("CPU per byte ≤ nginx-direct's (ratio)", ratio(direct, "CPU µs/MB"), 1.0,
                               unmeasured: peerMissing(direct)),
                Targets.atMost("CPU per byte ≤ nginx-slice's (ratio)", ratio(slice, "CPU µs/MB"), 1.0,
                               unmeasured: peerMissing(slice)),
            ]
        }
        let proxyRow = result?.rows.first { $0.server == ServerKind.proxy.rawValue }
        targets.append(Targets.atMost("proxy peak RSS ≤ \(Int(Targets.hitRSSMB)) MB", proxyRow?.metrics["peak RSS MB"],
                                      Targets.hitRSSMB, unmeasured: unmeasured))
        return targets
    }

    // MARK: 8, 9: two loops against two workers

    /// Runs scenarios 8 (ranges) and 9 (small files) on their own servers:
    /// `httpcache --loops 2` and nginx with two workers, driven from two
    /// client threads. Without `--loops` they are reported, not measured.
    func twoLoopScenarios(ranges: Bool, smallFiles: Bool) -> [ScenarioResult] {
        let wanted = [(8, HitKind.ranges, ranges), (9, HitKind.smallFiles, smallFiles)].filter { $0.2 }
        let prefix = "2 loops vs 2 workers — "
        func notMeasured(_ reason: String) -> [ScenarioResult] {
            wanted.map { id, kind, _ in
                log("scenario \(id): not measured: \(reason)")
                return ScenarioResult(id: id, title: prefix + title(kind), columns: [], rows: [], peers: [], ratios: [:],
                                      targets: hitTargets(kind, nil, unmeasured: reason),
                                      notes: ["not measured: \(reason)"])
            }
        }
        guard launcher.proxySupportsLoops else { return notMeasured("--loops unsupported") }
        let proxy: ServerProcess
        do {
            proxy = try launcher.proxy(name: "proxy-2loops", loops: 2)
        } catch {
            return notMeasured("httpcache --loops 2 did not start: \(error)")
        }
        defer { proxy.stop() }
        let direct = launcher.nginx(.nginxDirect, workers: 2, suffix: "-2workers")
        let slice = launcher.nginx(.nginxSlice, workers: 2, suffix: "-2workers")
        defer {
            direct?.stop()
            slice?.stop()
        }
        let servers = [proxy] + [direct, slice].compactMap { $0 }
        return wanted.map { id, kind, _ in
            hitScenario(kind, id: id, servers: servers, prefix: prefix, clientThreads: 2)
        }
    }
}
