import Foundation
import HTTPCache
import XCTest

/// URL mapping, content-type policy, cache operations (Swift and CLI), last errors.
final class ManagementTests: XCTestCase {
    func testTokenURLsShareOneEntry() throws {
        let fixture = try ProxyFixture { $0.cacheKey = HTTPCacheConfiguration.ignoringQueryParameters(["token", "expires"]) }
        defer { fixture.stop() }
        let file = try fixture.file("movie.mp4", size: 500_000, seed: 4)
        let first = try fixture.server.proxyURL(for: fixture.origin.url("/movie.mp4?token=aaa&expires=1&q=1"))
        let second = try fixture.server.proxyURL(for: fixture.origin.url("/movie.mp4?q=1&token=bbb&expires=2"))
        XCTAssertBytes(try RawHTTPClient.get(url: first).body, equal: file)
        XCTAssertBytes(try RawHTTPClient.get(url: second).body, equal: file)
        XCTAssertEqual(fixture.origin.accessLog(waitingFor: 1).filter { $0.uri.hasPrefix("/movie.mp4") }.count, 1)
        XCTAssertEqual(fixture.server.cachedResources().count, 1)
    }

    /// The Swift API checks a configuration when the cache opens: an
    /// unparsable origin used to be dropped (the cache served as a forward proxy).
    func testConfigurationIsValidatedWhenTheCacheOpens() throws {
        let directory = try TemporaryDirectory(prefix: "httpcache-validate")
        defer { directory.remove() }
        let cases: [(String, (inout HTTPCacheConfiguration) -> Void)] = [
            ("origin takes an http or https origin", { $0.origin = "notaurl" }),
            ("header takes 'Name: value'", { $0.extraHeaders = [("Range", "bytes=0-")] }),
            ("port takes 0 to 65535", { $0.port = 70_000 }),
            ("loops takes 1 to 256", { $0.loops = 0 }),
            ("read-timeout takes a number of seconds above 0", { $0.readTimeout = 0 }),
            ("host takes an IPv4 or IPv6 address", { $0.host = "example.com" }),
        ]
        for (message, change) in cases {
            var configuration = HTTPCacheConfiguration(cacheDirectory: directory.path + "/cache")
            change(&configuration)
            XCTAssertThrowsError(try MediaCache(configuration: configuration)) { error in
                XCTAssertEqual((error as? HTTPCacheError)?.code, .invalidArgument)
                XCTAssertTrue((error as? HTTPCacheError)?.message.hasPrefix(message) == true, "\(error)")
            }
        }
    }

    /// A live reconfiguration applies exactly the options the table marks
    /// reloadable (copied by the table, not by a hand-kept list): the others
    /// wait for a restart.
    func testReconfigureAppliesExactlyTheReloadableOptions() throws {
        let fixture = try ProxyFixture()
        defer { fixture.stop() }
        let before = fixture.server.configuration
        var asked = before
        asked.maxCacheSize = 123_000_000
        asked.extraHeaders = [("X-Test", "1")]
        asked.forwardedHeaders = ["X-Player"]
        asked.allowedOrigins = ["127.0.0.1"]
        asked.downloadParallel = 7
        asked.downloadRate = 1_000_000
        asked.readTimeout = before.readTimeout + 11        // not reloadable
        asked.cacheStatusName = "other"                     // not reloadable
        try fixture.server.reconfigure(asked)
        let after = fixture.server.configuration
        XCTAssertEqual(after.maxCacheSize, 123_000_000)
        XCTAssertEqual(after.extraHeaders.map { "\($0.0): \($0.1)" }, ["X-Test: 1"])
        XCTAssertEqual(after.forwardedHeaders, ["X-Player"])
        XCTAssertEqual(after.allowedOrigins, ["127.0.0.1"])
        XCTAssertEqual(after.downloadParallel, 7)
        XCTAssertEqual(after.downloadRate, 1_000_000)
        XCTAssertEqual(after.readTimeout, before.readTimeout, "a restart option stays as it was")
        XCTAssertEqual(after.cacheStatusName, before.cacheStatusName, "a restart option stays as it was")
        // And the proxy still serves, under the new allow-list (the origin is on 127.0.0.1).
        let file = try fixture.file("r.bin", size: 10_000, seed: 3)
        XCTAssertBytes(try RawHTTPClient.get(url: try fixture.server.proxyURL(for: fixture.origin.url("/r.bin"))).body, equal: file)
    }

