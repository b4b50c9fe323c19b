import Foundation
import HTTPCache

/// An in-process proxy on its own cache folder, with its log lines captured
/// (for origins other than ProxyFixture's nginx).
final class TestProxy {
    let directory: TemporaryDirectory
    let logs = LogCapture()
    let server: MediaCache
    var cacheDirectory: String { directory.file("cache").path }

    init(_ configure: (inout HTTPCacheConfiguration) -> Void = { _ in }) throws {
        directory = try TemporaryDirectory(prefix: "httpcache-proxy")
        var configuration = HTTPCacheConfiguration(cacheDirectory: directory.file("cache").path)
        configure(&configuration)
        server = try MediaCache(configuration: configuration, logger: logs.logger)
        try server.serve()
    }

    deinit { server.close() }

    func url(for origin: String) throws -> String { try server.proxyURL(for: origin) }

    func get(_ origin: String, range: String? = nil, headers: [(String, String)] = []) throws -> RawResponse {
        try RawHTTPClient.get(url: try url(for: origin), range: range, headers: headers, timeout: 20)
    }

    /// Sends a GET and reads the head and whatever body arrives before the
    /// proxy closes the connection (for responses cut short).
    /// `readDelay` seconds pass between sending and reading, as for a slow client.
    func getUntilClose(_ origin: String, range: String? = nil, readDelay: TimeInterval = 0) throws -> RawResponse {
        let (_, port, path) = try RawHTTPClient.parse(url: try url(for: origin))
        let connection = try RawHTTPConnection(port: port, timeout: 20)
        defer { connection.close() }
        var headers: [(String, String)] = []
        if let range { headers.append(("Range", range)) }
        try connection.sendRequest(path: path, headers: headers)
        if readDelay > 0 { Thread.sleep(forTimeInterval: readDelay) }
        return try connection.readPartialResponse(maxBodyBytes: Int.max)
    }

    /// The cache metadata files' text, one per resource.
    func metadata() -> [String] {
        CacheFolderFiles.metaPaths(cacheDirectory).compactMap { CacheFolderFiles.metadataText($0) }
    }

    /// Waits until a metadata file has a line equal to `line`.
    @discardableResult
    func waitForMetadata(line: String, timeout: TimeInterval = 5) -> Bool {
        TestTools.waitUntil(timeout: timeout) {
            metadata().contains { $0.split(separator: "\n").contains(Substring(line)) }
        }
    }
}
