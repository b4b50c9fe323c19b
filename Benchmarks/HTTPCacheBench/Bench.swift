import Foundation

/// Runs the scenarios against httpcache and the nginx peers and collects rows.
final class Bench {
    let settings: Settings
    let fixtures: Fixtures
    let origin: Origin
    /// Starts the extra servers of the two-loop scenarios.
    let launcher: Launcher
    let proxy: ServerProcess
    let nginxDirect: ServerProcess?
    let nginxSlice: ServerProcess?
    let log: (String) -> Void
    /// Makes every cold URL of the run distinct.
    private var tagCounter = 0
    /// Starts of scenario 11's proxy (each logs to its own file).
    var scaleStarts = 0

    init(settings: Settings, fixtures: Fixtures, origin: Origin, launcher: Launcher, proxy: ServerProcess,
         nginxDirect: ServerProcess?, nginxSlice: ServerProcess?, log: @escaping (String) -> Void) {
        self.settings = settings
        self.fixtures = fixtures
        self.origin = origin
        self.launcher = launcher
        self.proxy = proxy
        self.nginxDirect = nginxDirect
        self.nginxSlice = nginxSlice
        self.log = log
    }

    var originEndpoint: Endpoint {
        Endpoint(name: "origin-direct", port: origin.port, pids: [], path: { file, query in
            "/" + file + (query.map { "?" + $0 } ?? "")
        })
    }

    var hitServers: [ServerProcess] { [proxy] + [nginxDirect, nginxSlice].compactMap { $0 } }
    private var cacheServers: [ServerProcess] { [proxy] + [nginxSlice].compactMap { $0 } }

    func freshTag(_ name: String) -> String {
        tagCounter += 1
        return "\(name)=\(tagCounter)-\(UInt32.random(in: 0...UInt32.max))"
    }

    func run() -> [ScenarioResult] {
        var results: [ScenarioResult] = []
        let s = settings
        func want(_ id: Int) -> Bool { s.scenarios.contains(id) }
        // At rest first: the proxy has served nothing yet.
        let atStart = want(10) ? restingRSS() : [:]
        if want(1) { results.append(hitScenario(.ranges, id: 1, servers: hitServers)) }
        if want(2) { results.append(hitScenario(.smallFiles, id: 2, servers: hitServers)) }
        if want(3) { results.append(hitScenario(.streaming, id: 3, servers: hitServers)) }
        if want(4) { results.append(coldScenario()) }
        if want(5) { results.append(herdScenario()) }
        if want(6) { results.append(idleScenario()) }
        if want(7) { results.append(seekScenario()) }
        if want(8) || want(9) { results += twoLoopScenarios(ranges: want(8), smallFiles: want(9)) }
        if want(15) || want(16) || want(17) { results += peerScenarios(small: want(15), ranges: want(16), large: want(17)) }
        if want(12) || want(13) { results += encryptedScenarios(ranges: want(12), streaming: want(13)) }
        if want(10) { results.append(atRestScenario(atStart: atStart)) }
        // Last but one: it fills a cache of its own with many entries.
        if want(11) { results.append(scaleScenario()) }
        // After it: the run's proxy, with a download of its own.
        if want(14) { results.append(downloadScenario()) }
        if want(20) { results.append(prefetchScenario()) }
        // 12 and 13 ran before 10 (its "after the run" figure follows every hit scenario).
        return results.sorted { $0.id < $1.id }
    }

    // MARK: measuring