    func testQueryFilterKeepsOtherParameters() {
        let map = HTTPCacheConfiguration.ignoringQueryParameters(["token"])
        XCTAssertEqual(map("http://h/a.mp4?token=1&x=2"), "http://h/a.mp4?x=2")
        XCTAssertEqual(map("http://h/a.mp4?x=2&token=1"), "http://h/a.mp4?x=2")
        XCTAssertEqual(map("http://h/a.mp4?token=1"), "http://h/a.mp4")
        XCTAssertEqual(map("http://h/a.mp4?tokens=1"), "http://h/a.mp4?tokens=1")
        XCTAssertEqual(map("http://h/a.mp4"), "http://h/a.mp4")
        // Fragments stay; empty pairs keep their place; names compare case-sensitively.
        XCTAssertEqual(map("http://h/a.mp4?token=1#t=5"), "http://h/a.mp4#t=5")
        XCTAssertEqual(map("http://h/a.mp4?x=2&&token=1&y#t"), "http://h/a.mp4?x=2&&y#t")
        XCTAssertEqual(map("http://h/a.mp4?Token=1&token"), "http://h/a.mp4?Token=1")
        XCTAssertEqual(map("http://h/é.mp4?token=é&ü=1"), "http://h/é.mp4?ü=1")
    }

    func testByteSizes() {
        XCTAssertEqual(ByteSize.parse("500MB"), 500_000_000)
        XCTAssertEqual(ByteSize.parse("500M"), 500_000_000)
        XCTAssertEqual(ByteSize.parse("2GiB"), 2_147_483_648)
        XCTAssertEqual(ByteSize.parse("1.5 KiB"), 1536)
        XCTAssertEqual(ByteSize.parse("1048576"), 1_048_576)
        XCTAssertEqual(ByteSize.parse("10k"), 10_000)
        for bad in ["", "MB", "-1", "5 parsecs", "1e3"] { XCTAssertNil(ByteSize.parse(bad), bad) }
    }

    func testContentTypeOutsideThePolicyIsProxiedNotCached() throws {
        let fixture = try ProxyFixture()
        defer { fixture.stop() }
        let text = try fixture.file("notes.txt", size: 50_000, seed: 6)  // nginx: text/plain
        XCTAssertBytes(try fixture.get("notes.txt").body, equal: text)
        XCTAssertBytes(try fixture.get("notes.txt", range: "bytes=10-20").body, equal: text, range: 10..<21)
        XCTAssertEqual(fixture.originLog("notes.txt").count, 2, "not cached: each request reaches the origin")
        XCTAssertEqual(fixture.server.cachedResources().count, 0)
        let video = try fixture.file("clip.mp4", size: 50_000, seed: 7)
        XCTAssertBytes(try fixture.get("clip.mp4").body, equal: video)
        XCTAssertBytes(try fixture.get("clip.mp4").body, equal: video)
        XCTAssertEqual(fixture.originLog("clip.mp4").count, 1)
    }

    func testContentTypeHookAcceptsMore() throws {
        let fixture = try ProxyFixture { $0.isCacheable = { _ in true } }
        defer { fixture.stop() }
        let text = try fixture.file("notes.txt", size: 50_000, seed: 6)
        XCTAssertBytes(try fixture.get("notes.txt").body, equal: text)
        XCTAssertBytes(try fixture.get("notes.txt").body, equal: text)
        XCTAssertEqual(fixture.originLog("notes.txt").count, 1)
    }

    /// Removing and clearing delete folders in the background: an import of
    /// the same URL right after must neither fail nor lose its folder to that
    /// deletion (it did, now and then, until a removed folder was renamed away
    /// at once).
    func testImportRightAfterRemovalKeepsItsFolder() async throws {
        let directory = try TemporaryDirectory(prefix: "httpcache-reimport")
        defer { directory.remove() }
        let cache = try MediaCache(configuration: HTTPCacheConfiguration(cacheDirectory: directory.path + "/cache"))
        defer { cache.close() }
        let source = try TestFile.random(size: 300_000, seed: 31, in: directory.url, name: "source.bin")
        let url = "http://media.example/clip.mp4"
        for round in 0..<40 {
            try await cache.importResource(for: url, from: source.path)
            if round % 2 == 0 { cache.removeAllResources() } else { try cache.removeResource(for: url) }
            try await cache.importResource(for: url, from: source.path)
            XCTAssertEqual(cache.cacheSize(), 300_000, "round \(round)")
            let exported = directory.path + "/exported-\(round).bin"
            try await cache.exportResource(for: url, to: exported)
            XCTAssertBytes(try Data(contentsOf: URL(fileURLWithPath: exported)), equal: source, "round \(round)")
            cache.removeAllResources()
        }
        // The files removed in the background are gone; nothing else is left.
        XCTAssertTrue(TestTools.waitUntil(timeout: 10) { CacheFolderFiles.all(directory.path + "/cache").isEmpty })
    }

