import CBenchSupport
import Foundation

/// Scenarios 15–17 (issue #34): httpcache as a reverse proxy (`serve
/// --origin`, one loop) against Varnish (malloc), Squid (memory cache) and
/// nginx serving the files itself, plus the run's proxy through proxy URLs.
/// Every server is pinned to CPU 0 and the load generator to CPU 1; every
/// object is fetched once through each cache first, so all are fresh hits.
extension Bench {
    private enum PeerWorkload {
        case smallObjects, ranges, largeObjects
    }

    private static let proxyURLName = "httpcache-proxyurl"

    func peerScenarios(small: Bool, ranges: Bool, large: Bool) -> [ScenarioResult] {
        let s = settings
        let all: [(Int, PeerWorkload, Bool)] = [(15, .smallObjects, small), (16, .ranges, ranges), (17, .largeObjects, large)]
        let wanted = all.filter { $0.2 }.map { ($0.0, $0.1) }
        guard !wanted.isEmpty else { return [] }
        // Every object the origin sends now stays fresh for a day in every cache.
        origin.setMaxAge(86_400)
        defer { origin.setMaxAge(0) }
        let smallTargets: (Endpoint) -> [Target]
        let largeTargets: (Endpoint) -> [Target]
        do {
            smallTargets = try fixtures.objects("peer16k", count: s.peerSmallCount, size: s.smallSize, seedBase: 10_000)
            largeTargets = try fixtures.objects("peer1m", count: s.peerLargeCount, size: s.peerLargeSize, seedBase: 20_000)
        } catch {
            return wanted.map { notMeasured($0.0, $0.1, "fixtures: \(error)") }
        }
        guard let reverse = launcher.reverseProxy() else {
            return wanted.map { notMeasured($0.0, $0.1, "httpcache --origin did not start") }
        }
        defer { reverse.stop() }
        // Room for everything in memory: the big resource, the objects, headroom.
        let memoryMB = Int((s.bigSize + s.smallSize * UInt64(s.peerSmallCount)
            + s.peerLargeSize * UInt64(s.peerLargeCount)) >> 20) + 256
        let maxObjectMB = Int(s.bigSize >> 20) + 16
        let varnish = launcher.varnish(memoryMB: memoryMB)
        let squid = launcher.squid(memoryMB: memoryMB, maxObjectMB: maxObjectMB)
        defer {
            varnish?.stop()
            squid?.stop()
        }
        proxy.label = Self.proxyURLName
        defer { proxy.label = nil }
        let servers = [reverse, proxy] + [varnish, squid, nginxDirect].compactMap { $0 }
        // Two cores or more: servers on CPU 0, this thread (and the load it drives) on CPU 1.
        let pinned = ProcessInfo.processInfo.activeProcessorCount >= 2
        if pinned {
            bs_pin(0, 1)
            for server in servers { server.pids.forEach { bs_pin($0, 0) } }
        }
        defer {
            if pinned {
                bs_pin(0, -1)
                for server in servers { server.pids.forEach { bs_pin($0, -1) } }
            }
        }
        var missing: [String] = []
        if varnish == nil { missing.append("varnish (varnishd not found or did not start)") }
        if squid == nil { missing.append("squid (not found or did not start)") }
        if nginxDirect == nil { missing.append("nginx-direct") }
        return wanted.map { id, workload in
            let targets: (Endpoint) -> [Target]
            let mode: LoadMode
            let connections: Int
            let title: String
            switch workload {
            case .smallObjects:
                targets = smallTargets
                mode = .randomWhole
                connections = s.hitConnections
                title = "reverse proxy hits: \(s.peerSmallCount) distinct \(s.smallSize >> 10) KiB objects at random, \(connections) connections"
            case .ranges:
                targets = { [fixtures] in [fixtures.big(on: $0)] }
                mode = .randomRange(length: s.rangeLength)
                connections = s.hitConnections
                title = "reverse proxy hits: random \(s.rangeLength >> 10) KiB ranges of a \(mib(s.bigSize)) object, \(connections) connections"
            case .largeObjects:
                targets = largeTargets
                mode = .randomWhole
                connections = s.peerLargeConnections
                title = "reverse proxy hits: \(s.peerLargeCount) distinct \(mib(s.peerLargeSize)) objects at random, \(connections) connections"
            }
            var result = peerScenario(id: id, title: title, servers: servers, targets: targets, mode: mode,
                                      connections: connections, fullCheckEvery: workload == .largeObjects ? 4 : 16)
            result.targets = peerTargets(workload, result)
            if pinned { result.notes.append("every server pinned to CPU 0 (all its threads and processes), the load generator to CPU 1") }
            result.notes.append("httpcache: `serve --origin` with --loops 1; \(Self.proxyURLName): the run's proxy through proxy URLs; every object fetched once through each cache before measuring (origin MB shows any miss)")
            result.notes.append("varnish: malloc storage, a VCL keeping every response for a day; squid: memory cache only (no cache_dir); nginx-direct serves the files itself")
            if !missing.isEmpty { result.notes.append("left out: " + missing.joined(separator: ", ")) }
            return result
        }
    }

