import Foundation
@testable import HTTPCache
import XCTest

/// Offline downloads (issue #23) against nginx: crashes and restarts, pause,
/// remove, parallel fetching, the rate cap and the size limit, through the
/// CLI (with and without a proxy) and the Swift API.
final class DownloadTests: XCTestCase {
    // MARK: helpers

    /// An HLS presentation of random "segments": a master with two variants
    /// of `segments` segments of `segmentSize` bytes each (2 s apiece).
    struct SyntheticHLS {
        let root: URL
        let segments: Int
        let segmentSize: Int

        init(root: URL, segments: Int, segmentSize: Int) throws {
            self.root = root
            self.segments = segments
            self.segmentSize = segmentSize
            for (variant, seed) in [("v0", UInt64(100)), ("v1", UInt64(200))] {
                let folder = root.appendingPathComponent("show/\(variant)")
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                var playlist = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXT-X-PLAYLIST-TYPE:VOD\n"
                for index in 0..<segments {
                    _ = try TestFile.random(size: segmentSize, seed: seed + UInt64(index), in: folder, name: "seg\(index).ts")
                    playlist += "#EXTINF:2.0,\nseg\(index).ts\n"
                }
                try Data((playlist + "#EXT-X-ENDLIST\n").utf8).write(to: folder.appendingPathComponent("index.m3u8"))
            }
            try Data("""
            #EXTM3U
            #EXT-X-STREAM-INF:BANDWIDTH=2000000
            v0/index.m3u8
            #EXT-X-STREAM-INF:BANDWIDTH=1000000
            v1/index.m3u8

            """.utf8).write(to: root.appendingPathComponent("show/master.m3u8"))
        }

        /// Bytes of every segment of both variants.
        var segmentBytes: Int { 2 * segments * segmentSize }
    }

    private func cli(_ arguments: [String], timeout: TimeInterval = 120) throws -> ProcessResult {
        try TestTools.run(CLITests.binary, arguments, timeout: timeout)
    }

