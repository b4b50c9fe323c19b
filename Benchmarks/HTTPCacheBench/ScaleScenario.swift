import Foundation
import Glibc

/// Scenario 11 (issue #28): the cache at scale. A cache of its own, as a
/// reverse proxy (`--origin`) in front of the origin serving one 4 KiB body
/// under every `/f/N` (`Cache-Control: max-age=86400`), is filled with
/// `entries` distinct entries, restarted, and filled on when full. nginx as a
/// proxy cache of the same origin runs the same fill for its per-entry cost.
extension Bench {
    /// Every entry's path: the origin's `/f/N`, asked through the reverse proxy as is.
    static let entryFormat = Fixtures.entryPrefix + "%llu"
    /// Entries filled first: the cache is timed when small (misses, hits) on them.
    static let smallCacheEntries: UInt64 = 1_000

    func scaleScenario() -> ScenarioResult {
        let s = settings
        let title = "the cache at scale: \(s.entries) entries of \(Fixtures.entrySize >> 10) KiB (distinct URLs), "
            + "\(s.scaleConnections) connections, reverse proxy"
        log("scenario 11: \(title)")
        var rows: [Row] = []
        var notes: [String] = []
        if let row = scaleRow(.proxy, notes: &notes) { rows.append(row) }
        if launcher.nginxBinary != nil, let row = scaleRow(.nginxCache, notes: &notes) { rows.append(row) }
        var result = ScenarioResult(id: 11, title: title, columns: Self.scaleColumns, rows: rows, peers: [],
                                    ratios: [:], targets: [], notes: [])
        addRatios(&result)
        result.targets = scaleTargets(rows.first { $0.server == ServerKind.proxy.rawValue })
        result.notes = notes + [
            "fill s, fill req/s: all \(s.entries) misses; miss req/s empty: the first \(Self.smallCacheEntries); miss req/s at N: the last \(s.scaleSample) of the fill",
            "hit req/s 1k / N: random entries of the first 1,000 / of all, \(s.duration) s each",
            "B/entry filled / restart: (RSS after the fill / after a restart, at rest − RSS empty) / entries; nginx keeps its keys in a shared zone (nginx-cache: keys_zone, levels=1:2); with one process it loads no keys at start, so only its filled figure means something",
            "listening s: spawn → `listening on`; first hit s: spawn → the first correct 200 for a random entry cached before the restart (nginx: spawn → accepting, then the hit)",
            "full miss req/s: \(s.scaleSample) new entries after a restart with --max-cache-size just under what is cached (every new entry evicts one)",
            "peak fds: most descriptors open during the fill (/proc/PID/fd every 20 ms)",
        ]
        return result
    }

    static let scaleColumns = [
        "fill s", "fill req/s", "miss req/s empty", "miss req/s at N", "full miss req/s", "hit req/s 1k", "hit req/s N",
        "peak fds", "RSS empty MB", "B/entry filled", "B/entry restart", "listening s", "first hit s",
    ]

    /// The issue's targets, judged on httpcache's row.
    private func scaleTargets(_ row: Row?) -> [TargetCheck] {
        func figure(_ name: String) -> Double? { row?.metrics[name] }
        func ratio(_ a: String, _ b: String) -> Double? {
            guard let x = figure(a), let y = figure(b), y > 0 else { return nil }
            return x / y
        }
        var firstHit = Targets.atMost("a cached entry served ≤ \(Targets.scaleFirstHitSeconds) s after spawn (s)",
                                      figure("first hit s"), Targets.scaleFirstHitSeconds,
                                      unmeasured: "no correct 200 before the deadline")
        if figure("first hit from cache") == 0 {
            firstHit = TargetCheck(description: firstHit.description + ", from the cache", value: figure("first hit s"),
                                   met: false)
        }
        return [
            firstHit,
            Targets.atMost("≤ \(Int(Targets.scaleBytesPerEntry)) B per entry at rest after a restart",
                           figure("B/entry restart"), Targets.scaleBytesPerEntry),
            Targets.atLeast("hit req/s at N ≥ \(Targets.scaleSameCost) × at 1,000 entries", ratio("hit req/s N", "hit req/s 1k"),
                            Targets.scaleSameCost),
            Targets.atLeast("miss req/s at N ≥ \(Targets.scaleSameCost) × an empty cache's",
                            ratio("miss req/s at N", "miss req/s empty"), Targets.scaleSameCost),
            Targets.atLeast("miss req/s of a full cache ≥ \(Targets.scaleSameCost) × an empty cache's",
                            ratio("full miss req/s", "miss req/s empty"), Targets.scaleSameCost),
            Targets.atMost("0 errors (every request of the scenario answered right)", figure("errors"), 0),
        ]
    }

