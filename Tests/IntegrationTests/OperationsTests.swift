import Foundation
import XCTest

/// Running the proxy as a service (issue #25): the configuration file,
/// reload (SIGHUP), log rotation (SIGUSR1), drain (SIGQUIT), health routes
/// and PURGE, on `httpcache serve` processes in front of nginx.
final class OperationsTests: XCTestCase {
    private var directory: TemporaryDirectory!
    private var files: URL!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory(prefix: "httpcache-ops")
        files = directory.file("www")
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
    }

    override func tearDown() { directory.remove() }

    private func write(config text: String, to name: String = "httpcache.conf") throws -> String {
        let path = directory.file(name).path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    private func lines(of path: String) -> [String] {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    private func signal(_ proxy: ProxyProcess, _ number: Int32) { kill(proxy.process.processIdentifier, number) }

    /// Responses from the cache or the origin the proxy has recorded (its
    /// own routes, /stats included, count as BYPASS).
    private func proxiedRequests(_ proxy: ProxyProcess) -> Int? {
        guard let stats = try? RawHTTPClient.get(url: "http://127.0.0.1:\(proxy.port)/_httpcache/stats"),
              let json = try? JSONSerialization.jsonObject(with: Data(stats.body)) as? [String: Any],
              let byCache = json["requests_by_cache"] as? [String: Int] else { return nil }
        return byCache.filter { $0.key != "BYPASS" }.values.reduce(0, +)
    }

    /// Waits until the log file has `count` lines containing `text`.
    @discardableResult
    private func waitForLog(_ path: String, _ text: String, count: Int = 1, timeout: TimeInterval = 10) -> Bool {
        TestTools.waitUntil(timeout: timeout) { self.lines(of: path).filter { $0.contains(text) }.count >= count }
    }

    /// A GET through the proxy of which the head and the first `bytes` body
    /// bytes are read; the rest waits on the returned connection.
    private func startResponse(_ proxy: ProxyProcess, _ originURL: String, reading bytes: Int,
                               headers: [(String, String)] = []) throws -> (RawHTTPConnection, RawResponse) {
        let (_, port, path) = try RawHTTPClient.parse(url: try proxy.proxyURL(originURL))
        let connection = try RawHTTPConnection(port: port, timeout: 30)
        try connection.sendRequest(path: path, headers: headers)
        let head = try connection.readPartialResponse(maxBodyBytes: bytes)
        XCTAssertEqual(head.status, 200)
        return (connection, head)
    }

    // MARK: configuration file

    func testCheckConfigOnGoodAndBadFiles() throws {
        let good = try write(config: "# service settings\nmax-cache-size = 20GB\nallow-origin = a.example\nallow-origin = b.example\n",
                             to: "good.conf")
        let ok = try TestTools.run(CLITests.binary, ["check-config", "--config", good])
        XCTAssertEqual(ok.exitCode, 0, ok.stderr)
        XCTAssertTrue(ok.stdout.contains("ok (3 settings)"), ok.stdout)

        let bad = try write(config: "port = 8080\n\nmax-cache-size = lots\n", to: "bad.conf")
        let refused = try TestTools.run(CLITests.binary, ["check-config", "--config", bad])
        XCTAssertEqual(refused.exitCode, 11)
        XCTAssertTrue(refused.stderr.contains("\(bad):3: max-cache-size takes a size"), refused.stderr)

        let unknown = try write(config: "max-cache-sise = 1GB\n", to: "unknown.conf")
        let typo = try TestTools.run(CLITests.binary, ["check-config", "--config", unknown])
        XCTAssertEqual(typo.exitCode, 11)
        XCTAssertTrue(typo.stderr.contains("\(unknown):1: unknown option max-cache-sise"), typo.stderr)

        let missing = try TestTools.run(CLITests.binary, ["check-config", "--config", directory.file("none.conf").path])
        XCTAssertEqual(missing.exitCode, 13, missing.stderr)
        // serve refuses the bad file the same way, before starting.
        let serve = try TestTools.run(CLITests.binary, ["serve", "--config", bad, "--cache-dir", directory.file("c").path], timeout: 20)
        XCTAssertEqual(serve.exitCode, 11)
        XCTAssertTrue(serve.stderr.contains("\(bad):3:"), serve.stderr)
    }

    /// Issue 35: a file wrong on lines 2 and 3 (a bad value, then a
    /// syntax error) is reported on both, not only the last one found.
    func testCheckConfigReportsEveryError() throws {
        let bad = try write(config: "port = 8080\nmax-cache-size = lots\nmax-cache-sise = 1GB\nlog-level = loud\n", to: "two.conf")
        let refused = try TestTools.run(CLITests.binary, ["check-config", "--config", bad])
        XCTAssertEqual(refused.exitCode, 11, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("\(bad):2: max-cache-size takes"), refused.stderr)
        XCTAssertTrue(refused.stderr.contains("\(bad):3: unknown option max-cache-sise"), refused.stderr)
        XCTAssertTrue(refused.stderr.contains("\(bad):4: log-level takes"), refused.stderr)
        let order = ["\(bad):2:", "\(bad):3:", "\(bad):4:"].compactMap { refused.stderr.range(of: $0)?.lowerBound }
        XCTAssertEqual(order, order.sorted(), "in line order: \(refused.stderr)")
        XCTAssertEqual(order.count, 3)
        // serve refuses the file naming every line too.
        let serve = try TestTools.run(CLITests.binary, ["serve", "--config", bad, "--cache-dir", directory.file("c2").path], timeout: 20)
        XCTAssertEqual(serve.exitCode, 11)
        XCTAssertTrue(serve.stderr.contains("\(bad):2:") && serve.stderr.contains("\(bad):3:"), serve.stderr)
    }

    /// Issue #37: a configuration file others could change is refused by
    /// check-config and serve (exit 11, with the mode and the fix); so is one
    /// in a folder others can write, and a FIFO, at once rather than waited on.
    func testConfigurationFilesOthersCouldChangeAreRefused() throws {
        func refused(_ path: String, _ message: String, file: StaticString = #filePath, line: UInt = #line) throws {
            let checked = try TestTools.run(CLITests.binary, ["check-config", "--config", path], timeout: 3)
            XCTAssertFalse(checked.timedOut, "check-config answered", file: file, line: line)
            XCTAssertEqual(checked.exitCode, 11, checked.stderr, file: file, line: line)
            XCTAssertTrue(checked.stderr.contains(message), "\(message) in \(checked.stderr)", file: file, line: line)
            let served = try TestTools.run(CLITests.binary, ["serve", "--config", path, "--cache-dir", directory.file("c").path],
                                           timeout: 3)
            XCTAssertFalse(served.timedOut, "serve refused it, not started or hung", file: file, line: line)
            XCTAssertEqual(served.exitCode, 11, served.stderr, file: file, line: line)
            XCTAssertTrue(served.stderr.contains(message), "\(message) in \(served.stderr)", file: file, line: line)
        }
        let open = directory.file("open")
        try FileManager.default.createDirectory(at: open, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: open.path)
        let shared = open.appendingPathComponent("httpcache.conf").path
        try "max-cache-size = 1GB\n".write(toFile: shared, atomically: false, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o666], ofItemAtPath: shared)
        try refused(shared, "configuration file \(shared) is writable by group or others (mode 0666): chmod go-w \(shared)")
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: shared)
        try refused(shared, "the folder \(open.path) of configuration file \(shared) is writable by group or others (mode 0777)")

        let fifo = directory.file("fifo.conf").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        try refused(fifo, "configuration file \(fifo) is not a regular file (a FIFO)")

        let good = try write(config: "max-cache-size = 1GB\n", to: "mine.conf")
        XCTAssertEqual(try TestTools.run(CLITests.binary, ["check-config", "--config", good]).exitCode, 0)
    }

    /// Issue #37: a reload logs each option it changes, and one that drops
    /// the allow-list (every origin allowed again) as a warning.
    func testReloadLogsChangedOptionsAndWarnsWhenAccessWidens() throws {
        let log = directory.file("reload.log").path
        let settings = "log-file = \(log)\nmax-cache-size = 500MB\n"
        let config = try write(config: settings + "allow-origin = 127.0.0.1\nallow-origin = media.example\n")
        let proxy = try ProxyProcess(cacheDirectory: directory.file("cache").path, extraArguments: ["--config", config])
        defer { proxy.terminate() }
        try (settings.replacingOccurrences(of: "500MB", with: "400MB")).write(toFile: config, atomically: true, encoding: .utf8)
        signal(proxy, SIGHUP)
        XCTAssertTrue(waitForLog(log, "configuration reloaded"), lines(of: log).joined(separator: "\n"))
        let logged = lines(of: log)
        XCTAssertTrue(logged.contains { $0.contains("reload: option changed") && $0.contains("option=max-cache-size")
            && $0.contains("before=500MB") && $0.contains("after=400MB") }, logged.joined(separator: "\n"))
        let warned = logged.filter { $0.contains("warning") && $0.contains("ACCESS WIDENED by allow-origin") }
        XCTAssertEqual(warned.count, 1, logged.joined(separator: "\n"))
        XCTAssertTrue(warned.first?.contains("before=127.0.0.1,media.example") == true, warned.joined())
    }

    /// The command line overrides the file; a repeatable option given there replaces the file's list.
    func testCommandLineOverridesTheFile() throws {
        let file = try TestFile.random(size: 10_000, seed: 3, in: files, name: "a.bin")
        let origin = try NginxOrigin(root: files)
        defer { origin.stop() }
        let fileCache = directory.file("file-cache").path
        let config = try write(config: "cache-dir = \(fileCache)\nallow-origin = 127.0.0.1\nlog-level = debug\n")
        let cliCache = directory.file("cli-cache").path
        let proxy = try ProxyProcess(cacheDirectory: cliCache, extraArguments: ["--config", config, "--allow-origin", "other.example"])
        defer { proxy.terminate() }
        XCTAssertTrue(FileManager.default.fileExists(atPath: cliCache + "/lock"), "the command line's cache-dir wins")
        XCTAssertFalse(FileManager.default.fileExists(atPath: fileCache))
        let refused = try RawHTTPClient.get(url: try proxy.proxyURL(origin.url("/" + file.name)))
        XCTAssertEqual(refused.status, 403, "the file's allow-origin list was replaced by the command line's")
    }

    // MARK: reload

    /// SIGHUP applies a new size limit and log level while a 100 MB response
    /// streams on, byte-exact; an invalid file is refused and the running settings stay.
    func testReloadChangesSizeLimitAndLogLevelWhileStreaming() throws {
        let big = try TestFile.random(size: 100_000_000, seed: 11, in: files, name: "big.bin")
        let small = try TestFile.random(size: 2_000_000, seed: 12, in: files, name: "small.bin")
        let origin = try NginxOrigin(root: files)
        defer { origin.stop() }
        let log = directory.file("httpcache.log").path
        let cache = directory.file("cache").path
        let settings = "log-file = \(log)\nloops = 2\n"
        let config = try write(config: settings + "max-cache-size = 500MB\nlog-level = info\n")
        let proxy = try ProxyProcess(cacheDirectory: cache, extraArguments: ["--config", config])
        defer { proxy.terminate() }
        let smallURL = try proxy.proxyURL(origin.url("/small.bin"))
        XCTAssertBytes(try RawHTTPClient.get(url: smallURL).body, equal: small)
        XCTAssertTrue(try cachedURLs(cache).contains(origin.url("/small.bin")))

        let (stream, head) = try startResponse(proxy, origin.url("/big.bin"), reading: 8_000_000)

        signal(proxy, SIGUSR1)
        XCTAssertTrue(waitForLog(log, "log files reopened"), "notice lines are logged at level info")
        // Live: a limit under what is cached (the idle small file goes at once) and a quieter level.
        try (settings + "max-cache-size = 1MB\nlog-level = error\n").write(toFile: config, atomically: true, encoding: .utf8)
        signal(proxy, SIGHUP)
        XCTAssertTrue(TestTools.waitUntil(timeout: 10) { (try? self.cachedURLs(cache).contains(origin.url("/small.bin"))) == false },
                      "the new size limit evicts the idle entry")
        let rest = try stream.readRawBytes(big.size - head.body.count)
        XCTAssertBytes(head.body + rest, equal: big)

        // At level error a notice is no longer written; an invalid file is refused, with an error line.
        signal(proxy, SIGUSR1)
        try (settings + "max-cache-size = 2GB\nlog-level = info\nno-such-option = 1\n").write(toFile: config, atomically: true,
                                                                                             encoding: .utf8)
        signal(proxy, SIGHUP)
        XCTAssertTrue(waitForLog(log, "configuration reload refused"))
        let logged = lines(of: log)
        XCTAssertEqual(logged.filter { $0.contains("log files reopened") }.count, 1, logged.joined(separator: "\n"))
        XCTAssertTrue(logged.contains { $0.contains("configuration reload refused") && $0.contains("\(config):5: unknown option") })
        // The running limit is still 1 MB: the small file is fetched and let go again.
        XCTAssertBytes(try RawHTTPClient.get(url: smallURL).body, equal: small)
        XCTAssertTrue(TestTools.waitUntil(timeout: 10) { (try? self.cachedURLs(cache).isEmpty) == true })
    }

    private func cachedURLs(_ cache: String) throws -> [String] {
        let listing = try TestTools.run(CLITests.binary, ["cache", "list", "--json", "--cache-dir", cache])
        guard listing.succeeded else { throw TestSupportError(listing.stderr) }
        let rows = try JSONSerialization.jsonObject(with: listing.stdoutData) as? [[String: Any]] ?? []
        return rows.compactMap { $0["url"] as? String }
    }

    // MARK: log rotation

    /// logrotate's way: rename, SIGUSR1, and the lines after go to a new file; none is lost.
    func testLogRotation() throws {
        let file = try TestFile.random(size: 1000, seed: 5, in: files, name: "a.bin")
        let origin = try NginxOrigin(root: files)
        defer { origin.stop() }
        let access = directory.file("access.log").path
        let log = directory.file("httpcache.log").path
        let config = try write(config: "access-log = \(access)\nlog-file = \(log)\n")
        let proxy = try ProxyProcess(cacheDirectory: directory.file("cache").path, extraArguments: ["--config", config])
        let url = try proxy.proxyURL(origin.url("/" + file.name))
        for _ in 0..<5 { XCTAssertEqual(try RawHTTPClient.get(url: url).status, 200) }
        // A response's line is written as it ends on the proxy's side, which its client may see first.
        XCTAssertTrue(TestTools.waitUntil(timeout: 5) { self.proxiedRequests(proxy) == 5 })
        XCTAssertEqual(rename(access, access + ".1"), 0)
        XCTAssertEqual(rename(log, log + ".1"), 0)
        signal(proxy, SIGUSR1)
        XCTAssertTrue(waitForLog(log, "log files reopened"), "the log file is reopened at its path")
        for _ in 0..<7 { XCTAssertEqual(try RawHTTPClient.get(url: url).status, 200) }
        XCTAssertTrue(TestTools.waitUntil(timeout: 5) { self.proxiedRequests(proxy) == 12 })
        proxy.terminate()  // flushes the access log
        let media = { (path: String) in self.lines(of: path).filter { $0.contains(file.name) } }  // not the /stats polls
        XCTAssertEqual(media(access + ".1").count, 5)
        XCTAssertEqual(media(access).count, 7)
        XCTAssertTrue(lines(of: access).allSatisfy { $0.contains(" 200 ") })
        XCTAssertTrue(lines(of: log + ".1").contains { $0.contains("signal received") && $0.contains("signal=10") })
    }

    // MARK: drain

    /// SIGQUIT: a slow 50 MB response finishes byte-exact, new connections
    /// are refused, /readyz answers 503 meanwhile, and the process exits 0.
    func testDrainFinishesASlowResponse() throws {
        let file = try TestFile.random(size: 50_000_000, seed: 21, in: files, name: "slow.bin")
        let origin = try NginxOrigin(root: files, extraServerConfig: "location /slow.bin { limit_rate 20m; }")
        defer { origin.stop() }
        let proxy = try ProxyProcess(cacheDirectory: directory.file("cache").path)
        defer { proxy.terminate() }
        let health = try RawHTTPConnection(port: proxy.port)
        XCTAssertEqual(try health.get("/readyz").status, 200)
        XCTAssertEqual(try health.get("/livez").status, 200)

        let (slow, head) = try startResponse(proxy, origin.url("/slow.bin"), reading: 1_000_000)

        signal(proxy, SIGQUIT)
        XCTAssertTrue(TestTools.waitUntil(timeout: 5) { !TestTools.canConnect(port: proxy.port) }, "new connections are refused")
        let ready = try health.get("/readyz")
        XCTAssertEqual(ready.status, 503)
        XCTAssertTrue(String(decoding: ready.body, as: UTF8.self).contains("draining"))
        XCTAssertTrue(proxy.process.isRunning, "the slow response is still in flight")

        let rest = try slow.readRawBytes(file.size - head.body.count)
        XCTAssertBytes(head.body + rest, equal: file)
        XCTAssertTrue(TestTools.waitForExit(proxy.process, timeout: 10))
        XCTAssertEqual(proxy.process.terminationStatus, 0)
        XCTAssertEqual(proxy.process.terminationReason, .exit)
    }

    // MARK: purge

    func testPurgeOfOneURLAndOfAPrefix() throws {
        let names = ["show/1.bin", "show/2.bin", "other/3.bin"]
        try FileManager.default.createDirectory(at: files.appendingPathComponent("show"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: files.appendingPathComponent("other"), withIntermediateDirectories: true)
        let made = try names.enumerated().map { try TestFile.random(size: 20_000, seed: UInt64(30 + $0.offset), in: files, name: $0.element) }
        let origin = try NginxOrigin(root: files)
        defer { origin.stop() }
        let cache = directory.file("cache").path
        let proxy = try ProxyProcess(cacheDirectory: cache)
        defer { proxy.terminate() }
        for (name, file) in zip(names, made) {
            XCTAssertBytes(try RawHTTPClient.get(url: try proxy.proxyURL(origin.url("/" + name))).body, equal: file)
        }
        XCTAssertEqual(Set(try cachedURLs(cache)), Set(names.map { origin.url("/" + $0) }))

        // PURGE of a proxy URL: 200 and the count, then 404; the next GET goes to the origin again.
        let first = try proxy.proxyURL(origin.url("/show/1.bin"))
        let purged = try RawHTTPClient.request(method: "PURGE", url: first)
        XCTAssertEqual(purged.status, 200)
        XCTAssertEqual(String(decoding: purged.body, as: UTF8.self), #"{"purged":1}"# + "\n")
        XCTAssertEqual(try RawHTTPClient.request(method: "PURGE", url: first).status, 404)
        origin.clearAccessLog()
        XCTAssertBytes(try RawHTTPClient.get(url: first).body, equal: made[0])
        XCTAssertEqual(origin.accessLog(waitingFor: 1).count, 1, "fetched from the origin again")

        // Forward mode: PURGE of the absolute URL.
        let forward = try RawHTTPConnection(port: proxy.port)
        let absolute = try forward.request(method: "PURGE", path: origin.url("/other/3.bin"))
        XCTAssertEqual(absolute.status, 200)

        // By prefix through `httpcache cache purge` (the serving proxy's admin route).
        let byPrefix = try TestTools.run(CLITests.binary, ["cache", "purge", "--prefix", origin.url("/show/"), "--cache-dir", cache])
        XCTAssertTrue(byPrefix.succeeded, byPrefix.stderr)
        XCTAssertEqual(byPrefix.stdout, "2 resources purged\n")
        XCTAssertEqual(try cachedURLs(cache), [])
    }

    /// Reverse mode: PURGE of the path, the URL it maps to on the origin.
    func testPurgeInReverseMode() throws {
        let file = try TestFile.random(size: 30_000, seed: 51, in: files, name: "clip.bin")
        let origin = try NginxOrigin(root: files)
        defer { origin.stop() }
        let proxy = try ProxyProcess(cacheDirectory: directory.file("cache").path, extraArguments: ["--origin", origin.baseURL])
        defer { proxy.terminate() }
        let connection = try RawHTTPConnection(port: proxy.port)
        XCTAssertBytes(try connection.get("/clip.bin").body, equal: file)
        XCTAssertEqual(try cachedURLs(directory.file("cache").path), [origin.url("/clip.bin")])
        let purged = try connection.request(method: "PURGE", path: "/clip.bin")
        XCTAssertEqual(purged.status, 200)
        XCTAssertEqual(String(decoding: purged.body, as: UTF8.self), #"{"purged":1}"# + "\n")
        XCTAssertEqual(try connection.request(method: "PURGE", path: "/clip.bin").status, 404)
        XCTAssertEqual(try cachedURLs(directory.file("cache").path), [])
    }

    /// The admin token published in the cache folder's lock file.
    private func adminToken(_ cache: String) throws -> String {
        let text = try String(contentsOfFile: cache + "/lock", encoding: .utf8)
        let line = try XCTUnwrap(text.split(separator: "\n").first { $0.hasPrefix("token ") })
        return String(line.dropFirst(6))
    }

    /// Issue #37: PURGE passes the admin routes' Host check. A DNS-rebinding
    /// name gets 421 and purges nothing; in reverse mode a public name
    /// (`--server-name`) purges only with the admin token.
    func testPurgeChecksTheHostLikeTheAdminRoutes() throws {
        let file = try TestFile.random(size: 30_000, seed: 52, in: files, name: "clip.bin")
        let origin = try NginxOrigin(root: files)
        defer { origin.stop() }
        let cache = directory.file("cache").path
        let proxy = try ProxyProcess(cacheDirectory: cache)
        defer { proxy.terminate() }
        let url = try proxy.proxyURL(origin.url("/clip.bin"))
        XCTAssertBytes(try RawHTTPClient.get(url: url).body, equal: file)
        let path = try RawHTTPClient.parse(url: url).path
        let rebound = try RawHTTPConnection(port: proxy.port)
        XCTAssertEqual(try rebound.request(method: "PURGE", path: path, headers: [("Host", "attacker.example:\(proxy.port)")]).status,
                       421)
        XCTAssertEqual(try cachedURLs(cache), [origin.url("/clip.bin")], "nothing purged")
        let withToken = try RawHTTPConnection(port: proxy.port)
        XCTAssertEqual(try withToken.request(method: "PURGE", path: path, headers: [
            ("Host", "attacker.example"), ("X-HTTPCache-Token", try adminToken(cache))]).status, 421,
                       "a rebinding name is refused whatever it carries")
        XCTAssertEqual(try cachedURLs(cache), [origin.url("/clip.bin")], "nothing purged")

        let reverseCache = directory.file("reverse").path
        let reverse = try ProxyProcess(cacheDirectory: reverseCache,
                                       extraArguments: ["--origin", origin.baseURL, "--server-name", "media.example"])
        defer { reverse.terminate() }
        let connection = try RawHTTPConnection(port: reverse.port)
        XCTAssertBytes(try connection.get("/clip.bin", headers: [("Host", "media.example")]).body, equal: file)
        let refused = try RawHTTPConnection(port: reverse.port)
        XCTAssertEqual(try refused.request(method: "PURGE", path: "/clip.bin", headers: [("Host", "media.example")]).status,
                       421)
        XCTAssertEqual(try cachedURLs(reverseCache), [origin.url("/clip.bin")], "no purge without the token")
        let admitted = try RawHTTPConnection(port: reverse.port)
        let purged = try admitted.request(method: "PURGE", path: "/clip.bin", headers: [
            ("Host", "media.example"), ("X-HTTPCache-Token", try adminToken(reverseCache))])
        XCTAssertEqual(purged.status, 200, purged.bodyString)
        XCTAssertEqual(try cachedURLs(reverseCache), [], "purged with the token")
    }

    /// An admin path asked with HEAD answers with the head alone, so the
    /// next answer on a kept-alive connection starts where it should.
    func testAnAdminHEADGetsTheHeadAlone() throws {
        let cache = directory.file("cache").path
        let proxy = try ProxyProcess(cacheDirectory: cache)
        defer { proxy.terminate() }
        let token = [("X-HTTPCache-Token", try adminToken(cache))]
        let connection = try RawHTTPConnection(port: proxy.port)
        let get = try connection.request(path: "/admin/cache", headers: token)
        XCTAssertEqual(get.status, 200, get.bodyString)
        XCTAssertFalse(get.body.isEmpty, "GET has the list")
        try connection.sendRequest(method: "HEAD", path: "/admin/cache", headers: token)
        // No admin route answers HEAD: a 404 whose JSON body is left out.
        XCTAssertEqual(try connection.readResponse(method: "HEAD").status, 404)
        let again = try connection.request(path: "/admin/cache", headers: token)
        XCTAssertEqual(again.status, 200, "the next answer on the connection starts where it should")
        XCTAssertEqual(again.body, get.body)
    }

    /// A purged resource in use: new requests no longer get it, the response in flight ends cleanly.
    func testPurgeOfAResourceInUse() throws {
        let file = try TestFile.random(size: 20_000_000, seed: 41, in: files, name: "movie.bin")
        let origin = try NginxOrigin(root: files)
        defer { origin.stop() }
        let proxy = try ProxyProcess(cacheDirectory: directory.file("cache").path)
        defer { proxy.terminate() }
        let url = try proxy.proxyURL(origin.url("/movie.bin"))
        XCTAssertBytes(try RawHTTPClient.get(url: url).body, equal: file)
        // A reader of the complete resource, stopped mid-body.
        let (reader, head) = try startResponse(proxy, origin.url("/movie.bin"), reading: 100_000,
                                               headers: [("Connection", "close")])

        XCTAssertEqual(try RawHTTPClient.request(method: "PURGE", url: url).status, 200)
        origin.clearAccessLog()
        XCTAssertBytes(try RawHTTPClient.get(url: url).body, equal: file)
        XCTAssertGreaterThanOrEqual(origin.accessLog(waitingFor: 1).count, 1, "a new request is not served from the purged copy")
        // The response in flight: every byte it gets is right, and it ends (complete, or closed).
        let rest = try reader.readUntilClose()
        let body = head.body + rest
        XCTAssertLessThanOrEqual(body.count, file.size)
        XCTAssertBytes(body, equal: file, range: 0..<body.count)
    }
}
