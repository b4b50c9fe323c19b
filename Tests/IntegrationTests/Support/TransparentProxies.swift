import Foundation
import HTTPCache

/// The mode a shared-cache test runs the proxy in: reverse (origin-form
/// targets onto `--origin`) or forward (absolute-form targets).
enum TransparentMode: String, CaseIterable { case reverse, forward }

/// Fresh proxies (each on an empty cache folder of its own) in either
/// transparent mode, one at a time, for the RFC 9111 tests that run every
/// case in both modes. The test closes the last one (`close()`).
final class TransparentProxies {
    private let directory: TemporaryDirectory
    private var runs = 0
    private(set) var server: MediaCache?

    init(in directory: TemporaryDirectory) {
        self.directory = directory
    }

    /// A proxy in `mode` in front of `base` (reverse mode's origin), and a
    /// client with the target of a path: origin-form in reverse mode,
    /// absolute-form (`base` + path) in forward mode.
    func start(_ mode: TransparentMode, base: String, clock: TestClock? = nil,
               _ configure: (inout HTTPCacheConfiguration) -> Void = { _ in })
        throws -> (RawHTTPConnection, (String) -> String) {
        close()
        runs += 1
        var configuration = HTTPCacheConfiguration(cacheDirectory: directory.file("cache\(runs)").path)
        if mode == .reverse { configuration.origin = base }
        if let clock { configuration.clock = { clock.now } }
        configure(&configuration)
        let started = try MediaCache(configuration: configuration)
        try started.serve()
        server = started
        return (try RawHTTPConnection(port: started.servingPort), { mode == .reverse ? $0 : base + $0 })
    }

    func close() {
        server?.close()
        server = nil
    }
}
