import Foundation

/// Scenario 14: a player's throughput while an offline download runs (issue
/// #23): downloads yield to the players being served, so a player keeps at
/// least 95% of what it gets alone.
extension Bench {
    func downloadScenario() -> ScenarioResult {
        let s = settings
        let title = "players first: a player's MB/s fetching \(s.coldWholeRequests) new whole \(mib(s.bigSize)) resources, 1 connection, alone and while a download runs (origin paced at \(mib(s.coldOriginRate))/s per connection)"
        log("scenario 14: \(title)")
        let endpoint = proxy.endpoint
        origin.setRate(s.coldOriginRate)
        defer { origin.setRate(0) }
        func player(_ name: String) -> Row {
            let targets = (0..<s.coldWholeRequests).map { _ in fixtures.big(on: endpoint, query: freshTag("player")) }
            let steps = targets.indices.map { Step(target: $0, first: nil, last: nil) }
            var (_, row) = measure(endpoint, targets: targets, mode: .script(steps), connections: 1, duration: 0,
                                   fullCheckEvery: 1, timeout: 300)
            row.server = name
            row.metrics = ["MB/s": row.metrics["MB/s"] ?? 0, "origin MB": row.metrics["origin MB"] ?? 0]
            log("  \(name): \(String(format: "%.1f", row.metrics["MB/s"]!)) MB/s")
            return row
        }
        let alone = player("player alone")
        // A download of several resources' worth (the same bytes under its own URL), added through the CLI.
        let folder = launcher.work + "/proxy-cache"
        let url = origin.baseURL + "/" + Fixtures.bigName + "?" + freshTag("download")
        let id = cli(["download", "add", url, "--cache-dir", folder]).trimmingCharacters(in: .whitespacesAndNewlines)
        usleep(300_000)  // running before the player starts
        let during = player("player with a download")
        let listed = cli(["download", "list", "--cache-dir", folder])
        _ = cli(["download", "rm", id, "--cache-dir", folder])
        var result = ScenarioResult(id: 14, title: title, columns: ["MB/s", "origin MB"], rows: [alone, during], peers: [],
                                    ratios: [:], targets: [], notes: [])
        let ratio = alone.metrics["MB/s"].flatMap { base in during.metrics["MB/s"].map { base > 0 ? $0 / base : 0 } }
        result.targets = [Targets.atLeast("a player keeps ≥ 95% of its MB/s while a download runs", id.isEmpty ? nil : ratio, 0.95,
                                          unmeasured: id.isEmpty ? "the download could not be added" : nil)]
        result.notes.append("the download, afterwards: " + (listed.split(separator: "\n").first.map(String.init) ?? "none"))
        return result
    }

    /// Runs `httpcache ARGS` (the binary under test) and returns its stdout.
    private func cli(_ arguments: [String]) -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: launcher.proxyBinary)
        process.arguments = arguments
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return "" }
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: output, as: UTF8.self)
    }
}
