import Foundation
import XCTest

/// The README's "In 30 seconds" block, run as a newcomer would type it, with
/// the substitutions a test must make: the origin is a loopback nginx (not
/// example.com), the port a free one, the binary this build's (not the
/// release build `scripts/serve.sh` makes), and `ffplay` (a window) is
/// `ffprobe`. Each printed line the block shows is compared.
final class ReadmeDemoTests: XCTestCase {
    func testTheThirtySecondDemoRunsAsWritten() throws {
        let readme = try String(contentsOfFile: InstalledLibrary.packageRoot + "/README.md", encoding: .utf8)
        let section = try XCTUnwrap(readme.components(separatedBy: "## In 30 seconds\n").dropFirst().first)
        let block = try XCTUnwrap(section.components(separatedBy: "```sh\n").dropFirst().first?
            .components(separatedBy: "```").first)
        // "$ command" lines, each with the lines it prints.
        var steps: [(command: String, printed: [String])] = []
        for line in block.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) {
            if line.hasPrefix("$ ") { steps.append((String(line.dropFirst(2)), [])) } else if !steps.isEmpty {
                steps[steps.count - 1].printed.append(line)
            }
        }
        XCTAssertEqual(steps.map { $0.command.split(separator: " ").first.map(String.init) ?? "" },
                       ["scripts/serve.sh", "URL=$(.build/release/httpcache", "echo", "curl", "curl", "ffplay", "curl"],
                       "the demo's commands changed: update this test with them")

        let directory = try TemporaryDirectory(prefix: "httpcache-readme")
        defer { directory.remove() }
        let root = directory.file("www")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("media"), withIntermediateDirectories: true)
        let movie = try MediaFixtures.makeMP4(at: root.appendingPathComponent("media/movie.mp4"), duration: 4)
        let origin = try NginxOrigin(root: root)
        defer { origin.stop() }

        // `scripts/serve.sh --port 8080 &`: the same serve, on a free port.
        let serve = steps[0]
        XCTAssertTrue(serve.command.hasSuffix(" --port 8080 &"), serve.command)
        let proxy = try ProxyProcess(cacheDirectory: directory.file("cache").path)
        defer { proxy.terminate() }
        XCTAssertEqual(serve.printed, ["listening on http://127.0.0.1:8080"])
        let port = String(proxy.port)
        func substituted(_ text: String) -> String {
            text.replacingOccurrences(of: "https://example.com/media/movie.mp4", with: origin.url("/media/movie.mp4"))
                .replacingOccurrences(of: ".build/release/httpcache", with: CLITests.binary)
                .replacingOccurrences(of: "8080", with: port)
                .replacingOccurrences(of: "ffplay \"$URL\"", with: "ffprobe -v error -show_entries format=duration -of csv=p=0 \"$URL\"")
        }
        // The rest, in one shell (URL carries over), in the test's folder.
        // (A trailing "# comment" is dropped, so the status echo is not part of it.)
        func uncommented(_ command: String) -> String {
            command.range(of: #"\s+#.*$"#, options: .regularExpression).map { String(command[..<$0.lowerBound]) } ?? command
        }
        let script = steps.dropFirst().map { uncommented(substituted($0.command)) + "; echo \"--- $?\"" }
            .joined(separator: "\n")
        let ran = try TestTools.run("/bin/bash", ["-c", script], timeout: 120, currentDirectory: directory.url)
        XCTAssertEqual(ran.exitCode, 0, ran.stderr)
        // What each command printed, in order (URL=…, echo, curl, curl, ffprobe, curl).
        let outputs = ran.stdout.components(separatedBy: "\n")
            .split(omittingEmptySubsequences: false) { $0.hasPrefix("--- ") }.map(Array.init)
        XCTAssertGreaterThanOrEqual(outputs.count, 6, ran.stdout)
        guard outputs.count >= 6 else { return }
        let statuses = ran.stdout.split(separator: "\n").filter { $0.hasPrefix("--- ") }
        XCTAssertEqual(statuses, Array(repeating: "--- 0", count: steps.count - 1), ran.stdout + ran.stderr)

        // `echo $URL`: a proxy URL of the same shape as the README's, for this origin.
        XCTAssertEqual(outputs[0], [], "URL=… prints nothing")
        let url = try XCTUnwrap(outputs[1].first)
        XCTAssertEqual(url, try proxy.proxyURL(origin.url("/media/movie.mp4")))
        XCTAssertTrue(url.hasPrefix("http://127.0.0.1:\(port)/p/") && url.hasSuffix("/movie.mp4"), url)
        XCTAssertEqual(steps[2].printed.count, 1)
        XCTAssertTrue(steps[2].printed[0].hasPrefix("http://127.0.0.1:8080/p/") && steps[2].printed[0].hasSuffix("/movie.mp4"))
        // The two ranged fetches: the same first 1,000,000 bytes (or the whole file when shorter), byte-exact.
        let bytes = try Data(contentsOf: movie)
        let expected = bytes.prefix(1_000_000)
        XCTAssertEqual(try Data(contentsOf: directory.file("part.bin")), expected)
        XCTAssertEqual(try Data(contentsOf: directory.file("again.bin")), expected)
        let fetched = origin.accessLog(waitingFor: 1).filter { $0.uri == "/media/movie.mp4" }
        XCTAssertEqual(fetched.count, 1, "the second range came from the disk cache")
        // The player: ffprobe reads the title through the proxy.
        XCTAssertEqual(outputs[2] + outputs[3], [], "curl -o prints nothing")
        XCTAssertEqual(Double(outputs[4].first ?? "") ?? 0, 4, accuracy: 0.5, ran.stdout)
        // `curl …/ping`: as printed.
        XCTAssertEqual(outputs[5], steps[6].printed, ran.stdout)
    }
}
