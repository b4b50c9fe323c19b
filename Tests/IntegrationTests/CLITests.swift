import Foundation
import HTTPCache
import XCTest

/// The `httpcache` command as a user runs it.
final class CLITests: XCTestCase {
    static var binary: String {
        let directory = Bundle.main.executableURL!.deletingLastPathComponent()
        return directory.appendingPathComponent("httpcache").path
    }

    func testURLCommand() throws {
        let result = try TestTools.run(Self.binary, ["url", "https://cdn.example.com/v/movie.mp4?token=a%20b&x=1", "--port", "8080"])
        XCTAssertTrue(result.succeeded, result.stderr)
        let line = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertTrue(line.hasPrefix("http://127.0.0.1:8080/p/"), line)
        XCTAssertTrue(line.hasSuffix("/movie.mp4"), line)
        let bad = try TestTools.run(Self.binary, ["url", "ftp://example.com/a", "--port", "1"])
        XCTAssertFalse(bad.succeeded)
    }

    /// serve: first line names the address; SIGTERM flushes metadata and exits 0.
    func testServeAnnouncesServesAndShutsDownCleanly() throws {
        let directory = try TemporaryDirectory(prefix: "httpcache-cli")
        let root = directory.url.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let file = try TestFile.random(size: 500_000, seed: 4, in: root, name: "a.mp4")
        let origin = try NginxOrigin(root: root)
        defer { origin.stop() }
        let cache = directory.url.appendingPathComponent("cache").path

        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = ["serve", "--port", "0", "--cache-dir", cache, "--log-level", "debug"]
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        defer { if process.isRunning { process.terminate() } }

        let firstLine = try ProxyProcess.readLine(stdout.fileHandleForReading, timeout: 20)
        let match = try XCTUnwrap(firstLine.range(of: #"^listening on http://127\.0\.0\.1:(\d+)$"#, options: .regularExpression),
                                  "first line: \(firstLine)")
        XCTAssertFalse(match.isEmpty)
        let port = try XCTUnwrap(Int(firstLine.split(separator: ":").last!))

        let url = try TestTools.run(Self.binary, ["url", origin.url("/a.mp4"), "--port", String(port)]).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let response = try RawHTTPClient.get(url: url, range: "bytes=1000-1999")
        XCTAssertEqual(response.status, 206)
        XCTAssertBytes(response.body, equal: file, range: 1000..<2000)

        process.terminate()  // SIGTERM
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)
        let resources = CacheFolderFiles.metaPaths(cache)
        XCTAssertEqual(resources.count, 1)
        let meta = try XCTUnwrap(CacheFolderFiles.metadataText(resources[0]))
        XCTAssertTrue(meta.contains("ranges 1000-1999"), meta)
        XCTAssertTrue(meta.contains("length 500000"), meta)
    }