    /// One load run with the memory peak and origin bytes it caused.
    /// `clientThreads` > 1 drives the load from that many client threads.
    func measure(_ endpoint: Endpoint, targets: [Target], mode: LoadMode, connections: Int,
                 duration: Double, fullCheckEvery: UInt32, timeout: Double? = nil, clientThreads: Int = 1) -> (LoadOutcome, Row) {
        ProcessStats.resetPeak(endpoint.pids)
        let cpuBefore = ProcessStats.cpuSeconds(endpoint.pids)
        let originBefore = origin.bodyBytes
        let outcome = runLoad(threads: clientThreads, port: endpoint.port, connections: connections, targets: targets,
                              mode: mode, duration: duration, timeout: timeout ?? (duration + 60),
                              fullCheckEvery: fullCheckEvery)
        var row = Row(server: endpoint.name, metrics: [:])
        row.metrics["req/s"] = outcome.requestsPerSecond
        row.metrics["MB/s"] = outcome.megabytesPerSecond
        row.metrics["p50 ms"] = outcome.p50
        row.metrics["p99 ms"] = outcome.p99
        row.metrics["TTFB p50 ms"] = outcome.ttfbP50
        row.metrics["TTFB p99 ms"] = outcome.ttfbP99
        if let peak = ProcessStats.peakRSS(endpoint.pids) { row.metrics["peak RSS MB"] = mb(peak) }
        // Server CPU per request and per byte: steadier than req/s on a shared machine.
        if let before = cpuBefore, let after = ProcessStats.cpuSeconds(endpoint.pids) {
            if outcome.requests > 0 { row.metrics["CPU µs/req"] = (after - before) * 1e6 / Double(outcome.requests) }
            if outcome.bodyBytes > 0 { row.metrics["CPU µs/MB"] = (after - before) * 1e6 / mb(outcome.bodyBytes) }
        }
        row.metrics["origin MB"] = mb(origin.bodyBytes - originBefore)
        row.requests = outcome.requests
        row.checkedBytes = outcome.checkedBytes
        row.spotChecks = outcome.spotChecks
        row.errors = outcome.errors
        row.mismatches = outcome.mismatches
        row.firstError = outcome.firstError
        return (outcome, row)
    }

    /// Fetches every target once through a cache so the measurement sees hits only.
    func warmCache(_ endpoint: Endpoint, _ targets: [Target]) {
        let steps = targets.indices.map { Step(target: $0, first: nil, last: nil) }
        let outcome = runLoad(port: endpoint.port, connections: min(8, targets.count), targets: targets,
                              mode: .script(steps), duration: 0, timeout: 300, fullCheckEvery: 1)
        if outcome.errors > 0 || outcome.mismatches > 0 {
            log("warming \(endpoint.name): \(outcome.errors) errors, \(outcome.mismatches) wrong: \(outcome.firstError)")
        }
    }

    // MARK: 4. cold misses