    /// One cache's figures; nil (with a note) when it could not run.
    private func scaleRow(_ kind: ServerKind, notes: inout [String]) -> Row? {
        let s = settings
        let n = UInt64(s.entries)
        let sample = UInt64(max(1, min(s.scaleSample, s.entries / 5)))
        let small = min(Self.smallCacheEntries, n / 2)
        var row = Row(server: kind.rawValue, metrics: [:])
        var errors: UInt64 = 0
        func add(_ outcome: LoadOutcome) {
            row.requests += outcome.requests
            row.checkedBytes += outcome.checkedBytes
            row.spotChecks += outcome.spotChecks
            row.errors += outcome.errors
            row.mismatches += outcome.mismatches
            errors += outcome.errors + outcome.mismatches
            if row.firstError.isEmpty { row.firstError = outcome.firstError }
        }
        var server: ServerProcess
        do {
            server = try startScaleServer(kind, probe: nil).0
        } catch {
            notes.append("\(kind.rawValue) did not start: \(error)")
            return nil
        }
        log("  \(kind.rawValue): filling \(n) entries")
        usleep(500_000)
        let rssEmpty = ProcessStats.rss(server.pids)
        let port = server.port
        func fill(_ indices: Range<UInt64>) -> LoadOutcome {
            // At least a few hundred misses a second, or the run is cut (and reported).
            runLoad(port: port, connections: min(s.scaleConnections, indices.count), targets: [Fixtures.entry],
                    mode: .indexSequence(format: Self.entryFormat, indices: indices), duration: 0,
                    timeout: 60 + Double(indices.count) / 300, fullCheckEvery: 16)
        }
        func hits(_ indices: Range<UInt64>) -> (LoadOutcome, UInt64) {
            let before = origin.requests
            let outcome = runLoad(port: port, connections: s.scaleConnections, targets: [Fixtures.entry],
                                  mode: .indexRandom(format: Self.entryFormat, indices: indices), duration: s.duration,
                                  timeout: s.duration + 60, fullCheckEvery: 16)
            return (outcome, origin.requests - before)
        }
        let sampler = DescriptorSampler(pid: server.pid)
        let empty = fill(0..<small)
        add(empty)
        let (hitSmall, missedSmall) = hits(0..<small)
        add(hitSmall)
        let middle = fill(small..<(n - sample))
        add(middle)
        let last = fill((n - sample)..<n)
        add(last)
        let peakFDs = sampler.stop()
        let (hitAll, missedAll) = hits(0..<n)
        add(hitAll)
        usleep(1_000_000)
        let rssFilled = ProcessStats.rss(server.pids)
        let fillSeconds = empty.elapsed + middle.elapsed + last.elapsed
        row.metrics["fill s"] = fillSeconds
        row.metrics["fill req/s"] = fillSeconds > 0 ? Double(n) / fillSeconds : nil
        row.metrics["miss req/s empty"] = empty.requestsPerSecond
        row.metrics["miss req/s at N"] = last.requestsPerSecond
        row.metrics["hit req/s 1k"] = hitSmall.requestsPerSecond
        row.metrics["hit req/s N"] = hitAll.requestsPerSecond
        row.metrics["peak fds"] = peakFDs.map(Double.init)
        row.metrics["RSS empty MB"] = rssEmpty.map(mb)
        if let rssEmpty, let rssFilled { row.metrics["B/entry filled"] = (Double(rssFilled) - Double(rssEmpty)) / Double(n) }
        if missedSmall + missedAll > 0 {
            notes.append("\(kind.rawValue): \(missedSmall + missedAll) requests of the hit runs went to the origin (not hits)")
        }
        log("  \(kind.rawValue): filled in \(String(format: "%.1f", fillSeconds)) s, \(errors) errors; restarting")

        // A restart on what was filled: time to serve, memory at rest.
        server.stop()
        let probed = UInt64.random(in: 0..<n)
        let times: StartTimes
        do {
            (server, times) = try startScaleServer(kind, probe: probed)
        } catch {
            notes.append("\(kind.rawValue) did not restart: \(error)")
            row.metrics["errors"] = Double(errors + 1)
            return row
        }
        row.metrics["listening s"] = times.listening
        row.metrics["first hit s"] = times.firstHit
        row.metrics["first hit from cache"] = times.fromCache ? 1 : 0
        log("  \(kind.rawValue): listening after \(times.listening.map { String(format: "%.3f", $0) } ?? "-") s, first hit after \(times.firstHit.map { String(format: "%.3f", $0) } ?? "-") s")
        usleep(2_000_000)  // at rest: what a start loads in the background is loaded
        // nginx with one process loads no keys at start: its figure would say nothing.
        if kind == .proxy, let rssEmpty, let rssRestart = ProcessStats.rss(server.pids) {
            row.metrics["B/entry restart"] = (Double(rssRestart) - Double(rssEmpty)) / Double(n)
        }
        if kind == .proxy {
            let full = fullCacheMisses(&server, holding: n, from: n, count: sample, notes: &notes)
            if let full {
                add(full)
                row.metrics["full miss req/s"] = full.requestsPerSecond
            }
        }
        server.stop()
        if times.firstHit == nil { errors += 1 }
        row.metrics["errors"] = Double(errors)
        return row
    }

