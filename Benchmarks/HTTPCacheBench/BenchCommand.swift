import ArgumentParser
import CBenchSupport
import Foundation

@main
struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "httpcache-bench",
        abstract: "Load-tests httpcache side by side with nginx (direct and as a slice cache) and prints one table.",
        discussion: """
            Starts an origin, the proxy (the real httpcache binary) and, when nginx is installed, nginx serving \
            the same files directly and nginx as a slice cache, then drives load over loopback. Every run is \
            bounded in time and stops by itself.
            """
    )

    @Option(help: "Seconds of load per measurement.") var duration: Double?
    @Option(help: "Measurements per server; the table shows the median.") var rounds: Int?
    @Option(name: .customLong("big-mib"), help: "Size of the big resource in MiB.") var bigMiB: Int?
    @Option(name: .customLong("idle-connections"), help: "Connections held idle in scenario 6.") var idleConnections: Int?
    @Option(help: "Scenarios to run, e.g. 1,2,3 (default: all).") var scenarios: String?
    @Option(help: "Entries filled into the cache in scenario 11 (default 1,000,000; 5,000 with --smoke; at least 2,000).")
    var entries: Int?
    @Option(help: "Also write the results as JSON to this file.") var json: String?
    @Option(help: "The httpcache binary (default: next to this one).") var proxy: String?
    @Option(help: "The nginx binary (default: found on PATH or in /usr/sbin).") var nginx: String?
    @Flag(name: .customLong("no-nginx"), help: "Skip the nginx peers.") var noNginx = false
    @Flag(help: "Tiny sizes and durations: checks that everything works (seconds, not minutes).") var smoke = false
    @Option(name: .customLong("work-dir"), help: "Where fixtures, caches and logs go (default: a new temp dir, removed after).")
    var workDir: String?
    @Flag(help: "Print progress to stderr.") var verbose = false
    @Option(name: .customLong("time-limit"), help: "Stop (and stop every server) after this many seconds.")
    var timeLimit: Double = 3600

    func run() throws {
        var settings = smoke ? Settings.smoke : Settings()
        if let duration { settings.duration = duration }
        if let rounds { settings.rounds = max(1, rounds) }
        if let bigMiB { settings.bigSize = UInt64(max(1, bigMiB)) << 20 }
        if let idleConnections { settings.idleConnections = max(1, idleConnections) }
        if let entries {
            settings.entries = max(2_000, entries)
            settings.scaleSample = min(settings.scaleSample, settings.entries / 5)
        }
        if let scenarios {
            settings.scenarios = Set(scenarios.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) })
        }
        let verbose = self.verbose
        let log: @Sendable (String) -> Void = { message in
            if verbose { FileHandle.standardError.write(Data(("bench: " + message + "\n").utf8)) }
        }

        Watchdog.shared.arm(timeLimit: timeLimit, log: log)

        // 1000 idle connections need 1000+ descriptors here and in the servers (inherited).
        let limit = bs_raise_nofile()
        if limit >= 0 && Int(limit) < settings.idleConnections + 100 {
            settings.idleConnections = max(1, Int(limit) - 100)
            FileHandle.standardError.write(Data(
                "httpcache-bench: open-files limit \(limit): idle connections lowered to \(settings.idleConnections)\n".utf8))
        }

        let proxyBinary = proxy ?? Bundle.main.executableURL!.deletingLastPathComponent().appendingPathComponent("httpcache").path
        guard FileManager.default.isExecutableFile(atPath: proxyBinary) else {
            throw BenchError("httpcache binary not found at \(proxyBinary) (build it, or pass --proxy)")
        }
        let nginxBinary = noNginx ? nil : (nginx ?? findExecutable("nginx"))
        let nginxVersion = nginxBinary.flatMap(Self.nginxVersion)

        let ownsWorkDir = workDir == nil
        let work = workDir ?? NSTemporaryDirectory() + "httpcache-bench-\(getpid())"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { if ownsWorkDir { try? FileManager.default.removeItem(atPath: work) } }
        Watchdog.shared.removeOnExit(ownsWorkDir ? work : nil)

        log("writing fixtures in \(work)")
        let fixtures = try Fixtures(root: work + "/www", bigSize: settings.bigSize, smallSize: settings.smallSize,
                                    smallCount: settings.smallCount)
        let origin = try Origin(root: fixtures.root)
        defer { origin.stop() }
        // Scenario 11's entries: one 4 KiB body under every /f/N, fresh for a day.
        origin.alias(Fixtures.entryPrefix, to: Fixtures.entryName, cacheControl: "max-age=86400")
        let launcher = Launcher(proxyBinary: proxyBinary, nginxBinary: nginxBinary, work: work,
                                fixturesRoot: fixtures.root, origin: origin)
        let proxyServer = try launcher.proxy()
        defer { proxyServer.stop() }
        log("httpcache pid \(proxyServer.pid) on port \(proxyServer.port)")
        if nginxBinary == nil { log("nginx not found: running without the nginx peers") }
        let direct = launcher.nginx(.nginxDirect)
        let slice = launcher.nginx(.nginxSlice)
        defer {
            direct?.stop()
            slice?.stop()
        }

        let bench = Bench(settings: settings, fixtures: fixtures, origin: origin, launcher: launcher,
                          proxy: proxyServer, nginxDirect: direct, nginxSlice: slice, log: log)
        let results = bench.run()
        Watchdog.shared.parkIfStopping()  // interrupted: the results are not worth printing

        let wrong = results.flatMap(\.rows).reduce(0) { $0 + $1.mismatches }
        let report = BenchReport(
            machine: MachineInfo.current(nginx: nginxVersion),
            date: ISO8601DateFormatter().string(from: Date()),
            command: CommandLine.arguments.joined(separator: " "),
            settings: settings.description,
            scenarios: results,
            allTargetsMet: !results.flatMap(\.targets).contains { $0.met != true },
            targetSummary: TargetSummary(results.flatMap(\.targets)),
            wrongBytes: wrong)
        print(TableFormatter.format(report), terminator: "")
        if smoke { print("(smoke run: tiny sizes and durations; the targets are meant for the full-size run)") }
        if let json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(report).write(to: URL(fileURLWithPath: json))
        }
        if wrong > 0 { throw ExitCode(3) }
    }

    private static func nginxVersion(_ binary: String) -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["-v"]
        let pipe = Pipe()
        process.standardError = pipe
        process.standardOutput = pipe
        guard (try? process.run()) != nil else { return nil }
        process.waitUntilExit()
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return text.split(separator: "/").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
    }
}

/// Like `which`, also looking in the sbin folders (nginx lives in /usr/sbin).
func findExecutable(_ name: String) -> String? {
    let path = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
    for dir in path + ["/usr/local/sbin", "/usr/sbin", "/sbin"] where !dir.isEmpty {
        let candidate = dir + "/" + name
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    return nil
}