    private func coldScenario() -> ScenarioResult {
        let s = settings
        let title = "cold misses: time to first byte (\(s.coldRequests) new \(s.rangeLength >> 10) KiB ranges) and throughput (\(s.coldWholeRequests) new whole \(mib(s.bigSize)) resources), 1 connection"
        log("scenario 4: \(title)")
        let endpoints = [proxy.endpoint, originEndpoint] + [nginxSlice?.endpoint].compactMap { $0 }
        var rows: [String: [Row]] = [:]
        // Every round leaves 600 MiB of new cache entries per cache: at most 3 rounds.
        let rounds = min(s.rounds, 3)
        for round in 0..<rounds {
            for i in endpoints.indices {
                let endpoint = endpoints[(i + round) % endpoints.count]
                // Time to first byte: each request a URL nobody has fetched before.
                origin.setRate(0)
                let rangeLast = Int64(min(s.rangeLength, s.bigSize)) - 1
                let ttfbTargets = (0..<s.coldRequests).map { _ in fixtures.big(on: endpoint, query: freshTag("cold")) }
                let ttfbSteps = ttfbTargets.indices.map { Step(target: $0, first: 0, last: rangeLast) }
                var (_, row) = measure(endpoint, targets: ttfbTargets, mode: .script(ttfbSteps), connections: 1,
                                       duration: 0, fullCheckEvery: 1, timeout: 120)
                row.metrics = ["TTFB p50 ms": row.metrics["TTFB p50 ms"] ?? 0, "TTFB p99 ms": row.metrics["TTFB p99 ms"] ?? 0,
                               "origin MB": row.metrics["origin MB"] ?? 0, "peak RSS MB": row.metrics["peak RSS MB"] ?? 0]
                // Throughput: whole cold resources one after the other, from an origin
                // paced like a fast remote server, then from the bare loopback origin.
                for (rate, column) in [(s.coldOriginRate, "MB/s"), (UInt64(0), "MB/s loopback")] {
                    origin.setRate(rate)
                    let targets = (0..<s.coldWholeRequests).map { _ in fixtures.big(on: endpoint, query: freshTag("coldwhole")) }
                    let steps = targets.indices.map { Step(target: $0, first: nil, last: nil) }
                    let (_, whole) = measure(endpoint, targets: targets, mode: .script(steps), connections: 1,
                                             duration: 0, fullCheckEvery: 1, timeout: 300)
                    row.metrics[column] = whole.metrics["MB/s"] ?? 0
                    row.metrics["origin MB"]! += whole.metrics["origin MB"] ?? 0
                    row.metrics["peak RSS MB"] = max(row.metrics["peak RSS MB"]!, whole.metrics["peak RSS MB"] ?? 0)
                    row.requests += whole.requests
                    row.checkedBytes += whole.checkedBytes
                    row.errors += whole.errors
                    row.mismatches += whole.mismatches
                    if row.firstError.isEmpty { row.firstError = whole.firstError }
                }
                origin.setRate(0)
                if endpoint.pids.isEmpty { row.metrics["peak RSS MB"] = nil }
                log("  \(row.server): TTFB p50 \(String(format: "%.3f", row.metrics["TTFB p50 ms"]!)) ms, \(String(format: "%.1f", row.metrics["MB/s"]!)) MB/s paced, \(String(format: "%.1f", row.metrics["MB/s loopback"]!)) MB/s loopback")
                rows[row.server, default: []].append(row)
            }
        }
        let merged = endpoints.compactMap { rows[$0.name].map(Self.median) }
        var result = ScenarioResult(id: 4, title: title,
                                    columns: ["TTFB p50 ms", "TTFB p99 ms", "MB/s", "MB/s loopback", "peak RSS MB", "origin MB"],
                                    rows: merged, peers: [], ratios: [:], targets: [], notes: [])
        addRatios(&result, peerNames: ["origin-direct", ServerKind.nginxSlice.rawValue])
        let proxyRow = merged.first { $0.server == ServerKind.proxy.rawValue }
        let directRow = merged.first { $0.server == "origin-direct" }
        var added: Double?
        if let viaProxy = proxyRow?.metrics["TTFB p50 ms"], let direct = directRow?.metrics["TTFB p50 ms"] {
            added = viaProxy - direct
        }
        let throughput = result.ratios["origin-direct"]?["MB/s"]
        result.targets = [
            Targets.atMost("adds ≤ \(Targets.coldTTFBAddedMs) ms to the median time to first byte (ms added)", added,
                           Targets.coldTTFBAddedMs),
            Targets.atLeast("MB/s ≥ \(Targets.coldOverDirect) × origin-direct (paced origin)", throughput, Targets.coldOverDirect),
        ]
        result.notes.append("every request is a URL not fetched before; time to first byte with the bare loopback origin")
        result.notes.append("MB/s: origin paced at \(mib(s.coldOriginRate))/s per connection, standing in for a remote server")
        result.notes.append("MB/s loopback: bare loopback origin; a cache writes every byte to disk on the way, so on 2 cores this is bound by CPU and the disk, not the network")
        if rounds > 1 { result.notes.append("median of \(rounds) rounds") }
        return result
    }

    // MARK: 5. many clients, one uncached resource

    private func herdScenario() -> ScenarioResult {
        let s = settings
        let title = "\(s.herdClients) clients reading the same uncached \(mib(s.bigSize)) resource at once"
        log("scenario 5: \(title)")
        origin.setRate(0)
        var rows: [Row] = []
        for server in cacheServers {
            let endpoint = server.endpoint
            let targets = [fixtures.big(on: endpoint, query: freshTag("herd"))]
            let steps = (0..<s.herdClients).map { _ in Step(target: 0, first: nil, last: nil) }
            var (_, row) = measure(endpoint, targets: targets, mode: .script(steps), connections: s.herdClients,
                                   duration: 0, fullCheckEvery: 8, timeout: 300)
            let originBytes = (row.metrics["origin MB"] ?? 0) * 1_048_576
            row.metrics["origin/size"] = originBytes / Double(s.bigSize)
            log("  \(row.server): origin/size \(String(format: "%.3f", row.metrics["origin/size"]!))")
            rows.append(row)
        }
        var result = ScenarioResult(id: 5, title: title,
                                    columns: ["MB/s", "p50 ms", "p99 ms", "peak RSS MB", "origin MB", "origin/size"],
                                    rows: rows, peers: [], ratios: [:], targets: [], notes: [])
        addRatios(&result)
        let ratio = rows.first?.metrics["origin/size"]
        result.targets = [Targets.atMost("origin bytes ≤ \(Targets.herdOriginOverSize) × resource size", ratio,
                                         Targets.herdOriginOverSize)]
        result.notes.append("MB/s is all clients together; p50/p99 is the time for one client's whole download")
        return result
    }

