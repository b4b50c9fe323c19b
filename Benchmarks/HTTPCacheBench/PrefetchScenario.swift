import CBenchSupport
import Foundation
import Glibc

/// Scenario 20: a modelled player of an HLS title through proxy URLs, on an
/// origin with a remote server's latency and rate, with `--prefetch 0` and
/// with the default prefetch (issue #36). The player fetches the playlist,
/// then two segments before it starts playing, then each next segment when
/// the one two ahead of it starts playing (a buffer of two segments); a
/// segment that is not whole by the time it must play is a stall (and
/// playing waits for it). Reported: the median time to first byte of the
/// segments after the first two, the total stall, and every body checked
/// byte for byte.
extension Bench {
    func prefetchScenario() -> ScenarioResult {
        let s = settings
        let segmentBytes = UInt64(Double(s.prefetchBitrate) * s.prefetchSegmentSeconds)
        let title = "a player of \(s.prefetchSegments) HLS segments of \(String(format: "%.1f", s.prefetchSegmentSeconds)) s "
            + "(\(mib(s.prefetchBitrate))/s) from an origin at \(mib(s.prefetchOriginRate))/s per connection, "
            + "\(Int(s.prefetchLatency * 1000)) ms to first byte: without and with prefetch"
        log("scenario 20: \(title)")
        var result = ScenarioResult(id: 20, title: title, columns: ["TTFB ms (median, k≥2)", "TTFB ms (max, k≥2)", "stall s", "origin MB"],
                                    rows: [], peers: [], ratios: [:], targets: [], notes: [])
        guard launcher.proxySupports("--prefetch") else {
            result.targets = [Targets.atMost("median TTFB of segments after the first two ≤ 10 ms with prefetch", nil, 10,
                                             unmeasured: "this httpcache has no --prefetch")]
            return result
        }
        do {
            try writePrefetchTitle(segmentBytes: segmentBytes)
        } catch {
            result.notes.append("not measured: \(error)")
            return result
        }
        origin.setRate(s.prefetchOriginRate)
        origin.setLatency(s.prefetchLatency)
        defer {
            origin.setRate(0)
            origin.setLatency(0)
        }
        var medians: [String: Double] = [:]
        var stalls: [String: Double] = [:]
        for (name, prefetch) in [("httpcache --prefetch 0", "0"), ("httpcache (prefetch 2)", "2")] {
            let tag = freshTag("prefetch")
            let server: ServerProcess
            do {
                server = try launcher.proxy(name: "prefetch-\(prefetch)", extraArguments: ["--prefetch", prefetch])
            } catch {
                result.notes.append("\(name): the proxy did not start: \(error)")
                continue
            }
            defer { server.stop() }
            let originBefore = origin.bodyBytes
            let play = PlayerModel(port: server.port, segmentBytes: segmentBytes, segmentSeconds: s.prefetchSegmentSeconds)
                .play(playlist: server.path(for: "prefetch/index.m3u8", query: tag), query: tag)
            var row = Row(server: name, metrics: [:])
            switch play {
            case .failure(let error):
                result.notes.append("\(name): \(error)")
            case .success(let outcome):
                let later = outcome.firstBytes.dropFirst(2).sorted()
                let median = later.isEmpty ? 0 : later[later.count / 2] * 1000
                row.metrics = ["TTFB ms (median, k≥2)": median, "TTFB ms (max, k≥2)": (later.last ?? 0) * 1000,
                               "stall s": outcome.stall, "origin MB": Double(origin.bodyBytes - originBefore) / 1_048_576]
                medians[prefetch] = median
                stalls[prefetch] = outcome.stall
                log("  \(name): TTFB median \(String(format: "%.1f", median)) ms, stall \(String(format: "%.2f", outcome.stall)) s")
            }
            result.rows.append(row)
        }
        if let off = medians["0"], let on = medians["2"], on > 0 {
            result.notes.append("median TTFB without / with prefetch: \(String(format: "%.1f", off / on))x")
        }
        result.targets = [
            Targets.atMost("median TTFB of segments after the first two ≤ 10 ms with prefetch", medians["2"], 10),
            Targets.atMost("no stall with prefetch (origin faster than the stream)", stalls["2"], 0),
        ]
        return result
    }