    /// What httpcache's size limit counts per entry beyond its bytes
    /// (CacheStorage's `StoreGroup.entryOverhead`; the bench links no storage code).
    static let entryOverhead: Int64 = 4096

    /// Restarts the proxy with a size limit 100 entries under what it holds,
    /// so every new entry evicts one, and times `count` new misses. (The
    /// limit counts body bytes and 4 KiB per entry, its metadata file: the
    /// store's `entryOverhead`; /stats, which would tell, goes to the origin
    /// in reverse-proxy mode.)
    private func fullCacheMisses(_ server: inout ServerProcess, holding entries: UInt64, from first: UInt64,
                                 count: UInt64, notes: inout [String]) -> LoadOutcome? {
        let limit = Int64(entries - min(entries / 2, 100)) * (Int64(Fixtures.entrySize) + Self.entryOverhead)
        server.stop()
        do {
            server = try startScaleServer(.proxy, probe: nil, maxCacheSize: limit).0
        } catch {
            notes.append("httpcache did not restart with --max-cache-size \(limit): \(error)")
            return nil
        }
        log("  httpcache: full cache (--max-cache-size \(limit)), \(count) new entries")
        return runLoad(port: server.port, connections: settings.scaleConnections, targets: [Fixtures.entry],
                       mode: .indexSequence(format: Self.entryFormat, indices: first..<(first + count)),
                       duration: 0, timeout: 60 + Double(count) / 300, fullCheckEvery: 16)
    }

    /// Starts the scale scenario's cache on its own folder (kept between
    /// starts). With `probe`, asks for that entry from the spawn on and
    /// reports when it was first served right.
    private func startScaleServer(_ kind: ServerKind, probe: UInt64?,
                                  maxCacheSize: Int64? = nil) throws -> (ServerProcess, StartTimes) {
        let n = UInt64(settings.entries)
        // A start on a big folder may take long today: bounded, but generously.
        let startLimit = 30 + Double(n) / 2_000
        let start = Date()
        let originBefore = origin.requests
        var times = StartTimes()
        let path = probe.map { Fixtures.entryPrefix + String($0) }
        let probeUntil = start.addingTimeInterval(startLimit)
        let server: ServerProcess
        var firstHit: FirstHitProbe?
        switch kind {
        case .proxy:
            let port = try freePort()
            firstHit = path.map { FirstHitProbe(port: port, path: $0, seed: Fixtures.entrySeed, size: Fixtures.entrySize,
                                                start: start, deadline: probeUntil) }
            // Room for every entry with the default; the full-cache run passes less.
            let size = maxCacheSize ?? max(1 << 30, Int64(n) * 16_384)
            scaleStarts += 1
            do {
                server = try ServerProcess.startProxy(
                    binary: launcher.proxyBinary, cacheDirectory: launcher.work + "/scale-cache",
                    logFile: launcher.work + "/scale-\(scaleStarts).log", originBase: origin.baseURL,
                    loops: launcher.proxySupportsLoops ? 1 : nil, port: port,
                    extraArguments: ["--origin", origin.baseURL, "--max-cache-size", String(size)],
                    announceTimeout: startLimit)
            } catch {
                _ = firstHit?.result()
                throw error
            }
            times.listening = Date().timeIntervalSince(start)
        default:
            // One byte of keys zone holds about 1/128 of a key: twice what N needs.
            let zone = max(4, Int(n / 4_000) + 4)
            guard let started = launcher.nginx(.nginxCache, suffix: "-scale", keysZoneMB: zone) else {
                throw BenchError("nginx did not start")
            }
            server = started
            times.listening = Date().timeIntervalSince(start)
            firstHit = path.map { FirstHitProbe(port: server.port, path: $0, seed: Fixtures.entrySeed,
                                                size: Fixtures.entrySize, start: start, deadline: probeUntil) }
        }
        times.firstHit = firstHit?.result()
        times.fromCache = origin.requests == originBefore
        return (server, times)
    }
}
