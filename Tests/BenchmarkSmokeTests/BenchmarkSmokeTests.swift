import Foundation
import XCTest

/// Runs the benchmark binaries with tiny sizes so they never rot. Checks that
/// they run, check their bytes and report sane numbers — never speed targets.
final class BenchmarkSmokeTests: XCTestCase {
    /// The built executables sit next to the test bundle's runner.
    private func binary(_ name: String) throws -> String {
        let path = Bundle.main.executableURL!.deletingLastPathComponent().appendingPathComponent(name).path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw XCTSkip("\(name) is not built next to the tests (run swift build --build-tests)")
        }
        return path
    }

    func testBenchSmokeRunPrintsTheTableAndJSON() throws {
        let bench = try binary("httpcache-bench")
        let proxy = try binary("httpcache")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bench-smoke-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let jsonURL = directory.appendingPathComponent("bench.json")

        // The fewest entries scenario 11 takes: it only has to run, not to measure.
        let result = try run(bench, ["--smoke", "--entries", "2000", "--proxy", proxy, "--json", jsonURL.path,
                                     "--work-dir", directory.appendingPathComponent("work").path], timeout: 300)
        XCTAssertEqual(result.status, 0, "stderr: \(result.stderr)\nstdout: \(result.stdout)")
        for heading in ["1. cache hits", "2. cache hits", "3. cache hits", "4. cold misses", "5. ", "6. ", "7. ",
                        "8. 2 loops vs 2 workers", "9. 2 loops vs 2 workers", "10. memory at rest",
                        "11. the cache at scale", "12. encrypted folder vs plain", "13. encrypted folder vs plain",
                        "14. players first", "15. reverse proxy hits", "16. reverse proxy hits",
                        "17. reverse proxy hits", "20. a player of"] {
            XCTAssertTrue(result.stdout.contains(heading), "missing \(heading) in:\n\(result.stdout)")
        }
        XCTAssertTrue(result.stdout.contains("every checked byte was right"), result.stdout)
        XCTAssertNotNil(result.stdout.range(of: #"Targets: \d+ PASS, \d+ MISS, \d+ not measured"#, options: .regularExpression),
                        result.stdout)

        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: jsonURL)) as? [String: Any])
        XCTAssertEqual(json["wrongBytes"] as? Int, 0)
        let scenarios = try XCTUnwrap(json["scenarios"] as? [[String: Any]])
        XCTAssertEqual(scenarios.compactMap { $0["id"] as? Int }, Array(1...17) + [20])
        // Every target has a verdict, and the summary counts them.
        let targets = scenarios.flatMap { $0["targets"] as? [[String: Any]] ?? [] }
        XCTAssertGreaterThanOrEqual(targets.count, 20)
        let verdicts = targets.map { $0["verdict"] as? String ?? "" }
        XCTAssertTrue(verdicts.allSatisfy { ["PASS", "MISS", "not measured"].contains($0) }, "\(verdicts)")
        let summary = try XCTUnwrap(json["targetSummary"] as? [String: Int])
        XCTAssertEqual(summary["pass"], verdicts.filter { $0 == "PASS" }.count)
        XCTAssertEqual(summary["miss"], verdicts.filter { $0 == "MISS" }.count)
        XCTAssertEqual(summary["notMeasured"], verdicts.filter { $0 == "not measured" }.count)
        for scenario in scenarios {
            let id = scenario["id"] as? Int ?? 0
            let rows = try XCTUnwrap(scenario["rows"] as? [[String: Any]])
            if id == 8 || id == 9, rows.isEmpty {
                // Without `serve --loops` the two-loop scenarios are reported, not measured.
                XCTAssertEqual(scenario["notes"] as? [String], ["not measured: --loops unsupported"])
                XCTAssertTrue(result.stdout.contains("not measured: --loops unsupported"), result.stdout)
                continue
            }
            if id == 20 {
                // The modelled HLS player, without and with prefetch (not measured by a proxy without --prefetch).
                if rows.isEmpty {
                    let verdicts = (scenario["targets"] as? [[String: Any]] ?? []).map { $0["verdict"] as? String }
                    XCTAssertEqual(verdicts, ["not measured"], "\(scenario)")
                } else {
                    XCTAssertEqual(rows.compactMap { $0["server"] as? String }, ["httpcache --prefetch 0", "httpcache (prefetch 2)"])
                    XCTAssertTrue(rows.allSatisfy { ($0["metrics"] as? [String: Double])?["TTFB ms (median, k≥2)"] != nil }, "\(rows)")
                }
                continue
            }
            if id == 14 {
                // The player through httpcache, alone and during a download: every byte checked.
                XCTAssertEqual(rows.compactMap { $0["server"] as? String }, ["player alone", "player with a download"])
                XCTAssertTrue(rows.allSatisfy { ($0["requests"] as? Int ?? 0) > 0 && $0["mismatches"] as? Int == 0 }, "\(rows)")
                continue
            }
            let proxyRow = try XCTUnwrap(rows.first { $0["server"] as? String == "httpcache" }, "\(scenario)")
            if id == 10 {
                let metrics = try XCTUnwrap(proxyRow["metrics"] as? [String: Double])
                XCTAssertGreaterThan(metrics["RSS at start MB"] ?? 0, 1)
                XCTAssertGreaterThan(metrics["RSS after run MB"] ?? 0, 1)
                continue
            }
            if id == 11 {
                // Every figure of the scale scenario came out (its targets may miss).
                let metrics = try XCTUnwrap(proxyRow["metrics"] as? [String: Double])
                for column in ["fill req/s", "miss req/s empty", "hit req/s N", "full miss req/s", "peak fds",
                               "listening s", "first hit s"] {
                    XCTAssertGreaterThan(metrics[column] ?? 0, 0, "scenario 11: \(column)")
                }
            }
            if id == 12 || id == 13 {
                // The encrypted proxy's bytes are checked like the plain one's.
                let encrypted = try XCTUnwrap(rows.first { $0["server"] as? String == "httpcache-encrypted" }, "\(scenario)")
                XCTAssertGreaterThan(encrypted["requests"] as? Int ?? 0, 0)
                XCTAssertEqual(encrypted["mismatches"] as? Int, 0)
                XCTAssertEqual(encrypted["errors"] as? Int, 0, "\(encrypted["firstError"] ?? "")")
            }
            XCTAssertGreaterThan(proxyRow["requests"] as? Int ?? 0, 0, "\(scenario["title"] ?? "")")
            XCTAssertEqual(proxyRow["mismatches"] as? Int, 0)
            XCTAssertEqual(proxyRow["errors"] as? Int, 0, "\(proxyRow["firstError"] ?? "")")
            let checked = (proxyRow["checkedBytes"] as? Int ?? 0) + (proxyRow["spotChecks"] as? Int ?? 0)
            XCTAssertGreaterThan(checked, 0, "no bytes were verified in \(scenario["title"] ?? "")")
        }
        // Hits move bytes; a cold herd fetches the resource from the origin at least once.
        let hits = try XCTUnwrap(scenarios.first { $0["id"] as? Int == 1 }?["rows"] as? [[String: Any]])
        let hitMetrics = try XCTUnwrap(hits.first?["metrics"] as? [String: Double])
        XCTAssertGreaterThan(hitMetrics["MB/s"] ?? 0, 0)
        XCTAssertGreaterThan(hitMetrics["peak RSS MB"] ?? 0, 0)
        let herd = try XCTUnwrap(scenarios.first { $0["id"] as? Int == 5 }?["rows"] as? [[String: Any]])
        let herdMetrics = try XCTUnwrap(herd.first?["metrics"] as? [String: Double])
        XCTAssertGreaterThanOrEqual(herdMetrics["origin/size"] ?? 0, 0.99)
    }

    func testMicroBenchmarksRun() throws {
        let micro = try binary("httpcache-micro")
        let result = try run(micro, ["--quick"], timeout: 60)
        XCTAssertEqual(result.status, 0, result.stderr)
        for name in ["request head parse", "Range parse", "plan", "range set", "response head", "AES-256-XTS"] {
            XCTAssertTrue(result.stdout.contains(name), "missing \(name) in:\n\(result.stdout)")
        }
        XCTAssertFalse(result.stdout.contains("nan"), result.stdout)
    }

    // MARK: helpers

    private struct Outcome {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs a process to completion (killed after `timeout` seconds), output captured in files.
    private func run(_ path: String, _ arguments: [String], timeout: TimeInterval) throws -> Outcome {
        let capture = FileManager.default.temporaryDirectory.appendingPathComponent("bench-smoke-out-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: capture, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: capture) }
        let outURL = capture.appendingPathComponent("stdout")
        let errURL = capture.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: outURL)
        process.standardError = try FileHandle(forWritingTo: errURL)
        try process.run()
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(50_000) }
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
            XCTFail("\(path) did not finish within \(timeout) s")
        }
        process.waitUntilExit()
        return Outcome(status: process.terminationStatus,
                       stdout: String(decoding: try Data(contentsOf: outURL), as: UTF8.self),
                       stderr: String(decoding: try Data(contentsOf: errURL), as: UTF8.self))
    }
}