    // MARK: 6. idle keep-alive connections

    private func idleScenario() -> ScenarioResult {
        let s = settings
        let title = "\(s.idleConnections) idle keep-alive connections (one cached \(s.smallSize >> 10) KiB response each, then idle)"
        log("scenario 6: \(title)")
        var rows: [Row] = []
        for server in hitServers {
            let endpoint = server.endpoint
            let targets = fixtures.smalls(on: endpoint)
            if server.kind.caches { warmCache(endpoint, targets) }
            let steps = (0..<s.idleConnections).map { Step(target: $0 % targets.count, first: nil, last: nil) }
            let pids = server.pids
            ProcessStats.resetPeak(pids)
            let rssBefore = ProcessStats.rss(pids)
            let held = Holder()
            let outcome = runLoad(port: endpoint.port, connections: s.idleConnections, targets: targets,
                                  mode: .script(steps), duration: 0, timeout: 60 + s.idleHold, fullCheckEvery: 16,
                                  holdIdle: s.idleHold, onIdle: {
                                      usleep(200_000)  // let the server settle after the last response
                                      held.rss = ProcessStats.rss(pids)
                                  })
            var row = Row(server: endpoint.name, metrics: [:])
            row.metrics["RSS before MB"] = rssBefore.map(mb)
            row.metrics["RSS MB"] = held.rss.map(mb)
            row.metrics["peak RSS MB"] = ProcessStats.peakRSS(pids).map(mb)
            if let before = rssBefore, let idle = held.rss {
                row.metrics["KB/conn"] = (Double(idle) - Double(before)) / 1024 / Double(s.idleConnections)
            }
            row.requests = outcome.requests
            row.checkedBytes = outcome.checkedBytes
            row.spotChecks = outcome.spotChecks
            row.errors = outcome.errors
            row.mismatches = outcome.mismatches
            row.firstError = outcome.firstError
            log("  \(row.server): RSS \(String(format: "%.1f", row.metrics["RSS MB"] ?? 0)) MB")
            rows.append(row)
        }
        var result = ScenarioResult(id: 6, title: title, columns: ["RSS before MB", "RSS MB", "peak RSS MB", "KB/conn"],
                                    rows: rows, peers: [], ratios: [:], targets: [], notes: [])
        addRatios(&result)
        let idle = rows.first?.metrics["RSS MB"]
        result.targets = [Targets.atMost("proxy RSS with \(s.idleConnections) idle connections ≤ \(Int(Targets.idleConnectionsRSSMB)) MB",
                                         idle, Targets.idleConnectionsRSSMB)]
        result.notes.append("RSS MB is measured while all connections are open and idle; KB/conn = (RSS MB − RSS before MB) / connections")
        return result
    }

    // MARK: 7. a player's seeks

    /// A player opening a file whose index is at its end: sniff the start,
    /// read the index, play, seek forward and back (abandoning responses),
    /// then play to the end. Offsets scale with the resource (u = 1/100 of it).
    func seekSteps() -> [Step] {
        let size = Int64(settings.bigSize)
        let u = size / 100
        return [
            Step(target: 0, first: 0, last: nil, abandonAfter: UInt64(u)),            // open: sniff the header
            Step(target: 0, first: size - u, last: nil),                               // jump to the end for the index
            Step(target: 0, first: u, last: nil, abandonAfter: UInt64(8 * u)),         // play from the start
            Step(target: 0, first: size / 2, last: nil, abandonAfter: UInt64(4 * u)),  // seek forward
            Step(target: 0, first: 4 * u, last: nil, abandonAfter: UInt64(8 * u)),     // seek back into played bytes
            Step(target: 0, first: size / 2 + 2 * u, last: nil, abandonAfter: UInt64(4 * u)),  // forward, partly cached
            Step(target: 0, first: size - 8 * u, last: nil),                           // play to the end
        ]
    }