    /// serve --loops: the count is reported in /stats; without it, one loop
    /// per core; a count out of range is a usage error (exit 64).
    func testServeLoopsOption() throws {
        let directory = try TemporaryDirectory(prefix: "httpcache-cli-loops")
        let cache = directory.url.appendingPathComponent("cache").path
        let cores = sysconf(Int32(_SC_NPROCESSORS_ONLN))
        for (arguments, expected) in [(["--loops", "3"], 3), ([], max(1, cores))] {
            let proxy = try ProxyProcess(cacheDirectory: cache, extraArguments: arguments)
            defer { proxy.terminate() }
            let stats = try RawHTTPClient.get(url: "http://127.0.0.1:\(proxy.port)/stats")
            let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(stats.body)) as? [String: Any])
            XCTAssertEqual(json["loops"] as? Int, expected, "\(arguments)")
            proxy.terminate()
            XCTAssertEqual(proxy.process.terminationStatus, 0)
        }
        let bad = try TestTools.run(Self.binary, ["serve", "--loops", "0", "--cache-dir", cache])
        XCTAssertEqual(bad.exitCode, 64, bad.stderr)
        XCTAssertTrue(bad.stderr.contains("--loops"), bad.stderr)
    }

    /// Every option of the one table is a flag of `serve`, and a bad value
    /// is a usage error that says what is valid.
    func testServeFlagsComeFromTheOptionTable() throws {
        let help = try TestTools.run(Self.binary, ["serve", "--help"])
        // Options listed, not merely named in the discussion above them.
        let listed = help.stdout.components(separatedBy: "OPTIONS:").last?
            .split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) } ?? []
        for option in ServeOption.all {
            // A flag on by default is listed with its inversion: "--cmcd-hints/--no-cmcd-hints".
            XCTAssertTrue(listed.contains { $0 == "--\(option.name)" || $0.hasPrefix("--\(option.name) ")
                || $0 == "--\(option.name)/--no-\(option.name)" }, option.name)
        }
        let directory = try TemporaryDirectory(prefix: "httpcache-cli-flags")
        defer { directory.remove() }
        let cases: [([String], String)] = [
            (["--port", "99999"], "--port takes 0 to 65535"),
            (["--log-level", "verbose"], "--log-level takes trace, debug, info, notice, warning, error or critical"),
            (["--origin", "https://media.example.com/videos"], "--origin takes an http or https origin without a path"),
            (["--header", "Host: x"], "--header takes 'Name: value' of a field the proxy does not set itself"),
            (["--head-timeout", "0"], "--head-timeout takes a number of seconds above 0"),
            (["--upstream-proxy", "https://proxy.example:3128"], "--upstream-proxy takes an http://host:port proxy URL"),
            (["--cache-types", "html"], "--cache-types takes media, all or a list of media types such as text/html,image/*"),
            (["--cache-status-name", "a b"], "--cache-status-name takes a token such as httpcache"),
            // A value that looks like an option is the option's value, refused with what it takes.
            (["--drain-timeout", "-1"], "--drain-timeout takes a number of seconds, 0 or more; got \"-1\""),
            (["--port", "--host"], "--port takes 0 to 65535; got \"--host\""),
        ]
        for (arguments, message) in cases {
            let result = try TestTools.run(Self.binary, ["serve", "--cache-dir", directory.path] + arguments)
            XCTAssertEqual(result.exitCode, 64, "\(arguments): \(result.stderr)")
            XCTAssertTrue(result.stderr.contains(message), "\(arguments): \(result.stderr)")
        }
    }

    /// `url` warns when the proxy would refuse the URL it prints (414).
    func testURLCommandWarnsOfAURLTooLongForTheProxy() throws {
        let short = try TestTools.run(Self.binary, ["url", "https://cdn.example.com/a.mp4", "--port", "8080"])
        XCTAssertTrue(short.succeeded && short.stderr.isEmpty, short.stderr)
        let long = "https://cdn.example.com/" + String(repeating: "a", count: 7000) + ".mp4"
        let result = try TestTools.run(Self.binary, ["url", long, "--port", "8080"])
        XCTAssertTrue(result.succeeded, result.stderr)
        XCTAssertTrue(result.stderr.contains("the proxy refuses paths over \(MediaCache.longestProxyPath) bytes"), result.stderr)
        let bad = try TestTools.run(Self.binary, ["url", "https://cdn.example.com/a.mp4", "--port", "99999"])
        XCTAssertEqual(bad.exitCode, 64)
        XCTAssertTrue(bad.stderr.contains("--port takes 1 to 65535"), bad.stderr)
    }

    /// preload's --range and --duration say what they take.
    func testPreloadOptionMessagesSayWhatIsValid() throws {
        for (arguments, message) in [(["--range", "10-5"], "--range takes START-END, the first and last byte (START <= END"),
                                     (["--duration", "-5"], "--duration takes a number of seconds above 0; got -5"),
                                     (["--language", ""], "--language takes a language tag, e.g. en")] {
            let result = try TestTools.run(Self.binary, ["preload", "http://example.invalid/a.mp4"] + arguments)
            XCTAssertEqual(result.exitCode, 64, result.stderr)
            XCTAssertTrue(result.stderr.contains(message), result.stderr)
        }
    }

    /// A second `serve` on the port of a running one fails at once, loops or
    /// not (with several loops both set SO_REUSEPORT, and the second used to
    /// start and take part of the first one's traffic).
    func testSecondServeOnATakenPortFails() throws {
        let directory = try TemporaryDirectory(prefix: "httpcache-cli-port")
        defer { directory.remove() }
        let port = try TestTools.freePort()
        let first = try ProxyProcess(cacheDirectory: directory.path + "/one", extraArguments: ["--port", "\(port)", "--loops", "2"])
        defer { first.terminate() }
        XCTAssertEqual(first.port, port)
        for loops in ["2", "1"] {
            let second = try TestTools.run(Self.binary, ["serve", "--port", "\(port)", "--loops", loops,
                                                         "--cache-dir", directory.path + "/two"], timeout: 10)
            // Its own code (24, address in use), not 13 (cache-folder I/O), and one line saying it once.
            XCTAssertEqual(second.exitCode, 24, "loops \(loops): \(second.stdout) \(second.stderr)")
            XCTAssertTrue(second.stderr.contains("Error: cannot listen on 127.0.0.1:\(port): another program listens on that port"),
                          second.stderr)
            XCTAssertEqual(second.stderr.components(separatedBy: "cannot listen").count, 2, second.stderr)
            XCTAssertFalse(second.stderr.contains("listen on 127.0.0.1:\(port): address already in use"), second.stderr)
        }
    }

    /// Issue 35: `url` needs no --port when a proxy serves the folder (its
    /// lock names the address, as `stats` finds it); the URL it prints is
    /// served; a count of one is singular in `cache list`.
    func testURLTakesThePortOfTheProxyServingTheFolder() throws {
        let directory = try TemporaryDirectory(prefix: "httpcache-cli-urlport")
        defer { directory.remove() }
        let root = directory.file("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let file = try TestFile.random(size: 12_345, seed: 36, in: root, name: "one.mp4")
        let origin = try NginxOrigin(root: root)
        defer { origin.stop() }
        let cache = directory.path + "/cache"
        let none = try TestTools.run(Self.binary, ["url", origin.url("/one.mp4"), "--cache-dir", cache])
        XCTAssertEqual(none.exitCode, 64, none.stderr)
        XCTAssertTrue(none.stderr.contains("no proxy is serving the cache folder \(cache): give --port"), none.stderr)
        XCTAssertTrue(none.stderr.contains("Usage: httpcache url "), none.stderr)

        let proxy = try ProxyProcess(cacheDirectory: cache)
        defer { proxy.terminate() }
        let minted = try TestTools.run(Self.binary, ["url", origin.url("/one.mp4"), "--cache-dir", cache])
        XCTAssertEqual(minted.exitCode, 0, minted.stderr)
        let url = minted.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertTrue(url.hasPrefix("http://127.0.0.1:\(proxy.port)/p/"), url)  // signed with the folder's key: --cache-dir
        XCTAssertBytes(try RawHTTPClient.get(url: url).body, equal: file)
        let list = try TestTools.run(Self.binary, ["cache", "list", "--cache-dir", cache])
        XCTAssertTrue(list.stdout.hasSuffix("\n1 resource, 12345 bytes\n"), list.stdout)
    }

    /// Issue 35: `url` for an encrypted folder without its key exits 22
    /// (the key's code, as serve and cache list do) with the reason, not 64
    /// with the top-level usage; an argument `url` refuses while running
    /// shows `url`'s usage, not the top level's.
    func testURLErrorsKeepTheirCodeAndShowTheSubcommandsUsage() throws {
        let directory = try TemporaryDirectory(prefix: "httpcache-cli-url")
        defer { directory.remove() }
        var configuration = HTTPCacheConfiguration(cacheDirectory: directory.path + "/cache")
        configuration.encryptionKey = EncryptionTests.key(5)
        try MediaCache(configuration: configuration).close()
        let keyless = try TestTools.run(Self.binary, ["url", "http://media.example/a.mp4", "--port", "8080",
                                                      "--cache-dir", directory.path + "/cache"])
        XCTAssertEqual(keyless.exitCode, 22, keyless.stderr)
        XCTAssertTrue(keyless.stderr.contains("encrypted"), keyless.stderr)
        XCTAssertFalse(keyless.stderr.contains("Usage:"), keyless.stderr)

        let bad = try TestTools.run(Self.binary, ["url", "ftp://media.example/a.mp4", "--port", "8080"])
        XCTAssertEqual(bad.exitCode, 64, bad.stderr)
        XCTAssertTrue(bad.stderr.contains("Usage: httpcache url "), bad.stderr)
        XCTAssertFalse(bad.stderr.contains("<subcommand>"), bad.stderr)
        XCTAssertTrue(bad.stderr.contains("See 'httpcache url --help'"), bad.stderr)
    }
}
