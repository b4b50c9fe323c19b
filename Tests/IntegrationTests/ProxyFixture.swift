import Foundation
import HTTPCache
import XCTest

/// An nginx origin serving generated files, and an in-process proxy in front of it.
final class ProxyFixture {
    let directory: TemporaryDirectory
    let root: URL
    let cacheDirectory: String
    let origin: NginxOrigin
    private(set) var server: MediaCache
    var configure: (inout HTTPCacheConfiguration) -> Void
    /// What the proxy logs (debug and up), when made with `capturingLogs`; else it logs to stderr.
    let logs = LogCapture()
    private let capturesLogs: Bool

    init(capturingLogs: Bool = false, configure: @escaping (inout HTTPCacheConfiguration) -> Void = { _ in }) throws {
        directory = try TemporaryDirectory(prefix: "httpcache-test")
        root = directory.url.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        cacheDirectory = directory.url.appendingPathComponent("cache").path
        origin = try NginxOrigin(root: root)
        self.configure = configure
        capturesLogs = capturingLogs
        server = try Self.makeServer(cacheDirectory, configure, capturingLogs ? logs : nil)
    }

    private static func makeServer(_ cacheDirectory: String, _ configure: (inout HTTPCacheConfiguration) -> Void,
                                   _ logs: LogCapture?) throws -> MediaCache {
        var configuration = HTTPCacheConfiguration(cacheDirectory: cacheDirectory)
        configure(&configuration)
        let cache = try logs.map { try MediaCache(configuration: configuration, logger: $0.logger) }
            ?? MediaCache(configuration: configuration)
        try cache.serve()
        return cache
    }

    /// Stops the proxy and starts a new one on the same cache folder.
    func restartProxy() throws {
        server.close()
        server = try Self.makeServer(cacheDirectory, configure, capturesLogs ? logs : nil)
    }

    func file(_ name: String, size: Int, seed: UInt64 = 1) throws -> TestFile {
        try TestFile.random(size: size, seed: seed, in: root, name: name)
    }

    /// The proxy URL of a file at the origin.
    func proxyURL(_ name: String) throws -> String {
        try server.proxyURL(for: origin.url("/" + name))
    }

    /// The path part of the proxy URL (for raw requests on a proxy connection).
    func proxyPath(_ name: String) throws -> String {
        let url = try proxyURL(name)
        return try RawHTTPClient.parse(url: url).path
    }

    /// The proxy's `/stats` JSON.
    func stats() throws -> [String: Any] {
        let response = try RawHTTPClient.get(url: "http://127.0.0.1:\(server.servingPort)/stats", timeout: 5)
        XCTAssertEqual(response.status, 200)
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
    }

    func connect() throws -> RawHTTPConnection {
        try RawHTTPConnection(port: server.servingPort)
    }

    func get(_ name: String, range: String? = nil, headers: [(String, String)] = []) throws -> RawResponse {
        try RawHTTPClient.get(url: try proxyURL(name), range: range, headers: headers, timeout: 30)
    }

    /// The origin's log lines for `name`, every request it ended so far
    /// included (nginx logs after the response: a client can be faster).
    func originLog(_ name: String) -> [AccessLogEntry] {
        origin.settledAccessLog().filter { $0.uri == "/" + name }
    }

    func stop() {
        server.close()
        origin.stop()
    }
}
