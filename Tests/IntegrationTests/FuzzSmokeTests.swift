import Foundation
import XCTest

/// Runs `scripts/fuzz.sh --smoke`: every fuzz target builds and runs its seeds
/// plus a few seconds of new inputs without a crash or a failed invariant.
/// Long runs are scripts/fuzz.sh without --smoke (see Fuzz/README.md).
final class FuzzSmokeTests: XCTestCase {
    private let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    func testEveryFuzzTargetRunsWithoutCrashing() throws {
        let script = root.appendingPathComponent("scripts/fuzz.sh").path
        let check = try TestTools.run(script, ["--check"], timeout: 30, currentDirectory: root)
        if !check.succeeded {
            throw XCTSkip("no libFuzzer runtime in the Swift toolchain: \(check.stderr)")
        }
        let list = try TestTools.run(script, ["--list"], timeout: 30, currentDirectory: root)
        let targets = list.stdout.split(separator: "\n").map(String.init)
        XCTAssertFalse(targets.isEmpty, list.stderr)

        // The first run builds every target (about 15 s each), later ones reuse them.
        let result = try TestTools.run(script, ["--smoke"], timeout: 900, currentDirectory: root)
        XCTAssertFalse(result.timedOut, "fuzz.sh --smoke timed out")
        XCTAssertEqual(result.exitCode, 0, "stdout:\n\(result.stdout)\nstderr:\n\(result.stderr)")
        for target in targets {
            // "fuzz: NAME: ok, N inputs in S s"
            let line = result.stdout.split(separator: "\n").first { $0.hasPrefix("fuzz: \(target): ok, ") }
            let executed = line.flatMap { Int($0.split(separator: " ")[3]) } ?? 0
            XCTAssertGreaterThan(executed, 0, "\(target) executed no inputs:\n\(result.stdout)")
        }
    }
}