    /// `prefetch/index.m3u8` (VOD) and its segments, pattern files of `segmentBytes` each.
    private func writePrefetchTitle(segmentBytes: UInt64) throws {
        let s = settings
        let folder = launcher.fixturesRoot + "/prefetch"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var playlist = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:\(Int(s.prefetchSegmentSeconds.rounded(.up)))\n"
            + "#EXT-X-MEDIA-SEQUENCE:0\n#EXT-X-PLAYLIST-TYPE:VOD\n"
        for k in 0..<s.prefetchSegments {
            let status = bs_pattern_write_file(folder + "/" + PlayerModel.segmentName(k), PlayerModel.seed(k), segmentBytes)
            guard status == 0 else { throw BenchError("cannot write segment \(k): \(String(cString: strerror(-status)))") }
            playlist += "#EXTINF:\(String(format: "%.3f", s.prefetchSegmentSeconds)),\n\(PlayerModel.segmentName(k))\n"
        }
        playlist += "#EXT-X-ENDLIST\n"
        try playlist.write(toFile: folder + "/index.m3u8", atomically: true, encoding: .utf8)
    }
}

/// The player of scenario 20: one request at a time, on connections of its
/// own (closed after each response), timed from the request to its first
/// byte and to its last.
struct PlayerModel {
    let port: Int
    let segmentBytes: UInt64
    let segmentSeconds: Double

    struct Outcome {
        /// Seconds from each segment's request to the first byte of its response.
        var firstBytes: [Double] = []
        /// Seconds playing waited for segments not yet whole.
        var stall = 0.0
    }

    static func segmentName(_ k: Int) -> String { "seg\(String(1000 + k).dropFirst()).ts" }
    static func seed(_ k: Int) -> UInt64 { 500 + UInt64(k) }

    func play(playlist: String, query: String) -> Result<Outcome, BenchError> {
        guard let list = fetch(playlist), list.status == 200 else { return .failure(BenchError("the playlist did not load")) }
        let text = String(decoding: list.body, as: UTF8.self)
        let segments = text.split(separator: "\n").map(String.init).filter { !$0.isEmpty && !$0.hasPrefix("#") }.map { target($0, playlist) }
        guard !segments.isEmpty else { return .failure(BenchError("the playlist lists no segment")) }
        var outcome = Outcome()
        let start = Date()
        var playStart: Double?  // seconds from start when segment 0 began playing (moved by stalls)
        for (k, path) in segments.enumerated() {
            if let began = playStart, k >= 2 {
                // Asked for when the segment two ahead of it starts playing.
                let due = began + Double(k - 2) * segmentSeconds
                let now = Date().timeIntervalSince(start)
                if due > now { usleep(useconds_t((due - now) * 1e6)) }
            }
            let asked = Date()
            guard let response = fetch(path), response.status == 200 else {
                return .failure(BenchError("segment \(k) failed"))
            }
            guard UInt64(response.body.count) == segmentBytes,
                  response.body.withUnsafeBytes({ bs_pattern_check(Self.seed(k), 0, $0.baseAddress, $0.count) }) == -1 else {
                return .failure(BenchError("segment \(k): wrong bytes"))
            }
            outcome.firstBytes.append(response.firstByte.timeIntervalSince(asked))
            let whole = Date().timeIntervalSince(start)
            if k == 1 { playStart = whole }
            if let began = playStart, k >= 2 {
                let mustPlay = began + Double(k) * segmentSeconds
                if whole > mustPlay {
                    outcome.stall += whole - mustPlay
                    playStart = began + (whole - mustPlay)
                }
            }
        }
        return .success(outcome)
    }

    /// The request target of a playlist line: absolute URLs keep their path, relative ones resolve against the playlist.
    private func target(_ line: String, _ playlist: String) -> String {
        if line.hasPrefix("http://"), let slash = line.dropFirst(7).firstIndex(of: "/") { return String(line[slash...]) }
        if line.hasPrefix("/") { return line }
        let base = playlist.prefix { $0 != "?" }
        return String(base[...(base.lastIndex(of: "/") ?? base.startIndex)]) + line
    }

    private func fetch(_ path: String) -> SimpleHTTP.Response? { SimpleHTTP.get(port: port, path: path, timeout: 60) }
}