    func testSwiftCacheOperations() async throws {
        let fixture = try ProxyFixture()
        defer { fixture.stop() }
        let file = try fixture.file("a.mp4", size: 300_000, seed: 1)
        let url = fixture.origin.url("/a.mp4")
        _ = try fixture.get("a.mp4", range: "bytes=0-999")
        var listed = try XCTUnwrap(fixture.server.cachedResources().first)
        XCTAssertEqual(listed.url, url)
        XCTAssertEqual(listed.totalLength, 300_000)
        XCTAssertEqual(listed.cachedRanges, [0...999])
        XCTAssertFalse(listed.isComplete)
        let exported = fixture.directory.file("out.mp4").path
        do {
            try await fixture.server.exportResource(for: url, to: exported)
            XCTFail("an incomplete resource was exported")
        } catch {
            XCTAssertEqual(error.code, .range)
        }
        _ = try fixture.get("a.mp4")
        listed = try XCTUnwrap(fixture.server.cachedResources().first)
        XCTAssertTrue(listed.isComplete)
        try await fixture.server.exportResource(for: url, to: exported)
        XCTAssertEqual(Array(try Data(contentsOf: URL(fileURLWithPath: exported))), file.bytes)

        // Import: served without the origin.
        let local = try TestFile.random(size: 123_456, seed: 9, in: fixture.directory.url, name: "local.mp4")
        let importedURL = fixture.origin.url("/never-there.mp4")
        try await fixture.server.importResource(for: importedURL, from: local.path, contentType: "video/mp4")
        fixture.origin.stop()
        let served = try RawHTTPClient.get(url: try fixture.server.proxyURL(for: importedURL), range: "bytes=100-")
        XCTAssertEqual(served.header("Content-Type"), "video/mp4")
        XCTAssertBytes(served.body, equal: local, range: 100..<123_456)

        try fixture.server.removeResource(for: url)
        XCTAssertEqual(fixture.server.cachedResources().map(\.url), [importedURL])
        XCTAssertThrowsError(try fixture.server.removeResource(for: url))
        fixture.server.removeAllResources()
        XCTAssertTrue(TestTools.waitUntil(timeout: 5) { fixture.server.cacheSize() == 0 })
        XCTAssertEqual(fixture.server.cachedResources().count, 0)
    }

    func testLastErrorPerURL() throws {
        let fixture = try ProxyFixture()
        defer { fixture.stop() }
        let url = "http://127.0.0.1:\(try TestTools.freePort())/gone.mp4"
        XCTAssertEqual(try RawHTTPClient.get(url: try fixture.server.proxyURL(for: url)).status, 502)
        XCTAssertTrue(fixture.server.lastError(for: url)?.contains("connect") ?? false, "\(String(describing: fixture.server.lastError(for: url)))")
        fixture.server.clearLastErrors()
        XCTAssertNil(fixture.server.lastError(for: url))
    }