    private func peerScenario(id: Int, title: String, servers: [ServerProcess], targets: (Endpoint) -> [Target],
                              mode: LoadMode, connections: Int, fullCheckEvery: UInt32) -> ScenarioResult {
        let s = settings
        log("scenario \(id): \(title)")
        func load(_ endpoint: Endpoint, _ duration: Double) -> Row {
            measure(endpoint, targets: targets(endpoint), mode: mode, connections: connections, duration: duration,
                    fullCheckEvery: fullCheckEvery).1
        }
        for server in servers {
            if server.kind.caches { warmCache(server.endpoint, targets(server.endpoint)) }
            _ = load(server.endpoint, s.warmup)
        }
        var rows: [String: [Row]] = [:]
        for round in 0..<s.rounds {
            for i in servers.indices {
                let row = load(servers[(i + round) % servers.count].endpoint, s.duration)
                log("  \(row.server): \(String(format: "%.0f", row.metrics["req/s"] ?? 0)) req/s, \(String(format: "%.1f", row.metrics["MB/s"] ?? 0)) MB/s")
                rows[row.server, default: []].append(row)
            }
        }
        var result = ScenarioResult(id: id, title: title,
                                    columns: ["req/s", "MB/s", "p50 ms", "p99 ms", "CPU µs/req", "peak RSS MB", "origin MB"],
                                    rows: servers.compactMap { rows[$0.endpoint.name].map(Self.median) },
                                    peers: [], ratios: [:], targets: [], notes: [])
        addRatios(&result)
        if s.rounds > 1 { result.notes.append("median of \(s.rounds) rounds of \(s.duration) s per server, servers alternating") }
        result.notes.append("ratios: httpcache (reverse) over each peer; CPU µs/req is the server's user+system CPU per response")
        return result
    }

    private func peerTargets(_ workload: PeerWorkload, _ result: ScenarioResult) -> [TargetCheck] {
        let varnish = ServerKind.varnish.rawValue, direct = ServerKind.nginxDirect.rawValue
        func ratio(_ peer: String) -> Double? { result.ratios[peer]?["req/s"] }
        func missing(_ peer: String) -> String { "\(peer) did not run" }
        switch workload {
        case .smallObjects:
            return [
                Targets.atLeast("req/s ≥ \(Targets.wholeOverVarnish) × varnish", ratio(varnish), Targets.wholeOverVarnish,
                                unmeasured: missing(varnish)),
                Targets.atLeast("req/s ≥ \(Targets.smallOverNginx) × nginx-direct", ratio(direct), Targets.smallOverNginx,
                                unmeasured: missing(direct)),
            ]
        case .ranges:
            // The proxy-URL row against nginx direct, from the same rows.
            let proxyURL = result.rows.first { $0.server == Self.proxyURLName }?.metrics["req/s"]
            let nginx = result.rows.first { $0.server == direct }?.metrics["req/s"]
            let proxyURLRatio = proxyURL.flatMap { a in nginx.flatMap { $0 > 0 ? a / $0 : nil } }
            return [
                Targets.atLeast("req/s ≥ \(Targets.rangesOverVarnish) × varnish", ratio(varnish), Targets.rangesOverVarnish,
                                unmeasured: missing(varnish)),
                Targets.atLeast("\(Self.proxyURLName) req/s ≥ \(Targets.proxyURLRangesOverDirect) × nginx-direct", proxyURLRatio,
                                Targets.proxyURLRangesOverDirect, unmeasured: missing(direct)),
            ]
        case .largeObjects:
            return [
                Targets.atLeast("req/s ≥ \(Targets.wholeOverVarnish) × varnish", ratio(varnish), Targets.wholeOverVarnish,
                                unmeasured: missing(varnish)),
            ]
        }
    }

    private func notMeasured(_ id: Int, _ workload: PeerWorkload, _ reason: String) -> ScenarioResult {
        log("scenario \(id): not measured: \(reason)")
        var result = ScenarioResult(id: id, title: "reverse proxy hits (\(workload))", columns: [], rows: [], peers: [],
                                    ratios: [:], targets: [], notes: ["not measured: \(reason)"])
        result.targets = peerTargets(workload, result).map { Targets.unmeasured($0.description, because: reason) }
        return result
    }
}
