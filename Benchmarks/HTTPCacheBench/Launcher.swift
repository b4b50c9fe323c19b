import Foundation

/// Starts the servers under test, each on its own folder under the run's
/// work directory, so a scenario can bring up its own set (two loops against
/// two nginx workers) next to the run's one-loop, one-worker set.
struct Launcher {
    let proxyBinary: String
    let nginxBinary: String?
    let work: String
    let fixturesRoot: String
    let origin: Origin

    /// Whether this httpcache has `serve --loops` (it lists it in its help).
    var proxySupportsLoops: Bool { proxySupports("--loops") }

    /// The proxy on `<work>/<name>-cache` with `loops` loops (one: the run's
    /// one-loop, one-worker comparisons; a binary without `--loops` has one anyway).
    func proxy(name: String = "proxy", loops: Int = 1, extraArguments: [String] = []) throws -> ServerProcess {
        try ServerProcess.startProxy(binary: proxyBinary, cacheDirectory: work + "/\(name)-cache",
                                     logFile: work + "/\(name).log", originBase: origin.baseURL,
                                     loops: proxySupportsLoops ? loops : nil, extraArguments: extraArguments)
    }

    /// Whether this httpcache has `serve OPTION` (it lists it in its help).
    func proxySupports(_ option: String) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: proxyBinary)
        process.arguments = ["serve", "--help"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text.contains(option)
    }

    /// nginx-direct or nginx-slice on `<work>/<kind><suffix>`; nil without nginx.
    /// A peer that cannot start is reported and left out: httpcache is still measured.
    func nginx(_ kind: ServerKind, workers: Int = 1, suffix: String = "", keysZoneMB: Int = 32) -> ServerProcess? {
        guard let nginxBinary else { return nil }
        do {
            return try ServerProcess.startNginx(kind, binary: nginxBinary, directory: work + "/\(kind.rawValue)\(suffix)",
                                                root: fixturesRoot, originPort: origin.port, sliceSize: "1m",
                                                workers: workers, keysZoneMB: keysZoneMB)
        } catch {
            FileHandle.standardError.write(Data("httpcache-bench: \(kind.rawValue)\(suffix) left out: \(error)\n".utf8))
            return nil
        }
    }
}
