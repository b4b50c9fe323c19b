import Foundation
import XCTest

/// kill -9 during downloads, then every byte served checked: what the crash
/// tests of a plain and of an encrypted folder share.
enum KillRounds {
    /// `rounds` times: a proxy on `cache` (with `arguments`) starts fetching
    /// every file (half from a random offset below `maxStart`) and is killed
    /// with SIGKILL at a random moment.
    static func run(_ files: [TestFile], origin: NginxOrigin, cache: String, arguments: [String] = [], rounds: Int,
                    maxStart: Int, seed: UInt64, file: StaticString = #filePath, line: UInt = #line) throws {
        var generator = SplitMix(seed: seed)
        for round in 0..<rounds {
            let proxy = try ProxyProcess(cacheDirectory: cache, extraArguments: arguments)
            let urls = try files.map { try proxy.proxyURL(origin.url("/" + $0.name)) }
            let group = DispatchGroup()
            for (index, url) in urls.enumerated() {
                let start = Int(generator.next() % UInt64(maxStart))
                group.enter()
                Thread.detachNewThread {
                    _ = try? RawHTTPClient.get(url: url, range: index % 2 == 0 ? "bytes=\(start)-" : nil, timeout: 5)
                    group.leave()
                }
            }
            Thread.sleep(forTimeInterval: 0.05 + Double(generator.next() % 250) / 1000)
            proxy.kill9()
            XCTAssertEqual(group.wait(timeout: .now() + 10), .success, "round \(round)", file: file, line: line)
        }
    }

    /// A proxy restarted on `cache`: with the origin stopped, every range
    /// `cache list` claims is served byte-exact; with it back, whole files.
    static func checkEveryServedByte(_ files: [TestFile], origin: NginxOrigin, cache: String, arguments: [String] = [],
                                     file: StaticString = #filePath, line: UInt = #line) throws {
        origin.stop()
        let proxy = try ProxyProcess(cacheDirectory: cache, extraArguments: arguments)
        defer { proxy.terminate() }
        let listing = try TestTools.run(CLITests.binary, ["cache", "list", "--json", "--cache-dir", cache])
        XCTAssertTrue(listing.succeeded, listing.stderr, file: file, line: line)
        let rows = try JSONSerialization.jsonObject(with: listing.stdoutData) as? [[String: Any]] ?? []
        XCTAssertFalse(rows.isEmpty, "some bytes should have been cached before the kills", file: file, line: line)
        var checked = 0
        for row in rows {
            let url = try XCTUnwrap(row["url"] as? String)
            let stored = try XCTUnwrap(files.first { url.hasSuffix("/" + $0.name) })
            for range in (row["ranges"] as? String ?? "").split(separator: ",") {
                let bounds = range.split(separator: "-").compactMap { Int($0) }
                let response = try RawHTTPClient.get(url: try proxy.proxyURL(url), range: "bytes=\(bounds[0])-\(bounds[1])")
                XCTAssertEqual(response.status, 206, file: file, line: line)
                XCTAssertBytes(response.body, equal: stored, range: bounds[0]..<(bounds[1] + 1), file: file, line: line)
                checked += bounds[1] - bounds[0] + 1
            }
        }
        XCTAssertGreaterThan(checked, 0, file: file, line: line)
        try origin.start()
        for each in files {
            XCTAssertBytes(try RawHTTPClient.get(url: try proxy.proxyURL(origin.url("/" + each.name)), timeout: 30).body,
                           equal: each, file: file, line: line)
        }
    }
}