    private func seekScenario() -> ScenarioResult {
        let s = settings
        let title = "a player's seek pattern over a \(mib(s.bigSize)) resource (origin paced at \(mib(s.seekOriginRate))/s)"
        log("scenario 7: \(title)")
        origin.setRate(s.seekOriginRate)
        defer { origin.setRate(0) }
        let steps = seekSteps()
        var rows: [Row] = []
        for server in cacheServers {
            let endpoint = server.endpoint
            let targets = [fixtures.big(on: endpoint, query: freshTag("seek"))]
            var (outcome, row) = measure(endpoint, targets: targets, mode: .script(steps), connections: 1,
                                         duration: 0, fullCheckEvery: 1, timeout: 300)
            // Bytes used: the union of what the player read (a byte read twice counts once).
            var used = RangeUnion()
            for (step, count) in zip(steps, outcome.stepBytes) {
                let first = UInt64(step.first ?? 0)
                used.insert(first..<(first + count))
            }
            let originBytes = (row.metrics["origin MB"] ?? 0) * 1_048_576
            row.metrics["used MB"] = mb(used.count)
            row.metrics["origin/used"] = used.count > 0 ? originBytes / Double(used.count) : 0
            row.metrics["seconds"] = outcome.elapsed
            log("  \(row.server): origin/used \(String(format: "%.3f", row.metrics["origin/used"]!))")
            rows.append(row)
        }
        var result = ScenarioResult(id: 7, title: title,
                                    columns: ["seconds", "used MB", "origin MB", "origin/used"],
                                    rows: rows, peers: [], ratios: [:], targets: [], notes: [])
        addRatios(&result)
        let ratio = rows.first?.metrics["origin/used"]
        result.targets = [Targets.atMost("origin bytes ≤ \(Targets.seekOriginOverUsed) × bytes the player used", ratio,
                                         Targets.seekOriginOverUsed)]
        result.notes.append("steps: 0- (abandon after 1%), last 1%, 1%- (abandon after 8%), 50%- (abandon after 4%), 4%- (abandon after 8%), 52%- (abandon after 4%), last 8%")
        return result
    }

    // MARK: helpers

    func addRatios(_ result: inout ScenarioResult, peerNames: [String]? = nil) {
        guard let subject = result.rows.first(where: { $0.server == ServerKind.proxy.rawValue }) else { return }
        let peers = peerNames ?? result.rows.map(\.server).filter { $0 != subject.server }
        result.peers = peers.filter { name in result.rows.contains { $0.server == name } }
        for peer in result.peers {
            guard let row = result.rows.first(where: { $0.server == peer }) else { continue }
            var ratios: [String: Double] = [:]
            for column in result.columns {
                if let a = subject.metrics[column], let b = row.metrics[column], b > 0 { ratios[column] = a / b }
            }
            result.ratios[peer] = ratios
        }
    }

    /// Per metric the median over rounds; the checks add up.
    static func median(_ rows: [Row]) -> Row {
        var merged = rows[0]
        for key in merged.metrics.keys {
            let values = rows.compactMap { $0.metrics[key] }.sorted()
            merged.metrics[key] = values[values.count / 2]
        }
        merged.requests = rows.reduce(0) { $0 + $1.requests }
        merged.checkedBytes = rows.reduce(0) { $0 + $1.checkedBytes }
        merged.spotChecks = rows.reduce(0) { $0 + $1.spotChecks }
        merged.errors = rows.reduce(0) { $0 + $1.errors }
        merged.mismatches = rows.reduce(0) { $0 + $1.mismatches }
        merged.firstError = rows.first { !$0.firstError.isEmpty }?.firstError ?? ""
        return merged
    }
}

private final class Holder: @unchecked Sendable {
    var rss: UInt64?
}

/// Byte ranges merged into a set, to count distinct bytes.
struct RangeUnion {
    private var ranges: [Range<UInt64>] = []

    mutating func insert(_ range: Range<UInt64>) {
        guard !range.isEmpty else { return }
        var merged = range
        ranges.removeAll { other in
            guard other.lowerBound <= merged.upperBound && merged.lowerBound <= other.upperBound else { return false }
            merged = min(other.lowerBound, merged.lowerBound)..<max(other.upperBound, merged.upperBound)
            return true
        }
        ranges.append(merged)
    }

    var count: UInt64 { ranges.reduce(0) { $0 + UInt64($1.count) } }
}

func mb(_ bytes: UInt64) -> Double { Double(bytes) / 1_048_576 }

func mib(_ bytes: UInt64) -> String {
    bytes >= 1 << 20 ? "\(bytes >> 20) MiB" : "\(bytes >> 10) KiB"
}