    /// `httpcache cache …` on a folder with no proxy, then with one serving it.
    func testCLICacheCommandsWithAndWithoutAProxy() throws {
        let fixture = try ProxyFixture()
        defer { fixture.stop() }
        let file = try fixture.file("c.mp4", size: 200_000, seed: 3)
        let url = fixture.origin.url("/c.mp4")
        _ = try fixture.get("c.mp4")
        fixture.server.close()
        let cache = fixture.cacheDirectory
        func cli(_ arguments: [String]) throws -> ProcessResult {
            try TestTools.run(CLITests.binary, ["cache"] + arguments + ["--cache-dir", cache], timeout: 30)
        }
        // No proxy: the folder is opened directly.
        var list = try cli(["list"])
        XCTAssertTrue(list.succeeded, list.stderr)
        XCTAssertTrue(list.stdout.contains(url) && list.stdout.contains("200000/200000 bytes (complete)"), list.stdout)
        let out = fixture.directory.file("exported.mp4").path
        XCTAssertTrue(try cli(["export", url, out]).succeeded)
        XCTAssertEqual(Array(try Data(contentsOf: URL(fileURLWithPath: out))), file.bytes)
        let local = try TestTools.run("/bin/sh", ["-c", "head -c 5000 /dev/urandom > \(fixture.directory.path)/in.bin"])
        XCTAssertTrue(local.succeeded)
        XCTAssertTrue(try cli(["import", "http://example.invalid/in.mp4", fixture.directory.file("in.bin").path]).succeeded)
        XCTAssertTrue(try cli(["rm", url]).succeeded)
        list = try cli(["list"])
        XCTAssertFalse(list.stdout.contains(url), list.stdout)
        XCTAssertTrue(list.stdout.contains("http://example.invalid/in.mp4"), list.stdout)

        // A proxy serving the folder: the same commands go through it.
        let proxy = try ProxyProcess(cacheDirectory: cache)
        defer { proxy.terminate() }
        XCTAssertBytes(try RawHTTPClient.get(url: try proxy.proxyURL(url)).body, equal: file)
        list = try cli(["list"])
        XCTAssertTrue(list.succeeded, list.stderr)
        XCTAssertTrue(list.stdout.contains(url) && list.stdout.contains("200000/200000 bytes (complete)")
                      && list.stdout.contains("ranges 0-199999"), list.stdout)
        let out2 = fixture.directory.file("exported2.mp4").path
        let export = try cli(["export", url, out2])
        XCTAssertTrue(export.succeeded, export.stderr)
        XCTAssertEqual(Array(try Data(contentsOf: URL(fileURLWithPath: out2))), file.bytes)
        XCTAssertTrue(try cli(["clear"]).succeeded)
        XCTAssertTrue(TestTools.waitUntil(timeout: 5) { ((try? cli(["list"]))?.stdout ?? "").contains("0 resources, 0 bytes") })
        XCTAssertFalse(try cli(["rm", url]).succeeded, "removing what is not cached is an error")
    }

