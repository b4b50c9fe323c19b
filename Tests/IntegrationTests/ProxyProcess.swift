import Foundation
import XCTest

/// `httpcache serve` as a child process (for kill -9 and lock tests).
final class ProxyProcess {
    let process = Process()
    let stderr = Pipe()
    private(set) var port = 0

    /// `launcher` runs the binary through another program (e.g. `prlimit --nofile=…`).
    /// `announceTimeout`: seconds it may take to print `listening on` (a large folder may take long).
    init(cacheDirectory: String, extraArguments: [String] = [], launcher: [String] = [], port: Int = 0,
         announceTimeout: TimeInterval = 20) throws {
        let arguments = ["serve", "--port", String(port), "--cache-dir", cacheDirectory] + extraArguments
        process.executableURL = URL(fileURLWithPath: launcher.first ?? CLITests.binary)
        process.arguments = launcher.isEmpty ? arguments : Array(launcher.dropFirst()) + [CLITests.binary] + arguments
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        let line = try Self.readLine(stdout.fileHandleForReading, timeout: announceTimeout)
        guard line.hasPrefix("listening on http://"), let port = Int(line.split(separator: ":").last ?? "") else {
            process.terminate()
            throw TestSupportError("unexpected first line: \(line)")
        }
        self.port = port
    }

    /// `httpcache serve` on one loop under an open-file limit of `nofile`
    /// (prlimit), logging at debug level to `logPath`, with no per-client
    /// connection cap below the limit (every test client is 127.0.0.1); and
    /// the origins' share of its descriptor budget, as it logged it (nil when
    /// not logged within 5 s). stderr is drained.
    static func limitedToDescriptors(_ nofile: Int, cacheDirectory: String,
                                     logPath: String) throws -> (proxy: ProxyProcess, originShare: Int?) {
        let prlimit = try TestTools.requireTool("prlimit")
        let proxy = try ProxyProcess(cacheDirectory: cacheDirectory,
                                     extraArguments: ["--loops", "1", "--log-level", "debug", "--log-file", logPath,
                                                      "--max-connections-per-client", "1000"],
                                     launcher: [prlimit, "--nofile=\(nofile):\(nofile)"])
        proxy.stderr.fileHandleForReading.readabilityHandler = { _ = $0.availableData }
        var log = ""
        TestTools.waitUntil(timeout: 5) {
            log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            return log.contains("origins=")
        }
        return (proxy, log.firstMatch(of: /origins=(\d+)/).flatMap { Int($0.1) })
    }

    func proxyURL(_ origin: String) throws -> String {
        let result = try TestTools.run(CLITests.binary, ["url", origin, "--port", String(port)])
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Its `/stats` JSON; nil when not answered.
    var stats: [String: Any]? {
        guard let response = try? RawHTTPClient.get(url: "http://127.0.0.1:\(port)/stats", timeout: 5) else { return nil }
        return try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
    }

    /// Resident memory of the proxy in bytes (VmRSS).
    var residentBytes: Int {
        let status = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }

    func kill9() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    func terminate() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }

    static func readLine(_ handle: FileHandle, timeout: TimeInterval) throws -> String {
        var bytes: [UInt8] = []
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            var poller = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 200) > 0 else { continue }
            var byte: UInt8 = 0
            guard read(handle.fileDescriptor, &byte, 1) == 1 else { break }
            if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(byte)
        }
        throw TestSupportError("no line within \(timeout) s")
    }
}
