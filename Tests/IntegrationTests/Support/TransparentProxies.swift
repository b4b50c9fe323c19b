import Foundation
import HTTPCache
import XCTest

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

/// The shape of the forward- and reverse-mode test classes: an nginx origin
/// serving `root` with the class's locations, and proxies in either mode in
/// front of it (`proxies`), all gone after each test.
class TransparentCacheCase: XCTestCase {
    typealias Mode = TransparentMode

    private(set) var directory: TemporaryDirectory!
    private(set) var root: URL!
    private(set) var origin: NginxOrigin!
    private(set) var proxies: TransparentProxies!

    /// A folder named after `prefix`, `root` in it with `folders` and `files`
    /// (path: text), and nginx serving it with `locations` (server block)
    /// and `httpConfig` (http block).
    func startOrigin(prefix: String, folders: [String] = [], files: [String: String] = [:], locations: String,
                     httpConfig: String = "") throws {
        directory = try TemporaryDirectory(prefix: prefix)
        proxies = TransparentProxies(in: directory)
        root = directory.url.appendingPathComponent("www")
        let manager = FileManager.default
        for folder in folders + files.keys.map({ ($0 as NSString).deletingLastPathComponent }) {
            try manager.createDirectory(at: root.appendingPathComponent(folder), withIntermediateDirectories: true)
        }
        for (path, text) in files { try Data(text.utf8).write(to: root.appendingPathComponent(path)) }
        origin = try NginxOrigin(root: root, extraServerConfig: locations, extraHTTPConfig: httpConfig)
    }

    override func tearDown() {
        proxies?.close()
        origin?.stop()
        directory?.remove()
        super.tearDown()
    }
}
