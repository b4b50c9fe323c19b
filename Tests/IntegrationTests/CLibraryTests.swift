import Foundation
import XCTest

/// The C programs of examples/c/, built against the installed library with
/// gcc -Wall -Wextra -Werror via pkg-config, run, and their output checked.
final class CLibraryTests: XCTestCase {
    /// proxy_host.c serves a cache; curl through its proxy URL gets the
    /// nginx-served file byte-exact, twice (the second from the cache), and
    /// the program closes cleanly when told to.
    func testProxyHostServesByteExact() throws {
        let work = try TemporaryDirectory(prefix: "hc-clib-proxy")
        defer { work.remove() }
        let program = try InstalledLibrary.buildExample("proxy_host", in: work.path)
        let root = work.file("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let file = try TestFile.random(size: 3_000_017, seed: 13, in: root, name: "movie.mp4")
        let origin = try NginxOrigin(root: root)
        let curl = try TestTools.requireTool("curl")

        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = [work.path + "/cache", origin.url("/movie.mp4")]
        process.environment = try InstalledLibrary.environment()
        let stdin = Pipe(), stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }

        let url = try ProxyProcess.readLine(stdout.fileHandleForReading, timeout: 20)
        XCTAssertNotNil(url.range(of: #"^http://127\.0\.0\.1:\d+/p/[A-Za-z0-9_-]+/movie\.mp4$"#,
                                  options: .regularExpression), url)
        for attempt in 1...2 {
            let body = work.path + "/body\(attempt)"
            let got = try TestTools.run(curl, ["-sS", "--max-time", "30", "-o", body, url])
            XCTAssertTrue(got.succeeded, got.stderr)
            XCTAssertBytes(try Data(contentsOf: URL(fileURLWithPath: body)), equal: file)
        }
        let range = try TestTools.run(curl, ["-sS", "--max-time", "30", "-r", "1000000-1000099", url])
        XCTAssertBytes(range.stdoutData, equal: file, range: 1_000_000..<1_000_100)
        let fetches = origin.accessLog(waitingFor: 1).filter { $0.uri == "/movie.mp4" }
        XCTAssertEqual(fetches.count, 1, "the later requests came from the cache: \(fetches)")

        stdin.fileHandleForWriting.write(Data("stop\n".utf8))
        XCTAssertTrue(TestTools.waitForExit(process, timeout: 20), "no exit after stop")
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)
        XCTAssertEqual(try ProxyProcess.readLine(stdout.fileHandleForReading, timeout: 5), "closed")
        // Closed means closed: the port no longer accepts connections.
        let port = try XCTUnwrap(Int(url.split(separator: ":")[2].split(separator: "/")[0]))
        XCTAssertFalse(TestTools.canConnect(port: port))
    }

    /// cache_ops.c imports a file, exports it back, lists, removes and
    /// clears; the export it leaves behind is the source, byte for byte.
    func testCacheOperations() throws {
        let work = try TemporaryDirectory(prefix: "hc-clib-ops")
        defer { work.remove() }
        let program = try InstalledLibrary.buildExample("cache_ops", in: work.path)
        let source = try TestFile.random(size: 1_048_593, seed: 21, in: work.url, name: "source.bin")
        let exported = work.path + "/exported.bin"
        let ran = try TestTools.run(program, [work.path + "/cache", source.url.path, exported], timeout: 60,
                                    environment: InstalledLibrary.environment())
        XCTAssertEqual(ran.exitCode, 0, ran.stdout + ran.stderr)
        XCTAssertTrue(ran.stdout.hasSuffix("all checks passed\n"), ran.stdout)
        XCTAssertTrue(ran.stdout.contains("list http://media.example/clip.mp4 1048593 1048593 1\n"), ran.stdout)
        XCTAssertBytes(try Data(contentsOf: URL(fileURLWithPath: exported)), equal: source)
    }

    /// preload.c: a preload reports progress, ends with a final
    /// progress(total, total) and done(HC_OK); the whole file is then cached
    /// (exported byte-exact) from one origin request.
    func testPreloadWithProgress() throws {
        let work = try TemporaryDirectory(prefix: "hc-clib-preload")
        defer { work.remove() }
        let program = try InstalledLibrary.buildExample("preload", in: work.path)
        let root = work.file("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let file = try TestFile.random(size: 2_500_009, seed: 31, in: root, name: "clip.mp4")
        let origin = try NginxOrigin(root: root)
        defer { origin.stop() }
        let exported = work.path + "/exported.mp4"
        let ran = try TestTools.run(program, [work.path + "/cache", origin.url("/clip.mp4"), exported], timeout: 60,
                                    environment: InstalledLibrary.environment())
        XCTAssertEqual(ran.exitCode, 0, ran.stdout + ran.stderr)
        XCTAssertTrue(ran.stdout.contains("done success\n"), ran.stdout)
        XCTAssertTrue(ran.stdout.contains("progress 2500009/2500009 after"), ran.stdout)
        XCTAssertTrue(ran.stdout.contains("size 2500009\n"), ran.stdout)
        XCTAssertTrue(ran.stdout.hasSuffix("closed\n"), ran.stdout)
        XCTAssertBytes(try Data(contentsOf: URL(fileURLWithPath: exported)), equal: file)
        XCTAssertEqual(origin.accessLog(waitingFor: 1).filter { $0.uri == "/clip.mp4" }.count, 1)
    }

    /// download.c: a download added through the C API completes (its
    /// events reach the callback, its status says so), and removing it
    /// empties the cache; an unknown id is HC_ENOTFOUND.
    func testDownloadThroughTheCAPI() throws {
        let work = try TemporaryDirectory(prefix: "hc-clib-download")
        defer { work.remove() }
        let program = try InstalledLibrary.buildExample("download", in: work.path)
        let root = work.file("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        _ = try TestFile.random(size: 1_500_007, seed: 41, in: root, name: "clip.mp4")
        let origin = try NginxOrigin(root: root)
        defer { origin.stop() }
        let ran = try TestTools.run(program, [work.path + "/cache", origin.url("/clip.mp4")], timeout: 60,
                                    environment: InstalledLibrary.environment())
        XCTAssertEqual(ran.exitCode, 0, ran.stdout + ran.stderr)
        XCTAssertTrue(ran.stdout.contains("bad url -1\nadd 0\n"), ran.stdout)
        XCTAssertTrue(ran.stdout.contains("status 0 state 3 error 0 bytes 1500007/1500007 estimate 0 resources 1/1\n"), ran.stdout)
        XCTAssertTrue(ran.stdout.contains("state 3 bytes 1500007 of 1500007\n"), ran.stdout)
        XCTAssertTrue(ran.stdout.contains("cache 1500007\nremove 0\nagain -5\ncache 0\nevents seen\nclosed\n"), ran.stdout)
    }

    /// errors.c: each documented failure gives its code, and hc_strerror
    /// has a text for every code (the table HTTPCacheError.Code owns).
    func testErrorCodes() throws {
        let work = try TemporaryDirectory(prefix: "hc-clib-errors")
        defer { work.remove() }
        let program = try InstalledLibrary.buildExample("errors", in: work.path)
        let ran = try TestTools.run(program, [work.path + "/a", work.path + "/b"], timeout: 60,
                                    environment: InstalledLibrary.environment())
        XCTAssertEqual(ran.exitCode, 0, ran.stdout + ran.stderr)
        XCTAssertTrue(ran.stdout.hasSuffix("all checks passed\n"), ran.stdout)
        for (code, text) in [(0, "success"), (-1, "invalid argument"), (-4, "cache folder in use"),
                             (-5, "not found"), (-11, "closed"), (-12, "wrong or missing encryption key for the cache folder")] {
            XCTAssertTrue(ran.stdout.contains("strerror \(code) \(text)\n"), ran.stdout)
        }
        XCTAssertTrue(ran.stdout.contains("busy: hc_open: cache folder \(work.path)/a is already open in this process"),
                      ran.stdout)
    }

    /// Issue 35: a host that asked for encryption with a key file that is
    /// not there (and ignored hc_config_set's result) got a plaintext
    /// folder. The failed set now stays on the configuration: hc_open
    /// returns its code, hc_config_errmsg says which option failed, and no
    /// folder is made.
    func testFailedKeySetMakesTheConfigurationUnusable() throws {
        let work = try TemporaryDirectory(prefix: "hc-clib-unusable")
        defer { work.remove() }
        let program = try InstalledLibrary.buildExample("errors", in: work.path)
        let ran = try TestTools.run(program, [work.path + "/a", work.path + "/b"], timeout: 60,
                                    environment: InstalledLibrary.environment())
        XCTAssertEqual(ran.exitCode, 0, ran.stdout + ran.stderr)
        let line = ran.stdout.split(separator: "\n").first { $0.hasPrefix("unusable: ") }
        XCTAssertNotNil(line, ran.stdout)
        XCTAssertTrue(line?.contains("encryption-key-file: ") == true && line?.contains("no such file") == true, ran.stdout)
        XCTAssertTrue(line?.contains(work.path + "/a-missing.key") == true, ran.stdout)
        XCTAssertFalse(FileManager.default.fileExists(atPath: work.path + "/a-never"), "hc_open made the folder")
    }
}