    /// Issue 35: one URL played through a forward proxy by a player sending
    /// its own field, and through its proxy URL, is stored twice. `cache
    /// list` says which row is which (variant forward, primary), `cache
    /// export` finds the forward-only copy, and one `cache rm` removes both.
    func testOneURLStoredThroughBothModesIsListedApartAndRemovedWhole() throws {
        let directory = try TemporaryDirectory(prefix: "httpcache-two-modes")
        defer { directory.remove() }
        let root = directory.file("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let file = try TestFile.random(size: 300_007, seed: 35, in: root, name: "title.mp4")
        let origin = try NginxOrigin(root: root)
        defer { origin.stop() }
        let cache = directory.path + "/cache"
        let proxy = try ProxyProcess(cacheDirectory: cache)
        defer { proxy.terminate() }
        let curl = try TestTools.requireTool("curl")
        let url = origin.url("/title.mp4")
        func cli(_ arguments: [String]) throws -> ProcessResult {
            try TestTools.run(CLITests.binary, ["cache"] + arguments + ["--cache-dir", cache], timeout: 30)
        }

        let forward = directory.path + "/forward.body"
        let fetched = try TestTools.run(curl, ["-sS", "--max-time", "30", "-x", "http://127.0.0.1:\(proxy.port)",
                                               "-H", "X-Player: test", "-o", forward, url])
        XCTAssertTrue(fetched.succeeded, fetched.stderr)
        XCTAssertBytes(try Data(contentsOf: URL(fileURLWithPath: forward)), equal: file)
        let exported = directory.path + "/exported.mp4"
        let export = try cli(["export", url, exported])
        XCTAssertEqual(export.exitCode, 0, "the forward request's copy is the URL's too: \(export.stderr)")
        XCTAssertBytes(try Data(contentsOf: URL(fileURLWithPath: exported)), equal: file)

        XCTAssertBytes(try RawHTTPClient.get(url: try proxy.proxyURL(url)).body, equal: file)
        let list = try cli(["list"])
        XCTAssertTrue(list.succeeded, list.stderr)
        XCTAssertEqual(list.stdout.components(separatedBy: url + "\n").count, 3, "two rows: \(list.stdout)")
        XCTAssertTrue(list.stdout.contains("variant primary") && list.stdout.contains("variant forward"), list.stdout)
        XCTAssertTrue(list.stdout.hasSuffix("2 resources, 600014 bytes\n"), list.stdout)
        let json = try cli(["list", "--json"])
        let rows = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        XCTAssertEqual(Set(rows.compactMap { $0["variant"] as? String }), ["primary", "forward"], json.stdout)

        let removed = try cli(["rm", url])
        XCTAssertEqual(removed.exitCode, 0, removed.stderr)
        let after = try cli(["list"])
        XCTAssertFalse(after.stdout.contains(url), "one rm removes every entry of the URL: \(after.stdout)")
        XCTAssertTrue(after.stdout.hasSuffix("0 resources, 0 bytes\n"), after.stdout)
        XCTAssertEqual(try cli(["rm", url]).exitCode, 15, "nothing left to remove")
    }

    /// The CLI answers the same, exit status and message, whether it opens the
    /// folder itself or a proxy serving it does the work (it did not: an
    /// uncached export exited 1 through a proxy and 15 without, a preload of
    /// ftp:// 13 or 11, an import of a non-http URL succeeded without a proxy).
    /// Pinned entries are marked in both listings.
    func testCLIGivesTheSameAnswersWithAndWithoutAProxy() throws {
        let fixture = try ProxyFixture()
        defer { fixture.stop() }
        _ = try fixture.file("pinned.mp4", size: 20_000, seed: 5)
        fixture.server.close()
        let cache = fixture.cacheDirectory
        let source = try TestFile.random(size: 5_000, seed: 2, in: fixture.directory.url, name: "in.bin").path
        let missing = "http://example.invalid/none.mp4"
        let cases: [([String], Int32, String)] = [
            (["cache", "export", missing, fixture.directory.file("out.mp4").path], 15, "Error: not cached: \(missing)\n"),
            (["cache", "rm", missing], 15, "Error: not cached: \(missing)\n"),
            (["cache", "import", "notaurl", source], 11, "Error: not an http or https URL: notaurl\n"),
            (["cache", "import", "ftp://x/y.mp4", source], 11, "Error: not an http or https URL: ftp://x/y.mp4\n"),
            (["preload", "ftp://x/y.mp4"], 11, "Error: not an http or https URL: ftp://x/y.mp4\n"),
        ]
        func check(_ how: String) throws {
            for (arguments, status, message) in cases {
                let result = try TestTools.run(CLITests.binary, arguments + ["--cache-dir", cache], timeout: 30)
                XCTAssertEqual(result.exitCode, status, "\(how): \(arguments) \(result.stderr)")
                XCTAssertTrue(result.stderr.hasSuffix(message), "\(how): \(arguments) \(result.stderr)")
            }
            let list = try TestTools.run(CLITests.binary, ["cache", "list", "--cache-dir", cache])
            XCTAssertTrue(list.stdout.contains("20000/20000 bytes (complete) (pinned)"), "\(how): \(list.stdout)")
        }
        let preload = try TestTools.run(CLITests.binary, ["preload", "--pin", fixture.origin.url("/pinned.mp4"), "--cache-dir", cache])
        XCTAssertEqual(preload.exitCode, 0, preload.stderr)
        try check("no proxy")
        let proxy = try ProxyProcess(cacheDirectory: cache)
        defer { proxy.terminate() }
        try check("through a proxy")
    }

    /// A lock file this user cannot read says so, rather than "no proxy is serving".
    func testUnreadableLockFileIsReportedAsSuch() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"), geteuid() == 0 else {
            throw XCTSkip("needs root and setpriv to run the CLI as another user")
        }
        let directory = try TemporaryDirectory(prefix: "httpcache-lockperm")
        defer { directory.remove() }
        let folder = directory.path + "/cache"
        let cache = try MediaCache(configuration: HTTPCacheConfiguration(cacheDirectory: folder))
        defer { cache.close() }
        try cache.serve()
        chmod(directory.path, 0o755)
        chmod(folder, 0o755)  // the lock file itself stays 0600, root's
        let result = try TestTools.run("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups",
                                                            CLITests.binary, "stats", "--cache-dir", folder])
        XCTAssertEqual(result.exitCode, 13, result.stderr)
        XCTAssertTrue(result.stderr.contains("cannot read \(folder)/lock: Permission denied"), result.stderr)
    }
}
