import Foundation
import XCTest

/// `httpcache serve` options of the upstream client: --ca-file, --insecure,
/// --header, --forward-header.
final class CLIUpstreamOptionsTests: XCTestCase {
    /// A running `httpcache serve`, its port, and its stderr in a file.
    private final class Serve {
        let process = Process()
        let directory: TemporaryDirectory
        private(set) var port = 0

        init(_ arguments: [String]) throws {
            directory = try TemporaryDirectory(prefix: "httpcache-cli-upstream")
            _ = FileManager.default.createFile(atPath: directory.file("stderr").path, contents: nil)
            process.executableURL = URL(fileURLWithPath: CLITests.binary)
            process.arguments = ["serve", "--port", "0", "--cache-dir", directory.file("cache").path] + arguments
            let stdout = Pipe()
            process.standardOutput = stdout
            process.standardError = try FileHandle(forWritingTo: directory.file("stderr"))
            try process.run()
            var line: [UInt8] = []
            let reader = stdout.fileHandleForReading
            while true {
                let byte = reader.readData(ofLength: 1)
                if byte.isEmpty || byte.first == UInt8(ascii: "\n") { break }
                line.append(byte.first!)
            }
            let text = String(decoding: line, as: UTF8.self)
            if let last = text.split(separator: ":").last, let port = Int(last) { self.port = port }
        }

        var stderr: String { (try? String(contentsOf: directory.file("stderr"), encoding: .utf8)) ?? "" }

        func url(_ origin: String) throws -> String {
            let result = try TestTools.run(CLITests.binary, ["url", origin, "--port", String(port)])
            return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }

        func stop() {
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
        }
    }

    func testCAFileAndHeaders() throws {
        let certificates = try TestCertificates()
        let directory = try TemporaryDirectory(prefix: "httpcache-cli-www")
        let file = try TestFile.random(size: 300_000, seed: 61, in: directory.url, name: "a.bin")
        let tlsOrigin = try NginxOrigin(root: directory.url, tls: certificates.good)
        defer { tlsOrigin.stop() }
        let faulty = try FaultyOrigin()
        defer { faulty.stop() }
        faulty.serve("/h", body: [7, 7, 7])

        let serve = try Serve(["--ca-file", certificates.caFile, "--header", "X-Token: abc",
                               "--header", "X-Other:x", "--forward-header", "X-Client-Id"])
        defer { serve.stop() }
        XCTAssertNotEqual(serve.port, 0, serve.stderr)
        let response = try RawHTTPClient.get(url: try serve.url(tlsOrigin.url("/a.bin")), range: "bytes=100-199999")
        XCTAssertEqual(response.status, 206, response.bodyString)
        XCTAssertBytes(response.body, equal: file, range: 100..<200_000)

        let headers = try RawHTTPClient.get(url: try serve.url(faulty.url("/h")), headers: [("X-Client-Id", "9")])
        XCTAssertEqual(headers.body, [7, 7, 7])
        let request = try XCTUnwrap(faulty.requests.first)
        XCTAssertEqual(request.header("X-Token"), "abc")
        XCTAssertEqual(request.header("X-Other"), "x")
        XCTAssertEqual(request.header("X-Client-Id"), "9")
        XCTAssertFalse(serve.stderr.contains("OFF"), serve.stderr)
    }

    func testInsecureWarnsAndTrustsAnyCertificate() throws {
        let certificates = try TestCertificates()
        let directory = try TemporaryDirectory(prefix: "httpcache-cli-www")
        let file = try TestFile.random(size: 10_000, seed: 62, in: directory.url, name: "a.bin")
        let origin = try NginxOrigin(root: directory.url, tls: certificates.expired)
        defer { origin.stop() }

        let serve = try Serve(["--insecure"])
        defer { serve.stop() }
        let response = try RawHTTPClient.get(url: try serve.url(origin.url("/a.bin")))
        XCTAssertEqual(response.status, 200, response.bodyString)
        XCTAssertBytes(response.body, equal: file)
        XCTAssertTrue(serve.stderr.contains("warning") && serve.stderr.contains("verification is OFF"), serve.stderr)
    }

    func testBadOptionsStopTheStartWithAReason() throws {
        let cases: [([String], String)] = [
            (["--ca-file", "/nonexistent/ca.pem"], "cannot load CA file"),
            (["--header", "NoColonHere"], "Name: value"),
            (["--header", "Host: example.com"], "set by the proxy"),
        ]
        for (arguments, reason) in cases {
            let directory = try TemporaryDirectory(prefix: "httpcache-cli-bad")
            let result = try TestTools.run(CLITests.binary, ["serve", "--port", "0", "--cache-dir", directory.path] + arguments,
                                           timeout: 20)
            XCTAssertFalse(result.succeeded, "\(arguments)")
            XCTAssertFalse(result.stdout.contains("listening"), "\(arguments): \(result.stdout)")
            XCTAssertTrue(result.stderr.contains(reason), "\(arguments): \(result.stderr)")
        }
    }
}