    /// `download list --json` of a folder.
    private func records(_ folder: String) throws -> [[String: Any]] {
        let result = try cli(["download", "list", "--json", "--cache-dir", folder])
        XCTAssertTrue(result.succeeded, result.stderr)
        return (try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]]) ?? []
    }

    private func record(_ id: String, in folder: String) throws -> [String: Any]? {
        try records(folder).first { $0["id"] as? String == id }
    }

    /// Polls (every 50 ms, at most `timeout` s) until `condition` holds for the download's record.
    private func waitFor(_ id: String, in folder: String, timeout: TimeInterval = 60,
                         _ condition: ([String: Any]) -> Bool) throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let record = try record(id, in: folder), condition(record) { return record }
            usleep(50_000)
        }
        throw TestSupportError("download \(id) never got there: \(String(describing: try record(id, in: folder)))")
    }

    /// `cache list --json` rows (the folder opened here: no proxy may serve it).
    private func cacheRows(_ folder: String) throws -> [[String: Any]] {
        let result = try cli(["cache", "list", "--json", "--cache-dir", folder])
        XCTAssertTrue(result.succeeded, result.stderr)
        return (try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]]) ?? []
    }

    private func bytes(_ entries: [AccessLogEntry], where match: (String) -> Bool = { _ in true }) -> Int {
        entries.filter { match($0.uri) }.reduce(0) { $0 + $1.bodyBytes }
    }

    // MARK: crashes

    /// Issue #37: a name with CR, LF, ESC and a C1 control (CSI) is stored
    /// without them and listed without them, as a table and as JSON.
    func testControlCharactersInANameAreNeitherStoredNorListed() throws {
        let directory = try TemporaryDirectory(prefix: "download-name")
        defer { directory.remove() }
        let www = directory.file("www")
        try FileManager.default.createDirectory(at: www, withIntermediateDirectories: true)
        _ = try TestFile.random(size: 10_000, seed: 37, in: www, name: "clip.mp4")
        let origin = try NginxOrigin(root: www)
        defer { origin.stop() }
        let folder = directory.file("cache").path
        let name = "Evil\r\nFAKE  completed\u{1B}[31mred\u{9B}2J\u{7F}end"
        let added = try cli(["download", "add", origin.url("/clip.mp4"), "--name", name, "--cache-dir", folder])
        XCTAssertTrue(added.succeeded, added.stderr)
        let id = added.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let stored = try XCTUnwrap(try record(id, in: folder))
        XCTAssertEqual(stored["name"] as? String, "EvilFAKE  completed[31mred2Jend", "stored without the controls")

        let table = try cli(["download", "list", "--cache-dir", folder])
        XCTAssertTrue(table.succeeded, table.stderr)
        XCTAssertEqual(table.stdout.split(separator: "\n", omittingEmptySubsequences: false).count, 2, "one line: \(table.stdout)")
        let json = try cli(["download", "list", "--json", "--cache-dir", folder])
        for output in [table.stdout, json.stdout] {
            let controls = output.unicodeScalars.filter { ($0.value < 0x20 && $0 != "\n") || (0x7F...0x9F).contains($0.value) }
            XCTAssertEqual(controls.count, 0, "no control reaches the terminal: \(output.debugDescription)")
        }
        XCTAssertTrue(table.stdout.contains("EvilFAKE  completed[31mred2Jend"), table.stdout)
    }

    func testA100MBFileKilledMidwayResumesAfterTheRestartAndFetchesNoKeptByteTwice() throws {
        let directory = try TemporaryDirectory(prefix: "download-kill")
        defer { directory.remove() }
        let www = directory.file("www")
        try FileManager.default.createDirectory(at: www, withIntermediateDirectories: true)
        let size = 100_000_000
        let file = try TestFile.random(size: size, seed: 23, in: www, name: "film.mp4")
        let origin = try NginxOrigin(root: www)
        let folder = directory.file("cache").path
        let url = origin.url("/film.mp4")

        // The rate cap makes it slow enough to be killed halfway.
        var proxy = try ProxyProcess(cacheDirectory: folder, extraArguments: ["--download-rate", "40MB"])
        let added = try cli(["download", "add", url, "--name", "Film", "--cache-dir", folder])
        XCTAssertTrue(added.succeeded, added.stderr)
        let id = added.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertEqual(id.count, 8, added.stdout)
        let running = try waitFor(id, in: folder) { ($0["bytesDone"] as? Int ?? 0) >= 30_000_000 }
        XCTAssertEqual(running["state"] as? String, "running")
        XCTAssertEqual(running["bytesTotal"] as? Int, size, "the total from the first response")
        proxy.kill9()

        // What the crash left: contiguous bytes from 0, fewer than the whole file.
        let rows = try cacheRows(folder)
        let kept = rows.first { $0["url"] as? String == url }?["cached"] as? Int ?? 0
        XCTAssertGreaterThan(kept, 0)
        XCTAssertLessThan(kept, size)
        let beforeRestart = origin.accessLog()
        // Read from the folder, a download the crash left running is queued to go on.
        XCTAssertEqual(try record(id, in: folder)?["state"] as? String, "queued")

        // The restarted proxy goes on by itself; `download wait` follows it.
        proxy = try ProxyProcess(cacheDirectory: folder)
        defer { proxy.terminate() }
        let waited = try cli(["download", "wait", id, "--cache-dir", folder], timeout: 120)
        XCTAssertEqual(waited.exitCode, 0, waited.stdout + waited.stderr)
        XCTAssertTrue(waited.stdout.contains("\(id): completed, \(size) bytes"), waited.stdout)
        let afterRestart = Array(origin.accessLog(waitingFor: beforeRestart.count + 1).dropFirst(beforeRestart.count))
        // No byte kept before the crash was fetched again: the restart fetched exactly the rest.
        XCTAssertEqual(bytes(afterRestart), size - kept, "\(afterRestart)")
        XCTAssertTrue(afterRestart.allSatisfy { $0.range == "bytes=\(kept)-" }, "\(afterRestart)")
        // Bytes the crash lost (received, never claimed): reported, bounded by what the first run fetched.
        let lost = bytes(beforeRestart) - kept
        XCTAssertGreaterThanOrEqual(lost, 0)
        print("download-kill: kept \(kept) of \(bytes(beforeRestart)) origin bytes at the crash; lost \(lost)")

        // Offline, the proxy serves the whole file from its cache.
        origin.stop()
        let copy = directory.file("copy").path
        let fetched = try TestTools.run("curl", ["-sf", "-o", copy, try proxy.proxyURL(url)], timeout: 60)
        XCTAssertTrue(fetched.succeeded, fetched.stderr)
        XCTAssertEqual(FileManager.default.contents(atPath: copy).map { [UInt8]($0) } == file.bytes, true, "byte-exact")
        let listed = try records(folder)
        XCTAssertEqual(listed.first?["state"] as? String, "completed")
        XCTAssertEqual(listed.first?["totalIsEstimate"] as? Bool, false)
    }

    /// Issue 35: a 500 KB/s download killed (-9) after 3 s restarted from
    /// bytes=0- although `download list` had shown 700 kB of it. Progress
    /// now counts recorded bytes only, and bytes are recorded within
    /// `flushDelay` while they arrive: after the restart the first range
    /// asked of the origin starts at or after the last progress shown, and
    /// the file is exact.
    func testProgressShownBeforeAKillIsNeverFetchedAgain() throws {
        let directory = try TemporaryDirectory(prefix: "download-kill-slow")
        defer { directory.remove() }
        let www = directory.file("www")
        try FileManager.default.createDirectory(at: www, withIntermediateDirectories: true)
        let size = 8_000_000
        let file = try TestFile.random(size: size, seed: 35, in: www, name: "title.mp4")
        let origin = try NginxOrigin(root: www)
        defer { origin.stop() }
        let folder = directory.file("cache").path
        let url = origin.url("/title.mp4")

        var proxy = try ProxyProcess(cacheDirectory: folder, extraArguments: ["--download-rate", "500K"])
        let added = try cli(["download", "add", url, "--name", "Title", "--cache-dir", folder])
        XCTAssertTrue(added.succeeded, added.stderr)
        let id = added.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        // What `download list` shows, polled as a user would, until it shows progress (at 500 KB/s
        // the 8 MB take 16 s: the kill comes mid-download; a bounded wait, not a fixed 3 s, as a busy
        // machine may start the download late).
        var shown = 0
        let shows = try TestTools.waitUntil(timeout: 12, pollInterval: 0.1) {
            shown = max(shown, try record(id, in: folder)?["bytesDone"] as? Int ?? 0)
            return shown > 0
        }
        proxy.kill9()
        XCTAssertTrue(shows, "progress is shown while the download runs")
        let beforeRestart = origin.accessLog()

        proxy = try ProxyProcess(cacheDirectory: folder)
        defer { proxy.terminate() }
        let waited = try cli(["download", "wait", id, "--cache-dir", folder], timeout: 120)
        XCTAssertEqual(waited.exitCode, 0, waited.stdout + waited.stderr)
        let afterRestart = Array(origin.accessLog(waitingFor: beforeRestart.count + 1).dropFirst(beforeRestart.count))
        let first = try XCTUnwrap(afterRestart.first { $0.uri == "/title.mp4" }, "\(afterRestart)")
        let start = first.range.flatMap { Int($0.dropFirst("bytes=".count).prefix { $0 != "-" }) } ?? 0
        XCTAssertGreaterThanOrEqual(start, shown, "the progress shown (\(shown)) was fetched again: \(afterRestart)")
        print("download-kill-slow: shown \(shown) before the kill; the restart asked \(first.range ?? "everything")")

        origin.stop()
        let copy = directory.file("copy").path
        let fetched = try TestTools.run("curl", ["-sf", "-o", copy, try proxy.proxyURL(url)], timeout: 60)
        XCTAssertTrue(fetched.succeeded, fetched.stderr)
        XCTAssertTrue(FileManager.default.contents(atPath: copy).map { [UInt8]($0) == file.bytes } ?? false, "byte-exact")
    }

    func testAnHLSMasterKilledMidwayResumesWithoutRefetchingKeptSegments() throws {
        let directory = try TemporaryDirectory(prefix: "download-hls-kill")
        defer { directory.remove() }
        let www = directory.file("www")
        let hls = try SyntheticHLS(root: www, segments: 30, segmentSize: 200_000)
        let origin = try NginxOrigin(root: www)
        let folder = directory.file("cache").path
        let master = origin.url("/show/master.m3u8")

        var proxy = try ProxyProcess(cacheDirectory: folder, extraArguments: ["--download-rate", "3MB"])
        let added = try cli(["download", "add", master, "--cache-dir", folder])
        XCTAssertTrue(added.succeeded, added.stderr)
        let id = added.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let running = try waitFor(id, in: folder) { ($0["segmentsDone"] as? Int ?? 0) >= 15 }
        XCTAssertEqual(running["segmentsTotal"] as? Int, 2 * hls.segments)
        XCTAssertEqual(running["totalIsEstimate"] as? Bool, true)
        proxy.kill9()

        let isSegment = { (uri: String) in uri.hasSuffix(".ts") }
        let kept = try cacheRows(folder).filter { isSegment($0["url"] as? String ?? "") }.reduce(0) { $0 + ($1["cached"] as? Int ?? 0) }
        XCTAssertGreaterThan(kept, 0)
        XCTAssertLessThan(kept, hls.segmentBytes)
        let beforeRestart = origin.accessLog()

        proxy = try ProxyProcess(cacheDirectory: folder)
        defer { proxy.terminate() }
        let waited = try cli(["download", "wait", id, "--cache-dir", folder], timeout: 120)
        XCTAssertEqual(waited.exitCode, 0, waited.stdout + waited.stderr)
        XCTAssertTrue(waited.stdout.contains("\(2 * hls.segments)/\(2 * hls.segments) segments"), waited.stdout)
        let afterRestart = Array(origin.accessLog(waitingFor: beforeRestart.count + 1).dropFirst(beforeRestart.count))
        XCTAssertEqual(bytes(afterRestart, where: isSegment), hls.segmentBytes - kept, "\(afterRestart)")

        // Every segment is kept, complete and pinned.
        let rows = try cacheRows(folder).filter { isSegment($0["url"] as? String ?? "") }
        XCTAssertEqual(rows.count, 2 * hls.segments)
        XCTAssertTrue(rows.allSatisfy { $0["complete"] as? Bool == true && $0["pinned"] as? Bool == true }, "\(rows)")
    }

    // MARK: pause, remove, size limit

    func testPauseHoldsAndRemoveFreesExactlyItsResources() throws {
        let directory = try TemporaryDirectory(prefix: "download-pause")
        defer { directory.remove() }
        let www = directory.file("www")
        _ = try SyntheticHLS(root: www, segments: 6, segmentSize: 100_000)
        _ = try TestFile.random(size: 8_000_000, seed: 5, in: www, name: "slow.bin")
        _ = try TestFile.random(size: 50_000, seed: 6, in: www, name: "other.bin")
        let origin = try NginxOrigin(root: www)
        let folder = directory.file("cache").path
        let proxy = try ProxyProcess(cacheDirectory: folder, extraArguments: ["--download-rate", "2MB"])
        defer { proxy.terminate() }

        // Pause: no origin byte while paused, and the record stays where it was.
        let slow = try cli(["download", "add", origin.url("/slow.bin"), "--cache-dir", folder]).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        _ = try waitFor(slow, in: folder) { ($0["bytesDone"] as? Int ?? 0) >= 1_000_000 }
        XCTAssertTrue(try cli(["download", "pause", slow, "--cache-dir", folder]).succeeded)
        let paused = try waitFor(slow, in: folder) { $0["state"] as? String == "paused" }
        _ = origin.accessLog(waitingFor: 1)  // the canceled request is logged once its connection closes
        let atPause = bytes(origin.accessLog())
        XCTAssertTrue(TestTools.waitUntil(timeout: 10) { proxy.stats?["active_downloads"] as? Int == 0 },
                      "no origin download while paused: \(proxy.stats ?? [:])")
        XCTAssertEqual(bytes(origin.accessLog()), atPause, "no origin byte while paused")
        XCTAssertEqual(try record(slow, in: folder)?["bytesDone"] as? Int, paused["bytesDone"] as? Int)
        XCTAssertTrue(try cli(["download", "resume", slow, "--cache-dir", folder]).succeeded)
        XCTAssertEqual(try cli(["download", "wait", slow, "--cache-dir", folder]).exitCode, 0)
        // The resumed request asked for the rest only: from where the paused one stopped writing.
        let slowRequests = origin.accessLog().filter { $0.uri == "/slow.bin" }
        XCTAssertEqual(slowRequests.count, 2, "\(slowRequests)")
        let resumedAt = slowRequests.last?.range.flatMap { Int($0.dropFirst("bytes=".count).dropLast()) } ?? -1
        XCTAssertGreaterThanOrEqual(resumedAt, paused["bytesDone"] as? Int ?? Int.max)
        XCTAssertEqual(slowRequests.last?.bodyBytes, 8_000_000 - resumedAt)

        // Two downloads share the first 4 s of variant v0; a plain cached entry belongs to none.
        let all = try cli(["download", "add", origin.url("/show/v0/index.m3u8"), "--cache-dir", folder]).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let start = try cli(["download", "add", origin.url("/show/v0/index.m3u8"), "--duration", "4", "--name", "Start",
                             "--cache-dir", folder]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertEqual(try cli(["download", "wait", all, "--cache-dir", folder]).exitCode, 0)
        XCTAssertEqual(try cli(["download", "wait", start, "--cache-dir", folder]).exitCode, 0)
        let plain = try TestTools.run("curl", ["-sf", "-o", "/dev/null", try proxy.proxyURL(origin.url("/other.bin"))])
        XCTAssertTrue(plain.succeeded)
        let urls = { (rows: [[String: Any]]) in Set(rows.compactMap { $0["url"] as? String }) }
        let before = urls(try adminCacheRows(proxy: proxy, folder: folder))
        XCTAssertTrue(before.contains(origin.url("/show/v0/seg5.ts")))

        XCTAssertTrue(try cli(["download", "rm", all, "--cache-dir", folder]).succeeded)
        let after = urls(try adminCacheRows(proxy: proxy, folder: folder, waitingForFewerThan: before.count))
        // Gone: what only `all` held (segments 2 to 5). Kept: what `start` holds, the other download, the plain entry.
        XCTAssertEqual(before.subtracting(after), Set((2..<6).map { origin.url("/show/v0/seg\($0).ts") }))
        XCTAssertTrue(after.isSuperset(of: [origin.url("/show/v0/index.m3u8"), origin.url("/show/v0/seg0.ts"),
                                            origin.url("/show/v0/seg1.ts"), origin.url("/slow.bin"), origin.url("/other.bin")]))
        XCTAssertNil(try record(all, in: folder))
    }

    /// Purge by title (issue #25): `cache purge --download ID` takes every
    /// entry the download holds, also those another download holds, and
    /// removes the download; through a proxy and on the folder alone.
    func testPurgeByDownloadTakesEveryEntryItHoldsAndTheDownload() throws {
        let directory = try TemporaryDirectory(prefix: "download-purge")
        defer { directory.remove() }
        let www = directory.file("www")
        _ = try SyntheticHLS(root: www, segments: 3, segmentSize: 20_000)
        _ = try TestFile.random(size: 30_000, seed: 7, in: www, name: "other.bin")
        let origin = try NginxOrigin(root: www)
        let folder = directory.file("cache").path
        let proxy = try ProxyProcess(cacheDirectory: folder)
        defer { proxy.terminate() }
        let add = { (arguments: [String]) in
            try self.cli(["download", "add", origin.url("/show/v0/index.m3u8")] + arguments + ["--cache-dir", folder]).stdout
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let all = try add([])
        let start = try add(["--duration", "2", "--name", "Start"])
        XCTAssertEqual(try cli(["download", "wait", all, "--cache-dir", folder]).exitCode, 0)
        XCTAssertEqual(try cli(["download", "wait", start, "--cache-dir", folder]).exitCode, 0)
        XCTAssertTrue(try TestTools.run("curl", ["-sf", "-o", "/dev/null", try proxy.proxyURL(origin.url("/other.bin"))]).succeeded)
        let before = try adminCacheRows(proxy: proxy, folder: folder)

        let purged = try cli(["cache", "purge", "--download", all, "--cache-dir", folder])
        XCTAssertEqual(purged.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "4 resources purged", purged.stderr)
        let urls = Set(try adminCacheRows(proxy: proxy, folder: folder, waitingForFewerThan: before.count)
            .compactMap { $0["url"] as? String })
        XCTAssertEqual(urls, [origin.url("/other.bin")], "the playlist and every segment, seg0 (also Start's) included")
        XCTAssertNil(try record(all, in: folder))
        XCTAssertNotNil(try record(start, in: folder))
        XCTAssertEqual(try cli(["cache", "purge", "--download", "no-such-id", "--cache-dir", folder]).exitCode,
                       HTTPCacheError(.notFound, "").exitStatus)

        proxy.terminate()
        let alone = try cli(["cache", "purge", "--download", start, "--cache-dir", folder])
        XCTAssertTrue(alone.succeeded, alone.stderr)
        XCTAssertNil(try record(start, in: folder))
        XCTAssertEqual(try cacheRows(folder).compactMap { $0["url"] as? String }, [origin.url("/other.bin")])
    }

    /// `cache list --json` through the proxy; polls until fewer than `count` entries when asked.
    private func adminCacheRows(proxy: ProxyProcess, folder: String, waitingForFewerThan count: Int? = nil) throws -> [[String: Any]] {
        for _ in 0..<100 {
            let rows = try cacheRows(folder)
            if count.map({ rows.count < $0 }) ?? true { return rows }
            usleep(50_000)
        }
        return try cacheRows(folder)
    }

    /// A download (and a preload) larger than the cache limit fails with `.tooLarge`, never "completed" or "done".
    func testADownloadLargerThanTheLimitFailsAndIsNeverCompleted() throws {
        let directory = try TemporaryDirectory(prefix: "download-too-large")
        defer { directory.remove() }
        let www = directory.file("www")
        _ = try SyntheticHLS(root: www, segments: 40, segmentSize: 200_000)  // 16 MB of segments
        let origin = try NginxOrigin(root: www)
        let folder = directory.file("cache").path
        let master = origin.url("/show/master.m3u8")

        // Served, with a 2 MB limit: the download fails with that reason; nothing stays pinned.
        let proxy = try ProxyProcess(cacheDirectory: folder, extraArguments: ["--max-cache-size", "2MB"])
        let id = try cli(["download", "add", master, "--cache-dir", folder]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let waited = try cli(["download", "wait", id, "--cache-dir", folder])
        XCTAssertEqual(waited.exitCode, HTTPCacheError(.tooLarge, "").exitStatus, waited.stdout + waited.stderr)
        XCTAssertTrue(waited.stdout.contains("failed: needs at least"), waited.stdout)
        let failed = try record(id, in: folder)
        XCTAssertEqual(failed?["state"] as? String, "failed")
        XCTAssertEqual((failed?["failure"] as? [String: Any])?["code"] as? Int, Int(HTTPCacheError.Code.tooLarge.rawValue))
        // A preload (not a download) of it fails the same way rather than saying done.
        let preloaded = try cli(["preload", master, "--cache-dir", folder])
        XCTAssertEqual(preloaded.exitCode, HTTPCacheError(.tooLarge, "").exitStatus, preloaded.stdout + preloaded.stderr)
        XCTAssertTrue((preloaded.stdout + preloaded.stderr).contains("needs at least"), preloaded.stdout + preloaded.stderr)
        proxy.terminate()
        XCTAssertFalse(try cacheRows(folder).contains { $0["pinned"] as? Bool == true })

        // Without a proxy: `wait` runs it under its own limit, and fails the same way.
        let local = try cli(["download", "add", master, "--variant", "lowest", "--cache-dir", folder]).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertEqual(try record(local, in: folder)?["state"] as? String, "queued")
        let localWait = try cli(["download", "wait", local, "--max-cache-size", "1MB", "--cache-dir", folder])
        XCTAssertEqual(localWait.exitCode, HTTPCacheError(.tooLarge, "").exitStatus, localWait.stdout + localWait.stderr)
    }

    func testDownloadsHoldWhileAPlayersOwnFetchRuns() throws {
        let directory = try TemporaryDirectory(prefix: "download-players-first")
        defer { directory.remove() }
        let www = directory.file("www")
        try FileManager.default.createDirectory(at: www.appendingPathComponent("slow"), withIntermediateDirectories: true)
        _ = try TestFile.random(size: 20_000_000, seed: 12, in: www, name: "title.bin")
        let played = try TestFile.random(size: 1_500_000, seed: 13, in: www.appendingPathComponent("slow"), name: "clip.mp4")
        // The player's file comes slowly (about 2.5 s): its fetch runs the whole time.
        let origin = try NginxOrigin(root: www, extraServerConfig: "location /slow/ { limit_rate 500k; }")
        let folder = directory.file("cache").path
        let proxy = try ProxyProcess(cacheDirectory: folder, extraArguments: ["--download-rate", "4MB"])
        defer { proxy.terminate() }
        let id = try cli(["download", "add", origin.url("/title.bin"), "--cache-dir", folder]).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        _ = try waitFor(id, in: folder) { ($0["bytesDone"] as? Int ?? 0) >= 1_000_000 }

        let player = Process()
        player.executableURL = URL(fileURLWithPath: try TestTools.requireTool("curl"))
        let body = directory.file("played").path
        player.arguments = ["-sf", "--max-time", "30", "-o", body, try proxy.proxyURL(origin.url("/slow/clip.mp4"))]
        try player.run()
        // The window is the player's own progress (500 kB of its body at 500 kB/s), not a sleep.
        let playedBytes = { (try? FileManager.default.attributesOfItem(atPath: body)[.size] as? Int) ?? 0 }
        XCTAssertTrue(TestTools.waitUntil(timeout: 10) { playedBytes() >= 250_000 }, "the player's fetch runs")
        let during = try record(id, in: folder)?["bytesDone"] as? Int ?? 0
        XCTAssertTrue(TestTools.waitUntil(timeout: 10) { playedBytes() >= 750_000 }, "the player's fetch goes on")
        let later = try record(id, in: folder)?["bytesDone"] as? Int ?? 0
        // Unheld, 4 MB/s would have brought about 4 MB in that second.
        XCTAssertLessThan(later - during, 300_000, "held while the player's fetch runs")
        XCTAssertTrue(player.isRunning, "the player's fetch still runs (else the check above proves nothing)")
        player.waitUntilExit()
        XCTAssertEqual(player.terminationStatus, 0)
        XCTAssertEqual(FileManager.default.contents(atPath: body).map { [UInt8]($0) } == played.bytes, true)
        // Then it goes on by itself.
        XCTAssertEqual(try cli(["download", "wait", id, "--cache-dir", folder]).exitCode, 0)
    }

    // MARK: scheduler (Swift API)

    /// Runs one download in-process and times it from its addition to its end (polled every 10 ms).
    private func timedDownload(_ url: String, parallel: Int, rate: Int64 = 0, loops: Int = 1,
                               folder: String) throws -> (Double, DownloadInfo) {
        var configuration = HTTPCacheConfiguration(cacheDirectory: folder)
        configuration.loops = loops
        configuration.downloadParallel = parallel
        configuration.downloadRate = rate
        let cache = try MediaCache(configuration: configuration, logger: LogCapture().logger)
        defer { cache.close() }
        let started = Date()
        let added = try cache.downloadCall { $0.add(url: url, name: nil, variant: nil, duration: nil, range: nil) }
        for _ in 0..<6000 {
            if let now = cache.downloadList().first(where: { $0.id == added.id }), now.isOver {
                return (Date().timeIntervalSince(started), now)
            }
            usleep(10_000)
        }
        throw TestSupportError("download \(added.id) did not end in 60 s")
    }

    func testFourFetchesAtOnceBeatOneOnAPacedOrigin() throws {
        let directory = try TemporaryDirectory(prefix: "download-parallel")
        defer { directory.remove() }
        let www = directory.file("www")
        _ = try SyntheticHLS(root: www, segments: 4, segmentSize: 200_000)
        // 100 kB/s per request after the first second's worth (nginx sends that at once): 1 s per segment.
        let origin = try NginxOrigin(root: www, extraServerConfig: "limit_rate 100k;")
        let playlist = origin.url("/show/v0/index.m3u8")
        let (one, first) = try timedDownload(playlist, parallel: 1, folder: directory.file("c1").path)
        let (four, second) = try timedDownload(playlist, parallel: 4, folder: directory.file("c4").path)
        XCTAssertEqual(first.state, .completed)
        XCTAssertEqual(second.state, .completed)
        XCTAssertEqual(second.segmentsDone, 4)
        print("download-parallel: 1 at once \(one) s, 4 at once \(four) s")
        XCTAssertLessThan(four * 2, one, "4 at once \(four) s, 1 at once \(one) s")
        origin.stop(timeout: 1)  // a paced nginx is slow to stop
    }

    /// The cap on the cache's clock, stopped but for the test's steps of a
    /// quarter second: each step lets a quarter of the rate through, the
    /// download never runs ahead of the clock, and it ends when the cap says.
    func testTheRateCapHoldsWithinTenPercent() throws {
        let directory = try TemporaryDirectory(prefix: "download-rate")
        defer { directory.remove() }
        let www = directory.file("www")
        try FileManager.default.createDirectory(at: www, withIntermediateDirectories: true)
        _ = try TestFile.random(size: 8_000_000, seed: 9, in: www, name: "capped.bin")
        let origin = try NginxOrigin(root: www)
        let clock = TestClock(stopped: true)
        var configuration = HTTPCacheConfiguration(cacheDirectory: directory.file("cache").path)
        configuration.loops = 2  // one cap for both (the file is owned by one of them)
        configuration.downloadParallel = 4
        configuration.downloadRate = 2_000_000
        configuration.clock = { clock.now }
        let cache = try MediaCache(configuration: configuration, logger: LogCapture().logger)
        defer { cache.close() }
        let url = origin.url("/capped.bin")
        let added = try cache.downloadCall { $0.add(url: url, name: nil, variant: nil, duration: nil, range: nil) }
        let info = { cache.downloadList().first { $0.id == added.id } }
        // Bytes in the cache now (a download's own count lags: it counts what the metadata on disk records).
        let cached = { cache.cachedResources().first { $0.url == url }?.cachedBytes ?? 0 }
        var elapsed: Int64 = 0  // milliseconds of the cache's clock
        while elapsed < 60_000, let now = info(), !now.isOver {
            // What the cap allows by now, and a read (256 KiB) per fetch under way when it said stop.
            XCTAssertLessThanOrEqual(cached(), 2_000 * elapsed + 4 * (256 << 10), "ahead of the cap at \(elapsed) ms")
            clock.advance(milliseconds: 250)
            elapsed += 250
            // The step's share arrives (or the download ends).
            XCTAssertTrue(TestTools.waitUntil(timeout: 10) {
                info()?.isOver ?? true || cached() >= min(8_000_000, 2_000 * elapsed)
            }, "the cap let \(elapsed) ms' worth through: \(cached()) bytes")
        }
        XCTAssertEqual(info()?.state, .completed)
        let rate = 8_000_000 / (Double(elapsed) / 1000)
        print("download-rate: \(rate) B/s of the cache's clock under a 2 MB/s cap")
        XCTAssertEqual(rate, 2_000_000, accuracy: 200_000)
    }

    func testEventsFollowADownloadThroughTheSwiftAPI() throws {
        let directory = try TemporaryDirectory(prefix: "download-events")
        defer { directory.remove() }
        let www = directory.file("www")
        try FileManager.default.createDirectory(at: www, withIntermediateDirectories: true)
        _ = try TestFile.random(size: 3_000_000, seed: 4, in: www, name: "a.bin")
        let origin = try NginxOrigin(root: www)
        var configuration = HTTPCacheConfiguration(cacheDirectory: directory.file("cache").path)
        configuration.downloadRate = 6_000_000
        let cache = try MediaCache(configuration: configuration, logger: LogCapture().logger)
        defer { cache.close() }
        let url = origin.url("/a.bin")

        struct Seen: Sendable {
            var states: [DownloadState] = []
            var progress: [Int64] = []
            var listed: [DownloadInfo] = []
            var removed: DownloadInfo?
            var pauseError: HTTPCacheError?
        }
        // The async API, driven from a task while this (synchronous) test waits.
        let outcome = OneResult<Result<Seen, HTTPCacheError>>()
        Task.detached {
            do throws(HTTPCacheError) {
                var seen = Seen()
                let events = cache.downloadEvents
                let added = try await cache.addDownload(url, name: "A", range: "0-1999999")
                for await info in events where info.id == added.id {
                    if seen.states.last != info.state { seen.states.append(info.state) }
                    seen.progress.append(info.bytesDone)
                    if info.isOver { break }
                }
                seen.listed = await cache.downloads()
                seen.removed = try await cache.removeDownload(added.id)
                do throws(HTTPCacheError) { _ = try await cache.pauseDownload(added.id) } catch { seen.pauseError = error }
                outcome.put(.success(seen))
            } catch {
                outcome.put(.failure(error))
            }
        }
        let seen = try XCTUnwrap(outcome.take(timeout: 60)).get()
        XCTAssertEqual(seen.states, [.queued, .running, .completed])
        XCTAssertEqual(seen.progress.last, 2_000_000)
        XCTAssertEqual(seen.progress, seen.progress.sorted(), "progress never goes back")
        XCTAssertEqual(seen.listed.map(\.name), ["A"])
        XCTAssertEqual(seen.listed.first?.bytesTotal, 2_000_000)
        XCTAssertEqual(seen.removed?.state, .removed)
        XCTAssertEqual(seen.pauseError?.code, .notFound, "a removed download is gone")
    }
}

/// One value handed from a task to a waiting thread.
final class OneResult<T: Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    private var value: T?

    func put(_ new: T) {
        condition.lock()
        value = new
        condition.broadcast()
        condition.unlock()
    }

    /// The value, or nil after `timeout` seconds.
    func take(timeout: TimeInterval) -> T? {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while value == nil, condition.wait(until: deadline) {}
        return value
    }
}
